"""Whether a batcher sends a due batch whole to one worker or spreads it: decided by trying.

Spreading the requests that are due over every free worker (two half batches at once on two
workers) doubles the throughput of a compute-bound model, whose rows cost the same in any
batch. For others it is the wrong call: a model whose cost is mostly reading its weights (an
MLP) reads them twice, and a light one (silero VAD) leaves the client, which binds, merges and
splits every request, less CPU than it needs. Measured here (docs/benchmarks.md): a
transformer block 0.7x of unbatched throughput whole and 1.3x spread, magika 0.5x and 0.9x;
silero VAD 1.5x whole and 1.1x spread, a 32 MiB MLP 3.4x and 2.8x. No per-model figure
known before running tells them apart, so the batcher measures, as the worker pools do for
packing (:class:`~nnrt.runtime.backends.steering.Steering`, whose decision rule it reuses):
rows completed per second over windows of :data:`WINDOW_EXECUTIONS` batched executions, now
and then one window in the other mode, a switch after two clear wins.
"""

from __future__ import annotations

from nnrt.runtime.backends.steering import Steering

__all__ = ["WINDOW_EXECUTIONS", "Spreading"]

#: Batched executions per measurement window.
WINDOW_EXECUTIONS = 8


class Spreading:
    """The whole-or-spread decision of one batcher (:attr:`whole`), fed each execution's rows
    as it completes (:meth:`executed`)."""

    __slots__ = ("_phase", "_rates", "_rows", "_runs", "_started", "steering", "whole")

    def __init__(self) -> None:
        #: Trials and their outcomes; its ``packing`` is "whole" (the default mode).
        self.steering = Steering(packing=True)
        #: Whether the next batches go whole to one worker (else spread over the free ones).
        self.whole = True
        self._phase = "window"  # "window", then around a trial "trial" and "after"
        self._rates: list[float] = []
        self._rows = 0
        self._runs = 0
        self._started: float | None = None

    def executed(self, rows: int, now: float) -> None:
        """One batched execution of ``rows`` rows completed at ``now`` (monotonic seconds)."""
        if self._started is None:
            self._started = now  # the first window starts with traffic
            return
        self._rows += rows
        self._runs += 1
        if self._runs < WINDOW_EXECUTIONS:
            return
        rate = self._rows / max(now - self._started, 1e-9)
        self._rows = self._runs = 0
        self._started = now
        steering = self.steering
        if self._phase == "window":
            if steering.trial_due(now):
                self._rates = [rate]
                self._phase, self.whole = "trial", not steering.packing
        elif self._phase == "trial":
            self._rates.append(rate)
            self._phase, self.whole = "after", steering.packing
        else:
            before, trial = self._rates
            steering.decide(before, trial, rate, now)
            self._phase, self.whole = "window", steering.packing
