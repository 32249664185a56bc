"""The driver conformance kit passes for every driver nnrt ships or documents: the reference
driver, the compiling cpu driver and the example vendor plugin (com.example.acme).

The reference and cpu drivers run every case variant through their HAL methods in a test of
their own, compared at least as strictly as here (tests/unit/hal/test_reference_driver.py:
bitwise against ``nnrt.reference.run``; tests/unit/drivers/test_cpu_conformance.py: the
reference's exact quantised rounding): here they run the kit's protocol and worker-process
checks and its per-variant run on :func:`representative_variants` (every operation on every
tensor type, in every variant kind), not the same 10,000 variants a second time.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from nnrt.hal.conformance import check_driver
from nnrt.hal.conformance.operations import representative_variants, run_variants
from nnrt.hal.discovery import load_driver

VENDOR = str(Path(__file__).resolve().parents[2] / "examples" / "vendor_plugin")


def test_reference_driver_conforms() -> None:
    report = check_driver("reference", variants=0)
    assert report.ok and report.checks_run == 13, report.summary()
    ops = run_variants(load_driver("reference"), representative_variants())
    assert not ops.failures, [str(f) for f in ops.failures[:20]]
    assert ops.skipped == 0 and ops.run > 1000, (ops.run, ops.skipped)


def test_cpu_driver_conforms() -> None:
    report = check_driver("cpu", variants=0)
    assert report.ok and not report.checks_skipped, report.summary()
    ops = run_variants(load_driver("cpu"), representative_variants())
    assert not ops.failures, [str(f) for f in ops.failures[:20]]
    assert ops.run > 300, (ops.run, ops.skipped)


def test_acme_plugin_conforms(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(VENDOR)
    monkeypatch.setenv("PYTHONPATH", VENDOR)
    sys.modules.pop("acme_npu", None)
    report = check_driver("acme_npu:make_driver")
    assert report.ok and report.variants_run > 20, report.summary()
