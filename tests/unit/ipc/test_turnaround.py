"""The worker's adaptive polling window: the running mean of its client's turnaround."""

from __future__ import annotations

import pytest

from nnrt.ipc.polling import DEFAULT_POLL_WINDOW, MAX_TURNAROUND, Turnaround


def _after(*gaps: float) -> Turnaround:
    turnaround = Turnaround()
    for gap in gaps:
        turnaround.observe(gap)
    return turnaround


def test_a_new_worker_polls_for_its_window() -> None:
    assert Turnaround().window(DEFAULT_POLL_WINDOW) == DEFAULT_POLL_WINDOW


def test_a_client_back_a_little_later_each_time_is_polled_for() -> None:
    window = _after(*[0.0006] * 40).window(DEFAULT_POLL_WINDOW)
    assert window == pytest.approx(1.25 * 0.0006, rel=0.01)


def test_a_client_back_within_the_window_changes_nothing() -> None:
    assert _after(*[0.0001] * 40).window(DEFAULT_POLL_WINDOW) == DEFAULT_POLL_WINDOW


def test_a_client_slower_than_the_longest_turnaround_is_not_waited_for() -> None:
    assert _after(*[0.005] * 40).window(DEFAULT_POLL_WINDOW) == DEFAULT_POLL_WINDOW


def test_the_window_never_exceeds_the_longest_turnaround() -> None:
    assert _after(*[0.00095] * 40).window(DEFAULT_POLL_WINDOW) == MAX_TURNAROUND


def test_polling_off_stays_off() -> None:
    assert _after(*[0.0006] * 40).window(0.0) == 0.0


def test_one_long_pause_weighs_like_a_client_that_did_not_come_back_soon() -> None:
    """A second-long pause in a stream of 0.6 ms turnarounds is capped before it is averaged:
    the worker keeps polling for the stream; pauses that go on make it stop."""
    turnaround = _after(*[0.0006] * 40, 1.0)
    assert DEFAULT_POLL_WINDOW < turnaround.window(DEFAULT_POLL_WINDOW) <= MAX_TURNAROUND
    for _ in range(3):
        turnaround.observe(1.0)
    assert turnaround.window(DEFAULT_POLL_WINDOW) == DEFAULT_POLL_WINDOW
