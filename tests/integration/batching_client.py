"""A client process of the shared-mode batching tests, and the models they batch.

``python batching_client.py SOCKET SEED COUNT`` connects to an ``nnrt serve`` service,
compiles :func:`row_model` batched (and unbatched, for the expected results), puts its COUNT
distinct rows (drawn with SEED) in a shared memory of its own, prints ``ready`` and waits for a
line on stdin; then sends every row as one concurrent single-row request (odd rows as views of
that memory, travelling by reference; even rows as plain arrays, inline), prints a JSON report
— whether each result equals its unbatched one bit for bit, whether its memory is unchanged —
and exits after one more line on stdin.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import numpy as np

import nnrt

WEIGHTS = np.random.default_rng(7).standard_normal((32, 16)).astype(np.float32)
#: Values per row of :func:`wide_model` (a row is over the inline limit: it travels in pools).
WIDE = 20_000


def row_model() -> nnrt.Model:
    """softmax(relu(x W^T + b)) on x [?, 16], W [32, 16] (2 KiB of packed constants)."""
    b = nnrt.ModelBuilder()
    x = b.input("x", (0, 16))
    y = b.fully_connected(x, WEIGHTS, np.linspace(-1, 1, 32, dtype=np.float32),
                          activation="relu")
    b.output(b.softmax(y), names=["y"])
    return b.build()


def wide_model() -> nnrt.Model:
    """y = x * s + 1 on x [?, WIDE] (s: a constant row of 80 KB)."""
    b = nnrt.ModelBuilder()
    x = b.input("x", (0, WIDE))
    scale = np.linspace(0.5, 2.0, WIDE, dtype=np.float32).reshape(1, WIDE)
    b.output(b.add(b.mul(x, scale), np.ones((1,), np.float32)), names=["y"])
    return b.build()


async def main(path: str, seed: int, count: int) -> None:
    async with nnrt.Runtime(connect=path) as rt:
        model = row_model()
        plain = await rt.compile(model)
        batched = await rt.compile(model, batching=nnrt.Batching(max_batch=64, max_delay=0.5))
        rows = np.random.default_rng(seed).standard_normal((count, 16)).astype(np.float32)
        memory = rt.memory.create(rows.nbytes)
        shared = memory.ndarray(np.float32, rows.shape)
        shared[:] = rows
        expected = [(await plain.execute([rows[k:k + 1]]))[0] for k in range(count)]
        print("ready", flush=True)
        await anyio.to_thread.run_sync(sys.stdin.readline)
        results: list[Any] = [None] * count

        async def one(k: int) -> None:
            x = shared[k:k + 1] if k % 2 else rows[k:k + 1].copy()
            (results[k],) = await batched.execute([x])

        async with anyio.create_task_group() as tg:
            for k in range(count):
                tg.start_soon(one, k)
        report = {"same": all(np.array_equal(got, want)
                              for got, want in zip(results, expected, strict=True)),
                  "unchanged": bool(np.array_equal(shared, rows)), "count": count}
        print(json.dumps(report), flush=True)
        await anyio.to_thread.run_sync(sys.stdin.readline)  # the runtime closes the memory


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
