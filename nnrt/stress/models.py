"""The small models the stress traffic runs, and random inputs for them.

Every model is cheap on both built-in drivers (a stress run measures the runtime, not kernels)
and every result is checked against :func:`nnrt.reference.run`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nnrt.model.builder import ModelBuilder
from nnrt.model.model import Model
from nnrt.model.types import OperationType

__all__ = ["CELL_UNITS", "MODELS", "SLOW_SIZE", "cell_model", "random_inputs", "slow_model"]

Array = np.ndarray[Any, Any]

#: Size of the state tensor of :func:`cell_model` (the device-buffer traffic).
CELL_UNITS = 256
#: Side of the matrices of :func:`slow_model` (the cancellation traffic).
SLOW_SIZE = 192


def add_model() -> Model:
    """y = x + c on [1, 64]."""
    b = ModelBuilder()
    x = b.input("x", (1, 64))
    b.output(b.add(x, np.arange(64, dtype=np.float32).reshape(1, 64) / 8), names=["y"])
    return b.build()


def mlp_model() -> Model:
    """softmax(relu(x W1 + b1) W2 + b2) on [2, 32] -> [2, 10] (weights by reference)."""
    rng = np.random.default_rng(7)
    b = ModelBuilder()
    x = b.input("x", (2, 32))
    w1 = rng.standard_normal((48, 32)).astype(np.float32) / 6
    w2 = rng.standard_normal((10, 48)).astype(np.float32) / 7
    h = b.fully_connected(x, w1, np.full(48, 0.1, np.float32), activation="relu")
    b.output(b.softmax(b.fully_connected(h, w2, np.zeros(10, np.float32))), names=["p"])
    return b.build()


def conv_model() -> Model:
    """relu(conv3x3(x)) then a 2x2 max pool, NHWC [1, 8, 8, 3] -> [1, 4, 4, 4]."""
    rng = np.random.default_rng(11)
    b = ModelBuilder()
    x = b.input("x", (1, 8, 8, 3))
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32) / 4
    y = b.conv2d(x, w, np.zeros(4, np.float32), padding="same", activation="relu")
    b.output(b.max_pool2d(y, 2, stride=2), names=["y"])
    return b.build()


def cell_model(units: int = CELL_UNITS) -> Model:
    """state' = tanh(0.9 state + x): inputs (x [1], state [units]); the device-buffer model."""
    b = ModelBuilder()
    x = b.input("x", (1,))
    state = b.input("state", (units,))
    b.output(b.tanh(b.add(b.mul(state, np.array([0.9], np.float32)), x)), names=["state"])
    return b.build()


def slow_model(ops: int = 24, size: int = SLOW_SIZE) -> Model:
    """A chain of BATCH_MATMULs by 0.5 I (tens of ms): long enough to cancel mid-execute."""
    b = ModelBuilder()
    x = b.input("x", (1, size, size))
    w = b.constant(np.eye(size, dtype=np.float32).reshape(1, size, size) * 0.5)
    y = x
    for _ in range(ops):
        y = b.operation(OperationType.BATCH_MATMUL, y, w, False, False)[0]
    b.output(y)
    return b.build()


#: The models of the execute / compile traffic, by name.
MODELS: dict[str, Callable[[], Model]] = {
    "add": add_model,
    "mlp": mlp_model,
    "conv": conv_model,
}


def random_inputs(model: Model, rng: np.random.Generator) -> list[Array]:
    """One float32 array per model input, in input order, with values in [-2, 2)."""
    arrays = []
    for index in model.inputs:
        dims = model.operands[index].dims
        arrays.append((rng.random(dims, dtype=np.float32) * 4 - 2).astype(np.float32))
    return arrays
