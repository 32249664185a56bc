"""Dynamic quantisation (``onnxruntime.quantization.quantize_dynamic``): DynamicQuantizeLinear,
MatMulInteger and ConvInteger.

NNAPI's quantisation parameters are part of the model, while DynamicQuantizeLinear computes
them from each input: these values cannot be NNAPI quantised operands. They are computed
exactly with float32 and int32 operations instead, the uint8 results held as TENSOR_INT32
(:mod:`nnrt.onnx.smallint`):

* DynamicQuantizeLinear: ``scale = (max(x, 0) - min(x, 0)) / 255`` (1 when that range is 0),
  ``zero_point = round(clamp(0 - min(x, 0) / scale, 0, 255))`` and ``y = round(clamp(x /
  scale, 0 - zero_point, 255 - zero_point)) + zero_point`` (REDUCE_MIN / REDUCE_MAX, MINIMUM,
  MAXIMUM, SUB, DIV in float32, as onnxruntime computes them). ``round`` is half to even, as ONNX
  specifies: ``(v + 1.5 * 2**23) - 1.5 * 2**23``, which IEEE float32 addition rounds to the
  nearest integer, ties to even, for ``|v| < 2**22`` (here ``|v| ≤ 255``).
* MatMulInteger and ConvInteger: ``(a - a_zero_point)`` and ``(b - b_zero_point)`` (int32
  SUB, then CAST to float32) multiplied by FULLY_CONNECTED / the float convolutions. Their
  products and every partial sum are integers of magnitude at most ``255 * sum|b -
  b_zero_point|`` over one output's terms; with known weights nnrt checks that bound is below
  2**24 for every output, so float32 holds each partial sum exactly in any summation order and
  the result (CAST back to int32) is the exact int32 one. A weight matrix beyond the bound, or
  weights computed at execution, are reported, as are int8 activations (onnxruntime's dynamic
  quantisation gives uint8 ones).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.model.types import OperationType as Op
from nnrt.onnx.graph import Value
from nnrt.onnx.node import NodeContext, converter
from nnrt.onnx.ops.conv import convolution
from nnrt.onnx.ops.elementwise import binary
from nnrt.onnx.ops.linear import matmul_by
from nnrt.onnx.smallint import as_int32, retagged

__all__ = ["conv_integer", "dynamic_quantize_linear", "matmul_integer"]

Array = np.ndarray[Any, Any]
_F32 = np.dtype(np.float32)
_I32 = np.dtype(np.int32)
_U8 = np.dtype(np.uint8)
#: 1.5 * 2**23: adding it and taking it away rounds a float32 to an integer, ties to even.
_ROUNDER = 12582912.0
#: float32 holds every integer of magnitude below this exactly.
_EXACT = 2**24


def _scalar(value: float) -> Value:
    return Value("", _F32, (1,), const=np.asarray([value], np.float32))


def _rounded(n: NodeContext, v: Value) -> Value:
    """``v`` (|v| < 2**22) rounded to the nearest integer, ties to even."""
    return binary(n, Op.SUB, binary(n, Op.ADD, v, _scalar(_ROUNDER)), _scalar(_ROUNDER))


@converter("DynamicQuantizeLinear")
def dynamic_quantize_linear(n: NodeContext) -> list[Value]:
    """DynamicQuantizeLinear: uint8 ``y``, float ``y_scale``, uint8 ``y_zero_point``."""
    x = n.input(0)
    if x.dtype != _F32 or x.rank == 0:
        n.fail(f"only float32 tensors of rank ≥ 1 are supported, got {x.dtype} of rank "
               f"{x.rank}")
    x = n.graph.materialized(x)
    g = n.graph
    axes = np.arange(x.rank, dtype=np.int32)
    low = binary(n, Op.MINIMUM, g.op(Op.REDUCE_MIN, x, axes, False), _scalar(0.0))
    high = binary(n, Op.MAXIMUM, g.op(Op.REDUCE_MAX, x, axes, False), _scalar(0.0))
    spread = binary(n, Op.SUB, high, low)
    flat = g.op(Op.EQUAL, spread, _scalar(0.0), dtype=np.bool_)
    scale = g.op(Op.SELECT, flat, _scalar(1.0), binary(n, Op.DIV, spread, _scalar(255.0)),
                 dtype=_F32)
    start = binary(n, Op.SUB, _scalar(0.0), binary(n, Op.DIV, low, scale))
    zero = _rounded(n, binary(n, Op.MINIMUM, binary(n, Op.MAXIMUM, start, _scalar(0.0)),
                              _scalar(255.0)))
    lowest = binary(n, Op.SUB, _scalar(0.0), zero)
    highest = binary(n, Op.SUB, _scalar(255.0), zero)
    ratio = binary(n, Op.DIV, x, scale)
    clamped = binary(n, Op.MINIMUM, binary(n, Op.MAXIMUM, ratio, lowest), highest)
    y = binary(n, Op.ADD, _rounded(n, clamped), zero)

    def as_uint8(v: Value, shape: tuple[int, ...]) -> Value:
        return retagged(g.op(Op.CAST, v, dtype=_I32, shape=shape or None), _U8)

    scalar = Value(scale.name, _F32, (), tensor=scale.tensor)
    return [as_uint8(y, x.shape), scalar, _as_scalar(as_uint8(zero, (1,)))]


def _as_scalar(v: Value) -> Value:
    return Value(v.name, v.dtype, (), const=None if v.const is None else v.const.reshape(()),
                 tensor=v.tensor)


def _centred(n: NodeContext, index: int, what: str) -> Value:
    """Runtime uint8 input ``index`` minus its zero point (input ``index + 2``) as float32."""
    x = n.input(index)
    if x.dtype != _U8 or x.quant is not None or x.const is not None:
        n.fail(f"{what} must be a uint8 tensor computed at execution (onnxruntime's dynamic "
               f"quantisation), got {x.dtype}{' (quantised)' if x.quant is not None else ''}")
    g = n.graph
    diff = as_int32(x)
    if n.has_input(index + 2):
        zp = n.input(index + 2)
        if zp.dtype != _U8 or zp.rank > 1 or (zp.rank == 1 and zp.shape[0] != 1):
            n.fail(f"the zero point of {what} must be one uint8 value")
        diff = binary(n, Op.SUB, diff, as_int32(zp), dtype=_I32)
    return g.op(Op.CAST, diff, dtype=_F32, shape=x.shape or None)


def _centred_weights(n: NodeContext, index: int, zero_point_index: int, axis: int) -> Array:
    """Known weights minus their zero point (per tensor, or per output along ``axis``)."""
    w = n.const_input(index, "weights")
    if w.dtype not in (np.uint8, np.int8):
        n.fail(f"weights must be uint8 or int8, got {w.dtype}")
    centred = w.astype(np.int64)
    if n.has_input(zero_point_index):
        zp = n.const_input(zero_point_index, "weights zero point").astype(np.int64)
        if zp.size > 1:
            shape = [1] * w.ndim
            shape[axis] = -1
            zp = zp.reshape(shape)
        centred = centred - zp
    return centred


def _check_bound(n: NodeContext, centred: Array, axis: int) -> None:
    """Every output's exact sum stays below 2**24 (see the module docstring)."""
    others = tuple(a for a in range(centred.ndim) if a != axis)
    bound = 255 * int(np.abs(centred).sum(axis=others).max(initial=0))
    if bound >= _EXACT:
        n.fail(f"its int32 sums can reach {bound}, beyond the 2**24 float32 holds exactly "
               "(NNAPI has no exact int32 product for it)")


@converter("MatMulInteger")
def matmul_integer(n: NodeContext) -> list[Value]:
    """MatMulInteger of runtime uint8 ``A`` by known 2-D ``B``: exact through float32."""
    a = _centred(n, 0, "A")
    b = _centred_weights(n, 1, 3, 1)
    if b.ndim != 2:
        n.fail(f"B must be a known 2-D matrix, got {list(b.shape)}")
    _check_bound(n, b, 1)
    y = matmul_by(n, a, b.astype(np.float32))
    return [_exact_int32(n, y)]


@converter("ConvInteger")
def conv_integer(n: NodeContext) -> list[Value]:
    """ConvInteger of runtime uint8 ``x`` by known ``w``: exact through float32."""
    x = _centred(n, 0, "x")
    w = _centred_weights(n, 1, 3, 0)
    _check_bound(n, w, 0)
    weights = Value("", _F32, w.shape, const=w.astype(np.float32))
    return [_exact_int32(n, convolution(n, x, weights, None))]


def _exact_int32(n: NodeContext, y: Value) -> Value:
    """Integer-valued float32 ``y`` as the int32 tensor it equals."""
    return n.graph.op(Op.CAST, y, dtype=_I32, shape=y.shape or None)
