"""The basic kernels: views, copies, matrix products, element-wise ops, SOFTMAX, shape ops.

In float32: views and copies, FULLY_CONNECTED and BATCH_MATMUL, element-wise arithmetic and
activations, SOFTMAX, MEAN, TRANSPOSE, CONCATENATION.

Fused activations are the NNAPI codes (0 none, 1 relu, 2 relu1, 3 relu6), applied in place
(:func:`~nnrt.drivers.cpu.kernels.base.activate`). View kernels (``slot``, ``view``) return an
array instead of writing a destination.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from nnrt.drivers.cpu.kernels.base import activate

__all__ = ["BASIC_KERNELS"]

Array = np.ndarray[Any, Any]


# -- views and copies ------------------------------------------------------------------------


def slot(arena: Array, offset: int, shape: tuple[int, ...]) -> Array:
    """The arena's ``[offset, offset + prod(shape))`` elements viewed with ``shape``."""
    size = math.prod(shape)
    if offset < 0 or offset + size > arena.shape[0]:
        raise ValueError(f"slot [{offset}, {offset + size}) is outside the scratch arena "
                         f"({arena.shape[0]} elements)")
    return arena[offset:offset + size].reshape(shape)


def view(x: Array, shape: tuple[int, ...]) -> Array:
    """``x`` with a new shape (a view of contiguous data)."""
    return x.reshape(shape)


def copy(out: Array, x: Array) -> None:
    """Copy ``x`` (same element count) into ``out``."""
    np.copyto(out, x.reshape(out.shape))


# -- matrix products -------------------------------------------------------------------------


def fc(out: Array, x: Array, wt: Array, bias: Array, act: int) -> None:
    """FULLY_CONNECTED with pre-packed weights ``wt`` ``[input_size, num_units]``."""
    np.matmul(x.reshape(out.shape[0], wt.shape[0]), wt, out=out)
    out += bias
    activate(out, act)


def batch_matmul(out: Array, a: Array, b: Array, adj_x: bool, adj_y: bool) -> None:
    """BATCH_MATMUL with optional adjoints of the last two dims."""
    np.matmul(np.swapaxes(a, -1, -2) if adj_x else a, np.swapaxes(b, -1, -2) if adj_y else b,
              out=out)


# -- element-wise ----------------------------------------------------------------------------


def add(out: Array, a: Array, b: Array, act: int) -> None:
    """ADD with broadcasting and a fused activation."""
    np.add(a, b, out=out)
    activate(out, act)


def sub(out: Array, a: Array, b: Array, act: int) -> None:
    """SUB with broadcasting and a fused activation."""
    np.subtract(a, b, out=out)
    activate(out, act)


def mul(out: Array, a: Array, b: Array, act: int) -> None:
    """MUL with broadcasting and a fused activation."""
    np.multiply(a, b, out=out)
    activate(out, act)


def div(out: Array, a: Array, b: Array, act: int) -> None:
    """DIV with broadcasting and a fused activation."""
    np.divide(a, b, out=out)
    activate(out, act)


def relu(out: Array, x: Array) -> None:
    """RELU."""
    np.maximum(x, 0.0, out=out)


def relu1(out: Array, x: Array) -> None:
    """RELU1."""
    np.clip(x, -1.0, 1.0, out=out)


def relu6(out: Array, x: Array) -> None:
    """RELU6."""
    np.clip(x, 0.0, 6.0, out=out)


def logistic(out: Array, x: Array) -> None:
    """LOGISTIC: ``1 / (1 + exp(-x))``."""
    np.negative(x, out=out)
    np.exp(out, out=out)
    out += 1.0
    np.reciprocal(out, out=out)


def tanh(out: Array, x: Array) -> None:
    """TANH."""
    np.tanh(x, out=out)


def sqrt(out: Array, x: Array) -> None:
    """SQRT."""
    np.sqrt(x, out=out)


def rsqrt(out: Array, x: Array) -> None:
    """RSQRT: ``1 / sqrt(x)``."""
    np.sqrt(x, out=out)
    np.reciprocal(out, out=out)


# -- along axes --------------------------------------------------------------------------------


def softmax(out: Array, x: Array, beta: float, axis: int) -> None:
    """SOFTMAX along ``axis`` with scaling ``beta`` (max subtracted first)."""
    np.subtract(x, x.max(axis=axis, keepdims=True), out=out)
    if beta != 1.0:
        out *= beta
    np.exp(out, out=out)
    out /= out.sum(axis=axis, keepdims=True)


def mean(out: Array, x: Array, axes: tuple[int, ...]) -> None:
    """MEAN over ``axes`` (accumulated in float64), written with ``out``'s shape."""
    total = np.add.reduce(x, axis=axes, dtype=np.float64)
    count = math.prod(x.shape[a] for a in axes)
    np.divide(total.reshape(out.shape), count, out=out, casting="same_kind")


def transpose(out: Array, x: Array, perm: tuple[int, ...]) -> None:
    """TRANSPOSE with permutation ``perm``."""
    np.copyto(out, np.transpose(x, perm))


def concat(out: Array, parts: tuple[Array, ...], axis: int) -> None:
    """CONCATENATION of ``parts`` along ``axis``."""
    np.concatenate(parts, axis=axis, out=out)


def pack_fc(out: Array, w: Array) -> None:
    """FULLY_CONNECTED weights ``[num_units, input_size]`` packed as ``[input_size, units]``."""
    np.copyto(out, w.T)


#: The kernels of this module, by name (merged into the cpu kernel table).
BASIC_KERNELS: dict[str, Callable[..., Any]] = {
    "slot": slot, "view": view, "copy": copy,
    "fc": fc, "batch_matmul": batch_matmul,
    "add": add, "sub": sub, "mul": mul, "div": div,
    "relu": relu, "relu1": relu1, "relu6": relu6, "logistic": logistic, "tanh": tanh,
    "sqrt": sqrt, "rsqrt": rsqrt,
    "softmax": softmax, "mean": mean, "transpose": transpose, "concat": concat,
    "pack_fc": pack_fc,
}
