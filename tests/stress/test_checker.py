"""The stress checker: result comparison, error classification, tallies and latencies."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from nnrt.errors import BadData, DeadlineMissed, OpFailed, UnavailableDevice
from nnrt.stress.client import dump_tasks
from nnrt.stress.outcomes import LatencyHistogram, Tally, classify_error, results_match

ALLOWED = (UnavailableDevice, DeadlineMissed)


def test_exact_match_needs_identical_values() -> None:
    want = [np.array([[1.0, 2.0]], np.float32)]
    assert results_match([want[0].copy()], want, exact=True) is None
    nudged = want[0] + np.float32(1e-7) * want[0]
    assert nudged.tolist() != want[0].tolist()
    problem = results_match([nudged], want, exact=True)
    assert problem is not None and "output 0: values differ" in problem
    assert results_match([nudged], want, exact=False) is None  # within allclose


def test_allclose_still_catches_real_differences() -> None:
    want = [np.zeros(4, np.float32)]
    problem = results_match([np.array([0, 0, 0.01, 0], np.float32)], want, exact=False)
    assert problem is not None and "max abs difference 0.01" in problem


@pytest.mark.parametrize(("actual", "message"), [
    ([], "0 outputs, expected 1"),
    ([np.zeros((2, 2), np.float32)], "got float32[2, 2], expected float32[4]"),
    ([np.zeros(4, np.float64)], "got float64[4], expected float32[4]"),
    (["not an array"], "got str, expected an ndarray"),
])
def test_shape_dtype_and_count_mismatches_are_named(actual: list[object], message: str) -> None:
    problem = results_match(actual, [np.zeros(4, np.float32)], exact=False)
    assert problem is not None and message in problem


def test_nan_matches_nan() -> None:
    want = [np.array([np.nan, 1.0], np.float32)]
    assert results_match([want[0].copy()], want, exact=True) is None


def test_classify_error() -> None:
    assert classify_error(UnavailableDevice("worker died"), ALLOWED) == (
        "error", "UnavailableDevice")
    assert classify_error(DeadlineMissed("late"), ALLOWED) == ("error", "DeadlineMissed")
    # valid requests must never get these, nor a non-nnrt exception
    assert classify_error(BadData("pool 3 already mapped"), ALLOWED) == ("wrong", "BadData")
    assert classify_error(OpFailed("boom"), ALLOWED) == ("wrong", "OpFailed")
    assert classify_error(KeyError("x"), ALLOWED) == ("wrong", "KeyError")
    assert classify_error(TimeoutError(), ALLOWED) == ("wrong", "TimeoutError")


def test_tally_counts_and_merges() -> None:
    a, b = Tally(), Tally()
    a.record("execute", "ok", latency=0.001)
    a.record("execute", "error", latency=0.002, kind="UnavailableDevice")
    b.record("execute", "lost")
    b.record("cancel", "wrong", kind="BadData", detail="BadData: pool 3 is already mapped")
    b.record("cancel", "ok", latency=0.5)
    a.merge(b)
    assert a.total() == 5
    assert (a.total("ok"), a.total("error"), a.total("lost"), a.total("wrong")) == (2, 1, 1, 1)
    assert a.outcomes["execute"] == {"ok": 1, "error": 1, "lost": 1, "wrong": 0}
    assert a.errors == {"UnavailableDevice": 1}
    assert a.wrong == {"cancel: BadData": ["BadData: pool 3 is already mapped"]}
    assert a.latency.count == 3  # lost and wrong requests have no latency
    with pytest.raises(ValueError, match="unknown outcome"):
        a.record("execute", "maybe")


def test_tally_survives_json_and_rejects_garbage() -> None:
    tally = Tally()
    for k in range(100):
        tally.record("execute", "ok", latency=(k + 1) * 1e-4)
    tally.record("compile", "wrong", kind="CacheError", detail="busy")
    again = Tally.from_json(json.loads(json.dumps(tally.to_json())))
    assert again.outcomes == tally.outcomes and again.wrong == tally.wrong
    assert again.latency.buckets == tally.latency.buckets
    good = tally.to_json()
    for bad in ([], {**good, "outcomes": {"execute": {"ok": -1, "error": 0, "lost": 0,
                                                      "wrong": 0}}},
                {**good, "outcomes": {"execute": {"ok": 1}}},
                {**good, "errors": {"BadData": True}},
                {**good, "latency": {"x": 1}},
                {**good, "wrong": {"k": [1]}}):
        with pytest.raises(ValueError):
            Tally.from_json(bad)


def test_latency_percentiles_within_five_percent() -> None:
    hist = LatencyHistogram()
    assert hist.percentile(50) is None
    values = [k * 1e-4 for k in range(1, 1001)]  # 0.1 ms .. 100 ms
    for v in values:
        hist.add(v)
    for p in (50, 99):
        exact = values[int(len(values) * p / 100) - 1]
        got = hist.percentile(p)
        assert got is not None and exact <= got <= exact * 1.05 ** 2
    tiny = LatencyHistogram()
    tiny.add(0.0)
    assert tiny.percentile(50) == LatencyHistogram.BASE


def test_a_client_asked_with_sigusr1_writes_what_its_tasks_await(
        capsys: pytest.CaptureFixture[str]) -> None:
    """What the harness gets from a client still running after the duration (its log)."""
    async def stuck(event: asyncio.Event) -> None:
        await event.wait()

    async def main() -> None:
        event = asyncio.Event()
        task = asyncio.get_running_loop().create_task(stuck(event), name="stuck-loop")
        await asyncio.sleep(0)
        dump_tasks()
        event.set()
        await task

    asyncio.run(main())
    err = capsys.readouterr().err
    # the whole chain: the task's coroutine, what it awaits (asyncio.Event.wait), the future
    chain = err.split("task stuck-loop:")[1].splitlines()
    assert chain[1].endswith(" in stuck") and "test_checker.py" in chain[1], err
    assert chain[2].endswith(" in wait") and "locks.py" in chain[2], err
    assert chain[3].strip().startswith("awaits"), err
