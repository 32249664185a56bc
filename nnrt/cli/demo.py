"""``nnrt demo``: a small CNN classifier built with ``ModelBuilder`` and run end to end.

Until the async runtime lands the demo runs on the in-process reference interpreter; it checks
the result against a plain-numpy computation of the same network, so the numbers shown are
verified, not just printed.
"""

from __future__ import annotations

import time
from typing import Any, TextIO

import numpy as np

from nnrt.model.builder import ModelBuilder
from nnrt.model.model import Model
from nnrt.ops.interpreter import run

__all__ = ["build_demo_model", "demo", "numpy_forward"]

Weights = dict[str, np.ndarray[Any, Any]]


def demo_weights(seed: int = 7) -> Weights:
    """Deterministic weights for the demo network."""
    rng = np.random.default_rng(seed)
    return {
        "conv_w": (rng.standard_normal((8, 3, 3, 1)) * 0.4).astype(np.float32),
        "conv_b": (rng.standard_normal(8) * 0.1).astype(np.float32),
        "fc_w": (rng.standard_normal((10, 7 * 7 * 8)) * 0.05).astype(np.float32),
        "fc_b": (rng.standard_normal(10) * 0.1).astype(np.float32),
    }


def build_demo_model(weights: Weights, batch: int = 4) -> Model:
    """input [batch, 14, 14, 1] → CONV_2D 3x3 relu → MAX_POOL 2x2 → FC → SOFTMAX."""
    b = ModelBuilder()
    x = b.input("image", (batch, 14, 14, 1))
    y = b.conv2d(x, weights["conv_w"], weights["conv_b"], padding="same", activation="relu")
    y = b.max_pool2d(y, 2)
    y = b.reshape(y, (batch, 7 * 7 * 8))
    y = b.fully_connected(y, weights["fc_w"], weights["fc_b"])
    b.output(b.softmax(y), names=["probabilities"])
    return b.build()


def numpy_forward(weights: Weights, images: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The same network in plain float64 numpy, written independently of nnrt's kernels."""
    x = np.pad(images.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    n, h, w = images.shape[0], images.shape[1], images.shape[2]
    conv = np.zeros((n, h, w, 8))
    for dy in range(3):
        for dx in range(3):
            patch = x[:, dy:dy + h, dx:dx + w, :]  # [n, h, w, 1]
            conv += patch * weights["conv_w"][:, dy, dx, 0]
    conv = np.maximum(conv + weights["conv_b"], 0)
    pooled = conv.reshape(n, h // 2, 2, w // 2, 2, 8).max(axis=(2, 4))
    logits = pooled.reshape(n, -1) @ weights["fc_w"].T.astype(np.float64) + weights["fc_b"]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return np.asarray(e / e.sum(axis=1, keepdims=True))


def demo(out: TextIO) -> int:
    """Build, run and verify the demo model; returns a process exit code."""
    weights = demo_weights()
    model = build_demo_model(weights)
    images = np.random.default_rng(1).random((4, 14, 14, 1), dtype=np.float32)
    print(f"model: {model}", file=out)
    for index in model.run_order:
        op = model.operations[index]
        shape = model.inferred_dims[op.outputs[0]]
        print(f"  op {index}: {op.type.name:<16} -> {shape}", file=out)
    start = time.perf_counter()
    (probabilities,) = run(model, {"image": images})
    elapsed = time.perf_counter() - start
    expected = numpy_forward(weights, images)
    error = float(np.max(np.abs(probabilities - expected)))
    print(f"reference interpreter: batch of {len(images)} in {elapsed * 1e3:.1f} ms", file=out)
    for k, row in enumerate(probabilities):
        print(f"  image {k}: class {int(np.argmax(row))} (p={float(row.max()):.3f})", file=out)
    print(f"max |nnrt - numpy float64| = {error:.2e}", file=out)
    if not error <= 1e-5:
        print("FAILED: the result differs from the independent numpy computation", file=out)
        return 1
    print("ok: matches an independent numpy computation", file=out)
    return 0
