"""Lowering of data-movement operations (kernels in :mod:`nnrt.drivers.cpu.kernels.data`).

Every parameter is a compile-time constant, so the slicing operations resolve to Python slice
triples here, with the reference kernels' own helpers (TensorFlow's clamping and masks for
STRIDED_SLICE, SLICE's ``-1`` sizes): SLICE, STRIDED_SLICE, REVERSE, each output of SPLIT, and
a GATHER whose constant indices form an arithmetic progression (a single index included) all
become one ``slice_copy``. Other GATHERs keep their indices as an int32 module tensor. PAD and
PAD_V2 fill only the border, MIRROR_PAD mirrors the inside into it; TILE broadcasts into a view
of its output.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.drivers.cpu.graph import Ref, Value
from nnrt.drivers.cpu.lowering.base import Lowerer, Lowering
from nnrt.model.types import OperationType
from nnrt.ops._framework.context import OperationContext
from nnrt.ops.gather import Gather
from nnrt.ops.pad import PADDINGS, PARAM, SYMMETRIC
from nnrt.ops.shape_params import int_matrix, int_vector, known_axis
from nnrt.ops.slicing import Slice, StridedSlice
from nnrt.ops.tensor import Split, Tile

__all__ = ["DATA_LOWERINGS"]

Op = OperationType
Array = np.ndarray[Any, Any]
Triple = tuple[int, int | None, int]


def _triple(start: int, step: int, count: int) -> Triple:
    """The ``(start, stop, step)`` selecting ``count`` elements from ``start`` by ``step``."""
    stop = start + step * count
    return (start, None if stop < 0 else stop, step)


def _whole(shape: tuple[int, ...]) -> list[Triple]:
    return [(0, d, 1) for d in shape]


def _slice_copy(lw: Lowerer, ctx: OperationContext, spec: list[Triple], j: int = 0) -> None:
    op = ctx.operation
    out = lw.result(op.outputs[j])
    lw.emit("slice_copy", out, [lw.ref(op.inputs[0]), tuple(spec)], ctx.index)


def _slice(lw: Lowerer, ctx: OperationContext) -> None:
    _slice_copy(lw, ctx, [(b, b + n, 1) for b, n in Slice.bounds(ctx)])


def _strided_slice(lw: Lowerer, ctx: OperationContext) -> None:
    ranges, _ = StridedSlice.ranges(ctx)
    _slice_copy(lw, ctx, [_triple(start, stride, count) for start, stride, count in ranges])


def _reverse(lw: Lowerer, ctx: OperationContext) -> None:
    shape = lw.shape(ctx.operation.inputs[0])
    axis = int_vector(ctx, 1)[0]
    spec = _whole(shape)
    spec[axis] = _triple(shape[axis] - 1, -1, shape[axis])
    _slice_copy(lw, ctx, spec)


def _split(lw: Lowerer, ctx: OperationContext) -> None:
    shape = lw.shape(ctx.operation.inputs[Split.INPUT])
    axis = known_axis(ctx, Split.AXIS, len(shape))
    part = shape[axis] // int(ctx.value(Split.NUM_SPLITS))
    for j in range(len(ctx.operation.outputs)):
        spec = _whole(shape)
        spec[axis] = (j * part, (j + 1) * part, 1)
        _slice_copy(lw, ctx, spec, j)


def _progression(indices: Array) -> tuple[int, int] | None:
    """``(start, step)`` if the flattened ``indices`` are ``start + step * k``, step != 0."""
    flat = indices.reshape(-1).astype(np.int64)
    if flat.size == 1:
        return int(flat[0]), 1
    step = int(flat[1] - flat[0])
    if step == 0 or not np.array_equal(np.diff(flat), np.full(flat.size - 1, step)):
        return None
    return int(flat[0]), step


def _gather(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    shape = lw.shape(op.inputs[Gather.INPUT])
    axis = known_axis(ctx, Gather.AXIS, len(shape))
    known = lw.const_of(op.inputs[Gather.INDICES])
    if known is None:
        table = lw.ref(op.inputs[Gather.INDICES])
    else:
        indices = np.ascontiguousarray(known, np.int32)
        progression = _progression(indices)
        if progression is not None:
            spec = _whole(shape)
            spec[axis] = _triple(*progression, indices.size)
            _slice_copy(lw, ctx, spec)
            return
        table = Ref(lw.graph.add(Value(indices.shape, const=indices)))
    out = lw.result(op.outputs[0])
    lw.emit("gather", out, [lw.ref(op.inputs[Gather.INPUT]), table, axis, ctx.index],
            ctx.index)


def _pad(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    shape = lw.shape(op.inputs[0])
    pads = tuple(int_matrix(ctx, PADDINGS, len(shape)))
    value = float(ctx.value(PARAM)) if ctx.op_type == Op.PAD_V2 else 0.0
    out = lw.result(op.outputs[0])
    lw.emit("pad", out, [lw.ref(op.inputs[0]), pads, value], ctx.index)


def _mirror_pad(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    shape = lw.shape(op.inputs[0])
    pads = tuple(int_matrix(ctx, PADDINGS, len(shape)))
    symmetric = int(ctx.value(PARAM)) == SYMMETRIC
    out = lw.result(op.outputs[0])
    lw.emit("mirror_pad", out, [lw.ref(op.inputs[0]), pads, symmetric], ctx.index)


def _tile(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    multiples = tuple(int_vector(ctx, Tile.MULTIPLES))
    out = lw.result(op.outputs[0])
    lw.emit("tile", out, [lw.ref(op.inputs[Tile.INPUT]), multiples], ctx.index)


DATA_LOWERINGS: dict[OperationType, Lowering] = {
    Op.SLICE: _slice,
    Op.STRIDED_SLICE: _strided_slice,
    Op.REVERSE: _reverse,
    Op.SPLIT: _split,
    Op.GATHER: _gather,
    Op.PAD: _pad,
    Op.PAD_V2: _pad,
    Op.MIRROR_PAD: _mirror_pad,
    Op.TILE: _tile,
}
