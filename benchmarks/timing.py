"""Timing shared by the model benchmarks (``onnx_models.py``, ``quantized.py``,
``tflite_models.py``): medians of timed calls after a few untimed ones, and one round trip.

Imported as a sibling module: the scripts run as ``python benchmarks/<name>.py``, which puts
``benchmarks/`` first on ``sys.path``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import nnrt

__all__ = ["litert_runner", "median_execute_ms", "median_ms", "round_trip_ms"]


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
