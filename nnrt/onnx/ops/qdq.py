"""QuantizeLinear and DequantizeLinear, and the quantised groups around single operators.

* ``QuantizeLinear`` of a DequantizeLinear result with the same parameters is the quantised
  value itself (``Q(DQ(q)) == q``); of a known value, numpy's ``round(x / scale) + zero_point``
  (half to even, saturated); otherwise NNAPI QUANTIZE, per tensor, to TENSOR_QUANT8_ASYMM
  (uint8) or TENSOR_QUANT8_ASYMM_SIGNED (int8). QUANTIZE rounds halves away from zero where
  ONNX rounds them to even: the two differ by one step on values exactly halfway between two
  steps (``x / scale`` landing on ``k + 0.5`` in float32), and agree everywhere else.
* ``DequantizeLinear`` of a quantised value (or a known uint8 / int8 / int32 array, per tensor
  or per axis) is left lazy (:mod:`nnrt.onnx.folding`): quantised operations read the
  quantised value, float ones an NNAPI DEQUANTIZE of it (known arrays: the float values,
  ``(q - zero_point) * scale`` in float32 as ONNX computes them). A runtime integer tensor
  that is not quantised (a uint8 graph input) is dequantised in float: ``CAST(q -
  zero_point) * scale``, exact as ONNX's.

The folds here (:data:`~nnrt.onnx.node.FOLDS`) turn ``DequantizeLinear -> op ->
QuantizeLinear`` into the quantised NNAPI operation, each when NNAPI's operation computes the
same thing:

* data movement (Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Slice, Gather, Split, Tile,
  DepthToSpace, SpaceToDepth, Identity, Pad with 0, Resize where it is one NNAPI resize),
  MaxPool, GlobalMaxPool, AveragePool, Relu and Clip to [0, 6], [-1, 1] or [0, inf) (RELU,
  RELU6, RELU1): when the output's parameters are the input's (NNAPI keeps them), the float
  converter's operations on the quantised input;
* GlobalAveragePool of known spatial dims, keeping the parameters: AVERAGE_POOL_2D over the
  whole extent (it rounds the mean as onnxruntime does; NNAPI's quantised MEAN truncates it);
* Add, Sub, Mul: ADD / SUB / MUL, each input and the output with its own parameters (a known
  operand converted to the output's 8-bit type exactly);
* Concat: CONCATENATION (inputs rescaled to the output's parameters by NNAPI);
* Sigmoid and Softmax: LOGISTIC / SOFTMAX (beta 1) when the output has NNAPI's fixed
  parameters for them (scale 1/256, zero point 0 for uint8, -128 for int8; onnxruntime's
  quantiser gives Softmax these).

Conv, MatMul and Gemm fold in :mod:`nnrt.onnx.ops.qlinear`. A group that does not fold runs
in float between a DEQUANTIZE and a QUANTIZE.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nnrt.model.types import OperationType as Op
from nnrt.onnx.folding import quantize_dtype, read_qparams
from nnrt.onnx.graph import Value
from nnrt.onnx.node import CONVERTERS, NodeContext, converter, fold
from nnrt.onnx.ops.conv import as_2d, from_2d
from nnrt.onnx.qparams import QParams, quantize_array

__all__ = ["dequantize_linear", "quantize_linear", "quantized_source"]

Array = np.ndarray[Any, Any]
_F32 = np.dtype(np.float32)
_I32 = np.dtype(np.int32)
_EIGHT_BIT = (np.dtype(np.uint8), np.dtype(np.int8))


def _params(n: NodeContext, dtype: np.dtype[Any] | None, rank: int | None) -> QParams:
    zero_point = n.input(2) if n.has_input(2) else None
    attributes = {"axis": n.attr("axis", 1), "block_size": n.attr("block_size", 0)}
    return read_qparams(n.input(1), zero_point, dtype, attributes, rank)


#: TensorProto.FLOAT: the only ``precision`` (QuantizeLinear) and ``output_dtype``
#: (DequantizeLinear) of opset 23 nnrt computes in, besides 0 (the scale's type, float32).
_FLOAT = 1


@converter("QuantizeLinear", lazy=True, newest=25)
def quantize_linear(n: NodeContext) -> list[Value]:
    """QuantizeLinear to uint8 / int8 (see the module docstring)."""
    x = n.input(0)
    n.attr("saturate")  # only for float8 outputs
    if int(n.attr("precision", 0)) not in (0, _FLOAT):
        n.fail(f"precision {n.attr('precision')} is not supported (float32 is)")
    zero_point = n.input(2) if n.has_input(2) else None
    dtype = quantize_dtype(zero_point, {"output_dtype": n.attr("output_dtype", 0)})
    params = _params(n, dtype, x.rank)
    if x.dequantizes is not None and params.same(x.dequantizes.quant):
        return [x.dequantizes]
    if dtype not in _EIGHT_BIT:
        n.fail(f"quantising to {dtype} is not supported (NNAPI quantises to uint8 and int8)")
    if x.const is not None:
        return [Value("", dtype, x.shape, const=quantize_array(x.const, params), quant=params)]
    if params.per_axis:
        n.fail("per-axis quantisation of a tensor computed at execution has no NNAPI type")
    x = n.graph.materialized(x)
    if x.dtype not in (np.float32, np.float16):
        n.fail(f"quantising {x.dtype} values is not supported (NNAPI QUANTIZE takes floats)")
    return [n.graph.op(Op.QUANTIZE, x, quant=params, shape=x.shape if not x.shape else None)]


@converter("DequantizeLinear", lazy=True, newest=25)
def dequantize_linear(n: NodeContext) -> list[Value]:
    """DequantizeLinear (see the module docstring)."""
    x = n.input(0)
    if int(n.attr("output_dtype", 0)) not in (0, _FLOAT):
        n.fail(f"output_dtype {n.attr('output_dtype')} is not supported (float32 is)")
    params = _params(n, x.dtype, x.rank)
    if x.quant is not None:
        if not params.same(x.quant):
            n.fail(f"dequantising a {x.quant.describe()} value with other parameters "
                   f"({params.describe()}) is not supported")
        const = None if x.const is None else params.dequantized(x.const)
        return [Value("", _F32, x.shape, const=const, dequantizes=x)]
    if x.dtype not in (*_EIGHT_BIT, _I32, np.dtype(np.int16), np.dtype(np.uint16)):
        n.fail(f"dequantising {x.dtype} values is not supported")
    if x.const is not None:
        held = Value(x.name, x.dtype, x.shape, const=x.const, quant=params)
        return [Value("", _F32, x.shape, const=params.dequantized(x.const), dequantizes=held)]
    return [_dequantized_in_float(n, x, params)]


def _dequantized_in_float(n: NodeContext, x: Value, params: QParams) -> Value:
    """``CAST(x - zero_point) * scale`` for a runtime integer tensor held as TENSOR_INT32."""
    g = n.graph
    scale, zero_point = params.broadcast(x.rank)
    keep = () if not x.shape else None
    as_int = Value(x.name, _I32, x.shape, tensor=x.tensor)
    centred = g.op(Op.SUB, as_int, g.const(zero_point.astype(np.int32)), 0, shape=keep)
    real = g.op(Op.CAST, centred, dtype=_F32, shape=keep)
    return g.op(Op.MUL, real, g.const(scale.astype(np.float32)), 0, shape=keep)


# -- folds ----------------------------------------------------------------------------------


def quantized_source(v: Value | None, *, runtime: bool = False) -> Value | None:
    """The quantised value ``v`` dequantizes (computed at execution if ``runtime``), or None."""
    q = v.dequantizes if v is not None else None
    if q is None or (runtime and q.tensor is None):
        return None
    return q


def as_operand_of(q: Value, dtype: np.dtype[Any]) -> Value | None:
    """Quantised ``q`` as a per-tensor operand of ``dtype``: itself, or a known one converted
    exactly (uint8 <-> int8); None when it cannot be."""
    params = q.quant
    if params is None or params.per_axis:
        return None
    if params.dtype == dtype:
        return q
    if q.const is None or dtype not in _EIGHT_BIT or params.dtype not in _EIGHT_BIT:
        return None
    moved, values = params.retyped(q.const, dtype)
    return Value(q.name, dtype, q.shape, const=values, quant=moved)


@fold("Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Slice", "Gather", "Split",
      "Tile", "DepthToSpace", "SpaceToDepth", "Identity", "Resize", "MaxPool", "AveragePool",
      "GlobalMaxPool", "Pad")
def moved(n: NodeContext, out: QParams) -> Sequence[Value] | None:
    """The float converter on the quantised input when the output keeps its parameters."""
    q = quantized_source(n.inputs[0] if n.inputs else None, runtime=True)
    if q is None or not out.same(q.quant):
        return None
    if any(quantized_source(v) is not None for v in n.inputs[1:]) and n.op_type != "Pad":
        return None
    if n.op_type == "Pad" and n.opset >= 11 and n.has_input(2) and (
            n.input(2).const is None or np.any(n.input(2).const != 0)):
        return None  # only the real 0 has an exact quantised value whatever the scale
    if n.op_type == "Pad" and n.opset < 11 and float(n.attr("value", 0.0)) != 0:
        return None
    n.inputs[0] = q
    return CONVERTERS[n.op_type](n)


@fold("GlobalAveragePool")
def global_average(n: NodeContext, out: QParams) -> Sequence[Value] | None:
    """AVERAGE_POOL_2D over the whole (known) spatial extent, keeping the parameters (NNAPI's
    quantised AVERAGE_POOL_2D rounds the mean as onnxruntime does; its quantised MEAN
    truncates it, so dynamic spatial dims stay float)."""
    q = quantized_source(n.inputs[0] if n.inputs else None, runtime=True)
    if q is None or not out.same(q.quant) or q.rank not in (3, 4) or not all(
            d > 0 for d in q.shape[2:]):
        return None
    height, width = (1, *q.shape[2:]) if q.rank == 3 else q.shape[2:]
    y = n.graph.op(Op.AVERAGE_POOL_2D, as_2d(n, q), 0, 0, 0, 0, 1, 1, width, height, 0, True)
    return [from_2d(n, y, q.rank)]


@fold("Relu", "Clip")
def relu(n: NodeContext, out: QParams) -> Sequence[Value] | None:
    """Relu, and Clip to [0, 6], [-1, 1] or [0, inf): RELU, RELU6, RELU1 keeping the
    parameters."""
    q = quantized_source(n.inputs[0] if n.inputs else None, runtime=True)
    if q is None or not out.same(q.quant):
        return None
    if n.op_type == "Relu":
        lo, hi = 0.0, np.inf
    elif n.opset < 11:
        lo, hi = float(n.attr("min", -np.inf)), float(n.attr("max", np.inf))
    else:
        bounds = [n.inputs[i].const if n.has_input(i) else None for i in (1, 2)]  # type: ignore[union-attr]
        if any(b is None and n.has_input(i) for b, i in zip(bounds, (1, 2), strict=True)):
            return None
        lo = float(bounds[0].reshape(-1)[0]) if bounds[0] is not None else -np.inf
        hi = float(bounds[1].reshape(-1)[0]) if bounds[1] is not None else np.inf
    op = {(0.0, 6.0): Op.RELU6, (-1.0, 1.0): Op.RELU1, (0.0, np.inf): Op.RELU}.get((lo, hi))
    if op is None:
        return None
    return [n.graph.op(op, q)]


@fold("Add", "Sub", "Mul")
def arithmetic(n: NodeContext, out: QParams) -> Sequence[Value] | None:
    """ADD / SUB / MUL of quantised operands into the output's parameters."""
    operands = [quantized_source(v) for v in n.inputs]
    if len(operands) != 2 or any(q is None for q in operands):
        return None
    held = [as_operand_of(q, out.dtype) for q in operands if q is not None]
    if any(h is None for h in held):
        return None
    op = {"Add": Op.ADD, "Sub": Op.SUB, "Mul": Op.MUL}[n.op_type]
    return [n.graph.op(op, *held, 0, quant=out)]  # type: ignore[arg-type]


@fold("Concat")
def concat(n: NodeContext, out: QParams) -> Sequence[Value] | None:
    """CONCATENATION of quantised inputs (each with its own parameters) into the output's."""
    parts = [as_operand_of(q, out.dtype) if q is not None else None
             for q in (quantized_source(v) for v in n.inputs)]
    if not parts or any(p is None for p in parts):
        return None
    rank = parts[0].rank  # type: ignore[union-attr]
    axis = int(n.attr("axis", 1 if n.opset < 4 else 0))
    if not -rank <= axis < rank:
        return None
    return [n.graph.op(Op.CONCATENATION, *parts, axis % rank, quant=out)]  # type: ignore[arg-type]


#: NNAPI's fixed output zero point of quantised LOGISTIC and SOFTMAX (scale 1/256), per type.
_UNIT_ZERO_POINTS = {np.dtype(np.uint8): 0, np.dtype(np.int8): -128}


@fold("Sigmoid", "Softmax")
def unit_range(n: NodeContext, out: QParams) -> Sequence[Value] | None:
    """LOGISTIC / SOFTMAX when the output has NNAPI's fixed parameters for them."""
    q = quantized_source(n.inputs[0] if n.inputs else None, runtime=True)
    fixed = QParams.per_tensor(out.dtype, 1 / 256, _UNIT_ZERO_POINTS[out.dtype])
    if q is None or q.quant is None or q.quant.dtype != out.dtype or not out.same(fixed):
        return None
    if n.op_type == "Sigmoid":
        return [n.graph.op(Op.LOGISTIC, q, quant=out)]
    legacy = n.opset < 13
    axis = int(n.attr("axis", 1 if legacy else -1))
    if q.rank == 0 or not -q.rank <= axis < q.rank:
        return None
    axis %= q.rank
    if legacy and axis != q.rank - 1:
        return None  # opset < 13 softmax flattens at the axis: only the last is one SOFTMAX
    return [n.graph.op(Op.SOFTMAX, q, 1.0, axis, quant=out)]
