"""The worker's polling window: it polls for requests a while after an execute, then sleeps."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import anyio
import numpy as np
import pytest
from models import add_model

import nnrt

X = np.array([[1.0, 2.0, 3.0, 4.0]], np.float32)


def _cpu_seconds(pid: int) -> float:
    """CPU time ``pid`` has run, from the scheduler's nanosecond-precise account."""
    with open(f"/proc/{pid}/sched") as f:
        for line in f:
            if line.startswith("se.sum_exec_runtime"):
                return float(line.split(":")[1]) / 1e3  # milliseconds
    raise AssertionError("no se.sum_exec_runtime in /proc/PID/sched")


@pytest.mark.anyio
@pytest.mark.skipif(not os.path.exists(f"/proc/{os.getpid()}/sched"),
                    reason="needs /proc/PID/sched (CONFIG_SCHED_DEBUG)")
async def test_worker_polls_for_its_window_then_sleeps() -> None:
    used: dict[float, float] = {}
    for _ in range(3):  # a machine saturated by other processes can starve one round's polls
        for window in (0.0, 0.01):
            async with nnrt.Runtime(drivers=["reference"], workers=1, poll_window=window) as rt:
                compiled = await rt.compile(add_model())
                await compiled.execute([X])
                await anyio.sleep(0.05)  # past any window: the worker sleeps
                pool = rt._core.backend.pools["reference"]  # type: ignore[union-attr]
                pid = pool.slots[0].process.pid
                before = _cpu_seconds(pid)
                (y,) = await compiled.execute([X])
                await anyio.sleep(0.2)
                used[window] = _cpu_seconds(pid) - before
                np.testing.assert_array_equal(y, X + np.arange(1, 5, dtype=np.float32))
        if used[0.01] >= used[0.0] + 0.002:
            break
    # 10 ms of polling (yielding between polls, so at least a few ms of CPU on a busy machine)
    assert used[0.01] >= used[0.0] + 0.002, used
    # ...and then it sleeps: 200 ms idle are not 200 ms of CPU
    assert used[0.01] < 0.1, used


@pytest.mark.parametrize("window", [-0.001, 0.5, "0.001", True, float("nan")])
def test_runtime_refuses_a_bad_poll_window(window: object) -> None:
    with pytest.raises(nnrt.BadData, match="poll_window"):
        nnrt.Runtime(drivers=["reference"], poll_window=window)  # type: ignore[arg-type]


@pytest.mark.parametrize("window", ["-1", "0.5", "soon", "nan"])
def test_worker_refuses_a_bad_poll_window(window: str) -> None:
    done = subprocess.run([sys.executable, "-m", "nnrt.worker", "--driver", "reference",
                           "--fd", "0", "--poll-window", window],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 2
    assert "--poll-window" in done.stderr


def _slow_model(layers: int = 10) -> nnrt.Model:
    """Ten 256x1024 @ 1024x1024 FULLY_CONNECTEDs (or ``layers``): about a tenth of a second or
    more on the reference driver."""
    rng = np.random.default_rng(0)
    b = nnrt.ModelBuilder()
    y = b.input("x", (256, 1024))
    for _ in range(layers):
        y = b.fully_connected(y, (rng.standard_normal((1024, 1024)) * 0.03).astype(np.float32),
                              np.zeros(1024, np.float32))
    b.output(y)
    return b.build()


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the asyncio reader polls; trio's waits
async def test_client_polls_for_a_lone_reply_within_its_window_only(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """While a lone execute runs, the client polls for its reply ``poll_window`` seconds (each
    turn yields the CPU: the yields are counted and timed), then sleeps until the reply comes."""
    turns: list[float] = []
    real_yield = os.sched_yield

    def counted_yield() -> None:
        turns.append(time.monotonic())
        real_yield()

    x = np.ones((256, 1024), np.float32)
    for window in (0.0, 0.005):
        async with nnrt.Runtime(drivers=["reference"], workers=1, poll_window=window) as rt:
            compiled = await rt.compile(_slow_model())
            await compiled.execute([x])  # warm
            monkeypatch.setattr(os, "sched_yield", counted_yield)
            turns.clear()
            started = time.monotonic()
            await compiled.execute([x])
            took = time.monotonic() - started
            await anyio.sleep(0.05)
            monkeypatch.setattr(os, "sched_yield", real_yield)
        if window == 0.0:
            assert turns == []
            continue
        assert took > window + 0.08, f"the model ran in {took:.4f} s, too fast to see the window"
        assert turns, "the client never polled"
        # every polling turn fell in the window (a turn's yield may land just after it closes,
        # later still if the machine preempts the client in between)
        assert turns[-1] - started < window + 0.05, (turns[-1] - started, took)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the asyncio reader polls
async def test_a_client_sleeps_through_a_long_lone_request_and_polls_as_its_reply_is_due(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Once lone requests on a connection have taken ~0.1 s (past POLL_AHEAD), the client does
    not poll through the next one: it sleeps, polls from SLEEP_LEAD before the reply is due by
    their running mean until POLL_LATE past it, and sleeps again. A request twice as long as
    the others (another model on the same worker connection) shows both ends."""
    from nnrt.runtime.backends.channel import POLL_AHEAD, POLL_LATE, SLEEP_LEAD

    turns: list[float] = []
    real_yield = os.sched_yield

    def counted_yield() -> None:
        turns.append(time.monotonic())
        real_yield()

    window = 0.001
    x = np.ones((256, 1024), np.float32)
    polled = 0
    async with nnrt.Runtime(drivers=["reference"], workers=1, poll_window=window) as rt:
        usual = await rt.compile(_slow_model())
        longer = await rt.compile(_slow_model(20))
        await longer.execute([x])  # prepared now, not in a timed request
        mean = 0.0  # the client's running mean of lone replies, followed as it keeps it
        for warm in (20, 10, 10):  # the first 20: ours and the client's come together
            for _ in range(warm):
                started = time.monotonic()
                await usual.execute([x])
                mean += 0.2 * (time.monotonic() - started - mean)
            assert mean > POLL_AHEAD + window + 0.02, f"the model ran in {mean:.4f} s, too fast"
            monkeypatch.setattr(os, "sched_yield", counted_yield)
            turns.clear()
            started = time.monotonic()
            await longer.execute([x])
            took = time.monotonic() - started
            monkeypatch.setattr(os, "sched_yield", real_yield)
            assert took > mean + POLL_LATE + window + 0.02, (took, mean)
            # no polling before the timer (mean - SLEEP_LEAD, plus epoll's rounding up to a
            # millisecond; the client's mean runs a little below this one, which counts its
            # own work too), none after the window, nothing while the reply is still far
            assert not turns or turns[0] - started > mean - SLEEP_LEAD - 0.005, (turns, mean)
            assert not turns or turns[-1] - started < mean + POLL_LATE + window + 0.005
            polled += bool(turns)
            mean += 0.2 * (took - mean)
    # a loaded machine may run the timer late, past the window, once
    assert polled >= 2, "the client did not poll for the reply as it was due"


def _sleeps(pid: int) -> int:
    """How often ``pid`` has blocked (slept in ``epoll``): its voluntary context switches."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("voluntary_ctxt_switches"):
                return int(line.split()[1])
    raise AssertionError("no voluntary_ctxt_switches in /proc/PID/status")


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_worker_polls_for_a_client_that_comes_back_a_little_after_its_window() -> None:
    """A client sending its next request 0.6 ms after each reply (past the 0.25 ms window,
    within MAX_TURNAROUND) finds the worker polling, not asleep, once the worker has seen a
    few; a client coming back after 3 ms finds it asleep each time."""
    from nnrt.ipc.polling import DEFAULT_POLL_WINDOW, MAX_TURNAROUND

    requests = 200
    slept: dict[float, float] = {}
    async with nnrt.Runtime(drivers=["reference"], workers=1,
                            poll_window=DEFAULT_POLL_WINDOW) as rt:
        compiled = await rt.compile(add_model())
        pool = rt._core.backend.pools["reference"]  # type: ignore[union-attr]
        pid = pool.slots[0].process.pid
        for gap in (0.0006, 0.003):
            assert DEFAULT_POLL_WINDOW < gap < MAX_TURNAROUND or gap > 2 * MAX_TURNAROUND
            for _ in range(20):  # the worker learns the client's turnaround
                await compiled.execute([X])
                _busy_wait(gap)
            before = _sleeps(pid)
            for _ in range(requests):
                (y,) = await compiled.execute([X])
                _busy_wait(gap)  # the client's own work before its next request
            slept[gap] = (_sleeps(pid) - before) / requests
            np.testing.assert_array_equal(y, X + np.arange(1, 5, dtype=np.float32))
    assert slept[0.0006] < 0.3, slept  # polled through the client's 0.6 ms
    assert slept[0.003] > 0.7, slept  # not waited for: asleep before most requests


def _busy_wait(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass
