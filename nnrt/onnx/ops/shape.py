"""Shape operators: Shape, Size, Range, ConstantOfShape, Reshape, Flatten, Squeeze, Unsqueeze,
Expand — and :func:`reshaped` / :func:`carried`, which the tensor operators share.

Where the dims they read are static, Shape, Size, Range and ConstantOfShape fold to constants
and shape sub-graphs never reach the model. Where they are dynamic, Shape is com.nnrt.SHAPE and
the shape arithmetic runs in the model (:mod:`nnrt.onnx.ops.dynamic`): Reshape to a runtime
shape is a RESHAPE of that int32 tensor, ConstantOfShape a FILL, Expand a MUL with a FILL of
ones (LOGICAL_AND for booleans). Reshape, Flatten, Squeeze and Unsqueeze are one RESHAPE
(EXPAND_DIMS when only size-1 dims are inserted into integer or dynamic tensors, SQUEEZE when
they are removed from dynamic ones; nothing when only an ONNX scalar becomes ``[1]`` or back);
Expand to a known shape is a TILE (a LOGICAL_AND with ones for booleans). Every converter
computes known inputs in numpy with ONNX semantics.

NNAPI's data-movement kernels (RESHAPE, TRANSPOSE, CONCATENATION, STRIDED_SLICE, PAD_V2, ...)
take float tensors only. :func:`carried` moves other tensors through them exactly: booleans as
0.0 / 1.0, and 32-bit integers as two float32 halves ``x = hi * 65536 + lo`` (``|hi| < 2**15``,
``0 <= lo < 2**16``, both exact in float32), recombined after the move.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nnrt.model.types import OperationType as Op
from nnrt.onnx.dtypes import SMALL_INTS
from nnrt.onnx.graph import Value
from nnrt.onnx.node import NodeContext, converter
from nnrt.onnx.ops.dynamic import dims_of, filled, reshape_target
from nnrt.onnx.ops.elementwise import binary, expand_to
from nnrt.onnx.smallint import as_int32, retagged

__all__ = ["carried", "normalized_axes", "reshaped", "shape_of"]

Array = np.ndarray[Any, Any]
#: Builds float-only operations on carried values; the second argument maps a scalar parameter
#: of the original values (a pad value) to its carried form.
Build = Callable[[list[Value], Callable[[float], float]], list[Value]]

_HALF = 65536
_INT32 = np.iinfo(np.int32)
_F32 = np.dtype(np.float32)
_BOOL = np.dtype(np.bool_)


# -- helpers shared with the tensor operators ---------------------------------------------------

def shape_of(n: NodeContext, value: Value, what: str = "input") -> tuple[int, ...]:
    """``value``'s shape, which must be fully known (a known value's zero dims included)."""
    if value.const is not None:
        return tuple(value.const.shape)
    return n.static_shape(value, what)


def _known(value: Value, array: Array) -> Value:
    return Value(value.name, array.dtype, tuple(array.shape), const=array)


def _rank0(shape: Sequence[int]) -> tuple[int, ...] | None:
    """The ``shape=`` argument of Graph.op that keeps an ONNX scalar rank 0."""
    return () if not shape else None


def reshaped(n: NodeContext, x: Value, shape: Sequence[int]) -> Value:
    """``x`` with ONNX shape ``shape`` (same element count): a RESHAPE, EXPAND_DIMS for integer
    tensors that only gain size-1 dims, or nothing when the operand dims already match.

    ``shape`` may hold unknown dims (0) where ``x`` has them, in the same order (size-1 dims
    inserted or removed around them): one becomes RESHAPE's inferred -1; more need an
    EXPAND_DIMS chain (only insertions) or a SQUEEZE (only removals of size-1 dims)."""
    target = tuple(int(d) for d in shape)
    if x.const is not None:
        return _known(x, x.const.reshape(target))
    hint = x.hint if x.hint is not None and len(target) <= 1 else None
    if (target or (1,)) == (x.shape or (1,)):
        return Value(x.name, x.dtype, target, tensor=x.tensor, hint=hint, quant=x.quant)
    inserted = _inserted_axes(x.shape or (1,), target)
    unknown = sum(1 for d in target if d <= 0)
    if inserted is not None and (x.dtype.kind in "iu" or unknown > 1):
        y = x
        for axis in inserted:
            y = n.graph.op(Op.EXPAND_DIMS, y, axis, shape=(*y.shape[:axis], 1, *y.shape[axis:])
                           if unknown else None)
        return Value(x.name, x.dtype, target, tensor=y.tensor, hint=hint, quant=x.quant)
    if unknown > 1:
        removed = _inserted_axes(target or (1,), x.shape)
        if removed is None or any(x.shape[a] != 1 for a in removed):
            n.fail(f"reshaping {list(x.shape)} to {list(target)} moves several dynamic dims; "
                   "pass input_shapes= to nnrt.onnx.load")
        axes = np.asarray(removed, np.int32)
        return carried(n, [x], lambda vs, _: [
            n.graph.op(Op.SQUEEZE, vs[0], axes, shape=target)])[0]
    dims = np.asarray([d if d > 0 else -1 for d in target] or (1,), np.int32)
    y = carried(n, [x], lambda vs, _: [
        n.graph.op(Op.RESHAPE, vs[0], dims, shape=target if unknown else _rank0(target))])[0]
    return Value(y.name, y.dtype, y.shape, tensor=y.tensor, hint=hint, quant=y.quant)


def _inserted_axes(src: tuple[int, ...], dst: tuple[int, ...]) -> list[int] | None:
    """The axes (ascending, in ``dst``) whose insertion as size-1 dims turns ``src`` into
    ``dst``, or None when ``dst`` is not ``src`` with size-1 dims inserted."""
    axes, i = [], 0
    for j, d in enumerate(dst):
        if i < len(src) and src[i] == d:
            i += 1
        elif d == 1:
            axes.append(j)
        else:
            return None
    return axes if i == len(src) else None


def carried(n: NodeContext, values: Sequence[Value], build: Build, *,
            int_kernels: bool = False) -> list[Value]:
    """``build``'s data-movement operations applied exactly to ``values`` of one dtype.

    Float and quantised values go through as they are (quantised fills: only 0, the zero
    point); booleans as 0.0 / 1.0 and back (``!= 0``); 32-bit integers as they are when
    ``int_kernels`` (the operations take TENSOR_INT32), else as the float32 halves ``hi = x //
    65536`` and ``lo = x - hi * 65536``, each moved by ``build``, then ``hi * 65536 + lo``
    (data movement commutes with the split). Results keep the ONNX dtype of ``values`` (int64
    stays int64).
    """
    dtype = values[0].dtype
    if values[0].quant is not None:  # NNAPI moves quantised data itself, keeping the params
        return build(list(values), lambda c: _quantized_fill(n, c))
    if dtype in SMALL_INTS:  # moved as the int32 values they are held as
        moved = carried(n, [as_int32(v) for v in values], build, int_kernels=int_kernels)
        return [retagged(y, dtype) for y in moved]
    if dtype.kind == "f":
        return build(list(values), float)
    if int_kernels and dtype in (np.int32, np.int64):
        return [_retyped(y, dtype) for y in build(list(values), float)]
    if dtype == _BOOL:
        outs = build([_bool_as_float(n, v) for v in values], lambda c: float(bool(c)))
        return [_float_as_bool(n, y) for y in outs]
    if dtype in (np.int32, np.int64):
        halves = [_int_halves(n, v) for v in values]
        highs = build([h for h, _ in halves], lambda c: float(int(c) // _HALF))
        lows = build([lo for _, lo in halves], lambda c: float(int(c) % _HALF))
        return [_int_joined(n, h, lo, dtype) for h, lo in zip(highs, lows, strict=True)]
    n.fail(f"{dtype} tensors are not supported")


def _quantized_fill(n: NodeContext, c: float) -> float:
    """A fill constant of quantised data: only the real 0 (the zero point, which NNAPI's PAD
    fills quantised tensors with) has an exact quantised value whatever the scale."""
    if c != 0:
        n.fail(f"filling quantised data with {c} is not supported (only with 0)")
    return 0.0


def _bool_as_float(n: NodeContext, v: Value) -> Value:
    if v.const is not None:
        return _known(v, v.const.astype(np.float32))
    if not v.static:
        dims = dims_of(n, v, 0, v.rank)
        ones, zeros = (filled(n, dims, c, _F32, v.shape) for c in (1.0, 0.0))
        return n.graph.op(Op.SELECT, v, ones, zeros, dtype=_F32, shape=v.shape)
    shape = n.static_shape(v)
    ones = Value("", _F32, shape, const=np.ones(shape, np.float32))
    zeros = Value("", _F32, shape, const=np.zeros(shape, np.float32))
    return n.graph.op(Op.SELECT, v, ones, zeros, dtype=_F32, shape=_rank0(shape))


def _float_as_bool(n: NodeContext, y: Value) -> Value:
    zero = Value("", _F32, (), const=np.asarray(0.0, np.float32))
    return n.graph.op(Op.NOT_EQUAL, y, zero, dtype=_BOOL, shape=_rank0(y.shape))


def _int_const(x: int) -> Value:
    return Value("", np.dtype(np.int32), (), const=np.asarray(x, np.int32))


def _int_halves(n: NodeContext, v: Value) -> tuple[Value, Value]:
    g = n.graph
    if v.const is not None:
        a = v.const.astype(np.int64)
        if a.size and (a.min() < _INT32.min or a.max() > _INT32.max):
            n.fail(f"value {v.name!r} holds integers outside the int32 range NNAPI tensors hold")
        high = a // _HALF
        return (_known(v, high.astype(np.float32)),
                _known(v, (a - high * _HALF).astype(np.float32)))
    keep = _rank0(v.shape)
    hi = g.op(Op.DIV, v, _int_const(_HALF), 0, shape=keep)
    lo = g.op(Op.SUB, v, g.op(Op.MUL, hi, _int_const(_HALF), 0, shape=keep), 0, shape=keep)
    return (g.op(Op.CAST, hi, dtype=_F32, shape=keep), g.op(Op.CAST, lo, dtype=_F32, shape=keep))


def _int_joined(n: NodeContext, hi: Value, lo: Value, dtype: np.dtype[Any]) -> Value:
    g = n.graph
    keep = _rank0(hi.shape)
    int32 = np.dtype(np.int32)
    high = g.op(Op.MUL, g.op(Op.CAST, hi, dtype=int32, shape=keep), _int_const(_HALF), 0,
                shape=keep)
    return _retyped(g.op(Op.ADD, high, g.op(Op.CAST, lo, dtype=int32, shape=keep), 0,
                         shape=keep), dtype)


def _retyped(y: Value, dtype: np.dtype[Any]) -> Value:
    """Integer result ``y`` under the ONNX dtype ``dtype`` (int64 tensors are TENSOR_INT32)."""
    if y.const is not None:
        return _known(y, y.const.astype(dtype))
    return Value(y.name, dtype, y.shape, tensor=y.tensor)


def normalized_axes(n: NodeContext, axes: Any, rank: int, what: str = "axes") -> list[int]:
    """``axes`` normalised into ``[0, rank)``; fails on out-of-range or repeated axes."""
    result = []
    for a in np.asarray(axes, np.int64).reshape(-1).tolist():
        if not -rank <= a < rank:
            n.fail(f"{what} value {a} is out of range for rank {rank}")
        result.append(a % rank)
    if len(set(result)) != len(result):
        n.fail(f"{what} {np.asarray(axes).reshape(-1).tolist()} repeats an axis")
    return result


def _axes_input(n: NodeContext, index: int) -> Array | None:
    """The axes of Squeeze / Unsqueeze: the ``axes`` attribute before opset 13, the (known)
    input ``index`` from 13 on; None when absent."""
    if n.opset < 13:
        if n.has_input(index):
            n.fail(f"input {index} (axes) exists from opset 13 on; this model is opset {n.opset}")
        axes = n.attr("axes")
        return None if axes is None else np.asarray(axes, np.int64)
    return n.const_input(index, "axes") if n.has_input(index) else None


# -- converters -----------------------------------------------------------------------------------

@converter("Shape")
def shape(n: NodeContext) -> list[Value]:
    """Shape (``start`` / ``end`` from opset 15): a known int64 vector where the dims it picks
    are static, else com.nnrt.SHAPE (and a SLICE) computing them at execution."""
    x = n.input(0)
    dims = x.const.shape if x.const is not None else x.shape
    start, end = int(n.attr("start", 0)), n.attr("end")
    first, last, _ = slice(start, None if end is None else int(end)).indices(len(dims))
    picked = list(dims)[first:last]
    if x.const is None and any(d <= 0 for d in picked):
        return [dims_of(n, x, first, last)]
    return [n.graph.const(np.asarray(picked, np.int64))]


@converter("Size")
def size(n: NodeContext) -> list[Value]:
    """Size: a known int64 scalar."""
    return [n.graph.const(np.asarray(math.prod(shape_of(n, n.input(0))), np.int64))]


@converter("Range", newest=27)
def range_(n: NodeContext) -> list[Value]:
    """Range on known start / limit / delta; floats accumulate ``start + delta + delta ...`` in
    their own type, as ONNX defines it — float16 in float32 from opset 27 (``stash_type``)."""
    start, limit, delta = (n.const_input(i, what) for i, what in
                           enumerate(("start", "limit", "delta")))
    if not start.size == limit.size == delta.size == 1:
        n.fail("start, limit and delta must be scalars")
    start, limit, delta = start.reshape(()), limit.reshape(()), delta.reshape(())
    dtype = start.dtype
    if delta == 0:
        n.fail("delta is 0")
    if dtype.kind in "iu":
        a, b, d = int(start), int(limit), int(delta)
        count = max(-((a - b) // d), 0)
        return [n.graph.const(np.asarray(a + d * np.arange(count, dtype=np.int64), dtype))]
    stash = n.attr("stash_type", 1 if n.has_attr("stash_type") else None)
    if stash not in (None, 1):
        n.fail(f"stash_type {stash} is not supported (only 1, float32)")
    work = np.dtype(np.float32) if stash == 1 and dtype == np.float16 else dtype
    span = np.subtract(limit, start, dtype=work)  # in the values' type, as ONNX Runtime does
    count = max(math.ceil(float(span) / float(delta)), 0)
    steps = np.full(count, delta, work)
    if count:
        steps[0] = start
    return [n.graph.const(np.add.accumulate(steps, dtype=work).astype(dtype))]


@converter("ConstantOfShape")
def constant_of_shape(n: NodeContext) -> list[Value]:
    """ConstantOfShape: ``value`` (default float32 0) everywhere; a constant for a known shape,
    a FILL of the shape computed at execution otherwise."""
    value = n.attr("value")
    fill = np.zeros(1, np.float32) if value is None else np.asarray(value)
    if fill.size != 1:
        n.fail(f"value must hold one element, got {fill.size}")
    target = n.input(0)
    if not target.known:
        if target.rank != 1 or not target.static:
            n.fail(f"input 0 (shape) must be a 1-D tensor of known length, got "
                   f"{list(target.shape)}")
        hint = target.hint or (None,) * target.shape[0]
        out = tuple(h if h is not None and h > 0 else 0 for h in hint)
        return [filled(n, target, fill.reshape(()).item(), fill.dtype, out)]
    dims = [int(d) for d in n.const_input(0, "shape").reshape(-1)]
    if any(d < 0 for d in dims):
        n.fail(f"shape {dims} has a negative dim")
    return [n.graph.const(np.full(dims, fill.reshape(()), fill.dtype))]


@converter("Reshape")
def reshape(n: NodeContext) -> list[Value]:
    """Reshape to a known shape: 0 copies the input dim (unless ``allowzero``), -1 is inferred."""
    x = n.input(0)
    allow_zero = bool(n.attr("allowzero", 0))
    if not n.input(1).known and x.const is None:
        return [_reshaped_to(n, x, n.input(1), allow_zero)]
    target = [int(d) for d in n.const_input(1, "shape").reshape(-1)]
    dims = x.const.shape if x.const is not None else x.shape
    if not x.static:
        return [_reshaped_dynamic(n, x, target, allow_zero)]
    out = []
    for i, d in enumerate(target):
        if d == 0 and not allow_zero:
            if i >= len(dims) or (x.const is None and dims[i] <= 0):
                n.fail(f"shape {target}: dim {i} copies an input dim that is "
                       f"{'missing' if i >= len(dims) else 'unknown'} (input {list(dims)})")
            d = dims[i]
        elif d < -1:
            n.fail(f"shape {target} has a negative dim {d}")
        out.append(d)
    if out.count(-1) > 1 or (-1 in out and allow_zero and 0 in out):
        n.fail(f"shape {target} cannot be inferred (several -1, or -1 with allowzero zeros)")
    count = math.prod(shape_of(n, x))
    known = math.prod(d for d in out if d != -1)
    if -1 in out:
        if known == 0 or count % known:
            n.fail(f"shape {target} cannot hold the {count} elements of input {list(dims)}")
        out[out.index(-1)] = count // known
    elif known != count:
        n.fail(f"shape {target} has {known} elements, input {list(dims)} has {count}")
    return [reshaped(n, x, out)]


def _reshaped_dynamic(n: NodeContext, x: Value, target: list[int], allow_zero: bool) -> Value:
    """Reshape of ``x`` with dynamic dims to a known ``target``: one RESHAPE when at most one
    output dim is not static (it becomes RESHAPE's inferred -1), else the runtime path."""
    out = []
    for i, d in enumerate(target):
        if d == 0 and not allow_zero:
            if i >= x.rank:
                n.fail(f"shape {target}: dim {i} copies an input dim that is missing (input "
                       f"{list(x.shape)})")
            d = x.shape[i] or -1
        elif d < -1 or (d == 0 and -1 in target):
            n.fail(f"shape {target} is not a valid target")
        out.append(d)
    if out.count(-1) > 1:
        return _reshaped_to(n, x, n.graph.const(np.asarray(target, np.int64)), allow_zero)
    if 0 in out:  # allowzero: an empty result, which NNAPI's RESHAPE cannot make
        n.fail(f"shape {target} with allowzero makes an empty tensor")
    return reshaped(n, x, [0 if d == -1 else d for d in out])


@converter("Flatten")
def flatten(n: NodeContext) -> list[Value]:
    """Flatten to 2-D around ``axis`` (default 1; negative from opset 11)."""
    x = n.input(0)
    dims = tuple(x.const.shape) if x.const is not None else x.shape
    axis = int(n.attr("axis", 1))
    if not -len(dims) <= axis <= len(dims):
        n.fail(f"axis {axis} is out of range for rank {len(dims)}")
    if axis < 0:
        axis += len(dims)
    halves = [dims[:axis], dims[axis:]]
    if x.const is None and all(0 in half for half in halves):
        n.fail(f"flattening {list(dims)} at axis {axis} needs the dims on one side known; "
               "pass input_shapes= to nnrt.onnx.load")
    # a side holding a dynamic dim is 0 (unknown): RESHAPE infers it from the other
    return [reshaped(n, x, tuple(0 if x.const is None and 0 in half else math.prod(half)
                                 for half in halves))]


@converter("Squeeze")
def squeeze(n: NodeContext) -> list[Value]:
    """Squeeze the given size-1 axes (all size-1 dims when none are given)."""
    x = n.input(0)
    dims = x.const.shape if x.const is not None else x.shape
    axes_value = _axes_input(n, 1)
    if axes_value is None:
        dims = shape_of(n, x)
        axes = [i for i, d in enumerate(dims) if d == 1]
    else:
        axes = normalized_axes(n, axes_value, len(dims))
        wrong = [a for a in axes if dims[a] not in (0, 1)]
        if wrong:
            n.fail(f"cannot squeeze axis {wrong[0]} of size {dims[wrong[0]]} (input {list(dims)})")
    out = [d for i, d in enumerate(dims) if i not in axes]
    if x.const is None and any(dims[a] == 0 for a in axes):  # SQUEEZE checks they are 1
        squeezed = np.asarray(axes, np.int32)
        return carried(n, [x], lambda vs, _: [
            n.graph.op(Op.SQUEEZE, vs[0], squeezed, shape=out or (1,))])[:1] if out else [
            reshaped(n, carried(n, [x], lambda vs, _: [
                n.graph.op(Op.SQUEEZE, vs[0], squeezed, shape=(1,))])[0], [])]
    return [reshaped(n, x, out)]


@converter("Unsqueeze")
def unsqueeze(n: NodeContext) -> list[Value]:
    """Unsqueeze: insert size-1 dims at the given axes of the output."""
    x = n.input(0)
    dims = x.const.shape if x.const is not None else x.shape
    axes_value = _axes_input(n, 1)
    if axes_value is None:
        n.fail("axes are required")
    rank = len(dims) + axes_value.size
    axes = normalized_axes(n, axes_value, rank)
    rest = iter(dims)
    return [reshaped(n, x, [1 if i in axes else next(rest) for i in range(rank)])]


@converter("Expand")
def expand(n: NodeContext) -> list[Value]:
    """Expand to a known shape with ONNX (two-way) broadcasting: TILE for float and integer
    tensors, LOGICAL_AND with ones for booleans."""
    x = n.input(0)
    if not n.input(1).known or not x.static:
        return [_expanded_dynamic(n, x, n.input(1))]
    dims = shape_of(n, x)
    target = [int(d) for d in n.const_input(1, "shape").reshape(-1)]
    try:
        out = tuple(np.broadcast_shapes(dims, tuple(target)))
    except ValueError:
        n.fail(f"input shape {list(dims)} does not broadcast to {target}")
    if x.const is not None:
        return [_known(x, np.array(np.broadcast_to(x.const, out)))]
    if out == dims:
        return [x]
    if x.dtype == _BOOL:
        return [expand_to(n, x, out)]
    lifted = reshaped(n, x, (1,) * (len(out) - len(dims)) + dims)
    if lifted.shape == out:
        return [lifted]
    multiples = np.asarray([o // d for o, d in zip(out, lifted.shape, strict=True)], np.int32)
    return carried(n, [lifted], lambda vs, _: [n.graph.op(Op.TILE, vs[0], multiples)],
                   int_kernels=True)


def _expanded_dynamic(n: NodeContext, x: Value, target: Value) -> Value:
    """Expand where the input's dims or the target shape are known only at execution: ``x``
    times a FILL of ones of the target shape (LOGICAL_AND with true for booleans), which
    broadcasts both ways as Expand does and keeps every value (``x * 1 == x``, -0 and NaN
    included)."""
    if target.rank != 1 or not target.static:
        n.fail(f"input 1 (shape) must be a 1-D tensor of known length, got {list(target.shape)}")
    if target.const is not None:
        entries: Sequence[int | None] = [int(v) for v in target.const.reshape(-1)]
    else:
        entries = target.hint or (None,) * target.shape[0]
    rank = max(x.rank, len(entries))
    mine = (1,) * (rank - x.rank) + tuple(x.shape)
    theirs = (1,) * (rank - len(entries)) + tuple(e if e is not None and e > 0 else 0
                                                  for e in entries)
    out = tuple(a if b == 1 else b if a == 1 else a if a == b else 0
                for a, b in zip(mine, theirs, strict=True))
    dtype = x.dtype
    if dtype == _BOOL:
        ones = filled(n, target, True, _BOOL, theirs)
        return binary(n, Op.LOGICAL_AND, x, ones, dtype=_BOOL)
    if dtype.kind in "iu" and dtype not in (np.int32, np.int64):
        n.fail(f"Expand of {dtype} values to a runtime shape is not supported")
    ones = filled(n, target, 1, np.dtype(np.int32) if dtype.kind in "iu" else dtype, theirs)
    y = binary(n, Op.MUL, x, ones)
    return Value(y.name, dtype, out if not y.shape or 0 in y.shape else y.shape,
                 tensor=y.tensor)


def _reshaped_to(n: NodeContext, x: Value, target: Value, allow_zero: bool) -> Value:
    """``x`` reshaped to ``target``, a shape computed at execution (ONNX Reshape semantics)."""
    dims, out = reshape_target(n, x, target, allow_zero)
    return carried(n, [x], lambda vs, _: [n.graph.op(Op.RESHAPE, vs[0], dims, shape=out)])[0]
