"""Every conformance case variant through a runtime on ``drivers=["litert"]``: what litert
takes runs on it in a worker (as its own step), the rest falls back to the reference driver;
every result within the kit's tolerances (a driver's: quantised outputs within NNAPI's one
step)."""

from __future__ import annotations

import warnings
from typing import Any

import anyio
import pytest

import nnrt
from nnrt.testing import check_variant, expand
from nnrt.testing.cases import all_cases
from nnrt.testing.check import build

pytest.importorskip("ai_edge_litert", reason="ai-edge-litert has no wheel for this platform")

from nnrt.drivers.litert.support import unsupported_reason


@pytest.mark.timeout(600)  # ~9,100 variants through a worker: ~1 min idle, more on a busy VM
def test_every_conformance_variant_passes_with_litert_first() -> None:
    variants = [v for case in all_cases() for v in expand(case)]
    results: dict[str, tuple[Any, ...]] = {}
    taken = 0

    async def run_all() -> None:
        nonlocal taken
        async with nnrt.Runtime(drivers=["litert"], workers=1) as rt:
            for variant in variants:
                model, feed = build(variant)
                on_litert = unsupported_reason(model, 0) is None
                taken += on_litert
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        compiled = await rt.compile(model)
                    steps = [s.driver for s in compiled.placement().steps]
                    assert steps == (["litert"] if on_litert else ["reference"]), steps
                    outputs = await compiled.execute(feed)
                    await compiled.release()
                except Exception as exc:  # checked below, against the reference's verdict
                    results[variant.id] = ("raised", exc)
                    continue
                results[variant.id] = ("ran", [o.copy() for o in outputs])

    anyio.run(run_all)
    failures = []
    for variant in variants:
        kind, value = results[variant.id]
        try:
            if kind == "raised":
                raise AssertionError(f"{variant.id}: {value!r:.300}")
            check_variant(variant, lambda model, feed, got=value: got, driver=True)
        except AssertionError as exc:
            failures.append(str(exc)[:300])
    assert taken > 3000
    assert not failures, f"{len(failures)} of {len(variants)} variants failed:\n" + "\n".join(
        failures[:20])
