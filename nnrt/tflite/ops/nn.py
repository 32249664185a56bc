"""Window and matrix builtins: CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, the pools,
FULLY_CONNECTED, BATCH_MATMUL, SOFTMAX, RESIZE_*.

TFLite's SAME padding pads ``max((out - 1) * stride + (k - 1) * dilation + 1 - in, 0)`` in
total, the smaller half first: NNAPI's implicit SAME padding, so the padding code is passed
through (SAME 0 -> 1, VALID 1 -> 2). TFLite is NHWC, NNAPI's default layout. A missing bias
becomes zeros (int32 with the input scale times the filter's for quantised operators).
"""

from __future__ import annotations

import numpy as np
from ai_edge_litert import schema_py_generated as fb

from nnrt.model.builder import Tensor
from nnrt.model.types import OperandType, OperationType
from nnrt.tflite.context import OpContext, converter, custom_converter
from nnrt.tflite.errors import OperatorUnsupported

__all__: list[str] = []

B = fb.BuiltinOperator
Op = OperationType
T = OperandType
#: TFLite Padding -> NNAPI PaddingCode.
_PADDING = {fb.Padding.SAME: 1, fb.Padding.VALID: 2}


def _padding(ctx: OpContext) -> int:
    code = int(ctx.option("padding"))
    if code not in _PADDING:
        raise OperatorUnsupported(f"padding {code} is neither SAME nor VALID")
    return _PADDING[code]


def _bias(ctx: OpContext, k: int, units: int) -> Tensor:
    """Input ``k`` (the bias), or zeros of the bias type the filter's type asks for."""
    if ctx.has_input(k):
        return ctx.input(k)
    data, weights = ctx.spec(0), ctx.spec(1)
    if data.type in (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16):
        dtype = np.float16 if data.type == T.TENSOR_FLOAT16 else np.float32
        return ctx.builder.constant(np.zeros(units, dtype))
    scale = 0.0 if weights.channel_scales else data.scale * weights.scale
    return ctx.builder.constant(np.zeros(units, np.int32), T.TENSOR_INT32, scale=scale)


@converter(B.CONV_2D)
def convert_conv(ctx: OpContext) -> None:
    """CONV_2D: filter [out, h, w, in], implicit padding, strides, dilations."""
    units = ctx.input(1).shape[0]
    ctx.emit(Op.CONV_2D, ctx.input(0), ctx.input(1), _bias(ctx, 2, units), _padding(ctx),
             int(ctx.option("strideW")), int(ctx.option("strideH")), ctx.activation(), False,
             int(ctx.option("dilationWFactor", 1)), int(ctx.option("dilationHFactor", 1)))


@converter(B.DEPTHWISE_CONV_2D)
def convert_depthwise(ctx: OpContext) -> None:
    """DEPTHWISE_CONV_2D: filter [1, h, w, in * multiplier]."""
    filt = ctx.input(1)
    multiplier = int(ctx.option("depthMultiplier")) or 1
    in_channels = ctx.input(0).shape[-1] if ctx.input(0).shape else 0
    if in_channels and filt.shape[-1] != in_channels * multiplier:
        multiplier = filt.shape[-1] // in_channels  # TFLite derives it from the shapes
    ctx.emit(Op.DEPTHWISE_CONV_2D, ctx.input(0), filt, _bias(ctx, 2, filt.shape[-1]),
             _padding(ctx), int(ctx.option("strideW")), int(ctx.option("strideH")), multiplier,
             ctx.activation(), False, int(ctx.option("dilationWFactor", 1)),
             int(ctx.option("dilationHFactor", 1)))


@converter(B.TRANSPOSE_CONV)
def convert_transpose_conv(ctx: OpContext) -> None:
    """TRANSPOSE_CONV (output_shape, filter [out, h, w, in], input, bias?)."""
    shape = np.asarray(ctx.ints(0, "output_shape"), np.int32)
    filt = ctx.input(1)
    data = ctx.subgraph.operand(ctx.inputs[2])
    if ctx.has_input(3):
        bias = ctx.input(3)
    else:
        spec = ctx.spec(2)
        if spec.type in (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16):
            bias = ctx.builder.constant(np.zeros(filt.shape[0], np.float32 if spec.type ==
                                                 T.TENSOR_FLOAT32 else np.float16))
        else:
            raise OperatorUnsupported("quantised TRANSPOSE_CONV without a bias")
    ctx.emit(Op.TRANSPOSE_CONV_2D, data, filt, bias, ctx.builder.constant(shape), _padding(ctx),
             int(ctx.option("strideW")), int(ctx.option("strideH")), ctx.activation(), False)


@custom_converter("Convolution2DTransposeBias")
def convert_transpose_conv_bias(ctx: OpContext) -> None:
    """MediaPipe's Convolution2DTransposeBias (input, filter [out, h, w, in], bias): a
    TRANSPOSE_CONV whose custom options are TFLite's ``TfLiteTransposeConvParams`` (int32
    padding, stride_w, stride_h) and whose output size follows from the input: SAME crops
    ``max(0, k - (in - 1) % stride - 1)`` in total, the smaller half first (MediaPipe's
    ``transpose_conv_bias.cc``); explicit NNAPI pads say exactly that."""
    raw = bytes(np.asarray(ctx.op.customOptions if ctx.op.customOptions is not None else [],
                           np.uint8))
    if len(raw) < 12:
        raise OperatorUnsupported(f"custom_options: {len(raw)} bytes, expected 12 "
                                  "(padding, stride_w, stride_h as int32)")
    padding, stride_w, stride_h = (int(v) for v in np.frombuffer(raw[:12], "<i4"))
    if padding not in _PADDING or stride_w < 1 or stride_h < 1:
        raise OperatorUnsupported(f"custom_options: padding {padding}, strides "
                                  f"({stride_w}, {stride_h}): expected SAME (1) or VALID (2) "
                                  "and positive strides")
    data, filt = ctx.input(0), ctx.input(1)
    if len(data.shape) != 4 or len(filt.shape) != 4 or not all(data.shape[1:3]):
        raise OperatorUnsupported("needs a rank-4 input of known height and width and a "
                                  "rank-4 filter")
    pads = []
    for size, kernel, stride in ((data.shape[2], filt.shape[2], stride_w),
                                 (data.shape[1], filt.shape[1], stride_h)):
        total = max(0, kernel - (size - 1) % stride - 1) if padding == fb.Padding.SAME else 0
        pads += [total // 2, total - total // 2]
    ctx.emit(Op.TRANSPOSE_CONV_2D, data, filt, ctx.input(2), *pads, stride_w, stride_h, 0,
             False)


@converter(B.AVERAGE_POOL_2D, B.MAX_POOL_2D)
def convert_pool(ctx: OpContext) -> None:
    """AVERAGE_POOL_2D, MAX_POOL_2D: implicit padding, strides, window, activation."""
    kind = Op.AVERAGE_POOL_2D if ctx.code == B.AVERAGE_POOL_2D else Op.MAX_POOL_2D
    ctx.emit(kind, ctx.input(0), _padding(ctx), int(ctx.option("strideW")),
             int(ctx.option("strideH")), int(ctx.option("filterWidth")),
             int(ctx.option("filterHeight")), ctx.activation(), False)


@converter(B.FULLY_CONNECTED)
def convert_fully_connected(ctx: OpContext) -> None:
    """FULLY_CONNECTED (weights [units, in]); ``keep_num_dims`` reshapes the [batch, units]
    result back to the input's leading dims."""
    if int(ctx.option("weightsFormat")) != fb.FullyConnectedOptionsWeightsFormat.DEFAULT:
        raise OperatorUnsupported("shuffled weights (weights_format SHUFFLED4x16INT8)")
    weights = ctx.input(1)
    units = weights.shape[0]
    args = (ctx.input(0), weights, _bias(ctx, 2, units), ctx.activation())
    if not ctx.option("keepNumDims", False) or len(ctx.input(0).shape) == 2:
        ctx.emit(Op.FULLY_CONNECTED, *args)
        return
    flat = ctx.scratch(Op.FULLY_CONNECTED, *args)
    lead = list(ctx.input(0).shape[:-1])
    if any(d == 0 for d in lead):
        raise OperatorUnsupported("keep_num_dims with unknown leading dims")
    ctx.emit(Op.RESHAPE, flat, np.asarray([*lead, units], np.int32))


@converter(B.BATCH_MATMUL)
def convert_batch_matmul(ctx: OpContext) -> None:
    """BATCH_MATMUL with adj_x / adj_y."""
    ctx.emit(Op.BATCH_MATMUL, ctx.input(0), ctx.input(1), bool(ctx.option("adjX", False)),
             bool(ctx.option("adjY", False)))


@converter(B.SOFTMAX)
def convert_softmax(ctx: OpContext) -> None:
    """SOFTMAX over the last axis with ``beta``."""
    beta = float(ctx.option("beta", 1.0))
    ctx.emit(Op.SOFTMAX, ctx.input(0), beta)


@converter(B.RESIZE_BILINEAR, B.RESIZE_NEAREST_NEIGHBOR)
def convert_resize(ctx: OpContext) -> None:
    """RESIZE_*: size [height, width] -> NNAPI (width, height), align_corners,
    half_pixel_centers."""
    height, width = ctx.ints(1, "size")
    kind = Op.RESIZE_BILINEAR if ctx.code == B.RESIZE_BILINEAR else Op.RESIZE_NEAREST_NEIGHBOR
    ctx.emit(kind, ctx.input(0), width, height, False, bool(ctx.option("alignCorners", False)),
             bool(ctx.option("halfPixelCenters", False)))
