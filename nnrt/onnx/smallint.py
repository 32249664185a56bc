"""ONNX's int8, uint8, int16, uint16 and uint32 tensors, held in TENSOR_INT32 operands.

NNAPI's 8- and 16-bit tensors are quantized types, so these values travel as TENSOR_INT32 (as
int64 does) while :attr:`~nnrt.onnx.graph.Value.dtype` keeps the ONNX type. ONNX arithmetic on
them wraps around (C semantics); a converter computes such a result in int32 — where it cannot
overflow for the operand ranges — and :func:`wrap` brings it back into the type's range exactly:
``v - floor((v - lo) / 2**k) * 2**k`` (NNAPI's integer DIV floors). :class:`~nnrt.onnx.graph.Graph`
refuses an operation that may leave the range unless its result is computed this way.

uint32 values above ``2**31 - 1`` cannot be held: a graph input holding one is an input error,
and uint32 arithmetic whose result may exceed that (Add, Sub, Mul, Neg, casts to uint32 of
signed or float values) is reported unsupported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.model.types import OperationType as Op
from nnrt.onnx.dtypes import SMALL_INTS
from nnrt.onnx.errors import NodeUnsupported
from nnrt.onnx.graph import Graph, Value

__all__ = ["SMALL_INTS", "as_int32", "fits", "retagged", "wrap"]

_INT32 = np.dtype(np.int32)


def as_int32(value: Value) -> Value:
    """``value`` (integers held in TENSOR_INT32) seen as int32, to compute on it."""
    return retagged(value, _INT32)


def retagged(value: Value, dtype: Any) -> Value:
    """``value`` under the ONNX dtype ``dtype``; its values must already be in ``dtype``'s
    range (a known array is converted, a tensor keeps its operand)."""
    kind = np.dtype(dtype)
    if value.const is not None:
        return Value(value.name, kind, value.shape, const=value.const.astype(kind))
    return Value(value.name, kind, value.shape, tensor=value.tensor)


def fits(source: np.dtype[Any], target: np.dtype[Any]) -> bool:
    """Whether every value of integer type ``source`` is a value of ``target``."""
    a, b = np.iinfo(source), np.iinfo(target)
    return b.min <= a.min and a.max <= b.max


def wrap(g: Graph, v: Value, dtype: Any, what: str = "the result") -> Value:
    """``v`` (an int32 value) reduced modulo ``2**bits`` into the range of ``dtype``, as ONNX
    (C) arithmetic on ``dtype`` does; a known value with numpy's ``astype``."""
    kind = np.dtype(dtype)
    if v.const is not None:
        return Value(v.name, kind, v.shape, const=v.const.astype(np.int64).astype(kind))
    if kind == np.uint32:
        raise NodeUnsupported(f"{what} may exceed 2**31 - 1, the largest uint32 value nnrt "
                              "holds (uint32 tensors travel as TENSOR_INT32)")
    lo, size = int(np.iinfo(kind).min), 2 ** (8 * kind.itemsize)
    keep = v.shape if not v.shape else None

    def scalar(x: int) -> Value:
        return Value("", _INT32, (), const=np.asarray(x, np.int32))

    shifted = g.op(Op.SUB, v, scalar(lo), 0, dtype=_INT32, shape=keep) if lo else v
    turns = g.op(Op.DIV, shifted, scalar(size), 0, dtype=_INT32, shape=keep)
    whole = g.op(Op.MUL, turns, scalar(size), 0, dtype=_INT32, shape=keep)
    return retagged(g.op(Op.SUB, v, whole, 0, dtype=_INT32, shape=keep), kind)
