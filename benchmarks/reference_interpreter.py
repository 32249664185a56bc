"""Reference-interpreter speed: per-operation overhead and a conv-heavy model.

Run: .venv/bin/python benchmarks/reference_interpreter.py
Prints a markdown table; results are recorded in docs/benchmarks.md with the machine line.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable

import numpy as np

import nnrt


def _time(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    fn()  # warm up
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), min(samples)


def chain_of_adds(n: int) -> tuple[nnrt.Model, list[np.ndarray]]:
    b = nnrt.ModelBuilder()
    x = b.input("x", (4, 4))
    y = x
    for _ in range(n):
        y = b.add(y, x)
    b.output(y)
    return b.build(), [np.ones((4, 4), np.float32)]


def cnn(batch: int) -> tuple[nnrt.Model, list[np.ndarray]]:
    rng = np.random.default_rng(0)
    b = nnrt.ModelBuilder()
    x = b.input("x", (batch, 56, 56, 32))
    y = b.conv2d(x, rng.standard_normal((64, 3, 3, 32)).astype(np.float32),
                 np.zeros(64, np.float32), activation="relu")
    y = b.depthwise_conv2d(y, rng.standard_normal((1, 3, 3, 64)).astype(np.float32),
                           np.zeros(64, np.float32), activation="relu6")
    y = b.max_pool2d(y, 2)
    b.output(b.mean(y, axes=[1, 2]))
    return b.build(), [rng.random((batch, 56, 56, 32), dtype=np.float32)]


def main() -> None:
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, numpy {np.__version__}")
    print("| workload | median | best |")
    print("|---|---:|---:|")
    model, inputs = chain_of_adds(200)
    median, best = _time(lambda: nnrt.reference.run(model, inputs), 20)
    print(f"| 200 chained ADD [4,4] (per op) | {median / 200 * 1e6:.1f} µs | "
          f"{best / 200 * 1e6:.1f} µs |")
    for batch in (1, 8):
        model, inputs = cnn(batch)
        median, best = _time(lambda m=model, i=inputs: nnrt.reference.run(m, i), 5)
        print(f"| conv3x3 32→64 + dw3x3 + pool + mean, batch {batch}, 56x56 | "
              f"{median * 1e3:.1f} ms | {best * 1e3:.1f} ms |")


if __name__ == "__main__":
    main()
