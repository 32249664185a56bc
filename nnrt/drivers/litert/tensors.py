"""Writing the operations that move or make data: reshapes, TRANSPOSE, CONCATENATION, SLICE,
STRIDED_SLICE, GATHER, PAD, PAD_V2, MIRROR_PAD, FILL, TILE.

RESHAPE, SQUEEZE and EXPAND_DIMS all become a RESHAPE to the output shape resolved at compile
time (no -1, no negative axes left for TFLite to read differently). CONCATENATION of tensors
held in NHWC (an NCHW region) concatenates them there, along the permuted axis. SLICE takes
its resolved size, GATHER and CONCATENATION their axis made non-negative; MIRROR_PAD's mode 0
is TFLite's REFLECT and 1 its SYMMETRIC.

STRIDED_SLICE is written with the ranges NNAPI's rules resolve at compile time (the reference's
own :meth:`~nnrt.ops.slicing.StridedSlice.ranges`: masks applied, indices clamped): a begin in
range, an end one step past the last element taken (the end mask where a negative stride ends
before element 0, which TFLite would read as -1 from the end), no begin mask, and NNAPI's
shrink mask — except when every dimension is shrunk, where NNAPI gives shape [1] and TFLite a
scalar: the last dimension (one element) is then kept, not shrunk. FILL takes its constant
dims and its scalar value as a 0-d tensor of the output's type.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from ai_edge_litert import schema_py_generated as fb

from nnrt.drivers.litert.writer import TENSOR_TYPES, TO_NHWC, Writer
from nnrt.model.types import OperationType
from nnrt.ops._framework.context import OperationContext
from nnrt.ops.slicing import StridedSlice

__all__ = ["BUILTINS", "WRITERS"]

Op = OperationType
B = fb.BuiltinOperator
#: NNAPI MIRROR_PAD mode -> TFLite's.
_MIRROR_MODES = {0: fb.MirrorPadMode.REFLECT, 1: fb.MirrorPadMode.SYMMETRIC}


def write_reshape(writer: Writer, ctx: OperationContext) -> None:
    """RESHAPE, SQUEEZE, EXPAND_DIMS: a RESHAPE to the resolved output shape."""
    op, index = ctx.operation, ctx.index
    dims = np.asarray(writer.model.inferred_dims[op.outputs[0]], np.int32)
    shape = writer.constant(f"shape_{index}", dims)
    options = fb.ReshapeOptionsT()
    options.newShape = dims
    writer.operator(B.RESHAPE, [writer.tensor(op.inputs[0]), shape],
                    [writer.tensor(op.outputs[0])], fb.BuiltinOptions.ReshapeOptions, options)


def write_transpose(writer: Writer, ctx: OperationContext) -> None:
    """TRANSPOSE by the permutation given, or reversing the dims when it is omitted."""
    op = ctx.operation
    rank = len(writer.model.inferred_dims[op.inputs[0]])
    given = ctx.constant(1) if not ctx.is_omitted(1) else None
    perm = (np.asarray(given, np.int32).reshape(-1) if given is not None
            else np.arange(rank - 1, -1, -1, dtype=np.int32))
    order = writer.constant(f"perm_{ctx.index}", perm)
    writer.operator(B.TRANSPOSE, [writer.tensor(op.inputs[0]), order],
                    [writer.tensor(op.outputs[0])], fb.BuiltinOptions.TransposeOptions,
                    fb.TransposeOptionsT())


def write_concatenation(writer: Writer, ctx: OperationContext) -> None:
    """CONCATENATION along the axis (permuted when the inputs are held in NHWC)."""
    op = ctx.operation
    data = list(op.inputs[:-1])
    output = op.outputs[0]
    rank = len(writer.model.inferred_dims[output])
    axis = int(ctx.scalar(len(op.inputs) - 1)) % rank
    nhwc = writer.in_nhwc(data, output)
    options = fb.ConcatenationOptionsT()
    options.axis = TO_NHWC.index(axis) if nhwc else axis
    inputs = [writer.nhwc_tensor(k) if nhwc else writer.tensor(k) for k in data]
    writer.operator(B.CONCATENATION, inputs, [writer.output(output, nhwc)],
                    fb.BuiltinOptions.ConcatenationOptions, options)


def write_slice(writer: Writer, ctx: OperationContext) -> None:
    """SLICE from ``begin`` with the resolved size (NNAPI's -1 sizes already resolved)."""
    op, index = ctx.operation, ctx.index
    begin = writer.constant(f"begin_{index}", np.asarray(ctx.constant(1), np.int32))
    size = writer.constant(f"size_{index}", np.asarray(
        writer.model.inferred_dims[op.outputs[0]], np.int32))
    writer.operator(B.SLICE, [writer.tensor(op.inputs[0]), begin, size],
                    [writer.tensor(op.outputs[0])], fb.BuiltinOptions.SliceOptions,
                    fb.SliceOptionsT())


def write_strided_slice(writer: Writer, ctx: OperationContext) -> None:
    """STRIDED_SLICE over the resolved ranges: begin, end one step past the last element,
    NNAPI's strides and shrink mask (all but the last dimension when every one is shrunk)."""
    op, index = ctx.operation, ctx.index
    ranges, _ = StridedSlice.ranges(ctx)
    shrink = int(ctx.scalar(StridedSlice.SHRINK_AXIS_MASK)) & ((1 << len(ranges)) - 1)
    if shrink == (1 << len(ranges)) - 1:  # NNAPI keeps shape [1], TFLite would make a scalar
        shrink &= ~(1 << (len(ranges) - 1))
    end_mask = 0
    begin, end, strides = [], [], []
    for i, (start, stride, count) in enumerate(ranges):
        stop = start + stride * (count - 1) + (1 if stride > 0 else -1)
        if stop < 0:  # before element 0: -1 would count from the end
            end_mask |= 1 << i
            stop = 0
        begin.append(start)
        end.append(stop)
        strides.append(stride)
    options = fb.StridedSliceOptionsT()
    options.beginMask, options.endMask, options.shrinkAxisMask = 0, end_mask, shrink
    options.ellipsisMask = options.newAxisMask = 0
    options.offset = False
    inputs = [writer.tensor(op.inputs[0]),
              *(writer.constant(f"{name}_{index}", np.asarray(values, np.int32))
                for name, values in (("begin", begin), ("end", end), ("strides", strides)))]
    writer.operator(B.STRIDED_SLICE, inputs, [writer.tensor(op.outputs[0])],
                    fb.BuiltinOptions.StridedSliceOptions, options)


def write_gather(writer: Writer, ctx: OperationContext) -> None:
    """GATHER (input, axis, indices) as TFLite's GATHER (params, indices) with the axis."""
    op = ctx.operation
    options = fb.GatherOptionsT()
    options.axis = int(ctx.scalar(1)) % len(writer.model.inferred_dims[op.inputs[0]])
    options.batchDims = 0
    writer.operator(B.GATHER, [writer.tensor(op.inputs[0]), writer.tensor(op.inputs[2])],
                    [writer.tensor(op.outputs[0])], fb.BuiltinOptions.GatherOptions, options)


def write_mirror_pad(writer: Writer, ctx: OperationContext) -> None:
    """MIRROR_PAD with the constant paddings, REFLECT (mode 0) or SYMMETRIC (mode 1)."""
    op = ctx.operation
    options = fb.MirrorPadOptionsT()
    options.mode = _MIRROR_MODES[int(ctx.scalar(2))]
    writer.operator(B.MIRROR_PAD, [writer.tensor(op.inputs[0]), writer.tensor(op.inputs[1])],
                    [writer.tensor(op.outputs[0])], fb.BuiltinOptions.MirrorPadOptions, options)


def write_pad(writer: Writer, ctx: OperationContext) -> None:
    """PAD with the constant paddings (zeros; TFLite pads a quantised tensor with its zero
    point, as NNAPI does), PAD_V2 with its value (a quantised one: the stored integer) as a
    one-element tensor of the input's type and quantisation (TFLite's PADV2 requires both)."""
    op, index = ctx.operation, ctx.index
    source = writer.tensor(op.inputs[0])
    amounts = writer.constant(f"pads_{index}", np.asarray(ctx.constant(1), np.int32))
    output = writer.tensor(op.outputs[0])
    if op.type == Op.PAD:
        writer.operator(B.PAD, [source, amounts], [output], fb.BuiltinOptions.PadOptions,
                        fb.PadOptionsT())
        return
    _, dtype, quantization = writer.form(op.inputs[0])
    fill = ctx.scalar(2)
    if quantization is not None:  # the stored integer, moved as the tensor's zero point is
        fill += int(quantization.zeroPoint[0]) - ctx.operand(0).zero_point
    value = writer.constant(f"pad_value_{index}", np.asarray([fill], dtype), quantization)
    writer.operator(B.PADV2, [source, amounts, value], [output], fb.BuiltinOptions.PadV2Options,
                    fb.PadV2OptionsT())


def write_tile(writer: Writer, ctx: OperationContext) -> None:
    """TILE with the constant multiples (int32, one per dim, as NNAPI's)."""
    op, index = ctx.operation, ctx.index
    multiples = writer.constant(f"multiples_{index}",
                                np.asarray(ctx.constant(1), np.int32).reshape(-1))
    writer.operator(B.TILE, [writer.tensor(op.inputs[0]), multiples],
                    [writer.tensor(op.outputs[0])], fb.BuiltinOptions.TileOptions,
                    fb.TileOptionsT())


def write_fill(writer: Writer, ctx: OperationContext) -> None:
    """FILL of the constant dims with the scalar value (of the output's type)."""
    op, index = ctx.operation, ctx.index
    output = op.outputs[0]
    _, dtype = TENSOR_TYPES[writer.model.operands[output].type]
    dims = writer.constant(f"dims_{index}", np.asarray(ctx.constant(0), np.int32).reshape(-1))
    value = writer.constant(f"value_{index}", np.asarray(ctx.scalar(1), dtype))
    writer.operator(B.FILL, [dims, value], [writer.tensor(output)],
                    fb.BuiltinOptions.FillOptions, fb.FillOptionsT())


WRITERS: dict[OperationType, Callable[[Writer, OperationContext], None]] = {
    Op.RESHAPE: write_reshape, Op.SQUEEZE: write_reshape, Op.EXPAND_DIMS: write_reshape,
    Op.TRANSPOSE: write_transpose, Op.CONCATENATION: write_concatenation,
    Op.SLICE: write_slice, Op.STRIDED_SLICE: write_strided_slice, Op.GATHER: write_gather,
    Op.MIRROR_PAD: write_mirror_pad, Op.FILL: write_fill, Op.TILE: write_tile,
    Op.PAD: write_pad, Op.PAD_V2: write_pad,
}
#: Every builtin these writers write.
BUILTINS = frozenset({B.RESHAPE, B.TRANSPOSE, B.CONCATENATION, B.SLICE, B.STRIDED_SLICE,
                      B.GATHER, B.MIRROR_PAD, B.FILL, B.TILE, B.PAD, B.PADV2})
