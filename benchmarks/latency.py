"""Round-trip latency and throughput of ``execute`` on a 1x4 ADD model, against peers.

Run: .venv/bin/python benchmarks/latency.py [--requests N] [--rounds R]

Side by side, in one run, on the same machine:
- raw asyncio Unix-socket echo to another process (the floor: a round trip and nothing else);
- ``nnrt`` ``CompiledModel.execute`` (1 and 2 worker processes);
- the same through nnrt's shared mode: ``nnrt serve --workers W`` in another process and
  ``Runtime(connect=...)`` (a relay: client -> service -> worker);
- ``ProcessPoolExecutor`` + ``loop.run_in_executor`` doing the same numpy ADD (1 and 2 workers);
- ``anyio.to_process.run_sync`` doing the same numpy ADD (1 and 2 workers).
Latency: p50 / p99 of sequential round trips. Throughput: requests/s with 1, 8, 64 concurrent
tasks. Prints a markdown table (committed to docs/benchmarks.md). The default of 20,000 requests
per figure keeps each throughput phase (~0.2 s for nnrt at 64 in flight) long against the pool's
20 ms steering windows and the start of a phase; a few thousand measure mostly the ramp.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable

import anyio
import anyio.to_process
import numpy as np

import nnrt

CONSTANT = np.arange(1, 5, dtype=np.float32).reshape(1, 4)
X = np.ones((1, 4), np.float32)

ECHO_SERVER = """
import asyncio, sys
async def handle(reader, writer):
    while True:
        data = await reader.read(65536)
        if not data:
            break
        writer.write(data)
async def main():
    server = await asyncio.start_unix_server(handle, sys.argv[1])
    print("ready", flush=True)
    async with server:
        await server.serve_forever()
asyncio.run(main())
"""


def numpy_add(x: np.ndarray) -> np.ndarray:
    """The work every peer does."""
    return x + CONSTANT


def add_model() -> nnrt.Model:
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 4))
    b.output(b.add(x, CONSTANT))
    return b.build()


Call = Callable[[], Awaitable[object]]


async def latency(call: Call, n: int) -> tuple[float, float]:
    for _ in range(50):
        await call()
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - start)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.99) - 1]


async def throughput(call: Call, concurrency: int, n: int) -> float:
    per_task = max(n // concurrency, 1)

    async def worker() -> None:
        for _ in range(per_task):
            await call()

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(concurrency):
            tg.start_soon(worker)
    return per_task * concurrency / (time.perf_counter() - start)


#: Per peer, the figures of every round: [p50, p99, rate@1, rate@8, rate@64].
RESULTS: dict[str, list[list[float]]] = {}


async def measure(name: str, call: Call, n: int, rows: list[str]) -> None:
    p50, p99 = await latency(call, n)
    rates = [await throughput(call, c, n) for c in (1, 8, 64)]
    RESULTS.setdefault(name, []).append([p50, p99, *rates])
    rows.append(_row(name, [p50, p99, *rates]))
    print(rows[-1], flush=True)


def _row(name: str, figures: list[float]) -> str:
    p50, p99, *rates = figures
    return (f"| {name} | {p50 * 1e6:.0f} | {p99 * 1e6:.0f} | "
            + " | ".join(f"{r:,.0f}" for r in rates) + " |")


async def echo_peer(n: int, rows: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "echo.sock")
        proc = subprocess.Popen([sys.executable, "-c", ECHO_SERVER, path],
                                stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            reader, writer = await asyncio.open_unix_connection(path)
            lock = asyncio.Lock()
            message = b"x" * 64

            async def call() -> None:
                # one round trip per call; concurrent callers take turns on the one stream
                async with lock:
                    writer.write(message)
                    await reader.readexactly(len(message))

            await measure("raw asyncio Unix-socket echo (floor)", call, n, rows)
            writer.close()
        finally:
            proc.terminate()
            proc.wait()


async def nnrt_peer(workers: int, n: int, rows: list[str]) -> None:
    # the reference driver: the runtime's own cost (the default drivers put a 1x4 ADD on litert)
    async with nnrt.Runtime(workers=workers, drivers=["reference"]) as rt:  # max_in_flight 64
        compiled = await rt.compile(add_model())

        async def call() -> None:
            await compiled.execute([X])

        await measure(f"nnrt execute, {workers} worker(s)", call, n, rows)


async def shared_peer(workers: int, n: int, rows: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "nnrt.sock")
        proc = subprocess.Popen([sys.executable, "-m", "nnrt", "serve", "--socket", path,
                                 "--workers", str(workers), "--driver", "reference"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while not os.path.exists(path):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("nnrt serve did not start")
                await asyncio.sleep(0.05)
            async with nnrt.Runtime(connect=path) as rt:
                compiled = await rt.compile(add_model())

                async def call() -> None:
                    await compiled.execute([X])

                await measure(f"nnrt shared mode (nnrt serve), {workers} worker(s)", call, n,
                              rows)
        finally:
            proc.terminate()
            proc.wait()


async def pool_peer(workers: int, n: int, rows: list[str]) -> None:
    loop = asyncio.get_running_loop()
    with concurrent.futures.ProcessPoolExecutor(workers) as pool:
        async def call() -> None:
            await loop.run_in_executor(pool, numpy_add, X)

        await measure(f"ProcessPoolExecutor + run_in_executor, {workers} worker(s)", call, n,
                      rows)


async def to_process_peer(workers: int, n: int, rows: list[str]) -> None:
    limiter = anyio.CapacityLimiter(workers)

    async def call() -> None:
        await anyio.to_process.run_sync(numpy_add, X, limiter=limiter)

    await measure(f"anyio.to_process.run_sync, {workers} worker(s)", call, n, rows)


HEADER = ("| peer | p50 µs | p99 µs | req/s @1 | req/s @8 | req/s @64 |\n"
          "|---|---:|---:|---:|---:|---:|")


async def main(n: int, rounds: int) -> None:
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, numpy {np.__version__}, nnrt {nnrt.__version__}")
    for round_ in range(rounds):
        print(f"\nround {round_ + 1} of {rounds}\n{HEADER}")
        rows: list[str] = []
        await echo_peer(n, rows)
        for workers in (1, 2):
            await nnrt_peer(workers, n, rows)
        for workers in (1, 2):
            await shared_peer(workers, n, rows)
        for workers in (1, 2):
            await pool_peer(workers, n, rows)
        for workers in (1, 2):
            await to_process_peer(workers, n, rows)
    if rounds > 1:
        print(f"\nmedian of {rounds} rounds (each figure separately)\n{HEADER}")
        for name, figures in RESULTS.items():
            print(_row(name, [statistics.median(column) for column in zip(*figures, strict=True)]))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the median "
                        "of each figure is reported (this VM is noisy)")
    args = parser.parse_args()
    asyncio.run(main(args.requests, args.rounds))
