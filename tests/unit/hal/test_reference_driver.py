"""The reference driver computes exactly what ``nnrt.reference.run`` computes, errors included.

Every conformance case variant runs on both; outputs must be bitwise equal (same dtype and
shape) and failures the same exception type with the same message. Mutated inputs drive the
data-dependent error paths (bad indices, division by zero, shape mismatches).

This is the one run of every variant through the reference driver's HAL methods: it also checks
what the conformance kit's per-variant run does (every operation supported, the caller's inputs
left alone), so ``check_driver("reference")`` runs a representative subset
(tests/conformance/test_drivers.py).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

import nnrt
from nnrt.reference.driver import ReferenceDriver
from nnrt.testing import CaseVariant, build, expand
from nnrt.testing.cases import all_cases

VARIANTS = [v for case in all_cases() for v in expand(case)]
DRIVER = ReferenceDriver()


def _outcome(fn: Callable[[], Sequence[Any]]) -> tuple[str, Any]:
    try:
        return "ok", list(fn())
    except nnrt.NnrtError as exc:
        return type(exc).__name__, str(exc)


def _compare(where: str, model: nnrt.Model, feed: list[Any]) -> None:
    expected = _outcome(lambda: nnrt.reference.run(model, feed))
    given = [np.array(v, copy=True) if isinstance(v, np.ndarray) else v for v in feed]
    with DRIVER.prepare(model) as prepared:
        actual = _outcome(lambda: prepared.execute(given).outputs)
    for k, (after, before) in enumerate(zip(given, feed, strict=True)):
        if isinstance(before, np.ndarray):
            assert np.array_equal(after, before, equal_nan=before.dtype.kind == "f"), (
                f"{where}: execute changed the caller's input {k}")
    assert actual[0] == expected[0], f"{where}: driver {actual}, reference.run {expected}"
    if expected[0] != "ok":
        assert actual[1] == expected[1], f"{where}: messages differ"
        return
    for j, (got, want) in enumerate(zip(actual[1], expected[1], strict=True)):
        assert got.dtype == want.dtype and got.shape == want.shape, f"{where} output {j}"
        assert np.array_equal(got, want, equal_nan=got.dtype.kind == "f"), f"{where} output {j}"


def test_every_conformance_variant_matches_reference_run() -> None:
    assert len(VARIANTS) > 1000
    for variant in VARIANTS:
        model, feed = build(variant)
        assert all(DRIVER.supported_operations(model)), variant.id
        _compare(variant.id, model, feed)


def _mutated_feeds(rng: random.Random, variant: CaseVariant, feed: list[Any]
                   ) -> list[list[Any]]:
    feeds = []
    for k, value in enumerate(feed):
        arr = np.asarray(value)
        if arr.dtype.kind in "iu" and arr.size:
            scaled = arr.astype(np.int64) * -7 + rng.choice([0, 3])  # out-of-range indices
            feeds.append([*feed[:k], scaled.astype(arr.dtype), *feed[k + 1:]])
            feeds.append([*feed[:k], np.zeros_like(arr), *feed[k + 1:]])
        elif arr.dtype.kind == "f" and arr.size:
            feeds.append([*feed[:k], np.full_like(arr, rng.choice([0.0, -1.0, np.inf])),
                          *feed[k + 1:]])
        if arr.ndim:
            feeds.append([*feed[:k], np.zeros((*arr.shape, 2), arr.dtype), *feed[k + 1:]])
    return feeds


@pytest.mark.parametrize("variant_name", ["base", "dynamic_output"])
def test_mutated_inputs_fail_or_succeed_alike(variant_name: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # a mutated WHILE input (a zero to double, an infinite limit) loops until the bound: the
    # same error on both sides after 1,000 iterations as after the default 100,000
    monkeypatch.setattr(nnrt.ops.control, "MAX_WHILE_ITERATIONS", 1_000)
    rng = random.Random(f"nnrt-driver-identity-{variant_name}")
    compared = 0
    for variant in VARIANTS:
        if variant.variant != variant_name or rng.random() > 0.5:
            continue
        model, feed = build(variant)
        for mutated in _mutated_feeds(rng, variant, feed):
            _compare(f"{variant.id} (mutated)", model, mutated)
            compared += 1
    assert compared > 100
