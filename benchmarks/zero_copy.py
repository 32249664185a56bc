"""Round trip of ``y = x * 2`` (MUL) on float32 tensors of 1 KiB to 256 MiB, against peers.

Run: .venv/bin/python benchmarks/zero_copy.py [--sizes 1K,1M,16M,64M,256M] [--repeat N]
[--rounds R]

Side by side, in one run, per size (median of ``--repeat`` round trips after a warm-up; the
floor and nnrt's variants in ``--rounds`` interleaved rounds, each starting with a different
variant — none always first, right after the worker started — and the median over rounds):
- floor: in-process ``np.multiply(x, 2, out=y)`` on preallocated arrays;
- (a) nnrt with Memory-backed input and output (one memfd, shared with the worker once);
- (b) nnrt with plain ndarrays (through the runtime's shared arena; results returned as views of
  the arena, the default);
- (b') the same with ``copy=True`` (results copied out of the arena);
- (c) ``ProcessPoolExecutor`` + ``run_in_executor`` (x and the result pickled through a pipe);
- (d) ``multiprocessing.shared_memory`` by hand: segments attached once by a pool worker that
  multiplies in place and returns nothing.
Prints a markdown table (committed to docs/benchmarks.md) and the target checks.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import os
import platform
import statistics
import time
from collections.abc import Awaitable, Callable
from multiprocessing import shared_memory
from typing import Any

import numpy as np

import nnrt

UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str) -> int:
    """``64M`` -> 67108864."""
    return int(text[:-1]) * UNITS[text[-1]] if text[-1] in UNITS else int(text)


def mul_model(count: int) -> nnrt.Model:
    b = nnrt.ModelBuilder()
    x = b.input("x", (count,))
    b.output(b.mul(x, np.array([2.0], np.float32)))
    return b.build()


def double(x: np.ndarray) -> np.ndarray:
    """What peer (c) runs in the pool: x and the result cross the pipe pickled."""
    return x * np.float32(2.0)


_SEGMENTS: dict[str, Any] = {}


def attach_and_double(x_name: str, y_name: str, count: int) -> None:
    """Peer (d) in the pool worker: attach the segments once, multiply in place."""
    arrays = _SEGMENTS.get(x_name)
    if arrays is None:
        x_shm = shared_memory.SharedMemory(x_name)
        y_shm = shared_memory.SharedMemory(y_name)
        arrays = _SEGMENTS[x_name] = (x_shm, y_shm,
                                      np.ndarray((count,), np.float32, x_shm.buf),
                                      np.ndarray((count,), np.float32, y_shm.buf))
    np.multiply(arrays[2], np.float32(2.0), out=arrays[3])


async def timed(call: Callable[[], Awaitable[object]], repeat: int) -> float:
    await call()  # warm-up: mapping, first touch, model preparation on the worker
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


async def measure_size(nbytes: int, repeat: int, rounds: int) -> dict[str, float]:
    count = nbytes // 4
    x = np.random.default_rng(0).standard_normal(count).astype(np.float32)
    expected = x * np.float32(2.0)
    out = np.empty_like(x)
    figures: dict[str, float] = {}

    async def floor() -> None:
        np.multiply(x, np.float32(2.0), out=out)

    async with nnrt.Runtime(workers=1, arena_limit=max(4 * nbytes, 1 << 22)) as rt:
        compiled = await rt.compile(mul_model(count))
        memory = rt.memory.create(2 * nbytes)
        mx = memory.ndarray(np.float32, (count,))
        my = memory.ndarray(np.float32, (count,), nbytes)
        mx[:] = x

        async def memory_backed() -> None:
            await compiled.execute([mx], outputs=[my])

        async def plain() -> None:
            (y,) = await compiled.execute([x])
            assert y.shape == x.shape

        async def plain_copy() -> None:
            (y,) = await compiled.execute([x], copy=True)
            assert y.shape == x.shape

        variants: list[tuple[str, Callable[[], Awaitable[None]]]] = [
            ("floor", floor), ("a", memory_backed), ("b", plain), ("b_copy", plain_copy)]
        samples: dict[str, list[float]] = {name: [] for name, _ in variants}
        for r in range(rounds):
            for name, call in variants[r % len(variants):] + variants[:r % len(variants)]:
                samples[name].append(await timed(call, repeat))
        assert np.array_equal(my, expected)
        figures.update({name: statistics.median(values) for name, values in samples.items()})
        memory.close()  # the mapping lives on until the views above are gone

    loop = asyncio.get_running_loop()
    with concurrent.futures.ProcessPoolExecutor(1) as pool:
        async def pickled() -> None:
            y = await loop.run_in_executor(pool, double, x)
            assert y.shape == x.shape

        figures["c"] = await timed(pickled, max(3, repeat // 4) if nbytes >= 1 << 26 else repeat)

    x_shm = shared_memory.SharedMemory(create=True, size=nbytes)
    y_shm = shared_memory.SharedMemory(create=True, size=nbytes)
    try:
        np.ndarray((count,), np.float32, x_shm.buf)[:] = x
        with concurrent.futures.ProcessPoolExecutor(1) as pool:
            async def by_hand() -> None:
                await loop.run_in_executor(pool, attach_and_double, x_shm.name, y_shm.name,
                                           count)

            figures["d"] = await timed(by_hand, repeat)
        assert np.array_equal(np.ndarray((count,), np.float32, y_shm.buf), expected)
    finally:
        for shm in (x_shm, y_shm):
            shm.close()
            shm.unlink()
    return figures


def label(nbytes: int) -> str:
    for unit in ("G", "M", "K"):
        if nbytes >= UNITS[unit] and nbytes % UNITS[unit] == 0:
            return f"{nbytes // UNITS[unit]} {unit}iB"
    return f"{nbytes} B"


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f}" if seconds < 0.01 else f"{seconds * 1e3:.1f}"


async def main(sizes: list[int], repeat: int, rounds: int) -> None:
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, numpy {np.__version__}, nnrt {nnrt.__version__}")
    print("\n| size | floor ms | (a) Memory ms | (b) arena ms | (b') copy ms | (c) pickle ms "
          "| (d) shm by hand ms |\n|---|---:|---:|---:|---:|---:|---:|")
    results = {}
    for nbytes in sizes:
        f = await measure_size(nbytes, repeat, rounds)
        results[nbytes] = f
        print(f"| {label(nbytes)} | {ms(f['floor'])} | {ms(f['a'])} | {ms(f['b'])} | "
              f"{ms(f['b_copy'])} | {ms(f['c'])} | {ms(f['d'])} |", flush=True)
    print("\n| size | (a) <= floor + 0.25 ms + 5% | (a) speed-up vs (c) | (b) speed-up vs (c) |"
          "\n|---|---|---:|---:|")
    for nbytes, f in results.items():
        bound = f["floor"] * 1.05 + 0.25e-3
        verdict = "yes" if f["a"] <= bound else "no"
        print(f"| {label(nbytes)} | {ms(f['a'])} <= {ms(bound)}: {verdict} | "
              f"{f['c'] / f['a']:.0f}x | {f['c'] / f['b']:.0f}x |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1K,1M,16M,64M,256M")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main([parse_size(s) for s in args.sizes.split(",")], args.repeat, args.rounds))
