"""Quantised kernels: CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD / SUB / MUL, pooling,
SOFTMAX, MEAN, and table lookups for element-wise functions of one quantised input.

They compute NNAPI's integer arithmetic (``docs/quantization.md``) bit for bit, as the
reference kernels do, but in fewer, larger numpy calls: products are accumulated by float64
matrix products over integer values — exact, since every partial sum stays far below 2**53 —
then rescaled by the quantised multipliers of :mod:`nnrt.ops.quant`. Offsets are removed
before the products (``x - zero_point``), so padding with 0 is padding with the zero point.
A function of one quantised input (RELU, LOGISTIC, TANH, HARD_SWISH, DEQUANTIZE, ...) is a
table of its 256 results, computed at compile time by the reference kernel itself
(:mod:`nnrt.drivers.cpu.lowering.quant`).

``rescale`` is ``(multipliers, shifts, output zero point, low, high)``: per output channel (or
one of each) and the clamp of the fused activation in the quantised domain.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nnrt.drivers.cpu.kernels.nn import window_taps
from nnrt.model.types import OperandType
from nnrt.ops.binary import ADD_LEFT_SHIFT
from nnrt.ops.quant import multiply_by_quantized_multiplier
from nnrt.ops.softmax import softmax_quant8

__all__ = ["QUANT_KERNELS"]

Array = np.ndarray[Any, Any]
Geo = tuple[int, int, int, int, int, int, int, int]


def _store(out: Array, acc: Array, mult: Array | int, shift: Array | int, zero_point: int,
           low: int, high: int, nchw: bool) -> None:
    """``acc`` (exact integers, NHWC or flat) wrapped to int32 as the C accumulator is,
    rescaled, offset, clamped and written into ``out``."""
    total = acc.astype(np.int64).astype(np.int32)
    y = multiply_by_quantized_multiplier(total, mult, shift) + zero_point
    np.clip(y, low, high, out=y)
    if nchw:
        y = y.transpose(0, 3, 1, 2)
    out[...] = y


def _offset_nhwc(x: Array, zero_point: int, geo: Geo, nchw: bool) -> Array:
    """``x - zero_point`` in float64, NHWC, with the padding of ``geo`` (zeros)."""
    xf = x.astype(np.float64)
    xf -= zero_point
    if nchw:
        xf = xf.transpose(0, 2, 3, 1)
    top, bottom, left, right = geo[:4]
    if top or bottom or left or right:
        xf = np.pad(xf, ((0, 0), (top, bottom), (left, right), (0, 0)))
    return xf


def q_conv(out: Array, x: Array, wm: Array, bias: Array, x_zero: int, geo: Geo,
           mult: Array, shift: Array, out_zero: int, low: int, high: int, nchw: bool) -> None:
    """Quantised CONV_2D; ``wm`` is the filter minus its zero point as the float64 GEMM matrix
    ``[kh * kw * depth_in, depth_out]``, ``bias`` float64 ``[depth_out]``."""
    xf = _offset_nhwc(x, x_zero, geo, nchw)
    n = xf.shape[0]
    oh, ow = (out.shape[2], out.shape[3]) if nchw else (out.shape[1], out.shape[2])
    taps = window_taps(xf, geo, oh, ow)
    cols = taps[0] if len(taps) == 1 else np.concatenate(taps, axis=3)
    acc = cols.reshape(n * oh * ow, wm.shape[0]) @ wm
    acc += bias
    _store(out, acc.reshape(n, oh, ow, -1), mult, shift, out_zero, low, high,
           nchw)


def q_depthwise(out: Array, x: Array, wt: Array, bias: Array, x_zero: int, geo: Geo,
                multiplier: int, mult: Array, shift: Array, out_zero: int, low: int, high: int,
                nchw: bool) -> None:
    """Quantised DEPTHWISE_CONV_2D; ``wt`` ``[kh * kw, depth_out]`` float64, minus zero point."""
    xf = _offset_nhwc(x, x_zero, geo, nchw)
    if multiplier > 1:
        xf = np.repeat(xf, multiplier, axis=3)
    oh, ow = (out.shape[2], out.shape[3]) if nchw else (out.shape[1], out.shape[2])
    taps = window_taps(xf, geo, oh, ow)
    acc = taps[0] * wt[0]
    for t in range(1, len(taps)):
        acc += taps[t] * wt[t]
    acc += bias
    _store(out, acc, mult, shift, out_zero, low, high, nchw)


def q_fc(out: Array, x: Array, wt: Array, bias: Array, x_zero: int, mult: Array,
         shift: Array, out_zero: int, low: int, high: int) -> None:
    """Quantised FULLY_CONNECTED; ``wt`` ``[input_size, units]`` float64 minus zero point."""
    xf = x.reshape(-1, wt.shape[0]).astype(np.float64)
    xf -= x_zero
    acc = xf @ wt
    acc += bias
    _store(out, acc, mult, shift, out_zero, low, high, False)


def q_add(out: Array, a: Array, b: Array, zeros: tuple[int, int, int], mults: tuple[int, ...],
          shifts: tuple[int, ...], low: int, high: int) -> None:
    """Quantised ADD / SUB (SUB has input 2's multiplier negated): each input shifted left
    by :data:`ADD_LEFT_SHIFT` and rescaled to twice the larger input scale, summed, rescaled
    to the output."""
    za, zb, zo = zeros
    sa = (a.astype(np.int64) - za) << ADD_LEFT_SHIFT
    sb = (b.astype(np.int64) - zb) << ADD_LEFT_SHIFT
    total = (multiply_by_quantized_multiplier(sa, mults[0], shifts[0])
             + multiply_by_quantized_multiplier(sb, mults[1], shifts[1]))
    y = multiply_by_quantized_multiplier(total, mults[2], shifts[2]) + zo
    np.clip(y, low, high, out=y)
    out[...] = y


def q_mul(out: Array, a: Array, b: Array, zeros: tuple[int, int, int], mult: int, shift: int,
          low: int, high: int) -> None:
    """Quantised MUL: the product of the offset inputs rescaled to the output."""
    za, zb, zo = zeros
    product = (a.astype(np.int64) - za) * (b.astype(np.int64) - zb)
    y = multiply_by_quantized_multiplier(product, mult, shift) + zo
    np.clip(y, low, high, out=y)
    out[...] = y


def _windows(x: Array, geo: Geo, fill: int, out: Array, nchw: bool) -> tuple[Array, int, int]:
    xi = x.astype(np.int64)
    if nchw:
        xi = xi.transpose(0, 2, 3, 1)
    top, bottom, left, right = geo[:4]
    if top or bottom or left or right:
        xi = np.pad(xi, ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=fill)
    oh, ow = (out.shape[2], out.shape[3]) if nchw else (out.shape[1], out.shape[2])
    return xi, oh, ow


def q_max_pool(out: Array, x: Array, geo: Geo, low: int, high: int, nchw: bool) -> None:
    """Quantised MAX_POOL_2D (padding never wins), clamped to the activation range."""
    xi, oh, ow = _windows(x, geo, np.iinfo(np.int64).min, out, nchw)
    taps = window_taps(xi, geo, oh, ow)
    y = taps[0].copy()
    for tap in taps[1:]:
        np.maximum(y, tap, out=y)
    np.clip(y, low, high, out=y)
    out[...] = y.transpose(0, 3, 1, 2) if nchw else y


def q_avg_pool(out: Array, x: Array, counts: Array, geo: Geo, low: int, high: int,
               nchw: bool) -> None:
    """Quantised AVERAGE_POOL_2D: the window sum divided by its count of real elements,
    rounded half away from zero (C division of ``sum ± count / 2``), then clamped."""
    xi, oh, ow = _windows(x, geo, 0, out, nchw)
    taps = window_taps(xi, geo, oh, ow)
    total = taps[0].copy()
    for tap in taps[1:]:
        total += tap
    half = counts // 2
    num = np.where(total >= 0, total + half, total - half)
    y = np.sign(num) * (np.abs(num) // counts)
    np.clip(y, low, high, out=y)
    out[...] = y.transpose(0, 3, 1, 2) if nchw else y


def q_softmax(out: Array, x: Array, axis: int, beta: float, scale: float, zero_point: int,
              type_code: int) -> None:
    """Quantised SOFTMAX: NNAPI's fixed-point kernel, the reference's own function."""
    out[...] = softmax_quant8(x, axis, beta, scale, zero_point, OperandType(type_code))


def q_mean(out: Array, x: Array, axes: tuple[int, ...]) -> None:
    """Quantised MEAN (input and output share scale and zero point): the integer sum divided
    by the count, truncated toward zero, as NNAPI's kernel does."""
    count = 1
    for a in axes:
        count *= x.shape[a]
    sums = np.sum(x.astype(np.int64), axis=axes)
    out[...] = (np.sign(sums) * (np.abs(sums) // count)).reshape(out.shape)


def q_lut(out: Array, x: Array, table: Array, offset: int) -> None:
    """``table[x + offset]``: a function of one quantised input, tabulated."""
    np.take(table, x.astype(np.intp) + offset, out=out)


#: The kernels of this module, by name (merged into the cpu kernel table).
QUANT_KERNELS: dict[str, Callable[..., Any]] = {
    "q_conv": q_conv,
    "q_depthwise": q_depthwise,
    "q_fc": q_fc,
    "q_add": q_add,
    "q_mul": q_mul,
    "q_max_pool": q_max_pool,
    "q_avg_pool": q_avg_pool,
    "q_lut": q_lut,
    "q_softmax": q_softmax,
    "q_mean": q_mean,
}
