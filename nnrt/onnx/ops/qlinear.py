"""Quantised convolutions and matrix products: the Conv / MatMul / Gemm QDQ groups, QLinearConv
and QLinearMatMul.

Each becomes NNAPI's quantised operation, which computes exactly what onnxruntime's integer
kernels do — an int32 sum of ``(x - x_zero_point) * (w - w_zero_point)`` plus the int32 bias —
and rescales it to the output's parameters with NNAPI's fixed-point multiplier, rounding twice
(onnxruntime multiplies by a float32 one and rounds once: a result within a small fraction of a
step of a halfway point, some 3 in 10**4 of them, can come out one step apart).

* The input is a quantised tensor of the output's 8-bit type (uint8: TENSOR_QUANT8_ASYMM, int8:
  TENSOR_QUANT8_ASYMM_SIGNED).
* Weights are known: per tensor (any zero point; converted exactly to the input's 8-bit type)
  or per output channel with zero points 0 and values in [-127, 127], as
  TENSOR_QUANT8_SYMM_PER_CHANNEL along the NNAPI filter's output-channel dim (0 for CONV_2D,
  3 for DEPTHWISE_CONV_2D).
* The bias is an int32 DequantizeLinear (QDQ) or QLinearConv's ``B`` whose scale is
  ``x_scale * w_scale`` (per channel for per-channel weights: NNAPI's bias scale is then 0);
  a float bias (not quantised by the model) does not fold.
* Conv: CONV_2D / DEPTHWISE_CONV_2D / GROUPED_CONV_2D as in :mod:`nnrt.onnx.ops.conv` (grouped
  dilated convolutions do not fold).
* MatMul with known 2-D weights and Gemm (``alpha = beta = 1``, ``transA = 0``, known B, a bias
  of ``N`` elements): FULLY_CONNECTED; with per-channel weights, which FULLY_CONNECTED does not
  take, a 1x1 CONV_2D over ``[rows, 1, 1, K]``. MatMul of two int8 tensors computed at
  execution: BATCH_MATMUL (NNAPI's quantised BATCH_MATMUL is int8 only).
* QLinearMatMul's float16 scales (opset 21) are widened to float32, which holds them exactly:
  the operands have the same real scales.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nnrt.model.types import OperationType as Op
from nnrt.onnx.folding import read_qparams, widened_scale
from nnrt.onnx.graph import Value
from nnrt.onnx.node import NodeContext, converter, fold
from nnrt.onnx.ops.conv import convolution
from nnrt.onnx.ops.linear import known_product, reshape, transpose
from nnrt.onnx.ops.qdq import as_operand_of, quantized_source
from nnrt.onnx.qparams import QParams

__all__ = ["qlinear_conv", "qlinear_matmul"]

Array = np.ndarray[Any, Any]
_I32 = np.dtype(np.int32)
#: How far a model's bias scale may be from ``x_scale * w_scale`` (float32 rounding of the
#: product onnxruntime's quantiser computes).
_BIAS_SCALE_RTOL = 1e-6


# -- operands -------------------------------------------------------------------------------


def _weights(w: Value | None, dtype: np.dtype[Any], axis: int) -> Value | None:
    """Known quantised weights as an operand for an input of ``dtype``: per tensor converted
    to ``dtype``, or per-channel along ``axis`` (zero points 0, values ≥ -127); None when
    NNAPI cannot take them."""
    if w is None or w.const is None or w.quant is None:
        return None
    if not w.quant.per_axis:
        return as_operand_of(w, dtype)
    if w.quant.axis != axis or w.quant.operand_type() is None or np.any(w.const < -127):
        return None
    return w


def _channel_scales(params: QParams, channels: int) -> Array:
    """Per-channel (or broadcast per-tensor) scales, as float64."""
    return np.broadcast_to(params.scale.astype(np.float64).reshape(-1), (channels,))


def _bias(c: Value | None, x: QParams, w: QParams, channels: int) -> Value | None:
    """The int32 bias operand for input ``x`` and weights ``w`` (whose per-channel axis is
    the output channels): ``c``'s quantised values when their scale is ``x_scale *
    w_scale``, zeros without ``c``; None when ``c`` does not fit."""
    wanted = x.scale_value * _channel_scales(w, channels)
    params = QParams.per_tensor(_I32, 0.0 if w.per_axis else float(wanted[0]))
    if c is None:
        return Value("", _I32, (channels,), const=np.zeros(channels, np.int32), quant=params)
    q = quantized_source(c)
    if q is None or q.const is None or q.quant is None or q.quant.dtype != _I32 or (
            q.const.size != channels):
        return None
    given = _channel_scales(q.quant, channels)
    if np.any(np.abs(given - wanted) > _BIAS_SCALE_RTOL * np.minimum(given, wanted)):
        return None
    zero_point = np.broadcast_to(q.quant.zero_point.astype(np.int64).reshape(-1), (channels,))
    values = q.const.reshape(-1).astype(np.int64) - zero_point
    if values.min(initial=0) < np.iinfo(np.int32).min or values.max(
            initial=0) > np.iinfo(np.int32).max:
        return None
    return Value("", _I32, (channels,), const=values.astype(np.int32), quant=params)


# -- Conv -----------------------------------------------------------------------------------


def quantized_conv(n: NodeContext, x: Value, w: Value, c: Value | None,
                   out: QParams) -> Value | None:
    """Conv ``n`` of quantised ``x`` by quantised known ``w`` plus int32 ``c`` into ``out``'s
    parameters, or None when NNAPI cannot compute it exactly."""
    if x.quant is None or x.quant.dtype != out.dtype or w.rank < 3:
        return None
    filt = _weights(w, x.quant.dtype, 0)
    if filt is None or filt.quant is None:
        return None
    bias = _bias(c, x.quant, filt.quant, w.shape[0])
    if bias is None:
        return None
    return convolution(n, x, filt, bias, quant=out)


@fold("Conv")
def conv(n: NodeContext, out: QParams) -> Sequence[Value] | None:
    """A Conv QDQ group (see the module docstring)."""
    x = quantized_source(n.inputs[0], runtime=True)
    w = quantized_source(n.inputs[1] if n.n_inputs > 1 else None)
    if x is None or w is None:
        return None
    y = quantized_conv(n, x, w, n.inputs[2] if n.has_input(2) else None, out)
    return None if y is None else [y]


# -- MatMul / Gemm --------------------------------------------------------------------------


def quantized_product(n: NodeContext, a: Value, b: Value, c: Value | None, out: QParams, *,
                      transposed: bool = False) -> Value | None:
    """``a @ b (+ c)`` for quantised ``a`` (rank ≥ 2) and known quantised 2-D ``b`` (``[K,
    N]``, or ``[N, K]`` if ``transposed``), or None when NNAPI cannot compute it exactly."""
    if a.quant is None or a.quant.dtype != out.dtype or a.rank < 2 or b.rank != 2:
        return None
    units = b.shape[0] if transposed else b.shape[1]
    rows_first = b if transposed else transpose(n, b, (1, 0))  # [N, K]
    weights = _weights(rows_first, a.quant.dtype, 0)
    if weights is None or weights.quant is None:
        return None
    bias = _bias(c, a.quant, weights.quant, units)
    if bias is None:
        return None
    k = weights.shape[1]
    if a.shape[-1] not in (0, k):
        n.fail(f"inner dimensions differ: {list(a.shape)} and weights {list(b.shape)}")
    rows = known_product(a.shape[:-1])
    flat = a if a.rank == 2 else reshape(n, a, (rows, k))
    if weights.quant.per_axis:  # a 1x1 CONV_2D over [rows, 1, 1, K] (NHWC)
        image = reshape(n, flat, (rows, 1, 1, k))
        filt = reshape(n, weights, (units, 1, 1, k))
        y4 = n.graph.op(Op.CONV_2D, image, filt, bias, 0, 0, 0, 0, 1, 1, 0, False, quant=out)
        y = reshape(n, y4, (rows, units))
    else:
        y = n.graph.op(Op.FULLY_CONNECTED, flat, weights, bias, 0, quant=out)
    return y if a.rank == 2 else reshape(n, y, (*a.shape[:-1], units), like=a)


@fold("MatMul")
def matmul(n: NodeContext, out: QParams) -> Sequence[Value] | None:
    """A MatMul QDQ group: FULLY_CONNECTED for known weights, BATCH_MATMUL for two int8
    tensors."""
    a = quantized_source(n.inputs[0], runtime=True)
    b = quantized_source(n.inputs[1] if n.n_inputs > 1 else None)
    if a is None or b is None:
        return None
    y = _product(n, a, b, out)
    return None if y is None else [y]


def _product(n: NodeContext, a: Value, b: Value, out: QParams) -> Value | None:
    """Quantised ``a @ b``: FULLY_CONNECTED for known 2-D ``b``, else BATCH_MATMUL of int8
    operands of equal batch dims (per tensor), or None."""
    if b.const is not None and b.rank == 2:
        return quantized_product(n, a, b, None, out)
    if a.quant is None or b.quant is None or b.quant.per_axis or a.rank < 2 or (
            a.rank != b.rank) or a.shape[:-2] != b.shape[:-2] or not (
            a.quant.dtype == b.quant.dtype == out.dtype == np.int8):
        return None
    return n.graph.op(Op.BATCH_MATMUL, a, b, False, False, quant=out)


@fold("Gemm")
def gemm(n: NodeContext, out: QParams) -> Sequence[Value] | None:
    """A Gemm QDQ group with ``alpha = beta = 1``, ``transA = 0`` and known weights."""
    a = quantized_source(n.inputs[0], runtime=True)
    b = quantized_source(n.inputs[1] if n.n_inputs > 1 else None)
    if float(n.attr("alpha", 1.0)) != 1 or float(n.attr("beta", 1.0)) != 1 or int(
            n.attr("transA", 0)) or a is None or b is None or b.const is None or a.rank != 2:
        return None
    y = quantized_product(n, a, b, n.inputs[2] if n.has_input(2) else None, out,
                          transposed=bool(n.attr("transB", 0)))
    return None if y is None else [y]


# -- QLinearConv / QLinearMatMul -------------------------------------------------------------


def _quantized_input(n: NodeContext, index: int, what: str) -> Value:
    """QLinear input ``index`` with its scale and zero point (the next two inputs) as a
    quantised value: a quantised tensor of these parameters, or a known integer array."""
    v = n.input(index)
    zero_point = n.input(index + 2) if n.has_input(index + 2) else None
    params = read_qparams(widened_scale(n.input(index + 1)), zero_point, v.dtype, {"axis": 0},
                          v.rank)
    if v.quant is not None:
        if not params.same(v.quant):
            n.fail(f"{what} is {v.quant.describe()} quantised, the node reads it as "
                   f"{params.describe()}")
        return v
    if v.const is None:
        n.fail(f"{what} must be a quantised tensor (a QuantizeLinear or QLinear result), got "
               f"a plain {v.dtype} tensor")
    return Value(v.name, v.dtype, v.shape, const=v.const, quant=params)


def _output_params(n: NodeContext, index: int, dtype: np.dtype[Any]) -> QParams:
    zero_point = n.input(index + 1) if n.has_input(index + 1) else None
    return read_qparams(widened_scale(n.input(index)), zero_point, dtype, {}, None)


def _int32_bias(n: NodeContext, x: QParams, w: QParams, channels: int) -> Value | None:
    """QLinearConv's ``B``: int32 of scale ``x_scale * w_scale`` (as a DequantizeLinear)."""
    if not n.has_input(8):
        return None
    b = n.const_input(8, "B")
    if b.dtype != _I32:
        n.fail(f"B must be int32, got {b.dtype}")
    scales = x.scale_value * _channel_scales(w, channels)
    axis = 0 if w.per_axis else None
    params = QParams(_I32, (scales if axis == 0 else scales[:1].reshape(())).astype(np.float32),
                     np.zeros(channels if axis == 0 else (), np.int32), axis)
    held = Value("", _I32, b.shape, const=b, quant=params)
    return Value("", np.dtype(np.float32), b.shape, dequantizes=held,
                 const=params.dequantized(b))


@converter("QLinearConv")
def qlinear_conv(n: NodeContext) -> list[Value]:
    """QLinearConv: the quantised convolution (see the module docstring)."""
    x = _quantized_input(n, 0, "input x")
    w = _quantized_input(n, 3, "input w")
    out = _output_params(n, 6, x.dtype)
    if w.quant is None or x.quant is None:
        n.fail("x and w must be quantised")
    y = quantized_conv(n, x, w, _int32_bias(n, x.quant, w.quant, w.shape[0]), out)
    if y is None:
        n.fail(f"NNAPI has no exact quantised convolution of {x.quant.describe()} input by "
               f"{w.quant.describe()} weights into {out.describe()} (per-channel weights "
               "need zero points 0 and values ≥ -127)")
    return [y]


@converter("QLinearMatMul")
def qlinear_matmul(n: NodeContext) -> list[Value]:
    """QLinearMatMul: FULLY_CONNECTED for known 2-D weights, BATCH_MATMUL for int8 tensors."""
    a = _quantized_input(n, 0, "input a")
    b = _quantized_input(n, 3, "input b")
    out = _output_params(n, 6, a.dtype)
    if a.quant is None or b.quant is None:
        n.fail("a and b must be quantised")
    y = _product(n, a, b, out)
    if y is None:
        n.fail(f"NNAPI has no exact quantised product of {a.quant.describe()} by "
               f"{b.quant.describe()} into {out.describe()} (known 2-D weights, or two int8 "
               "tensors of equal batch dims)")
    return [y]
