"""``nnrt demo``: a 2-layer CNN on 28x28 input, run through driver worker processes.

The demo builds the model with ``ModelBuilder``, starts a runtime (worker processes), compiles,
executes a batch, prints the devices, per-step timings and a result checksum, and checks the
result against a plain-numpy computation of the same network written independently of nnrt.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any, TextIO

import anyio
import numpy as np

from nnrt.model.builder import ModelBuilder
from nnrt.model.model import Model
from nnrt.runtime.runtime import Runtime

__all__ = ["build_demo_model", "demo", "numpy_forward"]

Weights = dict[str, np.ndarray[Any, Any]]
BATCH = 16
RUNS = 32


def demo_weights(seed: int = 7) -> Weights:
    """Deterministic weights for the demo network."""
    rng = np.random.default_rng(seed)
    return {
        "conv_w": (rng.standard_normal((8, 3, 3, 1)) * 0.4).astype(np.float32),
        "conv_b": (rng.standard_normal(8) * 0.1).astype(np.float32),
        "conv2_w": (rng.standard_normal((16, 3, 3, 8)) * 0.2).astype(np.float32),
        "conv2_b": (rng.standard_normal(16) * 0.1).astype(np.float32),
        "fc_w": (rng.standard_normal((10, 7 * 7 * 16)) * 0.05).astype(np.float32),
        "fc_b": (rng.standard_normal(10) * 0.1).astype(np.float32),
    }


def build_demo_model(weights: Weights, batch: int = BATCH) -> Model:
    """[batch, 28, 28, 1] → (CONV 3x3 relu → MAX_POOL 2x2) x 2 → FULLY_CONNECTED → SOFTMAX."""
    b = ModelBuilder()
    x = b.input("image", (batch, 28, 28, 1))
    y = b.conv2d(x, weights["conv_w"], weights["conv_b"], padding="same", activation="relu")
    y = b.max_pool2d(y, 2)
    y = b.conv2d(y, weights["conv2_w"], weights["conv2_b"], padding="same", activation="relu")
    y = b.max_pool2d(y, 2)
    y = b.reshape(y, (batch, 7 * 7 * 16))
    y = b.fully_connected(y, weights["fc_w"], weights["fc_b"])
    b.output(b.softmax(y), names=["probabilities"])
    return b.build()


def numpy_forward(weights: Weights, images: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The same network in plain float64 numpy, written independently of nnrt's kernels."""
    def conv_relu_pool(x: np.ndarray[Any, Any], w: np.ndarray[Any, Any],
                       bias: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        n, h, wd, _ = x.shape
        padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
        out = np.zeros((n, h, wd, w.shape[0]))
        for dy in range(3):
            for dx in range(3):
                patch = padded[:, dy:dy + h, dx:dx + wd, :]  # [n, h, w, in]
                out += np.einsum("nhwc,oc->nhwo", patch, w[:, dy, dx, :].astype(np.float64))
        out = np.maximum(out + bias, 0)
        pooled: np.ndarray[Any, Any] = out.reshape(n, h // 2, 2, wd // 2, 2, -1).max(axis=(2, 4))
        return pooled

    y = conv_relu_pool(images.astype(np.float64), weights["conv_w"], weights["conv_b"])
    y = conv_relu_pool(y, weights["conv2_w"], weights["conv2_b"])
    logits = y.reshape(len(y), -1) @ weights["fc_w"].T.astype(np.float64) + weights["fc_b"]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return np.asarray(e / e.sum(axis=1, keepdims=True))


def demo(out: TextIO, *, workers: int = 2) -> int:
    """Build the demo CNN, run a batch through worker processes, verify it; returns exit code."""
    return anyio.run(_demo, out, workers)


async def _demo(out: TextIO, workers: int) -> int:
    weights = demo_weights()
    images = np.random.default_rng(1).random((BATCH, 28, 28, 1), dtype=np.float32)
    t0 = time.perf_counter()
    model = build_demo_model(weights)
    t1 = time.perf_counter()
    print(f"model: {model}", file=out)
    for index in model.run_order:
        op = model.operations[index]
        print(f"  op {index}: {op.type.name:<16} -> {model.inferred_dims[op.outputs[0]]}",
              file=out)
    async with Runtime(workers=workers) as rt:
        t2 = time.perf_counter()
        for info in rt.devices:
            print(f"device: {info.name} {info.version} ({info.device_type}, feature level "
                  f"{info.feature_level}), {workers} worker processes", file=out)
        compiled = await rt.compile(model)
        t3 = time.perf_counter()
        (first,) = await compiled.execute({"image": images})
        t4 = time.perf_counter()
        async def run_once() -> None:
            await compiled.execute({"image": images})

        async with anyio.create_task_group() as tg:
            for _ in range(RUNS):
                tg.start_soon(run_once)
        t5 = time.perf_counter()
        stats = rt.statistics()
    steps = [("build model", t1 - t0), ("start workers", t2 - t1), ("compile", t3 - t2),
             ("first execute", t4 - t3), (f"{RUNS} concurrent executes", t5 - t4)]
    for name, seconds in steps:
        print(f"  {name:<24} {seconds * 1e3:8.1f} ms", file=out)
    print(f"completed {stats.completed} executions, {stats.failed} failed", file=out)
    expected = numpy_forward(weights, images)
    error = float(np.max(np.abs(first - expected)))
    checksum = hashlib.sha256(np.round(first.astype(np.float64), 5).tobytes()).hexdigest()[:16]
    for k, row in enumerate(first[:4]):
        print(f"  image {k}: class {int(np.argmax(row))} (p={float(row.max()):.3f})", file=out)
    print(f"result checksum: {checksum}   sum(p) = {float(first.sum()):.6f}", file=out)
    print(f"max |nnrt - numpy float64| = {error:.2e}", file=out)
    if not error <= 1e-5:
        print("FAILED: the result differs from the independent numpy computation", file=out)
        return 1
    print("ok: matches an independent numpy computation", file=out)
    return 0
