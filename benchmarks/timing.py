"""Timing shared by the model benchmarks (``onnx_models.py``, ``quantized.py``,
``tflite_models.py``): medians of timed calls after a few untimed ones, calls timed in turns
against each other, and one round trip.

Imported as a sibling module: the scripts run as ``python benchmarks/<name>.py``, which puts
``benchmarks/`` first on ``sys.path``.
"""

from __future__ import annotations

import inspect
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import nnrt

__all__ = ["BLOCK", "against", "in_turns", "litert_runner", "median_execute_ms", "median_ms",
           "round_trip_ms"]

#: Timed calls per runner and turn in :func:`in_turns`, after :data:`WARM` untimed ones (a
#: worker idle while the others ran has gone to sleep, its caches cold: steady state is what
#: is compared).
BLOCK = 10
WARM = 5
#: Seconds :func:`in_turns` goes on taking turns, at least: each vCPU of the VM switches
#: between its two speeds on its own every tenth of a second to a few seconds, and nnrt's
#: worker runs on the other vCPU than its in-process peers, so a ratio is only as good as the
#: number of switches its turns span (silero VAD at batch 1, ten turns in 0.1 s: 1.0-3.3x
#: from one run to the next).
MIN_SECONDS = 5.0


def _warm_up_runs(runs: int) -> int:
    return max(3, runs // 10)


def median_ms(fn: Callable[[], Any], runs: int) -> float:
    """The median of ``runs`` timed calls of ``fn``, in ms, after a few untimed ones."""
    for _ in range(_warm_up_runs(runs)):
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - start)
    return statistics.median(times) / 1e6


async def median_execute_ms(compiled: nnrt.CompiledModel, inputs: Any, runs: int) -> float:
    """:func:`median_ms` of ``compiled.execute(inputs)``, awaited."""
    for _ in range(_warm_up_runs(runs)):
        await compiled.execute(inputs)
    times = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        await compiled.execute(inputs)
        times.append(time.perf_counter_ns() - start)
    return statistics.median(times) / 1e6


async def round_trip_ms(rt: nnrt.Runtime, runs: int) -> float:
    """A 1x4 float32 ADD through ``rt`` on the reference driver: one round trip."""
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 4))
    b.output(b.add(x, x))
    compiled = await rt.compile(b.build(), devices=["reference"])
    median = await median_execute_ms(compiled, [np.ones((1, 4), np.float32)], runs)
    await compiled.release()
    return median


def litert_runner(interpreter: Any, values: list[Any]) -> Callable[[], list[Any]]:
    """One inference of an allocated LiteRT ``Interpreter`` on ``values`` (in its input
    order), as an application runs it: set the inputs, invoke, read the outputs."""
    ins = [(d["index"], value) for d, value in zip(interpreter.get_input_details(), values,
                                                    strict=True)]
    outs = [d["index"] for d in interpreter.get_output_details()]

    def run() -> list[Any]:
        for index, value in ins:
            interpreter.set_tensor(index, value)
        interpreter.invoke()
        return [interpreter.get_tensor(index) for index in outs]

    return run


async def in_turns(runners: dict[str, Callable[[], Any]], runs: int,
                   ratio: tuple[str, str] | None = None,
                   min_seconds: float = MIN_SECONDS) -> tuple[dict[str, float], float | None]:
    """Each runner (a function, or a coroutine function awaited) timed ``runs`` times in
    turns of :data:`BLOCK` calls each (after :data:`WARM` untimed ones), after one untimed
    turn, and more turns until ``min_seconds`` have passed: the medians (ms) per runner,
    and the median over the turns of ``ratio[0]``'s block median over ``ratio[1]``'s (None
    without ``ratio``).

    The VM these figures come from runs the same code at either of two speeds ~1.4x apart for
    seconds at a time: medians taken one runner after the other then compare different
    speeds, while the two blocks of one turn run at the same one.
    """
    calls = {key: (run, inspect.iscoroutinefunction(run)) for key, run in runners.items()}
    for run, awaited in calls.values():
        for _ in range(BLOCK):
            result = run()
            if awaited:
                await result
    times: dict[str, list[int]] = {key: [] for key in runners}
    ratios = []
    turns = max(1, runs // BLOCK)
    until = time.monotonic() + min_seconds
    while turns > 0 or time.monotonic() < until:
        turns -= 1
        turn: dict[str, list[int]] = {}
        for key, (run, awaited) in calls.items():
            block = turn[key] = []
            for k in range(WARM + BLOCK):
                start = time.perf_counter_ns()
                result = run()
                if awaited:
                    await result
                if k >= WARM:
                    block.append(time.perf_counter_ns() - start)
            times[key] += block
        if ratio is not None:
            ratios.append(statistics.median(turn[ratio[0]]) / statistics.median(turn[ratio[1]]))
    return ({key: statistics.median(t) / 1e6 for key, t in times.items()},
            statistics.median(ratios) if ratios else None)


async def against(compiled: nnrt.CompiledModel, inputs: Any,
                  peers: dict[str, Callable[[], Any] | None], runs: int,
                  ratio_to: str) -> tuple[dict[str, float | None], float | None]:
    """``compiled.execute(inputs)`` (as "nnrt") and each peer timed :func:`in_turns`: the
    medians (None for an absent peer) and nnrt's ratio to ``ratio_to`` (None when absent)."""
    async def execute() -> None:
        await compiled.execute(inputs)

    present = {key: run for key, run in peers.items() if run is not None}
    medians, ratio = await in_turns({"nnrt": execute, **present}, runs,
                                    ("nnrt", ratio_to) if ratio_to in present else None)
    shown: dict[str, float | None] = dict.fromkeys(peers)
    shown.update(medians)
    return shown, ratio
