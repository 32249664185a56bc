"""Plugin drivers for the tests: the example Acme NPU (examples/vendor_plugin) and a variant of
it whose compiler crashes on MUL."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from nnrt.driver.info import PerformanceInfo
from nnrt.driver.plugin import CompiledResult, PluginDriver
from nnrt.model.model import Model
from nnrt.model.types import OperationType

VENDOR = str(Path(__file__).resolve().parents[2] / "examples" / "vendor_plugin")
if VENDOR not in sys.path:
    sys.path.insert(0, VENDOR)

from acme_npu import AcmeDispatch, AcmePlugin  # noqa: E402
from acme_npu import make_driver as make_driver  # noqa: E402

ACME = "acme_npu:make_driver"


class _MulCrashPlugin(AcmePlugin):
    def compile(self, partitions: Sequence[Model], soc_model: str | None) -> CompiledResult:
        for model in partitions:
            if any(op.type == OperationType.MUL for op in model.operations):
                raise RuntimeError("acme (test variant): the MUL lowering crashed")
        return super().compile(partitions, soc_model)


def mul_crash() -> PluginDriver:
    """Acme whose compile step fails for any partition holding a MUL."""
    return PluginDriver(_MulCrashPlugin(), AcmeDispatch(),
                        performance=PerformanceInfo(exec_time=0.2, power_usage=0.2))
