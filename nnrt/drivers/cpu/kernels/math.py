"""Element-wise math, activations with parameters, reductions and LOG_SOFTMAX, in float32.

Each kernel writes its destination ``out`` (float32, the result's exact shape) with numpy's
``out=`` where numpy allows, like :mod:`nnrt.drivers.cpu.kernels`. The element-wise ones may be
called with ``out`` being one of their operands (the in-place fusion pass does that): each reads
an operand's element before it writes the same element, or finishes reading it first.

Accuracy: the reference computes in float64 and rounds once. The float32 ufuncs used here (exp,
log, sin, power) stay within a few units in the last place of that; sums and products over axes
accumulate in float64 (REDUCE_SUM, REDUCE_PROD, LOG_SOFTMAX's normaliser, the statistics of
INSTANCE_NORMALIZATION), so long reductions do not drift.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from nnrt.drivers.cpu.kernels.base import ufunc_kernel

__all__ = ["MATH_KERNELS"]

Array = np.ndarray[Any, Any]

_THREE = np.float32(3.0)
_SIXTH = np.float32(1.0 / 6.0)


# -- unary -----------------------------------------------------------------------------------


def square(out: Array, x: Array) -> None:
    """POW with a constant exponent of 2 (exact like the float64 reference, rounded once)."""
    np.multiply(x, x, out=out)


def hard_swish(out: Array, x: Array, tmp: Array) -> None:
    """HARD_SWISH: ``x * relu6(x + 3) / 6``; ``tmp`` is float32 scratch of ``x``'s shape."""
    np.add(x, _THREE, out=tmp)
    np.clip(tmp, 0.0, 6.0, out=tmp)
    tmp *= _SIXTH
    np.multiply(x, tmp, out=out)


def elu(out: Array, x: Array, alpha: float, tmp: Array) -> None:
    """ELU: ``alpha * (exp(x) - 1)`` below 0, else ``x``; ``tmp`` is scratch of ``x``'s shape.

    Computed as ``max(x, 0) + alpha * expm1(min(x, 0))``: one of the two terms is 0.
    """
    np.minimum(x, 0.0, out=tmp)
    np.expm1(tmp, out=tmp)
    tmp *= np.float32(alpha)
    np.maximum(x, 0.0, out=out)
    out += tmp


# -- binary (broadcasting) -------------------------------------------------------------------


def prelu(out: Array, x: Array, alpha: Array) -> None:
    """PRELU: ``x >= 0 ? x : alpha * x`` with broadcasting (NaN stays NaN).

    Correct when ``out`` is ``x`` or ``alpha``: each element of ``out`` is written once from
    the same element of its operands.
    """
    negative_x = np.less(x, 0.0)
    np.multiply(x, alpha, out=out, where=negative_x)
    np.copyto(out, x, where=~negative_x)


# -- along axes --------------------------------------------------------------------------------


def reduce_sum(out: Array, x: Array, axes: tuple[int, ...]) -> None:
    """REDUCE_SUM over ``axes`` (accumulated in float64), written with ``out``'s shape."""
    total = np.add.reduce(x, axis=axes, dtype=np.float64)
    np.copyto(out, total.reshape(out.shape), casting="same_kind")


def reduce_prod(out: Array, x: Array, axes: tuple[int, ...]) -> None:
    """REDUCE_PROD over ``axes`` (accumulated in float64), written with ``out``'s shape."""
    total = np.multiply.reduce(x, axis=axes, dtype=np.float64)
    np.copyto(out, total.reshape(out.shape), casting="same_kind")


def reduce_max(out: Array, x: Array, axes: tuple[int, ...]) -> None:
    """REDUCE_MAX over ``axes`` (NaN propagates), written with ``out``'s shape."""
    np.copyto(out, np.maximum.reduce(x, axis=axes).reshape(out.shape))


def reduce_min(out: Array, x: Array, axes: tuple[int, ...]) -> None:
    """REDUCE_MIN over ``axes`` (NaN propagates), written with ``out``'s shape."""
    np.copyto(out, np.minimum.reduce(x, axis=axes).reshape(out.shape))


def log_softmax(out: Array, x: Array, beta: float, axis: int, tmp: Array) -> None:
    """LOG_SOFTMAX: ``z - log(sum(exp(z)))`` with ``z = (x - max(x)) * beta`` along ``axis``;
    ``tmp`` is float32 scratch of ``x``'s shape."""
    np.subtract(x, x.max(axis=axis, keepdims=True), out=out)
    if beta != 1.0:
        out *= np.float32(beta)
    np.exp(out, out=tmp)
    total = np.add.reduce(tmp, axis=axis, dtype=np.float64, keepdims=True)
    np.subtract(out, np.log(total), out=out, casting="same_kind")


def instance_norm(out: Array, x: Array, gamma: float, beta: float, epsilon: float,
                  nchw: bool, tmp: Array) -> None:
    """INSTANCE_NORMALIZATION of each (batch, channel) plane over its height and width;
    ``tmp`` is float32 scratch of ``x``'s shape. Statistics accumulate in float64."""
    spatial = (2, 3) if nchw else (1, 2)
    count = math.prod(x.shape[a] for a in spatial)
    mean = np.add.reduce(x, axis=spatial, dtype=np.float64, keepdims=True) / count
    np.subtract(x, mean, out=out, casting="same_kind")
    np.multiply(out, out, out=tmp)
    var = np.add.reduce(tmp, axis=spatial, dtype=np.float64, keepdims=True) / count
    scale = (gamma / np.sqrt(var + epsilon)).astype(np.float32)
    out *= scale
    out += np.float32(beta)


#: The kernels of this module, by name (merged into the cpu kernel table).
MATH_KERNELS: dict[str, Callable[..., Any]] = {
    "exp": ufunc_kernel(np.exp, "EXP."),
    "log": ufunc_kernel(np.log, "LOG (``log(0) = -inf``, negative numbers give NaN)."),
    "negative": ufunc_kernel(np.negative, "NEG."),
    "absolute": ufunc_kernel(np.absolute, "ABS."),
    "floor": ufunc_kernel(np.floor, "FLOOR."),
    "sin": ufunc_kernel(np.sin, "SIN."),
    "square": square, "hard_swish": hard_swish, "elu": elu,
    "maximum": ufunc_kernel(np.maximum, "MAXIMUM (NaN in either input gives NaN)."),
    "minimum": ufunc_kernel(np.minimum, "MINIMUM (NaN in either input gives NaN)."),
    "power": ufunc_kernel(np.power, "POW, following C ``powf``."),
    "prelu": prelu,
    "reduce_sum": reduce_sum, "reduce_prod": reduce_prod, "reduce_max": reduce_max,
    "reduce_min": reduce_min, "log_softmax": log_softmax, "instance_norm": instance_norm,
}
