"""Kernels of nnrt's extension operations the cpu driver accelerates: com.nnrt.ERF (GELU's error
function) and com.nnrt.LAYER_NORMALIZATION, both in float32.

``erf`` is a two-piece approximation fitted for nnrt (least-squares Chebyshev fits in float64 on
Chebyshev nodes, converted to monomial coefficients and rounded to float32):

* ``|x| < 1``: ``erf(x) = x + x * P(x * x)`` with ``P(z) ≈ erf(sqrt(z)) / sqrt(z) - 1`` of degree
  6 — writing the leading ``x`` separately keeps the float32 rounding of the result within
  about one unit in the last place;
* ``1 <= |x| < 4``: ``erf(x) = 1 - Q(s) / exp(x * x)`` with ``Q ≈ erfc(x) * exp(x * x)`` of
  degree 8 in ``s = (1 / x - 0.625) / 0.375`` (``s`` spans ``[-1, 1]``, which keeps Horner's
  scheme well conditioned in float32);
* ``|x| >= 4``: ``±1`` (``erfc(4) < 2e-8``, below float32's resolution next to 1).

The sign is restored with ``copysign`` (odd symmetry; ``erf(-0) = -0``, NaN stays NaN). The
absolute error against the exactly rounded ``erf`` stays below 1e-7 (tested on a dense grid).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["ERF_SCRATCH", "EXT_KERNELS"]

Array = np.ndarray[Any, Any]

#: ``erf`` needs a float32 scratch array of shape ``(ERF_SCRATCH, *x.shape)``.
ERF_SCRATCH = 4

_SPLIT = np.float32(1.0)
_SATURATE = np.float32(4.0)
_S_CENTRE = np.float32(0.625)
_S_SCALE = np.float32(1.0 / 0.375)
# P, lowest degree first.
_SMALL = tuple(np.float32(c) for c in (
    0.12837917, -0.37612626, 0.11283597, -0.026854329, 0.005189312, -0.0008018857,
    7.882499e-05))
# Q, lowest degree first.
_LARGE = tuple(np.float32(c) for c in (
    0.305953, 0.14335628, -0.024242662, 0.0023098104, 0.0004590743, -0.0003545564,
    0.00012558867, -1.9490486e-05, -3.4687307e-06))


def _horner(out: Array, coefficients: tuple[np.float32, ...], v: Array) -> None:
    """``out = sum(coefficients[k] * v ** k)`` by Horner's scheme, in place."""
    out.fill(coefficients[-1])
    for c in coefficients[-2::-1]:
        out *= v
        out += c


def erf(out: Array, x: Array, scratch: Array) -> None:
    """com.nnrt.ERF; ``scratch`` is float32 ``(ERF_SCRATCH, *x.shape)``.

    Both pieces are evaluated everywhere and blended with a 0 / 1 mask by multiplication (exact,
    and much faster than a masked copy); each piece sees a clipped argument, so neither
    overflows. ``out`` may be ``x`` itself: ``x`` is read first and last, ``out`` written last.
    """
    a, w, e, r = scratch[0], scratch[1], scratch[2], scratch[3]
    np.abs(x, out=a)
    # 1 <= |x|: r = 1 - Q(s) / exp(w * w), w = |x| clipped to [1, 4].
    np.clip(a, _SPLIT, _SATURATE, out=w)
    np.multiply(w, w, out=e)
    np.exp(e, out=e)
    np.reciprocal(w, out=w)
    w -= _S_CENTRE
    w *= _S_SCALE
    _horner(r, _LARGE, w)
    r /= e
    np.subtract(np.float32(1.0), r, out=r)
    # The mask: 1 where |x| < 1 (0 for NaN). Zero r there, and a (clipped to 1) elsewhere.
    np.copyto(e, a < _SPLIT)
    np.minimum(a, _SPLIT, out=a)
    a *= e
    np.subtract(np.float32(1.0), e, out=e)
    r *= e
    # |x| < 1: a + a * P(a * a), which is 0 where a was zeroed.
    np.multiply(a, a, out=e)
    _horner(w, _SMALL, e)
    w *= a
    w += a
    r += w
    np.copysign(r, x, out=out)


def layer_norm(out: Array, x: Array, scale: Array, bias: Array | None, axis: int,
               epsilon: float, squares: Array) -> None:
    """com.nnrt.LAYER_NORMALIZATION over the axes ``[axis, rank)``; ``squares`` is float32
    scratch of ``x``'s shape. Sums are numpy's pairwise float32 reductions."""
    tail = x.shape[axis:]
    inner = math.prod(tail)
    rows = x.reshape(-1, inner)
    centred = out.reshape(-1, inner)
    mean = np.add.reduce(rows, axis=1, keepdims=True)
    mean /= inner
    np.subtract(rows, mean, out=centred)
    sq = squares.reshape(-1, inner)
    np.multiply(centred, centred, out=sq)
    std = np.add.reduce(sq, axis=1, keepdims=True)
    std /= inner
    std += np.float32(epsilon)
    np.sqrt(std, out=std)
    centred /= std
    y = out.reshape(-1, *tail)
    y *= scale
    if bias is not None:
        y += bias


#: The extension kernels, by name (merged into the cpu kernel table).
EXT_KERNELS: dict[str, Callable[..., Any]] = {"erf": erf, "layer_norm": layer_norm}
