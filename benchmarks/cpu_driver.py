"""The compiling ``cpu`` driver against the reference driver, in process at the HAL level.

Run: .venv/bin/python benchmarks/cpu_driver.py [--runs N]

Both drivers prepare the same model (``ReferenceDriver().prepare(m)`` vs
``load_driver("cpu").prepare(m)``); each ``prepared.execute(inputs)`` is timed with
``perf_counter_ns`` after a warm-up, and the median is reported. Models: an MLP 784-512-512-10,
a small CNN on 28x28x1 and a transformer encoder block (seq 32, d_model 128, 4 heads, FFN
512), each at batch 1 and 32 (for the transformer, batch = number of sequences). Outputs of
both drivers are checked to agree (``np.allclose``). Prints a markdown table and the machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import nnrt
from nnrt.hal.discovery import load_driver
from nnrt.reference.driver import ReferenceDriver

Op = nnrt.OperationType
Array = np.ndarray[Any, Any]
ModelAndInputs = tuple[nnrt.Model, list[Array]]


def _w(rng: np.random.Generator, *shape: int) -> Array:
    scale = 1.0 / np.sqrt(shape[-1])
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def mlp(batch: int, seed: int = 0) -> ModelAndInputs:
    """784-512-512-10: FC + RELU, FC + RELU, FC, SOFTMAX."""
    rng = np.random.default_rng(seed)
    b = nnrt.ModelBuilder()
    x = b.input("x", (batch, 784))
    h = b.relu(b.fully_connected(x, _w(rng, 512, 784), _w(rng, 512)))
    h = b.relu(b.fully_connected(h, _w(rng, 512, 512), _w(rng, 512)))
    b.output(b.softmax(b.fully_connected(h, _w(rng, 10, 512), _w(rng, 10))))
    return b.build(), [rng.random((batch, 784), dtype=np.float32)]


def cnn(batch: int, seed: int = 0) -> ModelAndInputs:
    """28x28x1 -> conv 3x3x16 relu -> maxpool 2 -> conv 3x3x32 relu -> maxpool 2 -> FC 10."""
    rng = np.random.default_rng(seed)
    b = nnrt.ModelBuilder()
    x = b.input("x", (batch, 28, 28, 1))
    y = b.conv2d(x, _w(rng, 16, 3, 3, 1), _w(rng, 16), padding="valid", activation="relu")
    y = b.max_pool2d(y, 2)
    y = b.conv2d(y, _w(rng, 32, 3, 3, 16), _w(rng, 32), padding="valid", activation="relu")
    y = b.max_pool2d(y, 2)
    y = b.reshape(y, (batch, -1))
    b.output(b.softmax(b.fully_connected(y, _w(rng, 10, 800), _w(rng, 10))))
    return b.build(), [rng.random((batch, 28, 28, 1), dtype=np.float32)]


def _layer_norm(b: nnrt.ModelBuilder, h: nnrt.Tensor, rng: np.random.Generator,
                d_model: int) -> nnrt.Tensor:
    mean = b.mean(h, [1], keep_dims=True)
    d = b.sub(h, mean)
    var = b.mean(b.mul(d, d), [1], keep_dims=True)
    r = b.operation(Op.RSQRT, b.add(var, np.full((1,), 1e-5, np.float32)))[0]
    n = b.mul(b.mul(d, r), (1.0 + 0.1 * rng.standard_normal(d_model)).astype(np.float32))
    return b.add(n, (0.1 * rng.standard_normal(d_model)).astype(np.float32))


def transformer(batch: int, seed: int = 0, seq: int = 32, d_model: int = 128, heads: int = 4,
                ffn: int = 512) -> ModelAndInputs:
    """One encoder block: attention (Q/K/V FCs, heads, scaled BATCH_MATMUL, SOFTMAX), output
    FC, residual ADD, layer norm (MEAN/SUB/MUL/ADD/RSQRT), FFN with RELU, residual, norm."""
    rng = np.random.default_rng(seed)
    dh = d_model // heads
    b = nnrt.ModelBuilder()
    x = b.input("x", (batch, seq, d_model))
    rows = b.reshape(x, (batch * seq, d_model))

    def heads_of(t: nnrt.Tensor) -> nnrt.Tensor:
        return b.transpose(b.reshape(t, (batch, seq, heads, dh)), (0, 2, 1, 3))

    q, k, v = (heads_of(b.fully_connected(rows, _w(rng, d_model, d_model), _w(rng, d_model)))
               for _ in range(3))
    scores = b.operation(Op.BATCH_MATMUL, q, k, False, True)[0]
    scores = b.mul(scores, np.full((1,), 1.0 / np.sqrt(dh), np.float32))
    context = b.operation(Op.BATCH_MATMUL, b.softmax(scores), v, False, False)[0]
    merged = b.reshape(b.transpose(context, (0, 2, 1, 3)), (batch * seq, d_model))
    attended = b.fully_connected(merged, _w(rng, d_model, d_model), _w(rng, d_model))
    h = _layer_norm(b, b.add(rows, attended), rng, d_model)
    f = b.relu(b.fully_connected(h, _w(rng, ffn, d_model), _w(rng, ffn)))
    f = b.fully_connected(f, _w(rng, d_model, ffn), _w(rng, d_model))
    out = _layer_norm(b, b.add(h, f), rng, d_model)
    b.output(b.reshape(out, (batch, seq, d_model)))
    return b.build(), [rng.standard_normal((batch, seq, d_model)).astype(np.float32)]


MODELS: dict[str, Callable[[int], ModelAndInputs]] = {
    "MLP 784-512-512-10": mlp, "CNN 28x28x1": cnn, "transformer block": transformer}


def _median_ms(run: Callable[[], object], runs: int) -> float:
    for _ in range(max(3, runs // 10)):
        run()
    samples = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        run()
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples) / 1e6


def main(argv: list[str] | None = None) -> int:
    """Print the table; exit status 1 if outputs disagree."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=200, help="timed runs at batch 1")
    args = parser.parse_args(argv)
    print(f"machine: Python {platform.python_version()}, numpy {np.__version__}, "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs")
    print("| model | batch | reference ms | cpu ms | speed-up |")
    print("|---|---:|---:|---:|---:|")
    agree = True
    cpu_driver = load_driver("cpu")
    for name, make in MODELS.items():
        for batch in (1, 32):
            model, inputs = make(batch)
            runs = args.runs if batch == 1 else max(10, args.runs // 8)
            with ReferenceDriver().prepare(model) as ref, cpu_driver.prepare(model) as cpu:
                want = ref.execute(inputs).outputs
                got = cpu.execute(inputs).outputs
                agree &= all(np.allclose(g, w, rtol=1e-4, atol=1e-5)
                             for g, w in zip(got, want, strict=True))
                ref_ms = _median_ms(lambda r=ref, i=inputs: r.execute(i), runs)
                cpu_ms = _median_ms(lambda c=cpu, i=inputs: c.execute(i), runs)
            print(f"| {name} | {batch} | {ref_ms:.3f} | {cpu_ms:.3f} | "
                  f"{ref_ms / cpu_ms:.1f}x |")
    print(f"outputs agree (allclose rtol=1e-4, atol=1e-5): {agree}")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
