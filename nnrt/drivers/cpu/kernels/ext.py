"""Kernels of nnrt's extension operations com.nnrt.ERF and com.nnrt.LAYER_NORMALIZATION.

Both are in float32; ERF is GELU's error function.

``erf`` is a two-piece approximation fitted for nnrt (least-squares Chebyshev fits in float64 on
Chebyshev nodes, converted to monomial coefficients and rounded to float32):

* ``|x| < 1``: ``erf(x) = x + x * P(x * x)`` with ``P(z) ≈ erf(sqrt(z)) / sqrt(z) - 1`` of degree
  6 — writing the leading ``x`` separately keeps the float32 rounding of the result within
  about one unit in the last place;
* ``1 <= |x| < 4``: ``erf(x) = 1 - Q(s) / exp(x * x)`` with ``Q ≈ erfc(x) * exp(x * x)`` of
  degree 8 in ``s = (1 / x - 0.625) / 0.375`` (``s`` spans ``[-1, 1]``, which keeps Horner's
  scheme well conditioned in float32);
* ``|x| >= 4``: ``±1`` (``erfc(4) < 2e-8``, below float32's resolution next to 1).

The first piece is odd as written and runs on all of ``x`` clipped to ``[-1, 1]``; the second
(whose ``exp`` numpy evaluates slowly, about 12 simple passes' worth) runs only on the gathered
elements with ``|x| >= 1`` and gets the sign with ``copysign`` (``erf(-0) = -0``, NaN stays NaN).
The absolute error against the exactly rounded ``erf`` stays below 1e-7 (tested on a dense
grid).
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
    np.multiply(v, coefficients[-1], out=out)
    out += coefficients[-2]
    for c in coefficients[-3::-1]:
        out *= v
        out += c


def erf(out: Array, x: Array, scratch: Array) -> None:
    """com.nnrt.ERF; ``scratch`` is float32 ``(ERF_SCRATCH, *x.shape)``.

    The small piece, odd as written, is evaluated everywhere on ``x`` clipped to ``[-1, 1]``
    (where ``|x| >= 1`` it is overwritten). The large piece, which needs the slow ``exp``, is
    evaluated only on the elements with ``|x| >= 1``, gathered into the scratch rows (for
    GELU's inputs, typically a sixth of them) and scattered back with their sign. ``out`` may
    be ``x`` itself: ``x`` is read before ``out`` is written.
    """
    rows = scratch.reshape(ERF_SCRATCH, -1)
    w, z = rows[0].reshape(x.shape), rows[1].reshape(x.shape)
    np.clip(x, -_SPLIT, _SPLIT, out=w)
    np.multiply(w, w, out=z)
    # |x| >= 1 exactly where the clipped square is 1 (NaN compares false: it stays small).
    large = np.flatnonzero(z >= _SPLIT)
    g = np.take(x, large, out=rows[3][:large.size])
    # |x| < 1: w + w * P(w * w), odd, so the sign (and -0) comes for free.
    _horner(out, _SMALL, z)
    out *= w
    out += w
    if large.size:
        values = _erf_large(g, rows[0][:large.size], rows[1][:large.size],
                            rows[2][:large.size])
        if out.flags.c_contiguous:
            out.reshape(-1)[large] = values
        else:
            np.put(out, large, values)


def _erf_large(g: Array, w: Array, e: Array, r: Array) -> Array:
    """``erf(g)`` for ``|g| >= 1`` (1-D), as ``1 - Q(s) / exp(w * w)`` with ``w = |g|``
    clipped to ``[1, 4]``, then the sign of ``g``; written into and returning ``r``."""
    np.abs(g, out=w)
    np.clip(w, _SPLIT, _SATURATE, out=w)
    np.multiply(w, w, out=e)
    np.exp(e, out=e)
    np.reciprocal(w, out=w)
    w -= _S_CENTRE
    w *= _S_SCALE
    _horner(r, _LARGE, w)
    r /= e
    np.subtract(np.float32(1.0), r, out=r)
    np.copysign(r, g, out=r)
    return r


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
