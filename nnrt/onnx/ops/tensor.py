"""Tensor operators: Transpose, Concat, Split, Slice, Gather, GatherND, Tile, Pad (DepthToSpace
and SpaceToDepth: :mod:`nnrt.onnx.ops.depth`).

Known inputs are computed at import with numpy (ONNX semantics). Runtime tensors become NNAPI
operations:

* Transpose: TRANSPOSE (a RESHAPE when only size-1 dims move); Concat: CONCATENATION; Tile: TILE.
* Split: SPLIT for equal parts, else one SLICE per part. Slice: SLICE for unit steps, else
  STRIDED_SLICE; on dynamic axes STRIDED_SLICE with the bounds as given (its clamping is
  ONNX's, but for a negative start with a negative step, which is reported); runtime starts /
  ends: :func:`~nnrt.onnx.ops.dynamic.slice_bounds`.
* Gather: GATHER; runtime indices are first wrapped exactly (``i < 0 ? i + dim : i``).
  GatherND: the extension operation com.nnrt.GATHER_ND.
* Pad: PAD (pad value +0) or PAD_V2, after a SLICE for negative pads; reflect: MIRROR_PAD; edge,
  wrap and cropping reflect: one GATHER per padded axis with a known index vector.

Operations without integer or boolean kernels carry those tensors exactly
(:func:`~nnrt.onnx.ops.shape.carried`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from nnrt.model.types import OperationType as Op
from nnrt.onnx.errors import NeedsConstant
from nnrt.onnx.graph import Value
from nnrt.onnx.node import NodeContext, converter
from nnrt.onnx.ops.dynamic import hinted, slice_bounds
from nnrt.onnx.ops.shape import carried, normalized_axes, reshaped, shape_of

Array = np.ndarray[Any, Any]

_I32 = np.dtype(np.int32)
_BOOL = np.dtype(np.bool_)


def _ints(array: Any) -> Array:
    return np.asarray(array, np.int32)


def _int_list(n: NodeContext, i: int, what: str) -> list[int]:
    return [int(v) for v in np.asarray(n.const_input(i, what)).reshape(-1)]


def _required(n: NodeContext, name: str) -> Any:
    """Attribute ``name``, which the node must set."""
    value = n.attr(name)
    if value is None:
        n.fail(f"attribute {name} is required")
    return value


def _not_before(n: NodeContext, i: int, opset: int, what: str) -> None:
    """Refuse input ``i`` (``what``) in opsets before ``opset``, which have no such input."""
    if n.opset < opset and n.has_input(i):
        n.fail(f"input {i} ({what}) exists from opset {opset} on; this model is opset {n.opset}")


def _axis(n: NodeContext, axis: int, rank: int) -> int:
    return normalized_axes(n, [axis], rank, "axis")[0]


@converter("Transpose")
def transpose(n: NodeContext) -> list[Value]:
    """Transpose by ``perm`` (default: reversed); a pure reshape when only size-1 dims move."""
    x = n.input(0)
    perm_attr = n.attr("perm")
    perm = list(range(x.rank))[::-1] if perm_attr is None else [int(p) for p in perm_attr]
    if sorted(perm) != list(range(x.rank)):
        n.fail(f"perm {perm} is not a permutation of the {x.rank} axes")
    if x.const is not None:
        return [x.folded(np.transpose(x.const, perm))]
    if perm == sorted(perm):
        return [x]
    dims = x.shape  # an unknown dim (0) counts as moving data
    out = tuple(dims[p] for p in perm)
    if [p for p in perm if dims[p] != 1] == [i for i, d in enumerate(dims) if d != 1]:
        return [reshaped(n, x, out)]
    return carried(n, [x], lambda vs, _: [
        n.graph.op(Op.TRANSPOSE, vs[0], _ints(perm), shape=None if x.static else out)])


@converter("Concat")
def concat(n: NodeContext) -> list[Value]:
    """Concat along ``axis``: one CONCATENATION (empty known inputs dropped)."""
    values = [n.input(i) for i in range(n.n_inputs)]
    rank = values[0].rank
    if rank == 0 or any(v.rank != rank for v in values):
        n.fail(f"inputs must share one rank >= 1, got ranks {[v.rank for v in values]}")
    axis = _axis(n, int(_required(n, "axis")), rank)
    consts = [v.const for v in values if v.const is not None]
    if len(consts) == len(values):
        return [values[0].folded(np.concatenate(consts, axis=axis))]
    parts = [v for v in values if v.const is None or v.const.size]
    if len(parts) == 1:
        return [parts[0]]
    y = carried(n, parts, lambda vs, _: [n.graph.op(Op.CONCATENATION, *vs, axis)])[0]
    if rank == 1 and all(v.known or (v.hint is not None and v.static) for v in values):
        hint = [e for v in values for e in (
            [int(c) for c in v.const] if v.const is not None else v.hint or ())]
        return [hinted(y, hint, (len(hint),))]
    return [y]


def _split_sizes(n: NodeContext, dim: int, outputs: int) -> list[int]:
    """The part sizes: ``split`` (attribute < 13, input from 13), else ``num_outputs`` (18+:
    a smaller last part when uneven), else equal parts for every output."""
    _not_before(n, 1, 13, "split")
    given = n.attr("split") if n.opset < 13 else (
        _int_list(n, 1, "split") if n.has_input(1) else None)
    count = n.attr("num_outputs") if n.opset >= 18 else None
    if given is not None:
        sizes = [int(s) for s in given]
        if count is not None:
            n.fail("split and num_outputs are both given")
        if len(sizes) != outputs or any(s < 0 for s in sizes) or sum(sizes) != dim:
            n.fail(f"split {sizes} does not cut a dim of {dim} into {outputs} parts")
        return sizes
    if count is not None:
        if int(count) != outputs:
            n.fail(f"num_outputs is {count} but the node has {outputs} outputs")
        chunk = -(-dim // outputs)
        if chunk * (outputs - 1) >= dim:
            n.fail(f"a dim of {dim} cannot be split into {outputs} chunks of {chunk}")
        return [chunk] * (outputs - 1) + [dim - chunk * (outputs - 1)]
    if dim % outputs:
        n.fail(f"a dim of {dim} cannot be split into {outputs} equal parts")
    return [dim // outputs] * outputs


@converter("Split")
def split(n: NodeContext) -> list[Value]:
    """Split along ``axis``: SPLIT for equal parts, else one SLICE per part."""
    x = n.input(0)
    if x.const is None and not x.static and x.shape:
        return _split_open(n, x)
    dims = shape_of(n, x)
    if not dims:
        n.fail("a scalar cannot be split")
    axis = _axis(n, int(n.attr("axis", 0)), len(dims))
    sizes = _split_sizes(n, dims[axis], len(n.node.output))
    starts = np.cumsum([0, *sizes[:-1]]).tolist()
    if x.const is not None:
        return [x.folded(np.take(x.const, range(b, b + s), axis=axis))
                for b, s in zip(starts, sizes, strict=True)]
    if len(set(sizes)) == 1 and sizes[0]:
        return carried(n, [x], lambda vs, _: n.graph.ops(Op.SPLIT, vs[0], axis, len(sizes),
                                                          outputs=len(sizes)), int_kernels=True)
    results = []
    for b, s in zip(starts, sizes, strict=True):
        if s == 0:
            results.append(x.folded(np.empty((*dims[:axis], 0, *dims[axis + 1:]), x.dtype)))
        else:
            results.append(_sliced(n, x, [(b if i == axis else 0, s if i == axis else d, 1)
                                          for i, d in enumerate(dims)]))
    return results


def _split_open(n: NodeContext, x: Value) -> list[Value]:
    """Split of an input with unknown dims (0) along a known one (a dynamic batch): SPLIT for
    equal parts, else one SLICE per part running the other axes to their end (size -1)."""
    dims = x.shape
    axis = _axis(n, int(n.attr("axis", 0)), len(dims))
    if not dims[axis]:
        n.static_shape(x)  # fails, naming the unknown dims
    sizes = _split_sizes(n, dims[axis], len(n.node.output))
    if len(set(sizes)) == 1 and sizes[0]:
        return carried(n, [x], lambda vs, _: n.graph.ops(Op.SPLIT, vs[0], axis, len(sizes),
                                                          outputs=len(sizes)), int_kernels=True)
    if 0 in sizes:
        n.fail(f"empty parts {sizes} of an input with unknown dims are not supported")
    results = []
    for start, size in zip(np.cumsum([0, *sizes[:-1]]).tolist(), sizes, strict=True):
        begin = _ints([start if i == axis else 0 for i in range(len(dims))])
        count = _ints([size if i == axis else -1 for i in range(len(dims))])
        results.extend(carried(n, [x], _slice_build(n, begin, count), int_kernels=True))
    return results


def _slice_build(n: NodeContext, begin: Array, size: Array
                 ) -> Callable[[list[Value], Any], list[Value]]:
    """A ``carried`` builder of one SLICE."""
    return lambda vs, _: [n.graph.op(Op.SLICE, vs[0], begin, size)]


def _sliced(n: NodeContext, x: Value, ranges: list[tuple[int, int, int]]) -> Value:
    """``x`` sliced by per-axis (start, count, step): SLICE for unit steps, else
    STRIDED_SLICE (an end of -1 with a negative step runs to the start: the end mask)."""
    dims = shape_of(n, x)
    if all(st == 1 for _, _, st in ranges):
        if all(b == 0 and c == d for (b, c, _), d in zip(ranges, dims, strict=True)):
            return x
        begin, size = _ints([b for b, _, _ in ranges]), _ints([c for _, c, _ in ranges])
        return carried(n, [x], lambda vs, _: [n.graph.op(Op.SLICE, vs[0], begin, size)],
                       int_kernels=True)[0]
    ends = [b + c * st for b, c, st in ranges]
    end_mask = sum(1 << i for i, e in enumerate(ends) if e < 0)
    begin, end = _ints([b for b, _, _ in ranges]), _ints([max(e, 0) for e in ends])
    strides = _ints([st for _, _, st in ranges])
    return carried(n, [x], lambda vs, _: [
        n.graph.op(Op.STRIDED_SLICE, vs[0], begin, end, strides, 0, end_mask, 0)])[0]


def _slice_params(n: NodeContext) -> tuple[list[int], list[int], list[int] | None,
                                           list[int] | None]:
    if n.opset < 10:
        axes = n.attr("axes")
        _not_before(n, 1, 10, "starts")
        return ([int(v) for v in _required(n, "starts")], [int(v) for v in _required(n, "ends")],
                None if axes is None else [int(v) for v in axes], None)
    return (_int_list(n, 1, "starts"), _int_list(n, 2, "ends"),
            _int_list(n, 3, "axes") if n.has_input(3) else None,
            _int_list(n, 4, "steps") if n.has_input(4) else None)


@converter("Slice")
def slice_(n: NodeContext) -> list[Value]:
    """Slice with ONNX clamping (huge starts / ends included) and negative steps."""
    x = n.input(0)
    dims = x.const.shape if x.const is not None else x.shape
    if n.opset >= 10 and not (n.input(1).known and n.input(2).known):
        return [_slice_at_runtime(n, x)]
    starts, ends, axes_given, steps_given = _slice_params(n)
    axes = normalized_axes(n, range(len(starts)) if axes_given is None else axes_given,
                           len(dims))
    steps = [1] * len(starts) if steps_given is None else steps_given
    if not len(starts) == len(ends) == len(axes) == len(steps):
        n.fail(f"starts, ends, axes and steps differ in length ({len(starts)}, {len(ends)}, "
               f"{len(axes)}, {len(steps)})")
    if not x.static:
        return [_slice_dynamic(n, x, dict(zip(axes, zip(starts, ends, steps, strict=True),
                                              strict=True)))]
    ranges = [(0, d, 1) for d in dims]
    for a, b, e, st in zip(axes, starts, ends, steps, strict=True):
        if st == 0:
            n.fail(f"steps[{axes.index(a)}] is 0")
        d = dims[a]
        b, e = (b + d if b < 0 else b), (e + d if e < 0 else e)
        lo, hi = (0, d) if st > 0 else (-1, d - 1)
        b, e = min(max(b, 0), d if st > 0 else d - 1), min(max(e, lo), hi)
        ranges[a] = (b, len(range(b, e, st)), st)
    if any(c == 0 for _, c, _ in ranges):
        return [x.folded(np.empty([c for _, c, _ in ranges], x.dtype))]
    if x.const is not None:
        return [x.folded(x.const[tuple(slice(b, b + c * st if b + c * st >= 0 else None, st)
                                         for b, c, st in ranges)])]
    y = _sliced(n, x, ranges)
    if x.hint is not None and len(dims) == 1:
        (b, c, st), = ranges
        return [hinted(y, x.hint[b:b + c * st if b + c * st >= 0 else None:st], (c,))]
    return [y]


def _slice_at_runtime(n: NodeContext, x: Value) -> Value:
    """Slice whose starts or ends are computed at execution (unit steps, known axes)."""
    count = n.input(1).shape[0] if n.input(1).rank == 1 else 0
    if not count or n.input(2).shape != (count,):
        n.fail(f"starts and ends must be 1-D of one known length, got "
               f"{list(n.input(1).shape)} and {list(n.input(2).shape)}")
    axes = normalized_axes(n, _int_list(n, 3, "axes") if n.has_input(3) else range(count),
                           x.rank)
    steps = _int_list(n, 4, "steps") if n.has_input(4) else [1] * count
    if len(axes) != count or steps != [1] * count:
        raise NeedsConstant(f"inputs 1 and 2 (starts, ends) must be known at import time with "
                            f"steps other than 1 (got axes {axes}, steps {steps})")
    begin, size, out = slice_bounds(n, x, n.input(1), n.input(2), axes)
    return carried(n, [x], lambda vs, _: [n.graph.op(Op.SLICE, vs[0], begin, size, shape=out)],
                   int_kernels=True)[0]


def _slice_dynamic(n: NodeContext, x: Value, spec: dict[int, tuple[int, int, int]]) -> Value:
    """Slice of a tensor with dynamic dims by known parameters: STRIDED_SLICE, whose clamping
    (TensorFlow's) is ONNX's for positive steps and for negative steps from a start ≥ -dim;
    an axis left whole takes the begin and end masks. Known dims are sliced as known."""
    begin, end, strides, masks, out = [], [], [], 0, []
    limit = int(np.iinfo(np.int32).max)
    for axis, d in enumerate(x.shape):
        if axis not in spec:
            begin.append(0)
            end.append(d)
            strides.append(1)
            masks |= 0 if d else 1 << axis
            out.append(d)
            continue
        b, e, st = spec[axis]
        if st == 0:
            n.fail(f"the step of axis {axis} is 0")
        if d:
            b, e = (b + d if b < 0 else b), (e + d if e < 0 else e)
            lo, hi = (0, d) if st > 0 else (-1, d - 1)
            b, e = min(max(b, 0), d if st > 0 else d - 1), min(max(e, lo), hi)
            c = len(range(b, e, st))
            if c == 0:
                n.fail(f"the slice of axis {axis} is empty, and the other dims are dynamic")
            e = b + c * st
            out.append(c)
        else:
            if st < 0 and b < 0:
                n.fail(f"a negative start ({b}) with a negative step on the dynamic axis {axis} "
                       "is not supported; pass input_shapes= to nnrt.onnx.load")
            b, e = max(min(b, limit), -limit), max(min(e, limit), -limit)
            out.append(0)
        begin.append(b)
        end.append(e)
        strides.append(st)
    end_mask = masks | sum(1 << a for a, e in enumerate(end) if e < 0 and x.shape[a]
                           and a in spec and spec[a][2] < 0)
    args = (_ints(begin), _ints([max(e, 0) if x.shape[a] else e for a, e in enumerate(end)]),
            _ints(strides), masks, end_mask, 0)
    shape = tuple(out)
    return carried(n, [x], lambda vs, _: [
        n.graph.op(Op.STRIDED_SLICE, vs[0], *args, shape=shape)])[0]


def _wrapped(n: NodeContext, idx: Value, dims: Value) -> Value:
    """Runtime indices with negatives counted from the end: ``idx < 0 ? idx + dims : idx``."""
    g = n.graph
    keep = () if not idx.shape else None
    zero = Value("", _I32, (), const=np.zeros((), np.int32))
    negative = g.op(Op.LESS, idx, zero, dtype=_BOOL, shape=keep)
    shifted = g.op(Op.ADD, idx, dims, 0, shape=keep)
    return g.op(Op.SELECT, negative, shifted, idx, dtype=_I32, shape=keep)


@converter("Gather")
def gather(n: NodeContext) -> list[Value]:
    """Gather along ``axis``: GATHER (known negative indices normalised, runtime ones wrapped);
    scalar indices drop the axis."""
    x, idx = n.input(0), n.input(1)
    dims = x.const.shape if x.const is not None else x.shape
    if not dims:
        n.fail("cannot gather from a scalar")
    axis = _axis(n, int(n.attr("axis", 0)), len(dims))
    size = dims[axis]
    if idx.dtype.kind not in "iu":
        n.fail(f"indices must be integers, got {idx.dtype}")
    ishape = idx.const.shape if idx.const is not None else idx.shape
    out_shape = tuple(dims[:axis]) + tuple(ishape) + tuple(dims[axis + 1:])
    if idx.const is not None:
        a = idx.const.astype(np.int64)
        if not size and (a < 0).any():
            n.fail(f"negative indices on axis {axis}, whose size is dynamic, are not "
                   "supported; pass input_shapes= to nnrt.onnx.load")
        bad = a[(a < -size) | (a >= size)] if size else np.empty(0, np.int64)
        if bad.size:
            n.fail(f"index {int(bad[0])} is out of range for axis {axis} of size {size}")
        a = np.where(a < 0, a + size, a)
        if x.const is not None:
            return [x.folded(np.take(x.const, a, axis=axis))]
        indices = Value("", _I32, a.shape, const=a.astype(np.int32))
        if x.hint is not None and len(dims) == 1 and all(x.hint[int(i)] is not None
                                                          for i in a.reshape(-1)):
            return [hinted(x, [x.hint[int(i)] for i in a.reshape(-1)], out_shape)]  # static
    elif not size:
        n.fail(f"runtime indices on axis {axis}, whose size is dynamic, are not supported; "
               "pass input_shapes= to nnrt.onnx.load")
    else:
        indices = _wrapped(n, idx, Value("", _I32, (), const=np.asarray(size, np.int32)))
    y = carried(n, [x], lambda vs, _: [n.graph.op(Op.GATHER, vs[0], axis, indices)],
                int_kernels=True)[0]
    y = reshaped(n, y, out_shape)
    if x.hint is not None and idx.const is not None and len(dims) == 1:
        return [hinted(y, [x.hint[int(i)] for i in a.reshape(-1)], out_shape)]
    return [y]


@converter("GatherND")
def gather_nd(n: NodeContext) -> list[Value]:
    """GatherND (``batch_dims``): com.nnrt.GATHER_ND, or numpy on known inputs."""
    x, idx = n.input(0), n.input(1)
    dims, ishape = shape_of(n, x), shape_of(n, idx, "indices")
    b = int(n.attr("batch_dims", 0))
    if idx.dtype.kind not in "iu":
        n.fail(f"indices must be integers, got {idx.dtype}")
    k = ishape[-1] if ishape else 0
    if not (ishape and 0 <= b < min(len(ishape), len(dims)) and 1 <= k <= len(dims) - b
            and dims[:b] == ishape[:b]):
        n.fail(f"indices {list(ishape)} with batch_dims {b} do not address data {list(dims)}")
    out_shape = ishape[:-1] + dims[b + k:]
    if idx.const is not None:
        a = idx.const.astype(np.int64)
        limits = np.asarray(dims[b:b + k])
        if ((a < -limits) | (a >= limits)).any():
            n.fail(f"an index is out of range for data dims {list(dims[b:b + k])}")
        a = np.where(a < 0, a + limits, a)
        if x.const is not None:
            batches = math.prod(dims[:b])
            data, tuples = x.const.reshape((batches, *dims[b:])), a.reshape(batches, -1, k)
            picked = [data[i][tuple(tuples[i].T)] for i in range(batches)]
            return [x.folded(np.stack(picked).reshape(out_shape))]
        idx = Value("", _I32, a.shape, const=a.astype(np.int32))
    y = n.graph.op(Op.NNRT_GATHER_ND, x, idx, b, shape=() if not out_shape else None)
    return [Value(y.name, x.dtype, y.shape, tensor=y.tensor)]


@converter("Tile")
def tile(n: NodeContext) -> list[Value]:
    """Tile by known ``repeats``: TILE."""
    x = n.input(0)
    repeats = _int_list(n, 1, "repeats")
    dims = shape_of(n, x)
    if len(repeats) != len(dims) or any(r < 0 for r in repeats):
        n.fail(f"repeats {repeats} must hold one non-negative count per dim of {list(dims)}")
    if x.const is not None or 0 in repeats:
        base = x.const if x.const is not None else np.empty(dims, x.dtype)
        return [x.folded(np.tile(base, repeats))]
    if all(r == 1 for r in repeats):
        return [x]
    return carried(n, [x], lambda vs, _: [n.graph.op(Op.TILE, vs[0], _ints(repeats))],
                   int_kernels=True)


def _pad_params(n: NodeContext, rank: int) -> tuple[list[tuple[int, int]], float]:
    """Per-axis (before, after) pads and the constant value, from attributes (< 11) or inputs."""
    if n.opset < 11:
        _not_before(n, 1, 11, "pads")
        pads = [int(p) for p in _required(n, "pads")]
        value, axes = float(n.attr("value", 0.0)), None
    else:
        pads = _int_list(n, 1, "pads")
        value_given = n.has_input(2) and n.const_input(2, "constant_value").size
        value = n.const_input(2, "constant_value").reshape(-1)[0] if value_given else 0
        _not_before(n, 3, 18, "axes")
        axes = _int_list(n, 3, "axes") if n.has_input(3) else None
    axis_list = list(range(rank)) if axes is None else normalized_axes(n, axes, rank)
    if len(pads) != 2 * len(axis_list):
        n.fail(f"pads {pads} must hold 2 values per padded axis ({len(axis_list)} axes)")
    widths = [(0, 0)] * rank
    for i, a in enumerate(axis_list):
        widths[a] = (pads[i], pads[i + len(axis_list)])
    return widths, value


def _pad_index(mode: str, dim: int, before: int, after: int) -> Array:
    """For edge / reflect / wrap: the input index of each output position along one axis.
    Negative pads crop first; the rest pads what remains (as ONNX Runtime does)."""
    start, stop = max(-before, 0), dim - max(-after, 0)
    p = np.arange(-max(before, 0), stop - start + max(after, 0))
    size = stop - start
    if mode == "edge":
        return start + np.clip(p, 0, size - 1)
    if mode == "wrap":
        return start + p % size
    period = 2 * (size - 1)
    if period == 0:
        return np.full_like(p, start)
    q = p % period
    return start + np.where(q < size, q, period - q)


@converter("Pad")
def pad(n: NodeContext) -> list[Value]:
    """Pad: constant (PAD for +0, else PAD_V2; negative pads crop with SLICE first), reflect
    (MIRROR_PAD), edge and wrap (one GATHER per padded axis, cropping included)."""
    x = n.input(0)
    if x.const is None and not x.static:
        return _pad_open(n, x)
    dims = shape_of(n, x)
    mode = n.attr("mode", "constant")
    widths, value = _pad_params(n, len(dims))
    if mode not in ("constant", "reflect", "edge", "wrap"):
        n.fail(f"mode {mode!r} is not supported")
    out = [d + b + a for d, (b, a) in zip(dims, widths, strict=True)]
    if any(d < 0 for d in out):
        n.fail(f"pads {widths} remove more than input {list(dims)} holds")
    if all(w == (0, 0) for w in widths):
        return [x]
    if 0 in out:
        return [x.folded(np.empty(out, x.dtype))]
    if mode != "constant":
        for d, (b, a) in zip(dims, widths, strict=True):
            left = d - max(-b, 0) - max(-a, 0)
            if (b, a) != (0, 0) and (left < 1 if mode != "reflect" else
                                     left < 2 or max(b, a) > left - 1):
                n.fail(f"mode {mode!r} cannot pad an axis of {left} elements by {(b, a)}")
        return [_index_pad(n, x, mode, widths)]
    kept = [(max(-b, 0), d - max(-b, 0) - max(-a, 0), 1)
            for d, (b, a) in zip(dims, widths, strict=True)]
    grown = _ints([[max(b, 0), max(a, 0)] for b, a in widths])
    if x.const is not None:
        box = x.const[tuple(slice(s, s + c) for s, c, _ in kept)]
        return [x.folded(np.pad(box, grown, constant_values=np.asarray(value, x.dtype)))]
    y = _sliced(n, x, kept)
    if not grown.any():
        return [y]
    return carried(n, [y], _constant_pad(n, grown, float(np.asarray(value, x.dtype))))


def _constant_pad(n: NodeContext, pads: Array, fill: float
                  ) -> Callable[[list[Value], Callable[[float], float]], list[Value]]:
    """A ``carried`` builder padding with ``fill``: PAD for +0, else PAD_V2."""

    def build(vs: list[Value], part: Callable[[float], float]) -> list[Value]:
        v = part(fill)
        if v == 0 and math.copysign(1.0, v) > 0:  # PAD pads with +0
            return [n.graph.op(Op.PAD, vs[0], pads)]
        return [n.graph.op(Op.PAD_V2, vs[0], pads, v)]

    return build


def _pad_open(n: NodeContext, x: Value) -> list[Value]:
    """Pad of an input with unknown dims (0): constant or reflect, with pads >= 0 and unknown
    axes left unpadded (a dynamic batch), the padded axes' sizes checked here."""
    dims = x.shape
    mode = n.attr("mode", "constant")
    widths, value = _pad_params(n, len(dims))
    for axis, (d, (b, a)) in enumerate(zip(dims, widths, strict=True)):
        if (b, a) == (0, 0) or (d == 0 and b >= 0 and a >= 0 and mode in ("constant",
                                                                          "reflect")):
            continue  # an unknown axis: MIRROR_PAD checks its size at execution
        if b < 0 or a < 0 or mode not in ("constant", "reflect") or (
                mode == "reflect" and max(b, a) >= d):
            n.fail(f"mode {mode!r} pads {(b, a)} of axis {axis} ({d} elements) need the "
                   f"input's dims known; pass input_shapes= to nnrt.onnx.load")
    pads = _ints(widths)
    if mode == "reflect":
        return carried(n, [x], lambda vs, _: [n.graph.op(Op.MIRROR_PAD, vs[0], pads, 0)],
                       int_kernels=True)
    return carried(n, [x], _constant_pad(n, pads, float(np.asarray(value, x.dtype))))


def _index_pad(n: NodeContext, x: Value, mode: str, widths: list[tuple[int, int]]) -> Value:
    dims = shape_of(n, x)
    if x.const is not None:
        y = x.const
        for axis, (b, a) in enumerate(widths):
            y = np.take(y, _pad_index(mode, dims[axis], b, a), axis=axis)
        return x.folded(y)
    if mode == "reflect" and all(0 <= w < d for d, pair in zip(dims, widths, strict=True)
                                 for w in pair):
        pads = _ints(widths)
        return carried(n, [x], lambda vs, _: [n.graph.op(Op.MIRROR_PAD, vs[0], pads, 0)],
                       int_kernels=True)[0]

    def build(vs: list[Value], _: Any) -> list[Value]:
        y = vs[0]
        for axis, (b, a) in enumerate(widths):
            if (b, a) != (0, 0):
                y = n.graph.op(Op.GATHER, y, axis, _ints(_pad_index(mode, dims[axis], b, a)))
        return [y]

    return carried(n, [x], build, int_kernels=True)[0]
