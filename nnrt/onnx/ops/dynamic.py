"""Shapes known only at execution: the NNAPI operations that compute them in the model.

Where a graph input has unknown dims, ONNX's shape sub-graphs (``Shape -> Gather -> Concat ->
Reshape``, ``ConstantOfShape``, ``Expand``) cannot fold at import. They become int32 operations
on the output of com.nnrt.SHAPE (:func:`dims_of`), and the operations that take a shape take it
as a runtime TENSOR_INT32: RESHAPE (:func:`reshape_target`), FILL (:func:`filled`), SLICE
(:func:`slice_bounds`); the callers move the data (``carried``). What is a
static dim stays known: a shape value carries a :attr:`~nnrt.onnx.graph.Value.hint` (the static
dims among its elements), and picking only static elements folds to a constant (:func:`hinted`),
so a dim that was dynamic is never baked in and a static one never waits for execution.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nnrt.model.types import OperationType as Op
from nnrt.onnx.graph import Value
from nnrt.onnx.node import NodeContext

__all__ = ["dims_like", "dims_of", "filled", "hinted", "reshape_target", "slice_bounds"]

_I32 = np.dtype(np.int32)
_I64 = np.dtype(np.int64)
_BOOL = np.dtype(np.bool_)


def hinted(value: Value, hint: Sequence[int | None] | None, shape: tuple[int, ...]) -> Value:
    """Runtime ``value`` (ONNX ``shape``) whose elements are ``hint``: a known int64-typed
    constant when every element is a static dim, else ``value`` carrying the hint."""
    if hint is not None and all(h is not None for h in hint):
        arr = np.asarray(list(hint), np.int64).reshape(shape).astype(value.dtype)
        return Value(value.name, value.dtype, shape, const=arr)
    return Value(value.name, value.dtype, shape, tensor=value.tensor,
                 hint=None if hint is None else tuple(hint))


def dims_of(n: NodeContext, x: Value, start: int, end: int) -> Value:
    """ONNX ``Shape(x)[start:end]`` (normalised bounds) computed at execution: com.nnrt.SHAPE,
    then a SLICE when only part of it is wanted; int64-typed (held as TENSOR_INT32)."""
    g = n.graph
    full = g.op(Op.NNRT_SHAPE, x, dtype=_I32, shape=(x.rank,))
    count = max(end - start, 0)
    if (start, count) != (0, x.rank):
        full = g.op(Op.SLICE, full, np.asarray([start], np.int32), np.asarray([count], np.int32),
                    shape=(count,))
    hint = [d if d > 0 else None for d in x.shape[start:start + count]]
    return Value(full.name, _I64, (count,), tensor=full.tensor, hint=tuple(hint))


def filled(n: NodeContext, shape: Value, value: Any, dtype: np.dtype[Any],
           out_shape: tuple[int, ...]) -> Value:
    """A tensor of runtime ``shape`` (a 1-D integer value) holding ``value`` everywhere: FILL
    for float16 / float32 / int32 (int64 values range checked), ``FILL(0) == 0`` for booleans.
    ``out_shape`` is the ONNX shape as far as it is known."""
    g = n.graph
    if dtype == _BOOL:
        zeros = filled(n, shape, 0, _I32, out_shape)
        zero = Value("", _I32, (), const=np.zeros((), np.int32))
        return g.op(Op.EQUAL if bool(value) else Op.NOT_EQUAL, zeros, zero, dtype=_BOOL,
                    shape=out_shape)
    if dtype.kind in "iu":
        if dtype not in (_I32, _I64) or not np.iinfo(np.int32).min <= int(value) <= np.iinfo(
                np.int32).max:
            n.fail(f"a {dtype} fill value {value} is not supported (int32 range only)")
        y = g.op(Op.FILL, shape, int(value), dtype=_I32, shape=out_shape)
        return Value(y.name, dtype, y.shape, tensor=y.tensor)
    if dtype not in (np.float32, np.float16):
        n.fail(f"{dtype} fill values are not supported")
    scalar = np.asarray(value, dtype).reshape(()).item()
    return g.op(Op.FILL, shape, float(scalar), dtype=dtype, shape=out_shape)


def _copied_dims(n: NodeContext, x: Value, length: int) -> Value:
    """``x``'s dims as a ``[length]`` int32 vector, 0 past its rank (where a 0 of a Reshape
    target copies nothing: RESHAPE then rejects the 0, as ONNX does)."""
    g = n.graph
    if x.static:
        return Value("", _I32, (length,), const=np.asarray(
            [x.shape[i] if i < x.rank else 0 for i in range(length)], np.int32))
    full = dims_of(n, x, 0, x.rank)
    whole = Value(full.name, _I32, (x.rank,), tensor=full.tensor)
    if length == x.rank:
        return whole
    picks = np.asarray([min(i, x.rank - 1) for i in range(length)], np.int32)
    mask = Value("", _I32, (length,), const=(np.arange(length) < x.rank).astype(np.int32))
    gathered = g.op(Op.GATHER, whole, 0, picks, shape=(length,))
    return g.op(Op.MUL, gathered, mask, 0, shape=(length,))


def reshape_target(n: NodeContext, x: Value, target: Value,
                   allow_zero: bool) -> tuple[Value, tuple[int, ...]]:
    """For ONNX ``Reshape(x, target)`` with a ``target`` computed at execution: RESHAPE's
    int32 shape input and the result's dims (0: known at execution). ``target``'s 0 elements
    copy ``x``'s dim at the same position (``SELECT(target == 0, Shape(x), target)``) unless
    ``allow_zero``; -1 is inferred by RESHAPE itself, as in ONNX. Elements of the hint give the
    result's static dims."""
    g = n.graph
    if target.rank != 1 or not target.static:
        n.fail(f"input 1 (shape) must be a 1-D tensor of known length, got {list(target.shape)}")
    length = target.shape[0]
    if target.const is not None:
        hint: list[int | None] = [int(v) for v in target.const.reshape(-1)]
        dims = Value(target.name, _I32, (length,), const=target.const.astype(np.int32))
    else:
        hint = list(target.hint) if target.hint is not None else [None] * length
        dims = Value(target.name, _I32, (length,), tensor=target.tensor)
    if not allow_zero and any(h is None or h == 0 for h in hint):
        copied = _copied_dims(n, x, length)
        zero = Value("", _I32, (), const=np.zeros((), np.int32))
        is_zero = g.op(Op.EQUAL, dims, zero, dtype=_BOOL, shape=(length,))
        dims = g.op(Op.SELECT, is_zero, copied, dims, dtype=_I32, shape=(length,))
        hint = [x.shape[i] or None if h == 0 else h for i, h in enumerate(hint)]
    out = [h if h is not None and h > 0 else 0 for h in hint]
    if out.count(0) == 1 and hint[out.index(0)] == -1 and x.static:
        known = int(np.prod([d for d in out if d > 0]))
        out[out.index(0)] = int(np.prod(x.shape)) // known if known else 0
    return dims, tuple(out)


def _element(n: NodeContext, v: Value, k: int) -> Value:
    """Element ``k`` of the 1-D integer value ``v`` as a ``[1]`` int32 value."""
    if v.const is not None:
        return Value("", _I32, (1,), const=np.asarray([int(v.const.reshape(-1)[k])], np.int32))
    whole = Value(v.name, _I32, v.shape, tensor=v.tensor)
    return n.graph.op(Op.SLICE, whole, np.asarray([k], np.int32), np.asarray([1], np.int32),
                      shape=(1,))


def _dim(n: NodeContext, x: Value, axis: int) -> Value:
    """Dim ``axis`` of ``x`` as a ``[1]`` int32 value (a constant when static)."""
    if x.shape[axis] > 0:
        return Value("", _I32, (1,), const=np.asarray([x.shape[axis]], np.int32))
    return _element(n, dims_of(n, x, axis, axis + 1), 0)


def _clamped(n: NodeContext, index: Value, dim: Value) -> Value:
    """ONNX Slice's bound for a positive step: ``index + dim`` if negative, then clamped to
    ``[0, dim]``."""
    g = n.graph
    zero = Value("", _I32, (1,), const=np.zeros(1, np.int32))
    negative = g.op(Op.LESS, index, zero, dtype=_BOOL, shape=(1,))
    wrapped = g.op(Op.SELECT, negative, g.op(Op.ADD, index, dim, 0, shape=(1,)), index,
                   dtype=_I32, shape=(1,))
    return g.op(Op.MINIMUM, g.op(Op.MAXIMUM, wrapped, zero, shape=(1,)), dim, shape=(1,))


def slice_bounds(n: NodeContext, x: Value, starts: Value, ends: Value,
                 axes: Sequence[int]) -> tuple[Value, Value, tuple[int, ...]]:
    """For ONNX Slice with unit steps whose starts or ends are known only at execution: SLICE's
    begin and size inputs and the result's dims. Each bound is wrapped and clamped as ONNX does
    (int32 operations), sizes ``max(end - start, 0)``, the vectors assembled from one-hot
    constants."""
    g = n.graph
    rank = x.rank
    zero = Value("", _I32, (1,), const=np.zeros(1, np.int32))
    begin = Value("", _I32, (rank,), const=np.zeros(rank, np.int32))
    size = Value("", _I32, (rank,), const=np.asarray(
        [0 if a in axes else -1 for a in range(rank)], np.int32))
    for k, axis in enumerate(axes):
        dim = _dim(n, x, axis)
        first = _clamped(n, _element(n, starts, k), dim)
        last = _clamped(n, _element(n, ends, k), dim)
        count = g.op(Op.MAXIMUM, g.op(Op.SUB, last, first, 0, shape=(1,)), zero, shape=(1,))
        hot = Value("", _I32, (rank,), const=np.eye(rank, dtype=np.int32)[axis])
        begin = g.op(Op.ADD, begin, g.op(Op.MUL, hot, first, 0, shape=(rank,)), 0, shape=(rank,))
        size = g.op(Op.ADD, size, g.op(Op.MUL, hot, count, 0, shape=(rank,)), 0, shape=(rank,))
    return begin, size, tuple(0 if a in axes else d for a, d in enumerate(x.shape))


def dims_like(n: NodeContext, source: Value, target: Sequence[int]) -> Value:
    """The 1-D int32 shape ``target`` at execution, its unknown dims (0) being ``source``'s
    dims at the same positions: ``Shape(source)[:len(target)] * mask + known``, exact integer
    arithmetic (no concatenation)."""
    g = n.graph
    length = len(target)
    if length > source.rank:
        n.fail(f"the shape {list(target)} has more dims than {list(source.shape)}")
    dims = dims_of(n, source, 0, length)
    mask = np.asarray([0 if d > 0 else 1 for d in target], np.int32)
    known = np.asarray([max(d, 0) for d in target], np.int32)
    whole = Value(dims.name, _I32, (length,), tensor=dims.tensor)
    picked = g.op(Op.MUL, whole, Value("", _I32, (length,), const=mask), 0, shape=(length,))
    return g.op(Op.ADD, picked, Value("", _I32, (length,), const=known), 0, shape=(length,))
