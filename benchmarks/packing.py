"""Packing light traffic onto one worker vs spreading it: forced either way, and decided by trials.

Run: .venv/bin/python benchmarks/packing.py [--requests N] [--rounds R]

Two workers (``Runtime(workers=2)``), one model at a time: the 1x4 ADD of
``benchmarks/latency.py`` and chains of four FULLY_CONNECTED layers of width 16, 64 and 256
(tens to ~100 µs per execute on the reference driver). For each model and each concurrency (2
and 64 tasks), executes/s with the pool fixed to packing (``WorkerPool.fix_packing(True)``),
fixed to spreading (``False``) and left to decide (``None``, the default), after a warm-up of
the same traffic; the mode the default ended in, and each worker's CPU cost per execute from its
load reports. Variants alternate within each round; the median over rounds is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

import numpy as np
from latency import X, add_model

import nnrt
from nnrt.runtime.backends.pool import WorkerPool

MODES: dict[str, bool | None] = {"packed": True, "spread": False, "decided": None}


def fc_model(width: int) -> nnrt.Model:
    """Four FULLY_CONNECTED layers of ``width`` on a [1, width] input."""
    rng = np.random.default_rng(width)
    b = nnrt.ModelBuilder()
    y = b.input("x", (1, width))
    for _ in range(4):
        w = (rng.standard_normal((width, width)) / width).astype(np.float32)
        y = b.fully_connected(y, w, np.zeros(width, np.float32))
    b.output(y)
    return b.build()


async def measure(model: nnrt.Model, x: np.ndarray[Any, Any], tasks: int, requests: int,
                  packing: bool | None) -> tuple[float, bool, list[float]]:
    async with nnrt.Runtime(workers=2, drivers=["reference"]) as rt:  # the pool fixed below
        pool: WorkerPool = rt._core.backend.pools["reference"]  # type: ignore[union-attr]
        pool.fix_packing(packing)
        compiled = await rt.compile(model)
        per_task = max(requests // tasks, 1)

        async def task(count: int) -> None:
            for _ in range(count):
                await compiled.execute([x])

        await asyncio.gather(*[task(max(per_task // 4, 1)) for _ in range(tasks)])
        start = time.perf_counter()
        await asyncio.gather(*[task(per_task) for _ in range(tasks)])
        rate = per_task * tasks / (time.perf_counter() - start)
        costs = [slot.service_time * 1e6 for slot in pool.slots]
        return rate, rt.statistics().pools["reference"].packing, costs


async def main(requests: int, rounds: int) -> None:
    models = [("ADD 1x4", add_model(), X)]
    for width in (16, 64, 256):
        models.append((f"4 x FC {width}", fc_model(width),
                       np.random.default_rng(0).random((1, width), dtype=np.float32)))
    print("| model | tasks | packed req/s | spread req/s | decided req/s | decided ends | "
          "µs CPU per execute (worker 0 / 1) |\n|---|---:|---:|---:|---:|---|---|")
    for name, model, x in models:
        for tasks in (2, 64):
            rates: dict[str, list[float]] = {mode: [] for mode in MODES}
            ended, costs = [], []
            for _ in range(rounds):
                for mode, packing in MODES.items():
                    rate, packed, cost = await measure(model, x, tasks, requests, packing)
                    rates[mode].append(rate)
                    if packing is None:
                        ended.append("packing" if packed else "spreading")
                        costs = cost
            figures = " | ".join(f"{statistics.median(rates[m]):,.0f}" for m in MODES)
            print(f"| {name} | {tasks} | {figures} | {', '.join(ended)} | "
                  f"{costs[0]:.1f} / {costs[1]:.1f} |", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.requests, args.rounds))
