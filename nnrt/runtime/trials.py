"""Which of two ways a batcher serves a model serves more: decided by trying.

A batcher (:mod:`nnrt.runtime.batcher`) makes two such decisions:

* **batched or direct**: merging requests pays where a batch is cheaper per row than single
  executions (a model mostly reading its weights, a light one dominated by the per-request
  overhead). A compute-bound model costs the same per row in any batch, and there the
  batcher's waits, merges and splits only lose against sending each request straight to a
  free worker as an unbatched model would (magika: 0.4-0.9x of unbatched throughput batched).
  Direct mode restores unbatched throughput: "never slower" than without ``batching=``.
* **whole or spread** (while batched): spreading the requests that are due over every free
  worker (two half batches at once on two workers) serves a compute-bound model more than one
  whole batch; for others it is the wrong call: a model whose cost is mostly reading its
  weights (an MLP) reads them twice, and a light one (silero VAD) leaves the client, which
  binds, merges and splits every request, less CPU than it needs. Measured here
  (docs/benchmarks.md): a transformer block 0.7x of unbatched throughput whole and 1.3x
  spread, magika 0.5x and 0.9x; silero VAD 1.5x whole and 1.1x spread, a 32 MiB MLP 3.4x and
  2.8x.

No per-model figure known before running tells these apart, so the batcher measures, as the
worker pools do for packing (:class:`~nnrt.runtime.backends.steering.Steering`, whose
decision rule it reuses): rows completed per second over windows of executions, now and then
one window in the other mode, a switch after two clear wins. A trial of direct mode costs a
window of slow requests where batching pays (a 32 MiB MLP: 3x slower, its p99 latency ten
times longer in a short run), so that decision first asks :class:`BatchCosts`: once
executions of sizes at least four times apart have been timed, a per-row cost that does not
fall with the batch size settles it for direct mode, one that falls clearly for batching;
only the cases in between are tried.
"""

from __future__ import annotations

from nnrt.runtime.backends.steering import Steering

__all__ = ["BATCHED_AT", "DIRECT_AT", "SAMPLES", "WINDOW_EXECUTIONS", "BatchCosts", "ModeTrials"]

#: Executions per measurement window (the whole-or-spread decision's).
WINDOW_EXECUTIONS = 8
#: :meth:`BatchCosts.ratio` at or above which batching saves nothing: direct, without trials
#: (measured: magika 1.1-2.3, its rows cost more in large batches).
DIRECT_AT = 0.9
#: :meth:`BatchCosts.ratio` at or below which batching clearly pays: batched, without trials
#: of direct mode (measured: a 32 MiB MLP 0.3, silero VAD 0.25).
BATCHED_AT = 0.6
#: Executions of a size, past its first, whose fastest :class:`BatchCosts` trusts (one slow
#: execution alone must not settle the decision: it is not tried again).
SAMPLES = 3
#: Execution sizes :class:`BatchCosts` keeps (a batch's sizes are few: its preferred ones).
_MAX_SIZES = 4096


class ModeTrials:
    """One two-way decision of a batcher: :attr:`first` (the default mode) or the other,
    fed each execution's rows as it completes (:meth:`executed`).

    A window ends after ``window_executions`` executions that completed ``window_rows`` rows
    or more (the batched-or-direct decision counts single requests against whole batches, so
    its windows are measured in rows).
    """

    __slots__ = ("_min_rows", "_min_runs", "_phase", "_rates", "_rows", "_runs", "_started",
                 "first", "steering")

    def __init__(self, *, window_executions: int = WINDOW_EXECUTIONS,
                 window_rows: int = 0) -> None:
        #: Trials and their outcomes; its ``packing`` is :attr:`first` outside trials.
        self.steering = Steering(packing=True)
        #: Whether the next executions use the first mode (else the other one).
        self.first = True
        self._min_runs = window_executions
        self._min_rows = window_rows
        self._phase = "window"  # "window", then around a trial "trial" and "after"
        self._rates: list[float] = []
        self._rows = 0
        self._runs = 0
        self._started: float | None = None

    def fix(self, first: bool | None) -> None:
        """Use the first mode (True) or the other (False) from now on without trials, or
        (None) go back to deciding by trials."""
        self.steering.fix(first)
        self.first = self.steering.packing
        self._phase = "window"
        self.pause()

    def pause(self) -> None:
        """Drop the window in progress (its executions stopped for a while): the next
        execution starts a new one."""
        self._rows = self._runs = 0
        self._started = None

    def executed(self, rows: int, now: float) -> None:
        """One execution of ``rows`` rows completed at ``now`` (monotonic seconds)."""
        if self._started is None:
            self._started = now  # the first window starts with traffic
            return
        self._rows += rows
        self._runs += 1
        if self._runs < self._min_runs or self._rows < self._min_rows:
            return
        rate = self._rows / max(now - self._started, 1e-9)
        self._rows = self._runs = 0
        self._started = now
        steering = self.steering
        if self._phase == "window":
            if steering.trial_due(now):
                self._rates = [rate]
                self._phase, self.first = "trial", not steering.packing
        elif self._phase == "trial":
            self._rates.append(rate)
            self._phase, self.first = "after", steering.packing
        else:
            before, trial = self._rates
            steering.decide(before, trial, rate, now)
            self._phase, self.first = "window", steering.packing


class BatchCosts:
    """The fastest time seen per execution size (rows, padded), from which
    :meth:`ratio` tells whether a row costs less in a larger batch.

    The first execution of a size is not counted (for a model prepared per input shape it
    includes the prepare), and the fastest of the others, not their mean: any may have waited
    behind other work on its worker; the fastest is the closest to the execution's own cost. A
    size counts once :data:`SAMPLES` executions past its first were timed.
    """

    __slots__ = ("_counts", "_fastest")

    def __init__(self) -> None:
        self._fastest: dict[int, float] = {}
        #: Executions per size so far (the first one included).
        self._counts: dict[int, int] = {}

    def record(self, rows: int, seconds: float) -> None:
        """An execution of ``rows`` rows took ``seconds`` (dispatch to results)."""
        if rows < 1 or seconds <= 0:
            return
        count = self._counts.get(rows, 0)
        if count == 0 and len(self._counts) >= _MAX_SIZES:
            return
        self._counts[rows] = count + 1
        if count == 0:
            return  # a first execution: perhaps its prepare inside
        best = self._fastest.get(rows)
        if best is None or seconds < best:
            self._fastest[rows] = seconds

    def _timed(self) -> list[int]:
        """The sizes timed often enough to trust their fastest time, in increasing order."""
        return sorted(r for r, n in self._counts.items() if n > SAMPLES)

    def needs_small(self) -> bool:
        """Whether small executions (one row) would make :meth:`ratio` known: a size of 4 or
        more is timed, none a quarter of it or less."""
        timed = self._timed()
        return bool(timed) and timed[-1] >= 4 and timed[0] * 4 > timed[-1]

    def ratio(self) -> float | None:
        """The per-row cost of the largest size timed over that of the smallest, when the two
        are at least four times apart (else None: not known yet). About 1: a row costs the
        same in any batch (batching saves nothing); well below 1: batching pays."""
        timed = self._timed()
        if len(timed) < 2 or timed[-1] < 4 * timed[0]:
            return None
        small, large = timed[0], timed[-1]
        return (self._fastest[large] / large) / (self._fastest[small] / small)
