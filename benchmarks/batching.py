"""Dynamic batching: 64 concurrent single-item requests, with and without ``batching=``.

Run: .venv/bin/python benchmarks/batching.py [--requests N] [--models a,b] [--sweep]

Each model is compiled twice in one runtime at its defaults (every installed driver): plainly,
and with ``nnrt.Batching(max_batch=64, max_delay=2 ms)`` (``--max-batch``, ``--max-delay``);
64 tasks (``--concurrency``) each send single-item requests in a loop, warm first (every
batch size the batcher pads to is prepared before timing). For each: requests/s, p50 / p99
latency, the mean batch, and the bound the issue sets on p99: ``max_delay`` + one execution at
``max_batch`` + one round trip (each measured in the same run). ``--sweep`` adds rows for
``max_delay`` in {0.5, 2, 5} ms x ``max_batch`` in {8, 32, 64}.

The models: silero VAD (one 576-sample chunk per request; its recurrent state carries the batch
on axis 1; imported with an unknown batch), an MLP 1024-2048-2048-1024 (32 MiB of float32
weights: matrix-vector bound at batch 1), magika (2048 byte features) and the transformer block
of ``tests/models/builders.py`` (sequence 64, d 128) — the last two compute bound.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import numpy as np

import nnrt
import nnrt.onnx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "models"), str(ROOT)]

from builders import transformer_block  # noqa: E402
from onnx_models import fetch_wheel  # noqa: E402
from timing import median_execute_ms, round_trip_ms  # noqa: E402

Array = np.ndarray[Any, Any]
#: A benchmark model: its name, the model, one request's inputs, the batch axes by name.
Case = tuple[str, nnrt.Model, dict[str, Array], dict[str, int | None]]


def silero() -> Case | None:
    root = fetch_wheel("silero-vad")
    if root is None:
        return None
    path = root / "silero_vad" / "data" / "silero_vad_16k_op15.onnx"
    model = nnrt.onnx.load(path, input_shapes={"input": [0, 576], "state": [2, 0, 128],
                                               "sr": []})
    rng = np.random.default_rng(0)
    inputs = {"input": (rng.standard_normal((1, 576)) * 0.1).astype(np.float32),
              "state": np.zeros((2, 1, 128), np.float32), "sr": np.array([16000], np.int64)}
    return "silero VAD", model, inputs, {"state": 1, "stateN": 1, "sr": None}


def mlp() -> Case:
    rng = np.random.default_rng(0)
    b = nnrt.ModelBuilder()
    y = b.input("x", (0, 1024))
    for n_in, n_out in ((1024, 2048), (2048, 2048), (2048, 1024)):
        w = (rng.standard_normal((n_out, n_in)) / np.sqrt(n_in)).astype(np.float32)
        y = b.fully_connected(y, w, np.zeros(n_out, np.float32), activation="relu")
    b.output(y, names=["y"])
    x = rng.standard_normal((1, 1024)).astype(np.float32)
    return "MLP 1024-2048-2048-1024 (32 MiB)", b.build(), {"x": x}, {}


def magika() -> Case | None:
    root = fetch_wheel("magika")
    if root is None:
        return None
    model = nnrt.onnx.load(root / "magika" / "models" / "standard_v3_3" / "model.onnx")
    x = np.random.default_rng(0).integers(0, 257, (1, 2048)).astype(np.int32)
    return "magika", model, {"bytes": x}, {}


def transformer() -> Case:
    model = nnrt.onnx.load(transformer_block(d=128, heads=4), input_shapes={"x": [0, 64, 128]})
    x = np.random.default_rng(0).standard_normal((1, 64, 128)).astype(np.float32)
    return "transformer block", model, {"x": x}, {}


MODELS: dict[str, Callable[[], Case | None]] = {
    "silero": silero, "mlp": mlp, "magika": magika, "transformer": transformer}


async def _load(compiled: nnrt.CompiledModel, inputs: dict[str, Array], requests: int,
                concurrency: int) -> tuple[float, list[float]]:
    """Requests/s and the sorted latencies (s) of ``concurrency`` tasks sending in a loop."""
    latencies: list[float] = []
    per_task = max(1, requests // concurrency)

    async def task() -> None:
        for _ in range(per_task):
            started = time.perf_counter()
            await compiled.execute(inputs)
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(concurrency):
            tg.start_soon(task)
    elapsed = time.perf_counter() - started
    return len(latencies) / elapsed, sorted(latencies)


async def _warm(compiled: nnrt.CompiledModel, inputs: dict[str, Array], sizes: tuple[int, ...],
                axes: dict[str, int | None]) -> None:
    """One execution at every batch size the batcher pads to (each may be a new variant)."""
    for size in sizes or (1,):
        batch = {k: (v if axes.get(k, 0) is None else np.repeat(v, size, axes.get(k, 0)))
                 for k, v in inputs.items()}
        await compiled.execute(batch, timeout=600)


async def _case(rt: nnrt.Runtime, case: Case, args: argparse.Namespace,
                settings: list[tuple[int, float]]) -> list[tuple[Any, ...]]:
    name, model, inputs, axes = case
    plain = await rt.compile(model)
    await _warm(plain, inputs, (1, args.max_batch), axes)
    trip = await round_trip_ms(rt, 200)
    big = {k: (v if axes.get(k, 0) is None else np.repeat(v, args.max_batch, axes.get(k, 0)))
           for k, v in inputs.items()}
    full_ms = await median_execute_ms(plain, big, 20)
    base_rate, base_lat = await _load(plain, inputs, args.requests, args.concurrency)
    rows: list[tuple[Any, ...]] = [(name, "off", "", base_rate, 1.0, base_lat, "")]
    await plain.release()
    for max_batch, max_delay in settings:
        batching = nnrt.Batching(max_batch=max_batch, max_delay=max_delay, dims=axes)
        compiled = await rt.compile(model, batching=batching)
        batcher = compiled.batcher
        assert batcher is not None
        await _warm(compiled, inputs, batcher.layout.sizes, axes)
        if args.mode != "trials":
            batcher.fix_modes(batched=args.mode != "direct", whole=args.mode != "spread")
        before = (batcher.executions, batcher.requests)
        rate, lat = await _load(compiled, inputs, args.requests, args.concurrency)
        mean = (batcher.requests - before[1]) / max(batcher.executions - before[0], 1)
        bound = max_delay * 1e3 + full_ms + trip
        p99 = lat[int(len(lat) * 0.99)] * 1e3
        rows.append((name, f"{max_batch} / {max_delay * 1e3:g} ms", f"{mean:.1f}", rate,
                     rate / base_rate, lat, f"{'yes' if p99 <= bound else 'no'} (<= {bound:.2f})"))
        await compiled.release()
    print(f"# {name}: one execution at batch {args.max_batch} {full_ms:.3f} ms, round trip "
          f"{trip:.3f} ms", file=sys.stderr)
    return rows


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=6400)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--max-batch", type=int, default=64)
    parser.add_argument("--max-delay", type=float, default=0.002)
    parser.add_argument("--sweep", action="store_true")
    parser.add_argument("--mode", choices=("trials", "whole", "spread", "direct"),
                        default="trials", help="how batched requests are served: decided by "
                        "trials (the default), or pinned")
    args = parser.parse_args()
    settings = [(args.max_batch, args.max_delay)]
    if args.sweep:
        settings = [(b, d) for d in (0.0005, 0.002, 0.005) for b in (8, 32, 64)]
    print("| model | max_batch / max_delay | mean batch | req/s | vs unbatched | p50 ms | "
          "p99 ms | p99 within max_delay + batch + round trip |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    async with nnrt.Runtime() as rt:
        for key in args.models.split(","):
            case = MODELS[key]()
            if case is None:
                continue
            for name, setting, mean, rate, ratio, lat, bound in await _case(rt, case, args,
                                                                         settings):
                print(f"| {name} | {setting} | {mean} | {rate:,.0f} | {ratio:.2f}x | "
                      f"{lat[len(lat) // 2] * 1e3:.2f} | {lat[int(len(lat) * 0.99)] * 1e3:.2f} "
                      f"| {bound} |", flush=True)
    print(f"\n{args.concurrency} tasks, {args.requests} requests per row, runtime defaults. "
          f"Machine: {platform.machine()}, {len(__import__('os').sched_getaffinity(0))} CPUs, "
          f"Python {platform.python_version()}, numpy {np.__version__}, "
          f"{platform.platform()}")


if __name__ == "__main__":
    anyio.run(main)
