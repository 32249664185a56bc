"""The batcher's whole-or-spread decision: windows of executions, trials, two wins to switch."""

from __future__ import annotations

from nnrt.runtime.spreading import WINDOW_EXECUTIONS, Spreading


def _window(spreading: Spreading, rows: int, seconds: float, now: float) -> float:
    """One window of ``WINDOW_EXECUTIONS`` executions of ``rows`` rows, ``seconds`` long."""
    for k in range(WINDOW_EXECUTIONS):
        spreading.executed(rows, now + seconds * (k + 1) / WINDOW_EXECUTIONS)
    return now + seconds


def _run(spreading: Spreading, spread_rate: float, whole_rate: float, windows: int) -> None:
    now = 0.0
    spreading.executed(1, now)  # the first execution only starts the clock
    for _ in range(windows):
        rate = whole_rate if spreading.whole else spread_rate
        now = _window(spreading, 64, 64 * WINDOW_EXECUTIONS / rate, now)


def test_a_clearly_better_spread_wins_after_two_trials() -> None:
    spreading = Spreading()
    assert spreading.whole  # the default: one batch to one worker
    _run(spreading, spread_rate=2000.0, whole_rate=1000.0, windows=12)
    assert not spreading.whole and spreading.steering.switches == 1


def test_an_equal_or_worse_spread_never_wins() -> None:
    for spread_rate in (1000.0, 800.0, 1050.0):  # 1.05x is within the trials' noise margin
        spreading = Spreading()
        _run(spreading, spread_rate=spread_rate, whole_rate=1000.0, windows=40)
        assert spreading.whole and spreading.steering.switches == 0
        assert spreading.steering.trials >= 2
