"""The TFLite corpus (the .tflite models of mediapipe 0.10.14) on nnrt vs LiteRT in-process.

Run: .venv/bin/python benchmarks/tflite_models.py [--runs N] [--models a,b]

Models: every .tflite of the mediapipe 0.10.14 wheel (``tests/models/litert_oracle.py``), from
the test cache (``tests/models/conftest.py``: ``pip download`` once, reused offline), each on
seeded inputs uniform in [0, 1) at its input shapes.

nnrt: ``nnrt.tflite.load`` -> ``rt.compile(model)`` on a runtime at its defaults ->
``compiled.execute`` timed end to end from the caller (``perf_counter_ns``), after a warm-up
that lets the cpu driver's stage-2 autotuning finish. LiteRT: ``Interpreter`` at its default
(the XNNPACK delegate) with ``num_threads=1`` in the same process, ``set_tensor`` / ``invoke`` /
``get_tensor`` timed the same way, on the original file and on the flatbuffer nnrt's litert
driver writes for the imported model (when it is one litert partition): the difference between
that column and nnrt's is the runtime's cost, between it and LiteRT's the compiler's. The three
are timed in turns of ten calls each (``timing.in_turns``: a shared machine's slow spells then
fall on all three alike; LiteRT alone, when nnrt cannot compile the model), and nnrt's ratio to
LiteRT is the median of the turns' ratios. The error column is nnrt's
largest output error against LiteRT's reference kernels (``BUILTIN_REF``; XNNPACK for the selfie
models), relative to each output's scale. Reports medians; before ``nnrt.tflite`` exists the
nnrt columns say "nnrt.tflite missing". Target: nnrt <= 1.2 x LiteRT (+ one round trip under 1 ms).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import warnings
from collections.abc import Callable
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
from timing import against, litert_runner, median_ms, round_trip_ms  # noqa: E402

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


def _original(path: Path, feeds: dict[str, Array]) -> Callable[[], Any] | None:
    """One LiteRT inference on the original file (XNNPACK, one thread); None when LiteRT
    cannot run it."""
    try:
        interpreter = Interpreter(model_path=str(path), num_threads=1)
        interpreter.allocate_tensors()
    except RuntimeError:
        return None
    return litert_runner(interpreter, [feeds[d["name"]] for d in interpreter.get_input_details()])


def _regenerated(model: nnrt.Model, feeds: dict[str, Array]) -> Callable[[], Any] | None:
    """One LiteRT inference, the same way, on the flatbuffer nnrt's litert driver writes for
    the imported model; None when it is not one litert partition."""
    from nnrt.drivers.litert import LitertDriver  # noqa: PLC0415 - optional
    from nnrt.drivers.litert.flatbuffer import write_partition  # noqa: PLC0415

    if LitertDriver().support(model).reasons:
        return None
    interpreter = Interpreter(model_content=write_partition(model), num_threads=1)
    interpreter.allocate_tensors()
    names = [model.operands[k].name for k in model.inputs]
    return litert_runner(interpreter, [feeds[name] for name in names])


async def _nnrt(model: nnrt.Model, path: Path, feeds: dict[str, Array], runs: int,
                rt: nnrt.Runtime) -> tuple[dict[str, float | None], float | None, list[Array],
                                           str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a PartitionWarning is part of what we measure
        compiled = await rt.compile(model)
    placement = ", ".join(f"{s.driver}:{len(s.operations)}" for s in compiled.placement().steps)
    outputs = await compiled.execute(feeds)
    for _ in range(WARM_EXECUTIONS):
        await compiled.execute(feeds)
    await anyio.sleep(STAGE2_SECONDS)
    runners = {"original": _original(path, feeds), "regenerated": _regenerated(model, feeds)}
    medians, ratio = await against(compiled, feeds, runners, runs, "original")
    await compiled.release()
    return medians, ratio, [np.asarray(o) for o in outputs], placement


def _ms(value: float | None, absent: str = "-") -> str:
    return absent if value is None else f"{value:.3f}"


async def _row(name: str, modules: Path, tflite: ModuleType | None, runs: int,
               rt: nnrt.Runtime | None, trip: float) -> str:
    info = CORPUS[name]
    path = modules / info.file
    feeds = inputs_for(path)
    size = f"{path.stat().st_size / 1e6:.2f}"
    original = _original(path, feeds)
    alone = "cannot run" if original is None else _ms(median_ms(original, runs))
    if tflite is None or rt is None:
        return f"| {name} | {size} | nnrt.tflite missing | {alone} | - | - | - | - | - |"
    try:
        model = tflite.load(path)
        times, ratio, got, placement = await _nnrt(model, path, feeds, runs, rt)
    except nnrt.NnrtError as exc:
        why = str(exc).splitlines()[0][:80]
        return f"| {name} | {size} | {type(exc).__name__}: {why} | {alone} | - | - | - | - | - |"
    ours, lite = times["nnrt"], times["original"]
    cells = f"{_ms(ours)} | {_ms(lite, 'cannot run')} | {_ms(times['regenerated'])}"
    error = "-"
    if info.oracle is not None:
        want = litert_run(path, feeds, info.oracle)
        error = f"{max(scaled_error(g, w) for g, w in zip(got, want, strict=True)):.1e}"
    if ours is None or lite is None or ratio is None:
        return f"| {name} | {size} | {cells} | - | - | {error} | {placement} |"
    bound = 1.2 + (trip / lite if lite < 1.0 else 0.0)  # as a ratio to LiteRT's time
    print(f"# {name}: nnrt {ours:.3f} ms, LiteRT {lite:.3f} ms [{placement}]", file=sys.stderr)
    return f"| {name} | {size} | {cells} | {ratio:.2f}x | " \
           f"{'yes' if ratio <= bound else 'no'} (<= {bound:.2f}x) | {error} | {placement} |"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
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
    print("| model | MB | nnrt defaults (ms) | LiteRT XNNPACK 1 thread (ms) | LiteRT on nnrt's "
          "flatbuffer (ms) | nnrt / LiteRT (median of turns) | target met | error vs LiteRT "
          "reference | steps (driver:ops) |")
    print("|---|---:|---:|---:|---:|---:|---|---:|---|")
    print("\n".join(rows))
    print(f"\nRound trip (1x4 ADD on the reference driver, same runtime): {trip:.3f} ms. "
          "Target: nnrt <= 1.2 x LiteRT (+ one round trip when LiteRT is under 1 ms).")
    print(f"\nMachine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}, numpy {np.__version__}, ai-edge-litert "
          f"{ai_edge_litert.__version__}, {platform.platform()}")


if __name__ == "__main__":
    anyio.run(main)
