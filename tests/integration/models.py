"""Small real models for runtime tests."""

from __future__ import annotations

import numpy as np

import nnrt


def add_model(n: int = 4) -> nnrt.Model:
    """y = x + c on [1, n] (c = 1, 2, ..., n)."""
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, n))
    b.output(b.add(x, np.arange(1, n + 1, dtype=np.float32).reshape(1, n)), names=["y"])
    return b.build()


def dynamic_add_model() -> nnrt.Model:
    """y = x + x with x of shape [?, 3] (output shape known only at execution)."""
    b = nnrt.ModelBuilder()
    x = b.input("x", (0, 3))
    b.output(b.add(x, x))
    return b.build()


SLOW_SIZE = 768


def slow_input() -> np.ndarray:
    """An input for :func:`slow_model`."""
    return np.ones((1, SLOW_SIZE, SLOW_SIZE), np.float32)


def slow_model(ops: int = 30, size: int = SLOW_SIZE) -> nnrt.Model:
    """A chain of BATCH_MATMULs taking ~20-40 ms per op (about a second) on the reference."""
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, size, size))
    w = b.constant(np.eye(size, dtype=np.float32).reshape(1, size, size) * 0.5)
    y = x
    for _ in range(ops):
        y = b.operation(nnrt.OperationType.BATCH_MATMUL, y, w, False, False)[0]
    b.output(y)
    return b.build()
