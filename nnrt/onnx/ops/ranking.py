"""Selecting by order: ArgMax, ArgMin and TopK.

ArgMax / ArgMin map onto NNAPI ARGMAX / ARGMIN (ties go to the smallest index, as in ONNX);
``select_last_index`` reverses the axis first and maps the index back (``size - 1 - i``), and
``keepdims`` re-inserts the axis with EXPAND_DIMS. TopK maps onto TOPK_V2, which works on the
last axis and orders equal values larger index first, where ONNX wants the smaller index first:
the row is reversed before TOPK_V2 and the indices mapped back, which gives ONNX's order
exactly. ``largest = 0`` selects the largest of ``-x`` (floats) or ``-1 - x`` (int32, which
cannot overflow) and undoes the negation on the values; another axis is moved last with
TRANSPOSE (float values; the indices travel as float32, exact below 2**24). Indices are ONNX
int64, held as TENSOR_INT32.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.model.types import OperationType as Op
from nnrt.onnx.graph import Value
from nnrt.onnx.node import NodeContext, converter
from nnrt.onnx.ops.elementwise import binary
from nnrt.onnx.ops.reduce import require_kernel
from nnrt.ops.reduce import reduced_shape

Array = np.ndarray[Any, Any]

_INT64 = np.dtype(np.int64)
#: Indices below this travel exactly through float32.
_FLOAT32_EXACT = 2**24


def _axis(n: NodeContext, axis: int, x: Value) -> int:
    if not -x.rank <= axis < x.rank:
        n.fail(f"axis {axis} is out of range for input {x.name!r} of rank {x.rank}")
    return axis % x.rank


def _const(value: int) -> Value:
    """An int64 ONNX scalar constant."""
    return Value("", _INT64, (), const=np.asarray(value, np.int64))


def _held(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The dtype of the operand holding a runtime tensor of ONNX ``dtype``."""
    return np.dtype(np.int32) if dtype == _INT64 else np.dtype(dtype)


def _static_dim(n: NodeContext, x: Value, axis: int) -> int:
    size = x.shape[axis]
    if size <= 0:
        n.fail(f"dim {axis} of input {x.name!r} must be known; pass input_shapes=")
    return size


@converter("ArgMax", "ArgMin")
def arg_extreme(n: NodeContext) -> list[Value]:
    """ArgMax / ArgMin with ``axis``, ``keepdims`` and ``select_last_index``."""
    x = n.input(0)
    if x.rank == 0:
        n.fail("the input must have rank >= 1")
    axis = _axis(n, int(n.attr("axis", 0)), x)
    keep = bool(n.attr("keepdims", 1))
    last = bool(n.attr("select_last_index", 0))
    shape = reduced_shape(x.shape, (axis,), keep)
    if x.const is not None:
        known = np.flip(x.const, axis) if last else x.const
        find = np.argmax if n.op_type == "ArgMax" else np.argmin
        found = find(known, axis=axis, keepdims=True).astype(np.int64)
        if last:
            found = x.shape[axis] - 1 - found
        return [Value("", _INT64, shape, const=found.reshape(shape))]
    op = Op.ARGMAX if n.op_type == "ArgMax" else Op.ARGMIN
    require_kernel(n, op, x)
    g = n.graph
    data = x
    if last:
        data = g.op(Op.REVERSE, x, np.array([axis], np.int32))
    dropped = reduced_shape(x.shape, (axis,), False)
    index = g.op(op, data, axis, dtype=_INT64, shape=dropped if not dropped else None)
    if last:
        index = binary(n, Op.SUB, _const(_static_dim(n, x, axis) - 1), index)
        index = Value("", _INT64, index.shape, tensor=index.tensor)
    if keep and x.rank > 1:
        index = g.op(Op.EXPAND_DIMS, index, axis, dtype=_INT64)
    elif keep:  # a 1-D input: NNAPI's [1] result already is ONNX's [1]
        index = Value("", _INT64, (1,), tensor=index.tensor)
    return [index]


@converter("TopK")
def top_k(n: NodeContext) -> list[Value]:
    """TopK: values and int64 indices of the k largest (or smallest) along ``axis``."""
    x = n.input(0)
    k = int(n.attr("k")) if n.opset < 10 else _k_input(n)
    if x.rank == 0:
        n.fail("the input must have rank >= 1")
    axis = _axis(n, int(n.attr("axis", -1)), x)
    largest = bool(n.attr("largest", 1))
    n.attr("sorted")  # unsorted output may come in any order: sorted is one of them
    size = x.shape[axis]
    if k < 1 or 0 < size < k:
        bound = f"1..{size} (the size of axis {axis})" if size > 0 else "at least 1"
        n.fail(f"k = {k} is out of range: expected {bound}")
    if x.const is not None:
        return _top_k_known(x.const, k, axis, largest)
    require_kernel(n, Op.TOPK_V2, x)
    last = x.rank - 1
    if axis == last:
        return _top_k_last(n, x, k, largest)
    if x.dtype.kind != "f":
        n.fail(f"TopK on {x.dtype} values along axis {axis} (not the last) is not supported: "
               "the values would have to travel through float32")
    if _static_dim(n, x, axis) >= _FLOAT32_EXACT:
        n.fail(f"axis {axis} is too long ({size}) to carry its indices through float32")
    perm = list(range(x.rank))
    perm[axis], perm[last] = last, axis
    g = n.graph
    moved = g.op(Op.TRANSPOSE, x, np.asarray(perm, np.int32))
    values, indices = _top_k_last(n, moved, k, largest)
    values = g.op(Op.TRANSPOSE, values, np.asarray(perm, np.int32))
    as_float = g.op(Op.CAST, indices, dtype=np.float32)
    back = g.op(Op.TRANSPOSE, as_float, np.asarray(perm, np.int32))
    return [values, g.op(Op.CAST, back, dtype=_INT64)]


def _k_input(n: NodeContext) -> int:
    k = n.const_input(1, "K").reshape(-1)
    if k.size != 1:
        n.fail(f"K must hold one value, got {k.size}")
    return int(k[0])


def _top_k_known(x: Array, k: int, axis: int, largest: bool) -> list[Value]:
    """TopK in numpy: a stable sort keeps equal values in index order, as ONNX wants."""
    key = (-x if x.dtype.kind == "f" else ~x.astype(np.int64)) if largest else x
    order = np.argsort(key, axis=axis, kind="stable")
    indices = np.take(order, np.arange(k), axis=axis)
    values = np.take_along_axis(x, indices, axis=axis)
    return [Value("", x.dtype, values.shape, const=values),
            Value("", _INT64, indices.shape, const=indices.astype(np.int64))]


def _top_k_last(n: NodeContext, x: Value, k: int, largest: bool) -> list[Value]:
    """TOPK_V2 along the last axis, with ONNX's order of equal values."""
    g = n.graph
    last = x.rank - 1
    size = _static_dim(n, x, last)
    if largest:
        key = x
    elif x.dtype.kind == "f":
        key = g.op(Op.NEG, x)
    else:
        key = binary(n, Op.SUB, Value("", x.dtype, (), const=np.asarray(-1, x.dtype)), x)
    flipped = g.op(Op.REVERSE, key, np.array([last], np.int32))
    values, flipped_index = g.ops(Op.TOPK_V2, flipped, k, dtypes=[_held(key.dtype), np.int32])
    index = binary(n, Op.SUB, _const(size - 1), flipped_index)
    if not largest:
        values = g.op(Op.NEG, values) if x.dtype.kind == "f" else binary(
            n, Op.SUB, Value("", x.dtype, (), const=np.asarray(-1, x.dtype)), values)
    return [Value("", x.dtype, values.shape, tensor=values.tensor),
            Value("", _INT64, index.shape, tensor=index.tensor)]
