"""The integer building blocks of NNAPI's QUANTIZED_LSTM kernel (TFLite's 8x8→16 LSTM).

NNAPI's QUANTIZED_LSTM computes every gate with a handful of int8 / int16 / int32 vector
routines (NNAPI's ``QuantUtils``, TFLite's ``tensor_utils``). Each function here is one of them,
vectorised over ``[batch, units]`` int64 arrays holding the integer values, with the same
accumulation widths, roundings, wrap-arounds and saturations. Multipliers come as ``(M,
shift)`` pairs of :func:`~nnrt.ops.quant.quantize_multiplier`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.ops import fixed_point as fp
from nnrt.ops.quant import multiply_by_quantized_multiplier, rounding_divide_by_pot

__all__ = [
    "apply_layer_norm",
    "cwise_mul_rescaled",
    "cwise_mul_shift",
    "matmul_accumulate",
    "peephole_accumulate",
    "saturating_add",
    "zero_point_times_rowsum",
]

Array = np.ndarray[Any, Any]
Multiplier = tuple[int, int]

_INT16 = (-32768, 32767)
_INT8 = (-128, 127)
#: The fixed-point "1.0" of the variance computation: 2**20 (2**10 squared).
_OVERFLOW_GUARD = 1 << 20


def _c_div(a: Array, b: int) -> Array:
    """C's integer division: truncation toward zero."""
    q: Array = np.where(a >= 0, a // b, -((-a) // b))
    return q


def zero_point_times_rowsum(zero_point: int, weights: Array, bias: Array | None = None) -> Array:
    """``bias + zero_point * rowsum(weights)`` in int32: a gate's precomputed effective bias."""
    rows = weights.astype(np.int64).sum(axis=1)
    base = np.zeros(weights.shape[0], np.int64) if bias is None else bias.astype(np.int64)
    return fp.wrap(base + fp.wrap(rows * zero_point, 32), 32)


def matmul_accumulate(x: Array, weights: Array, bias: Array, multiplier: Multiplier,
                      accumulator: Array, output_zero_point: int, bits: int) -> Array:
    """``MatrixBatchVectorMultiplyAccumulate``: ``accumulator + rescale(bias + x @ W.T) + zp``.

    The int32 dot products are rescaled by ``multiplier``, offset, added to ``accumulator``
    and saturated to a signed ``bits``-bit integer (16 for gates, 8 for the projection).
    """
    acc = fp.wrap(bias.astype(np.int64) + x.astype(np.int64) @ weights.astype(np.int64).T, 32)
    scaled = multiply_by_quantized_multiplier(acc, *multiplier)
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    result: Array = np.clip(scaled + output_zero_point + accumulator, low, high)
    return result


def peephole_accumulate(weights: Array, cell: Array, multiplier: Multiplier,
                        accumulator: Array) -> Array:
    """``VectorBatchVectorCwiseProductAccumulate``: ``accumulator + rescale(w * c)``, int16."""
    product = fp.wrap(weights.astype(np.int64) * cell.astype(np.int64), 32)
    result: Array = np.clip(multiply_by_quantized_multiplier(product, *multiplier) + accumulator,
                            *_INT16)
    return result


def apply_layer_norm(x: Array, weights: Array, bias: Array, multiplier: Multiplier,
                     variance_limit: int) -> Array:
    """``ApplyLayerNorm`` on int16 rows: normalise, scale by ``weights``, add ``bias``.

    Mean and variance carry 10 extra fractional bits (the mean is ``sum * 1024 / n``, the
    variance ``(sum_sq * (2**20 / n) - mean**2) / 2**20``, truncated); a variance below 1 is
    replaced by ``variance_limit``. Each value ``1024 * x - mean`` is multiplied by the inverse
    square root of the variance (:func:`~nnrt.ops.fixed_point.inv_sqrt_quantized_multiplier`),
    by its weight (int32, wrapping) plus the bias, divided by 1024 rounding half away from
    zero, rescaled by ``multiplier`` shifted 12 bits further left and saturated to int16.
    """
    x = x.astype(np.int64)
    n = x.shape[1]
    out = np.empty_like(x)
    for b in range(x.shape[0]):
        row = x[b]
        mean = int(_c_div(np.asarray(int(row.sum()) * 1024), n))
        variance = int((row * row).sum()) * (_OVERFLOW_GUARD // n) - mean * mean
        variance2 = int(_c_div(np.asarray(variance), _OVERFLOW_GUARD))
        if variance2 < 1:
            variance2 = variance_limit
        inv_a, inv_b = fp.inv_sqrt_quantized_multiplier(variance2)
        rescaled = multiply_by_quantized_multiplier(fp.wrap(1024 * row - mean, 32), inv_a, inv_b)
        val3 = fp.wrap(rescaled * weights.astype(np.int64) + bias.astype(np.int64), 32)
        val4 = _c_div(np.where(val3 > 0, val3 + 512, val3 - 512), 1024)
        val5 = multiply_by_quantized_multiplier(val4, multiplier[0], multiplier[1] + 12)
        out[b] = np.clip(val5, *_INT16)
    return out


def cwise_mul_shift(a: Array, b: Array, shift: int) -> Array:
    """``CwiseMul`` to int16: ``a * b`` divided by ``2**shift`` (rounded), wrapped to int16."""
    product = a.astype(np.int64) * b.astype(np.int64)
    return fp.wrap(rounding_divide_by_pot(product, shift), 16)


def cwise_mul_rescaled(a: Array, b: Array, multiplier: Multiplier, zero_point: int) -> Array:
    """``CwiseMul`` to int8: ``rescale(a * b) - zero_point``, saturated.

    NNAPI's kernel *subtracts* the zero point here (its projection bias adds it back).
    """
    product = fp.wrap(a.astype(np.int64) * b.astype(np.int64), 32)
    result: Array = np.clip(multiply_by_quantized_multiplier(product, *multiplier) - zero_point,
                            *_INT8)
    return result


def saturating_add(a: Array, b: Array) -> Array:
    """``CwiseAdd``: ``a + b`` saturated to int16."""
    result: Array = np.clip(a.astype(np.int64) + b.astype(np.int64), *_INT16)
    return result
