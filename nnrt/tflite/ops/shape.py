"""Data-movement builtins: RESHAPE, SQUEEZE, EXPAND_DIMS, TRANSPOSE, CONCATENATION, PAD,
PADV2, SLICE, STRIDED_SLICE, GATHER, SPLIT, MEAN, ARG_MAX.

Index inputs (shapes, permutations, paddings, axes) must be constants (INT64 ones are
narrowed); negative axes are resolved against the input's rank.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ai_edge_litert import schema_py_generated as fb

from nnrt.model.types import OperandType, OperationType
from nnrt.tflite.context import OpContext, converter
from nnrt.tflite.errors import OperatorUnsupported
from nnrt.tflite.tensors import OperandSpec

__all__: list[str] = []

B = fb.BuiltinOperator
Op = OperationType
T = OperandType


def _i32(values: list[int]) -> np.ndarray[Any, Any]:
    return np.asarray(values, np.int32)


@converter(B.RESHAPE)
def convert_reshape(ctx: OpContext) -> None:
    """RESHAPE to the constant shape input, else ``new_shape``, else the output's shape."""
    if ctx.has_input(1) and ctx.subgraph.constant_value(ctx.inputs[1]) is not None:
        shape = ctx.ints(1, "shape")
    elif ctx.option("newShape", None) is not None:
        shape = [int(d) for d in ctx.option("newShape")]
    else:
        tensor = ctx.subgraph.tensors[ctx.outputs[0]]
        shape = [int(d) for d in (tensor.shapeSignature if tensor.shapeSignature is not None
                                  and len(tensor.shapeSignature) else tensor.shape)]
    ctx.emit(Op.RESHAPE, ctx.input(0), _i32(shape or [1]))


@converter(B.SQUEEZE)
def convert_squeeze(ctx: OpContext) -> None:
    """SQUEEZE of ``squeeze_dims`` (all 1-dims when empty)."""
    dims = ctx.option("squeezeDims", None)
    axes = [] if dims is None else [int(d) for d in dims]
    args = [ctx.input(0)]
    if axes:
        rank = len(ctx.input(0).shape)
        args.append(_i32([a % rank for a in axes]))  # type: ignore[arg-type]
    ctx.emit(Op.SQUEEZE, *args)


@converter(B.EXPAND_DIMS)
def convert_expand_dims(ctx: OpContext) -> None:
    """EXPAND_DIMS at the constant axis."""
    (axis,) = ctx.ints(1, "axis")
    ctx.emit(Op.EXPAND_DIMS, ctx.input(0), axis)


@converter(B.TRANSPOSE)
def convert_transpose(ctx: OpContext) -> None:
    """TRANSPOSE by the constant permutation."""
    ctx.emit(Op.TRANSPOSE, ctx.input(0), _i32(ctx.ints(1, "perm")))


@converter(B.DEPTH_TO_SPACE, B.SPACE_TO_DEPTH)
def convert_depth_space(ctx: OpContext) -> None:
    """DEPTH_TO_SPACE / SPACE_TO_DEPTH (NHWC, TFLite's order of the block in the depth is
    NNAPI's)."""
    kind = Op.DEPTH_TO_SPACE if ctx.code == B.DEPTH_TO_SPACE else Op.SPACE_TO_DEPTH
    ctx.emit(kind, ctx.input(0), int(ctx.option("blockSize")))


@converter(B.CONCATENATION)
def convert_concatenation(ctx: OpContext) -> None:
    """CONCATENATION along ``axis``; a fused activation is applied after it."""
    data = [ctx.input(k) for k in range(len(ctx.inputs))]
    axis = int(ctx.option("axis")) % max(len(data[0].shape), 1)
    activation = ctx.activation()
    if not activation:
        ctx.emit(Op.CONCATENATION, *data, axis)
        return
    joined = ctx.scratch(Op.CONCATENATION, *data, axis)
    ctx.emit({1: Op.RELU, 2: Op.RELU1, 3: Op.RELU6}[activation], joined)


@converter(B.PAD, B.PADV2)
def convert_pad(ctx: OpContext) -> None:
    """PAD (zeros, or the zero point) and PADV2 (a constant value) -> PAD / PAD_V2."""
    pads = _i32(ctx.ints(1, "paddings")).reshape(-1, 2)
    if not ctx.has_input(2):
        ctx.emit(Op.PAD, ctx.input(0), pads)
        return
    value = ctx.const(2, "constant_values").reshape(-1)[0]
    spec = ctx.spec(0)
    if spec.type == T.TENSOR_FLOAT32:
        scalar: float | int = float(value)
    elif spec.type == T.TENSOR_FLOAT16:
        scalar = float(value)
    else:
        scalar = int(value)
    ctx.emit(Op.PAD_V2, ctx.input(0), pads, scalar)


@converter(B.SLICE)
def convert_slice(ctx: OpContext) -> None:
    """SLICE by constant begin and size (-1: to the end)."""
    ctx.emit(Op.SLICE, ctx.input(0), _i32(ctx.ints(1, "begin")), _i32(ctx.ints(2, "size")))


@converter(B.STRIDED_SLICE)
def convert_strided_slice(ctx: OpContext) -> None:
    """STRIDED_SLICE with begin/end/shrink masks (no ellipsis, new-axis or offset)."""
    for name in ("ellipsisMask", "newAxisMask"):
        if int(ctx.option(name)):
            raise OperatorUnsupported(f"{name} is not supported by NNAPI STRIDED_SLICE")
    if ctx.option("offset", False):
        raise OperatorUnsupported("offset=True is not supported by NNAPI STRIDED_SLICE")
    ctx.emit(Op.STRIDED_SLICE, ctx.input(0), _i32(ctx.ints(1, "begin")),
             _i32(ctx.ints(2, "end")), _i32(ctx.ints(3, "strides")),
             int(ctx.option("beginMask")), int(ctx.option("endMask")),
             int(ctx.option("shrinkAxisMask")))


@converter(B.GATHER)
def convert_gather(ctx: OpContext) -> None:
    """GATHER (params, indices) along ``axis`` (batch_dims 0)."""
    if int(ctx.option("batchDims")):
        raise OperatorUnsupported("batch_dims != 0")
    ctx.emit(Op.GATHER, ctx.input(0), int(ctx.option("axis")), ctx.input(1))


@converter(B.SPLIT)
def convert_split(ctx: OpContext) -> None:
    """SPLIT (axis, input) into ``num_splits`` equal parts."""
    (axis,) = ctx.ints(0, "axis")
    count = int(ctx.option("numSplits")) or len(ctx.outputs)
    ctx.emit(Op.SPLIT, ctx.subgraph.operand(ctx.inputs[1]), axis, count,
             outputs=range(len(ctx.outputs)))


@converter(B.MEAN)
def convert_mean(ctx: OpContext) -> None:
    """MEAN over constant axes with ``keep_dims``."""
    ctx.emit(Op.MEAN, ctx.input(0), _i32(ctx.ints(1, "axis")),
             int(bool(ctx.option("keepDims", False))))


@converter(B.ARG_MAX, B.ARG_MIN)
def convert_argmax(ctx: OpContext) -> None:
    """ARG_MAX / ARG_MIN along a constant axis (an INT64 result is held as int32)."""
    (axis,) = ctx.ints(1, "axis")
    kind = Op.ARGMAX if ctx.code == B.ARG_MAX else Op.ARGMIN
    ctx.emit(kind, ctx.input(0), axis, types=[OperandSpec(T.TENSOR_INT32)])
