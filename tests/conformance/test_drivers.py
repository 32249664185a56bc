"""The driver conformance kit passes for every driver nnrt ships or documents: the reference
driver, the compiling cpu driver and the example vendor plugin (com.example.acme)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from nnrt.hal.conformance import check_driver

VENDOR = str(Path(__file__).resolve().parents[2] / "examples" / "vendor_plugin")


def test_reference_driver_conforms() -> None:
    report = check_driver("reference")
    assert report.ok and report.variants_run > 5000, report.summary()


def test_cpu_driver_conforms() -> None:
    report = check_driver("cpu")
    assert report.ok and report.variants_run > 1000, report.summary()


def test_acme_plugin_conforms(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(VENDOR)
    monkeypatch.setenv("PYTHONPATH", VENDOR)
    sys.modules.pop("acme_npu", None)
    report = check_driver("acme_npu:make_driver")
    assert report.ok and report.variants_run > 20, report.summary()
