"""Per-model metrics: histogram buckets and quantile estimates, requests per second, errors by
kind, the registry of live models, and snapshots read while another thread records."""

from __future__ import annotations

import asyncio
import gc
import itertools
import math
import random
import threading

import pytest

from nnrt.errors import BadData, DeadlineMissed
from nnrt.runtime.metrics import (
    BATCH_BOUNDS,
    MAX_ERROR_KINDS,
    RATE_WINDOW,
    SECONDS_BOUNDS,
    Histogram,
    MetricsRegistry,
    ModelMetrics,
    error_kind,
)


class Clock:
    """A clock the test steps (seconds)."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_bounds_span_50us_to_60s_and_batches_1_to_1024() -> None:
    assert SECONDS_BOUNDS[0] == 5e-5 and SECONDS_BOUNDS[-1] == 60.0
    assert all(a < b for a, b in itertools.pairwise(SECONDS_BOUNDS))
    assert tuple(float(2**k) for k in range(11)) == BATCH_BOUNDS
    for bad in ((), (1.0, 1.0), (2.0, 1.0), (1.0, math.inf)):
        with pytest.raises(ValueError, match="increasing"):
            Histogram(bad)


def test_observations_land_in_the_first_bucket_they_do_not_exceed() -> None:
    h = Histogram((1.0, 2.0, 4.0))
    for value in (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 100.0):
        h.observe(value)
    s = h.snapshot()
    assert s.bounds == (1.0, 2.0, 4.0)
    assert s.counts == (2, 4, 6)  # cumulative: <= 1, <= 2, <= 4
    assert s.count == 7  # the +Inf bucket holds 100 too
    assert s.sum == pytest.approx(112.0)
    assert s.mean == pytest.approx(16.0)


def test_quantiles_are_estimated_within_their_bucket() -> None:
    rng = random.Random(7)
    values = [rng.lognormvariate(math.log(0.002), 1.0) for _ in range(20_000)]
    h = Histogram(SECONDS_BOUNDS)
    for v in values:
        h.observe(v)
    s = h.snapshot()
    ordered = sorted(values)
    for q in (0.1, 0.5, 0.9, 0.99):
        exact = ordered[int(q * len(ordered)) - 1]
        estimate = s.quantile(q)
        # the estimate lies in the bucket holding the exact quantile
        upper = next(b for b in SECONDS_BOUNDS if b >= exact)
        lower = max((b for b in SECONDS_BOUNDS if b < exact), default=0.0)
        assert lower <= estimate <= upper, (q, exact, estimate)


def test_quantile_interpolates_linearly_inside_a_bucket() -> None:
    h = Histogram((1.0, 2.0))
    for _ in range(4):
        h.observe(1.5)  # four in (1, 2]
    s = h.snapshot()
    assert s.quantile(0.5) == pytest.approx(1.5)
    assert s.quantile(1.0) == pytest.approx(2.0)
    assert s.quantile(0.25) == pytest.approx(1.25)
    h.observe(50.0)  # in +Inf: the last finite bound
    assert h.snapshot().quantile(1.0) == 2.0
    assert math.isnan(Histogram((1.0,)).snapshot().quantile(0.5))
    with pytest.raises(ValueError, match="q must"):
        s.quantile(1.5)


def test_requests_errors_and_executions_are_counted() -> None:
    m = ModelMetrics("m", "reference", clock=Clock())
    m.request_done(0.001, None)
    m.request_done(0.002, BadData("bad"))
    m.request_done(0.003, DeadlineMissed("late"))
    m.request_done(0.004, BadData("bad again"))
    m.request_done(0.005, asyncio.CancelledError())
    m.execution_done(3, [0.0001, 0.0002, 0.0003], 0.01)
    m.execution_done(1, [0.0], 0.002)
    s = m.snapshot()
    assert (s.name, s.driver, s.requests) == ("m", "reference", 5)
    assert s.errors == {"BadData": 2, "DeadlineMissed": 1, "Cancelled": 1}
    assert s.failed == 4
    assert s.latency.count == 5 and s.latency.sum == pytest.approx(0.015)
    assert s.queue_wait.count == 4 and s.queue_wait.sum == pytest.approx(0.0006)
    assert s.batch_size.count == 2 and s.batch_size.sum == 4
    assert s.batch_size.counts[:3] == (1, 1, 2)  # sizes 1 and 3: <= 1, <= 2, <= 4
    assert s.execution.count == 2 and s.execution.sum == pytest.approx(0.012)


def test_error_kinds_are_class_names_and_bounded() -> None:
    assert error_kind(BadData("x")) == "BadData"
    assert error_kind(asyncio.CancelledError()) == "Cancelled"
    m = ModelMetrics("m")
    kinds = [type(f"Error{k}", (Exception,), {}) for k in range(MAX_ERROR_KINDS + 5)]
    for kind in kinds:
        m.request_done(0.0, kind())
    errors = m.snapshot().errors
    assert len(errors) == MAX_ERROR_KINDS + 1
    assert errors["other"] == 5
    assert sum(errors.values()) == len(kinds)


def test_requests_per_second_over_the_last_ten_seconds() -> None:
    clock = Clock(1000.0)
    m = ModelMetrics("m", clock=clock)
    assert m.requests_per_second() == 0.0
    for second in range(30):  # 20 requests per second for 30 s
        for k in range(20):
            clock.now = 1000.0 + second + k / 20
            m.request_done(0.001, None)
    clock.now = 1030.0
    assert m.requests_per_second() == pytest.approx(20.0, rel=0.05)
    clock.now = 1035.5  # nothing for 5.5 s: about half the window is empty
    assert m.requests_per_second() == pytest.approx(20.0 * 5 / (RATE_WINDOW + 0.5), rel=0.15)
    clock.now = 1100.0  # long idle: old seconds of the ring no longer count
    assert m.requests_per_second() == 0.0
    young = ModelMetrics("young", clock=clock)  # made 0.5 s ago: rate over its 0.5 s
    clock.now = 1100.5
    for _ in range(10):
        young.request_done(0.001, None)
    assert young.requests_per_second() == pytest.approx(20.0)


def test_registry_names_are_unique_and_follow_their_owners() -> None:
    class Owner:
        def __init__(self) -> None:
            self.metrics = ModelMetrics("")

    registry = MetricsRegistry()
    a, b, c = Owner(), Owner(), Owner()
    assert registry.add(a, "net") == "net"
    assert registry.add(b, "net") == "net#2"
    assert registry.add(c, "net") == "net#3"
    assert (a.metrics.name, b.metrics.name) == ("net", "net#2")
    assert sorted(registry.snapshot()) == ["net", "net#2", "net#3"]
    registry.remove(b)  # released: gone, and its name free again
    assert sorted(registry.snapshot()) == ["net", "net#3"]
    d = Owner()
    assert registry.add(d, "net") == "net#2"
    del c
    gc.collect()  # collected without release: gone too
    assert sorted(registry.snapshot()) == ["net", "net#2"]
    registry.remove(Owner())  # never added: nothing happens
    assert len(registry) == 2


def test_snapshots_read_from_another_thread_are_consistent() -> None:
    m = ModelMetrics("m")
    stop = threading.Event()
    seen: list[str] = []

    def read() -> None:
        while not stop.is_set():
            s = m.snapshot()
            for h in (s.latency, s.execution, s.batch_size):
                if list(h.counts) != sorted(h.counts) or (h.counts and h.counts[-1] > h.count):
                    seen.append(f"torn: {h}")

    reader = threading.Thread(target=read)
    reader.start()
    try:
        rng = random.Random(1)
        for _ in range(100_000):
            value = rng.random() * 0.01
            m.request_done(value, None)
            m.execution_done(rng.randint(1, 64), (value,), value)
    finally:
        stop.set()
        reader.join()
    assert seen == []
    final = m.snapshot()
    assert final.requests == final.latency.count == 100_000


def test_an_execute_sent_alone_records_what_a_batch_of_one_does() -> None:
    clock = Clock()
    alone, spelled_out = ModelMetrics("a", clock=clock), ModelMetrics("b", clock=clock)
    for seconds in (0.0001, 0.003, 0.003, 2.0, 99.0):
        alone.alone_done(seconds)
        spelled_out.request_done(seconds, None)
        spelled_out.execution_done(1, [0.0], seconds)
    a, b = alone.snapshot(), spelled_out.snapshot()
    assert (a.requests, a.errors, a.requests_per_second) == (
        b.requests, b.errors, b.requests_per_second)
    for field in ("latency", "queue_wait", "batch_size", "execution"):
        assert getattr(a, field) == getattr(b, field), field
    assert a.batch_size.counts[0] == a.queue_wait.counts[0] == 5
