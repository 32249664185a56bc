"""The factory nnrt finds under the ``nnrt.drivers`` entry point ``com.example.acme``."""

from __future__ import annotations

import os

from nnrt.hal.base import PerformanceInfo
from nnrt.hal.plugin import PluginDriver

from acme_npu.dispatch import AcmeDispatch
from acme_npu.plugin import AcmePlugin

__all__ = ["make_driver"]


def make_driver() -> PluginDriver:
    """The Acme NPU as an nnrt driver, for the SoC model named by ``$ACME_SOC`` (default
    acme-n1)."""
    return PluginDriver(AcmePlugin(), AcmeDispatch(), soc_model=os.environ.get("ACME_SOC"),
                        device_type="accelerator",
                        performance=PerformanceInfo(exec_time=0.2, power_usage=0.2))
