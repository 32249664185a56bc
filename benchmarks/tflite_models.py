"""The TFLite corpus (the .tflite models of mediapipe 0.10.14) on nnrt vs LiteRT in-process.

Run: .venv/bin/python benchmarks/tflite_models.py [--runs N] [--models a,b]

Models: every .tflite of the mediapipe 0.10.14 wheel (``tests/models/litert_oracle.py``), from
the test cache (``tests/models/conftest.py``: ``pip download`` once, reused offline), each on
seeded inputs uniform in [0, 1) at its input shapes.

nnrt: ``nnrt.tflite.load`` -> ``rt.compile(model)`` on a runtime at its defaults ->
``compiled.execute`` timed end to end from the caller (``perf_counter_ns``), after a warm-up
that lets the cpu driver's stage-2 autotuning finish. LiteRT: ``Interpreter`` at its default
(the XNNPACK delegate) with ``num_threads=1`` in the same process, ``set_tensor`` / ``invoke`` /
``get_tensor`` timed the same way. The error column is nnrt's largest output error against
LiteRT's reference kernels (``BUILTIN_REF``; XNNPACK for the selfie models), relative to each
output's scale. Reports medians; before ``nnrt.tflite`` exists the nnrt columns say
"nnrt.tflite missing". Target: nnrt <= 1.2 x LiteRT (+ one round trip under 1 ms).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import ai_edge_litert
import anyio
import numpy as np
from ai_edge_litert.interpreter import Interpreter

import nnrt

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "models"), str(ROOT)]

from litert_oracle import CORPUS, corpus_modules, inputs_for, litert_run, scaled_error  # noqa: E402
from timing import litert_runner, median_execute_ms, median_ms, round_trip_ms  # noqa: E402

Array = np.ndarray[Any, Any]
#: Executions before timing (the cpu driver starts optimising after 32) and the seconds then
#: given to its background stage-2 autotuning.
WARM_EXECUTIONS = 40
STAGE2_SECONDS = 3.0


def _nnrt_tflite() -> ModuleType | None:
    try:
        import nnrt.tflite  # noqa: PLC0415 - not built yet on every branch
    except ModuleNotFoundError as exc:
        if exc.name != "nnrt.tflite":
            raise
        return None
    return nnrt.tflite


def _litert_ms(path: Path, feeds: dict[str, Array], runs: int) -> float | None:
    """LiteRT's default (XNNPACK) on one thread; None when it cannot run the model."""
    try:
        interpreter = Interpreter(model_path=str(path), num_threads=1)
        interpreter.allocate_tensors()
    except RuntimeError:
        return None
    values = [feeds[d["name"]] for d in interpreter.get_input_details()]
    return median_ms(litert_runner(interpreter, values), runs)


async def _nnrt(tflite: ModuleType, path: Path, feeds: dict[str, Array], runs: int,
                rt: nnrt.Runtime) -> tuple[float, list[Array], str]:
    model = tflite.load(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a PartitionWarning is part of what we measure
        compiled = await rt.compile(model)
    placement = ", ".join(f"{s.driver}:{len(s.operations)}" for s in compiled.placement().steps)
    outputs = await compiled.execute(feeds)
    for _ in range(WARM_EXECUTIONS):
        await compiled.execute(feeds)
    await anyio.sleep(STAGE2_SECONDS)
    median = await median_execute_ms(compiled, feeds, runs)
    await compiled.release()
    return median, [np.asarray(o) for o in outputs], placement


async def _row(name: str, modules: Path, tflite: ModuleType | None, runs: int,
               rt: nnrt.Runtime | None, trip: float) -> str:
    info = CORPUS[name]
    path = modules / info.file
    feeds = inputs_for(path)
    lite = _litert_ms(path, feeds, runs)
    lite_cell = "cannot run" if lite is None else f"{lite:.3f}"
    size = f"{path.stat().st_size / 1e6:.2f}"
    if tflite is None or rt is None:
        return f"| {name} | {size} | nnrt.tflite missing | {lite_cell} | - | - | - | - |"
    try:
        ours, got, placement = await _nnrt(tflite, path, feeds, runs, rt)
    except nnrt.NnrtError as exc:
        return f"| {name} | {size} | {type(exc).__name__}: {str(exc)[:80]} | {lite_cell} " \
               "| - | - | - | - |"
    error = "-"
    if info.oracle is not None:
        want = litert_run(path, feeds, info.oracle)
        error = f"{max(scaled_error(g, w) for g, w in zip(got, want, strict=True)):.1e}"
    if lite is None:
        return f"| {name} | {size} | {ours:.3f} | {lite_cell} | - | - | {error} | {placement} |"
    target = 1.2 * lite + (trip if lite < 1.0 else 0.0)
    print(f"# {name}: nnrt {ours:.3f} ms, LiteRT {lite:.3f} ms [{placement}]", file=sys.stderr)
    return f"| {name} | {size} | {ours:.3f} | {lite:.3f} | {ours / lite:.2f}x | " \
           f"{'yes' if ours <= target else 'no'} (<= {target:.3f}) | {error} | {placement} |"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--models", default=",".join(CORPUS), help=f"any of {', '.join(CORPUS)}")
    args = parser.parse_args()
    modules = corpus_modules()
    if modules is None:
        return
    tflite = _nnrt_tflite()
    rows = []
    async with nnrt.Runtime() as rt:
        trip = await round_trip_ms(rt, max(args.runs, 200))
        print(f"# round trip (1x4 ADD, reference driver): {trip:.3f} ms", file=sys.stderr)
        for name in args.models.split(","):
            rows.append(await _row(name, modules, tflite, args.runs, rt, trip))
    print("| model | MB | nnrt defaults (ms) | LiteRT XNNPACK 1 thread (ms) | nnrt / LiteRT | "
          "target met | error vs LiteRT reference | steps (driver:ops) |")
    print("|---|---:|---:|---:|---:|---|---:|---|")
    print("\n".join(rows))
    print(f"\nRound trip (1x4 ADD on the reference driver, same runtime): {trip:.3f} ms. "
          "Target: nnrt <= 1.2 x LiteRT (+ one round trip when LiteRT is under 1 ms).")
    print(f"\nMachine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}, numpy {np.__version__}, ai-edge-litert "
          f"{ai_edge_litert.__version__}, {platform.platform()}")


if __name__ == "__main__":
    anyio.run(main)
