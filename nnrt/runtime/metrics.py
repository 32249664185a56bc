"""Per compiled model metrics: latency, queue wait, batch size and execution time histograms,
requests, requests per second and errors by kind (``docs/runtime.md``, "Metrics").

Recording is on the path of every execute, so it is a few increments: :meth:`Histogram.observe`
finds its bucket with :func:`bisect.bisect_left` and adds to it; there is no lock (one event loop
records). Statistics may be read from another thread (a ``SyncRuntime``'s caller, an exporter):
a snapshot copies each list in one step and derives every count from the copied buckets, so
the invariants of the exposition (cumulative bucket counts never decrease, the ``+Inf`` bucket
equals the count) hold in every snapshot; at worst a concurrent observation is in the buckets
and not yet in the sum.

:class:`MetricsRegistry` holds the live compiled models of a runtime (or the forwarded models
of a service) by unique name, through weak references: a model collected without ``release()``
leaves the registry by itself.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import time
import weakref
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["BATCH_BOUNDS", "RATE_WINDOW", "SECONDS_BOUNDS", "Histogram", "HistogramSnapshot",
           "MetricsRegistry", "ModelMetrics", "ModelStatistics", "error_kind"]

#: Bucket upper bounds for durations in seconds: 50 µs to 60 s, log-spaced (1, 2.5, 5 per
#: decade). Observations above the last bound count in the ``+Inf`` bucket only.
SECONDS_BOUNDS: tuple[float, ...] = (
    5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25, 0.5, 1.0,
    2.5, 5.0, 10.0, 30.0, 60.0)

#: Bucket upper bounds for batch sizes: powers of two from 1 to 1024.
BATCH_BOUNDS: tuple[float, ...] = tuple(float(2**k) for k in range(11))

#: Seconds over which ``requests_per_second`` is computed.
RATE_WINDOW = 10

#: Error kinds counted per model at most; more distinct kinds count as ``"other"`` (a bounded
#: number of series for an exporter).
MAX_ERROR_KINDS = 32


@dataclass(frozen=True)
class HistogramSnapshot:
    """A histogram at one moment: ``counts[i]`` observations were ``<= bounds[i]``
    (cumulative, as Prometheus buckets), ``count`` in all (the ``+Inf`` bucket), ``sum`` their
    total."""

    bounds: tuple[float, ...]
    counts: tuple[int, ...]
    sum: float
    count: int

    def quantile(self, q: float) -> float:
        """An *estimate* of the ``q``-quantile (0 <= q <= 1): the bucket holding that rank is
        found from the counts, and the value interpolated linearly between the bucket's lower
        and upper bound (as Prometheus' ``histogram_quantile`` does). Accurate to a bucket's
        width only. Ranks in the ``+Inf`` bucket give the last finite bound; no observations
        give NaN."""
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"quantile: q must be within [0, 1], got {q!r}")
        if self.count == 0:
            return math.nan
        rank = q * self.count
        previous, lower = 0, 0.0
        for bound, cumulative in zip(self.bounds, self.counts, strict=True):
            if cumulative >= rank and cumulative > previous:
                return lower + (bound - lower) * (rank - previous) / (cumulative - previous)
            previous, lower = cumulative, bound
        return self.bounds[-1] if self.bounds else math.nan

    @property
    def mean(self) -> float:
        """The mean observation (NaN when there is none)."""
        return self.sum / self.count if self.count else math.nan


class Histogram:
    """Observations counted in fixed buckets (upper bounds ``bounds``, increasing), with
    their sum; see :class:`HistogramSnapshot`."""

    __slots__ = ("_counts", "_sum", "bounds")

    def __init__(self, bounds: Sequence[float]) -> None:
        checked = tuple(float(b) for b in bounds)
        if not checked or any(not math.isfinite(b) for b in checked) or any(
                a >= b for a, b in itertools.pairwise(checked)):
            raise ValueError("histogram bounds must be finite and strictly increasing")
        self.bounds = checked
        #: Observations per bucket (not cumulative); the last one is the ``+Inf`` bucket.
        self._counts = [0] * (len(checked) + 1)
        self._sum = 0.0

    def observe(self, value: float) -> None:
        """Count ``value`` in its bucket (the first bound it does not exceed)."""
        self._counts[bisect_left(self.bounds, value)] += 1
        self._sum += value

    def snapshot(self, first: int = 0, first_sum: float = 0.0) -> HistogramSnapshot:
        """The histogram now (consistent even while another thread observes), with ``first``
        more observations in the first bucket, summing to ``first_sum`` (counted elsewhere)."""
        per_bucket = self._counts.copy()  # one step: never a half-updated list
        per_bucket[0] += first
        total = self._sum + first_sum
        cumulative, running = [], 0
        for n in per_bucket[:-1]:
            running += n
            cumulative.append(running)
        return HistogramSnapshot(self.bounds, tuple(cumulative), total, running + per_bucket[-1])


def error_kind(error: BaseException) -> str:
    """What an error counts as: its class name (``BadData``, ``DeadlineMissed``), and
    ``Cancelled`` for a cancelled execute (asyncio's ``CancelledError``, trio's ``Cancelled``)."""
    if isinstance(error, asyncio.CancelledError):
        return "Cancelled"
    return type(error).__name__


@dataclass(frozen=True)
class ModelStatistics:
    """One compiled model's metrics at one moment (``rt.statistics().models[name]``).

    ``requests`` counts ``execute`` calls that finished (successfully or not), ``errors`` those
    that raised, by kind (:func:`error_kind`). ``requests_per_second`` is the mean rate over the
    last :data:`RATE_WINDOW` seconds (fewer for a model younger than that), from a ring of
    per-second counts. Histograms: ``latency`` is each request's end-to-end seconds in
    ``execute``; ``queue_wait`` the seconds a request waited to join an execution (a batch; 0
    for an execute sent alone: the wait for a worker is part of the execution); ``batch_size``
    the rows (items of its requests, padding excluded) per execution sent to the workers;
    ``execution`` each such execution's seconds (executions that returned results).
    """

    name: str
    driver: str
    requests: int
    errors: dict[str, int] = field(default_factory=dict)
    requests_per_second: float = 0.0
    latency: HistogramSnapshot = field(default_factory=lambda: Histogram(
        SECONDS_BOUNDS).snapshot())
    queue_wait: HistogramSnapshot = field(default_factory=lambda: Histogram(
        SECONDS_BOUNDS).snapshot())
    batch_size: HistogramSnapshot = field(default_factory=lambda: Histogram(
        BATCH_BOUNDS).snapshot())
    execution: HistogramSnapshot = field(default_factory=lambda: Histogram(
        SECONDS_BOUNDS).snapshot())

    @property
    def failed(self) -> int:
        """Requests that raised, every kind."""
        return sum(self.errors.values())


class ModelMetrics:
    """The metrics one compiled model records; :meth:`snapshot` reads them
    (:class:`ModelStatistics`). ``clock`` is ``time.monotonic`` unless a test steps time."""

    __slots__ = ("__weakref__", "_alone", "_clock", "_errors", "_ring", "_seconds", "_started",
                 "batch_size", "driver", "execution", "latency", "name", "queue_wait",
                 "requests")

    def __init__(self, name: str, driver: str = "", *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.name = name
        #: The driver running the model ("" while unknown), set by its owner.
        self.driver = driver
        self.latency = Histogram(SECONDS_BOUNDS)
        self.queue_wait = Histogram(SECONDS_BOUNDS)
        self.batch_size = Histogram(BATCH_BOUNDS)
        self.execution = Histogram(SECONDS_BOUNDS)
        self.requests = 0
        self._errors: dict[str, int] = {}
        #: Executions sent alone (:meth:`alone_done`): each a batch of 1 that waited 0 s.
        self._alone = 0
        self._clock = clock
        self._started = clock()
        #: Requests finished per whole second: slot ``s % len`` counts second ``_seconds[slot]``.
        self._ring = [0] * (RATE_WINDOW + 1)
        self._seconds = [-1] * (RATE_WINDOW + 1)

    def request_done(self, latency: float, error: BaseException | None,
                     now: float | None = None) -> None:
        """One ``execute`` call finished after ``latency`` seconds, raising ``error`` (or not);
        ``now``: when (the clock's time, if the caller has it: saves reading the clock)."""
        self.requests += 1
        histogram = self.latency  # Histogram.observe inlined: this runs per execute
        histogram._counts[bisect_left(histogram.bounds, latency)] += 1
        histogram._sum += latency
        self._tick(now)
        if error is not None:
            self._count_error(error)

    def _tick(self, now: float | None) -> None:
        """Count one request in the current second of the rate's ring."""
        second = int(self._clock() if now is None else now)
        slot = second % (RATE_WINDOW + 1)
        if self._seconds[slot] != second:
            self._ring[slot] = 0
            self._seconds[slot] = second
        self._ring[slot] += 1

    def _count_error(self, error: BaseException) -> None:
        kind = error_kind(error)
        errors = self._errors
        if kind not in errors and len(errors) >= MAX_ERROR_KINDS:
            kind = "other"
        errors[kind] = errors.get(kind, 0) + 1

    def execution_done(self, size: int, waits: Sequence[float], seconds: float) -> None:
        """One execution of ``size`` rows (the items of its requests, padding excluded: one
        per single-item request) was sent to a worker and returned after ``seconds``;
        ``waits`` are the seconds each of its requests waited to join it."""
        histogram = self.batch_size  # Histogram.observe inlined: this runs per execution
        histogram._counts[bisect_left(histogram.bounds, size)] += 1
        histogram._sum += size
        histogram = self.queue_wait
        counts, bounds = histogram._counts, histogram.bounds
        for wait in waits:
            counts[bisect_left(bounds, wait)] += 1
            histogram._sum += wait
        histogram = self.execution
        histogram._counts[bisect_left(histogram.bounds, seconds)] += 1
        histogram._sum += seconds

    def alone_done(self, seconds: float, now: float | None = None) -> None:
        """An ``execute`` sent alone (no batch) returned after ``seconds``: what
        ``request_done(seconds, None, now)`` and ``execution_done(1, [0.0], seconds)`` record,
        in one step (this is the path of every unbatched execute)."""
        self.requests += 1
        index = bisect_left(SECONDS_BOUNDS, seconds)
        histogram = self.latency
        histogram._counts[index] += 1
        histogram._sum += seconds
        histogram = self.execution
        histogram._counts[index] += 1
        histogram._sum += seconds
        self._alone += 1
        self._tick(now)

    def requests_per_second(self) -> float:
        """Requests finished per second over the last :data:`RATE_WINDOW` seconds."""
        now = self._clock()
        second = int(now)
        ring, seconds = self._ring.copy(), self._seconds.copy()
        total = sum(n for n, s in zip(ring, seconds, strict=True)
                    if second - RATE_WINDOW <= s <= second)
        span = min(RATE_WINDOW + (now - second), now - self._started)
        return total / span if span > 0 else 0.0

    def snapshot(self) -> ModelStatistics:
        """The metrics now."""
        alone = self._alone
        return ModelStatistics(
            self.name, self.driver, self.requests, self._errors.copy(),
            self.requests_per_second(), self.latency.snapshot(),
            self.queue_wait.snapshot(alone), self.batch_size.snapshot(alone, float(alone)),
            self.execution.snapshot())


class Measured(Protocol):
    """What a registry holds: an object with its metrics (a ``CompiledModel``)."""

    @property
    def metrics(self) -> ModelMetrics: ...


class MetricsRegistry:
    """Live measured objects by unique name, held weakly (``RuntimeCore.models``)."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[str, weakref.ref[Measured]] = {}

    def add(self, owner: Measured, name: str) -> str:
        """Register ``owner`` under ``name``, made unique (``name#2``, ``name#3``, … while the
        name is taken); sets and returns its metrics' name."""
        entries = self._entries
        unique, n = name, 1
        while (taken := entries.get(unique)) is not None and taken() is not None:
            n += 1
            unique = f"{name}#{n}"

        def gone(ref: weakref.ref[Measured], key: str = unique) -> None:
            if entries.get(key) is ref:
                entries.pop(key, None)

        entries[unique] = weakref.ref(owner, gone)
        owner.metrics.name = unique
        return unique

    def remove(self, owner: Measured) -> None:
        """Take ``owner`` out (released); no-op if it is not registered."""
        name = owner.metrics.name
        ref = self._entries.get(name)
        if ref is not None and ref() is owner:
            del self._entries[name]

    def owners(self) -> list[Measured]:
        """The live owners, in registration order."""
        return [o for ref in self._entries.copy().values() if (o := ref()) is not None]

    def snapshot(self) -> dict[str, ModelStatistics]:
        """Every live owner's statistics, by name."""
        return {stats.name: stats for stats in (o.metrics.snapshot() for o in self.owners())}

    def __len__(self) -> int:
        return len(self.owners())
