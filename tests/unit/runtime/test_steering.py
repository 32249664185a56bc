"""The packing decision (nnrt.runtime.backends.steering): trials, confirmation, back-off, limits."""

from __future__ import annotations

import itertools
import math

import pytest

from nnrt.runtime.backends.steering import (
    FIRST_TRIAL,
    GAIN,
    MAX_TRIAL_INTERVAL,
    PACK_DELAY,
    PACK_MAX_SERVICE,
    Steering,
    pack_limit,
)


def test_packs_by_default_and_tries_at_the_first_window() -> None:
    steering = Steering()
    assert steering.packing
    assert steering.trial_due(0.0)
    assert not Steering(packing=False).packing


def test_one_winning_trial_is_confirmed_at_once_and_two_switch() -> None:
    steering = Steering()
    assert not steering.decide(100.0, 150.0, 100.0, now=10.0)
    assert steering.packing and steering.wins == 1
    assert steering.trial_due(10.0)  # the confirming trial comes at once
    assert steering.decide(100.0, 150.0, 100.0, now=10.1)
    assert not steering.packing
    assert (steering.trials, steering.switches, steering.wins) == (2, 1, 0)
    assert steering.next_trial == pytest.approx(10.1 + FIRST_TRIAL)
    assert not steering.trial_due(10.1 + FIRST_TRIAL / 2)


def test_a_loss_between_two_wins_starts_over() -> None:
    steering = Steering()
    steering.decide(100.0, 150.0, 100.0, now=1.0)
    steering.decide(100.0, 100.0, 100.0, now=1.1)
    assert steering.wins == 0
    assert not steering.decide(100.0, 150.0, 100.0, now=5.0)
    assert steering.packing


def test_the_gain_is_against_the_mean_of_the_windows_around_the_trial() -> None:
    steering = Steering()
    mean = (90.0 + 110.0) / 2
    steering.decide(90.0, mean * GAIN * 0.999, 110.0, now=0.0)
    assert steering.wins == 0
    steering.decide(90.0, mean * GAIN, 110.0, now=0.0)
    assert steering.wins == 1


def test_trials_that_change_nothing_come_less_often_up_to_the_maximum() -> None:
    steering = Steering()
    now, intervals = 0.0, []
    for _ in range(10):
        steering.decide(100.0, 90.0, 100.0, now=now)
        intervals.append(steering.next_trial - now)
        now = steering.next_trial
    assert intervals[0] == pytest.approx(2 * FIRST_TRIAL)
    assert all(b >= a for a, b in itertools.pairwise(intervals))
    assert intervals[-1] == pytest.approx(MAX_TRIAL_INTERVAL)
    assert steering.packing and steering.switches == 0


def test_a_switch_brings_the_next_trial_back_to_the_first_interval() -> None:
    steering = Steering(packing=False)
    for now in (0.0, 1.0, 3.0):
        steering.decide(100.0, 90.0, 100.0, now=now)
    assert steering.interval > FIRST_TRIAL
    steering.decide(100.0, 200.0, 100.0, now=10.0)
    steering.decide(100.0, 200.0, 100.0, now=10.0)
    assert steering.packing
    assert steering.interval == FIRST_TRIAL


@pytest.mark.parametrize("service", [0.0, -1e-6, PACK_MAX_SERVICE * 1.01, 1.0, math.nan,
                                     math.inf])
def test_no_packing_for_unknown_or_costly_executes(service: float) -> None:
    assert pack_limit(service, 64) == 0


def test_pack_limit_keeps_the_queue_under_the_delay_and_the_in_flight_bound() -> None:
    assert pack_limit(20e-6, 64) == int(PACK_DELAY / 20e-6) > 1
    assert pack_limit(PACK_MAX_SERVICE, 64) == int(PACK_DELAY / PACK_MAX_SERVICE)
    assert pack_limit(1e-7, 64) == 64
    assert pack_limit(1e-7, 16) == 16
    service = 7.4e-6
    limit = pack_limit(service, 1000)
    assert limit * service <= PACK_DELAY < (limit + 1) * service


def test_a_fixed_mode_runs_no_trials_until_released() -> None:
    steering = Steering()
    steering.decide(100.0, 150.0, 100.0, now=0.0)  # one win pending
    steering.fix(False)
    assert not steering.packing and steering.fixed and steering.wins == 0
    assert not steering.trial_due(1e9)
    steering.fix(True)
    assert steering.packing and not steering.trial_due(1e9)
    steering.fix(None)
    assert steering.packing and not steering.fixed
    assert steering.trial_due(0.0) and steering.interval == FIRST_TRIAL
