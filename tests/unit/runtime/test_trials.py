"""A batcher's two-way decisions: windows of executions, trials, two wins to switch."""

from __future__ import annotations

from nnrt.runtime.trials import BATCHED_AT, DIRECT_AT, WINDOW_EXECUTIONS, BatchCosts, ModeTrials


def _window(spreading: ModeTrials, rows: int, seconds: float, now: float) -> float:
    """One window of ``WINDOW_EXECUTIONS`` executions of ``rows`` rows, ``seconds`` long."""
    for k in range(WINDOW_EXECUTIONS):
        spreading.executed(rows, now + seconds * (k + 1) / WINDOW_EXECUTIONS)
    return now + seconds


def _run(spreading: ModeTrials, spread_rate: float, whole_rate: float, windows: int) -> None:
    now = 0.0
    spreading.executed(1, now)  # the first execution only starts the clock
    for _ in range(windows):
        rate = whole_rate if spreading.first else spread_rate
        now = _window(spreading, 64, 64 * WINDOW_EXECUTIONS / rate, now)


def test_a_clearly_better_spread_wins_after_two_trials() -> None:
    spreading = ModeTrials()
    assert spreading.first  # the default: one batch to one worker
    _run(spreading, spread_rate=2000.0, whole_rate=1000.0, windows=12)
    assert not spreading.first and spreading.steering.switches == 1


def test_an_equal_or_worse_spread_never_wins() -> None:
    for spread_rate in (1000.0, 800.0, 1050.0):  # 1.05x is within the trials' noise margin
        spreading = ModeTrials()
        _run(spreading, spread_rate=spread_rate, whole_rate=1000.0, windows=40)
        assert spreading.first and spreading.steering.switches == 0
        assert spreading.steering.trials >= 2


def test_windows_counted_in_rows_weigh_single_requests_against_batches() -> None:
    """The batched-or-direct decision: a window closes on rows, whatever the executions."""
    trials = ModeTrials(window_executions=2, window_rows=128)
    now = 0.0
    trials.executed(1, now)  # starts the clock
    for _ in range(60):  # batched (first): 1,000 rows/s in batches of 32; direct: 2,000/s
        if trials.first:
            for _ in range(4):
                now += 32 / 1000.0
                trials.executed(32, now)
        else:
            for _ in range(128):
                now += 1 / 2000.0
                trials.executed(1, now)
    assert not trials.first and trials.steering.switches == 1


def test_a_paused_window_does_not_count_the_pause() -> None:
    trials = ModeTrials(window_executions=2, window_rows=0)
    trials.executed(1, 0.0)
    trials.executed(10, 1.0)
    trials.pause()  # e.g. the other decision sent no batches for a while
    trials.executed(10, 100.0)  # starts a new window instead of ending one 99 s long
    trials.executed(10, 101.0)
    trials.executed(10, 102.0)
    assert trials.steering.trials == 0 and not trials.first  # a trial began at 10 rows/s


def _timed(costs: BatchCosts, rows: int, *seconds: float) -> None:
    for value in seconds:
        costs.record(rows, value)


def test_batch_costs_compare_a_row_in_the_largest_and_the_smallest_batch() -> None:
    costs = BatchCosts()
    assert costs.ratio() is None
    _timed(costs, 1, 0.5, 0.010, 0.011, 0.012)  # the first: a prepare, not counted
    _timed(costs, 2, 0.5, 0.020, 0.021, 0.022)
    assert costs.ratio() is None  # sizes less than four times apart tell nothing yet
    _timed(costs, 8, 0.001, 0.200, 0.090)  # the first not counted; only two more
    assert costs.ratio() is None
    _timed(costs, 8, 0.080)  # three past the first: the fastest counts
    ratio = costs.ratio()
    assert ratio is not None and abs(ratio - 1.0) < 1e-9 and ratio >= DIRECT_AT
    weights = BatchCosts()  # reading the weights dominates: a batch reads them once
    _timed(weights, 1, 0.3, 0.001, 0.001, 0.001)
    _timed(weights, 64, 0.3, 0.021, 0.021, 0.021)
    ratio = weights.ratio()
    assert ratio is not None and ratio <= BATCHED_AT
    _timed(weights, 0, 0.5, 0.5, 0.5, 0.5)  # no rows, no time: ignored
    _timed(weights, 4, -1.0, -1.0, -1.0, -1.0)
    assert weights.ratio() == ratio


def test_batch_costs_ask_for_a_small_execution_beside_large_ones_only() -> None:
    costs = BatchCosts()
    assert not costs.needs_small()
    _timed(costs, 64, 0.3, 0.2, 0.2)
    assert not costs.needs_small()  # the first not counted, two more: not yet
    _timed(costs, 64, 0.2)
    assert costs.needs_small()
    _timed(costs, 1, 0.1, 0.01, 0.01)
    assert costs.needs_small()
    _timed(costs, 1, 0.01)
    assert not costs.needs_small() and costs.ratio() is not None
