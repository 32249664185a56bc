"""Writing the spatial operations: convolutions, pooling, transposed convolutions, resizing.

Each reads and writes NHWC tensors when the NNAPI operation is NCHW (the layout flag), so an
NCHW region stays in NHWC across them (:mod:`.writer`). The TFLite form of each window comes
from :mod:`.geometry`; explicit pads TFLite's SAME / VALID do not give become a PAD (zeros) or
PADV2 (-inf, for MAX_POOL_2D) before a VALID window. A MAX_POOL_2D of a RELU's or RELU6's
output (no value below zero) pads with zeros too: a window's maximum is one of its values either
way, and XNNPACK takes PAD (PADV2 splits its partition). Quantised tensors pad with their zero
point, or the type's minimum for -inf.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from ai_edge_litert import schema_py_generated as fb

from nnrt.drivers.litert.folding import rectified
from nnrt.drivers.litert.geometry import (
    TransposeWindow,
    Window,
    conv_window,
    pool_window,
    transpose_conv_window,
)
from nnrt.drivers.litert.quantized import (
    QUANT8,
    converted,
    quantized_weights,
    signed_twin,
    unsigned_per_channel,
)
from nnrt.drivers.litert.writer import TO_NHWC, Writer
from nnrt.errors import OpFailed
from nnrt.model.types import OperationType
from nnrt.ops._framework.context import OperationContext
from nnrt.ops.space_layout import flag

__all__ = ["BUILTINS", "WRITERS"]

Array = np.ndarray[Any, Any]
Op = OperationType
_PADDING = {"SAME": fb.Padding.SAME, "VALID": fb.Padding.VALID}
_BUILTINS = {Op.CONV_2D: fb.BuiltinOperator.CONV_2D,
             Op.DEPTHWISE_CONV_2D: fb.BuiltinOperator.DEPTHWISE_CONV_2D,
             Op.AVERAGE_POOL_2D: fb.BuiltinOperator.AVERAGE_POOL_2D,
             Op.MAX_POOL_2D: fb.BuiltinOperator.MAX_POOL_2D}


def _checked(ctx: OperationContext, window: Window | TransposeWindow | str) -> Any:
    if isinstance(window, str):  # the partition step refused it: never selected
        raise OpFailed(f"{ctx.where()}: {window}")
    return window


def _conv_options(window: Window, depthwise: bool) -> tuple[int, Any]:
    options = fb.DepthwiseConv2DOptionsT() if depthwise else fb.Conv2DOptionsT()
    options.padding = _PADDING[window.padding]
    options.strideH, options.strideW = window.stride_h, window.stride_w
    options.dilationHFactor, options.dilationWFactor = window.dilation_h, window.dilation_w
    options.fusedActivationFunction = window.activation
    if depthwise:
        options.depthMultiplier = window.multiplier
        return fb.BuiltinOptions.DepthwiseConv2DOptions, options
    return fb.BuiltinOptions.Conv2DOptions, options


def _pool_options(window: Window) -> tuple[int, Any]:
    options = fb.Pool2DOptionsT()
    options.padding = _PADDING[window.padding]
    options.strideH, options.strideW = window.stride_h, window.stride_w
    options.filterHeight, options.filterWidth = window.filter_h, window.filter_w
    options.fusedActivationFunction = window.activation
    return fb.BuiltinOptions.Pool2DOptions, options


def _nhwc_dims(writer: Writer, operand: int, nchw: bool) -> tuple[int, ...]:
    """The dims of a window operation's input, in NHWC."""
    dims = writer.model.inferred_dims[operand]
    return tuple(dims[i] for i in TO_NHWC) if nchw else tuple(dims)


def _source(writer: Writer, operand: int, nchw: bool) -> tuple[int, tuple[int, ...]]:
    """The input tensor of a window operation, and its dims, in NHWC."""
    dims = _nhwc_dims(writer, operand, nchw)
    return (writer.nhwc_tensor(operand) if nchw else writer.tensor(operand)), dims


def write_window(writer: Writer, ctx: OperationContext) -> None:
    """A convolution or pooling, the per-channel scale and shift after it folded in."""
    op = ctx.operation
    if op.type in (Op.CONV_2D, Op.DEPTHWISE_CONV_2D):
        window: Window = _checked(ctx, conv_window(ctx))
        options_type, options = _conv_options(window, op.type == Op.DEPTHWISE_CONV_2D)
    else:
        window = _checked(ctx, pool_window(ctx))
        options_type, options = _pool_options(window)
    output = writer.result(ctx.index, options)
    source, dims = _source(writer, op.inputs[0], window.nchw)
    if window.pads is not None:  # a max pool of rectified values pads with zeros (PAD) too
        pool = op.type == Op.MAX_POOL_2D
        lowest = pool and not rectified(writer.model, op.inputs[0])
        source = _pad(writer, ctx.index, source, dims, window.pads, lowest, rows=pool)
    inputs = [source]
    if op.type in (Op.CONV_2D, Op.DEPTHWISE_CONV_2D):
        inputs += _weights(writer, ctx)
    _operator(writer, ctx, _BUILTINS[op.type], inputs, 0, writer.output(output, window.nchw),
              options_type, options)


def _operator(writer: Writer, ctx: OperationContext, builtin: int, inputs: list[int], data: int,
              target: int, options_type: int, options: Any) -> None:
    """The operator computing ``target`` from ``inputs`` (``inputs[data]`` the data): a uint8
    convolution with a per-channel filter computed in int8, converted both ways."""
    if not unsigned_per_channel(writer, ctx):
        writer.operator(builtin, inputs, [target], options_type, options)
        return
    inputs[data] = converted(writer, inputs[data], signed_twin(writer, inputs[data]))
    signed = signed_twin(writer, target)
    writer.operator(builtin, inputs, [signed], options_type, options)
    converted(writer, signed, target)


def _weights(writer: Writer, ctx: OperationContext) -> list[int]:
    """A convolution's filter and bias tensors: the operands', or the folded constants."""
    fold = writer.folds.get(ctx.index)
    if fold is None and ctx.input_type(0) in QUANT8:
        return quantized_weights(writer, ctx)
    if fold is None:
        return [writer.tensor(k) for k in ctx.operation.inputs[1:3]]
    return [writer.constant(f"filter_{ctx.index}", fold.filter),
            writer.constant(f"bias_{ctx.index}", fold.bias)]


def _pad(writer: Writer, index: int, source: int, dims: tuple[int, ...],
         pads: tuple[int, int, int, int], lowest: bool, rows: bool = False) -> int:
    """``source`` (NHWC ``dims``) padded by (top, bottom, left, right) elements of zero (a
    quantised tensor: its zero point, TFLite's PAD) or of the ``lowest`` value (-inf; a
    quantised tensor's type minimum: the padding is never a window's maximum then). A PAD of
    zeros is padded as rows (:func:`_pad_rows`) when ``rows``."""
    top, bottom, left, right = pads
    padded = (dims[0], dims[1] + top + bottom, dims[2] + left + right, dims[3])
    target = writer.like(f"padded_{index}", source, padded)
    if not lowest and rows:
        _pad_rows(writer, index, source, dims, pads, target)
        return target
    amounts = writer.constant(f"pads_{index}", np.asarray(
        [[0, 0], [top, bottom], [left, right], [0, 0]], np.int32))
    if not lowest:
        writer.operator(fb.BuiltinOperator.PAD, [source, amounts], [target],
                        fb.BuiltinOptions.PadOptions, fb.PadOptionsT())
        return target
    tensor = writer.tensors[source]
    dtype = {fb.TensorType.INT8: np.int8, fb.TensorType.UINT8: np.uint8}.get(tensor.type)
    fill = np.asarray([-np.inf], np.float32) if dtype is None else np.asarray(
        [np.iinfo(dtype).min], dtype)
    value = writer.constant(f"fill_{index}", fill, tensor.quantization)
    writer.operator(fb.BuiltinOperator.PADV2, [source, amounts, value], [target],
                    fb.BuiltinOptions.PadV2Options, fb.PadV2OptionsT())
    return target


def _pad_rows(writer: Writer, index: int, source: int, dims: tuple[int, ...],
              pads: tuple[int, int, int, int], target: int) -> None:
    """The PAD of zeros of :func:`_pad` on ``source`` viewed as [N, H, W * C]: a left or right
    pixel of C channels is C elements of a row, so RESHAPE, PAD (H by top and bottom, the rows
    by C x left and C x right) and RESHAPE to ``target`` give the same tensor. XNNPACK fuses a
    PAD into the convolution reading it, but runs one before a pooling as a copy of every
    pixel's channels apart: the ResNet-style CNN's max pool PAD (8x32x32x16) took 0.28 of its
    1.1 ms so, 0.13 as rows (its RESHAPEs are free)."""
    top, bottom, left, right = pads
    batches, height, width, channels = dims
    rows = _reshape(writer, f"rows_{index}", source, (batches, height, width * channels))
    padded = writer.like(f"padded_rows_{index}", source,
                         (batches, height + top + bottom, (width + left + right) * channels))
    amounts = writer.constant(f"pads_{index}", np.asarray(
        [[0, 0], [top, bottom], [left * channels, right * channels]], np.int32))
    writer.operator(fb.BuiltinOperator.PAD, [rows, amounts], [padded],
                    fb.BuiltinOptions.PadOptions, fb.PadOptionsT())
    _reshape(writer, f"padded_{index}", padded, tuple(writer.tensors[target].shape), target)


def _reshape(writer: Writer, name: str, source: int, dims: tuple[int, ...],
             target: int | None = None) -> int:
    """A RESHAPE of ``source`` to ``dims`` (into ``target``, or a new tensor like ``source``)."""
    shape = np.asarray(dims, np.int32)
    if target is None:
        target = writer.like(name, source, tuple(int(d) for d in dims))
    options = fb.ReshapeOptionsT()
    options.newShape = shape
    writer.operator(fb.BuiltinOperator.RESHAPE, [source, writer.constant(f"shape_{name}", shape)],
                    [target], fb.BuiltinOptions.ReshapeOptions, options)
    return target


def write_transpose_conv(writer: Writer, ctx: OperationContext) -> None:
    """TRANSPOSE_CONV: output shape (NHWC, int32), filter (OHWI as NNAPI's), input, bias; or,
    where its windows tile the output (:func:`_tiling_weights`), a 1x1 CONV_2D and a
    DEPTH_TO_SPACE."""
    window: TransposeWindow = _checked(ctx, transpose_conv_window(ctx))
    tiling = _tiling_weights(writer, ctx, window)
    if tiling is not None:
        _write_tiling(writer, ctx, window, *tiling)
        return
    options = fb.TransposeConvOptionsT()
    options.padding = _PADDING[window.padding]
    options.strideH, options.strideW = window.stride_h, window.stride_w
    options.fusedActivationFunction = window.activation
    output = writer.result(ctx.index, options)
    shape = writer.constant(f"output_shape_{ctx.index}",
                            np.asarray(window.output_nhwc, np.int32))
    source, _ = _source(writer, ctx.operation.inputs[0], window.nchw)
    filt, bias = _weights(writer, ctx)
    _operator(writer, ctx, fb.BuiltinOperator.TRANSPOSE_CONV, [shape, filt, source, bias], 2,
              writer.output(output, window.nchw), fb.BuiltinOptions.TransposeConvOptions,
              options)


def _tiling_weights(writer: Writer, ctx: OperationContext,
                    window: TransposeWindow) -> tuple[Array, Array] | None:
    """The filter and bias of the 1x1 convolution computing a float transposed convolution
    whose square windows tile its output (kernel = stride in both axes, output = input x
    stride, so nothing is cropped), or None for any other.

    Each output element of such a transposed convolution is one input pixel's dot product
    with one kernel tap, plus the bias: the 1x1 convolution to ``k * k * depth`` channels
    (channel ``(dy * k + dx) * depth + o`` holding tap ``(dy, dx)`` of output channel ``o``)
    computes those sums and DEPTH_TO_SPACE (block ``k``, DCR order) moves each to its place.
    XNNPACK runs TRANSPOSE_CONV as per-tap sub-convolutions with a one-row kernel; the 1x1
    convolution is one matrix product (on the selfie-segmentation decoders' last layer, 16
    channels to 1 at stride 2, it is 3.4x faster)."""
    if ctx.input_type(0) in QUANT8:
        return None
    op = ctx.operation
    fold = writer.folds.get(ctx.index)
    filt = writer.constant_of(op.inputs[1]) if fold is None else fold.filter
    bias = writer.constant_of(op.inputs[2]) if fold is None else fold.bias
    depth, kernel_h, kernel_w, channels = ctx.shape(1)
    _, height, width, _ = _nhwc_dims(writer, op.inputs[0], window.nchw)
    _, out_h, out_w, _ = window.output_nhwc
    tiles = (kernel_h == kernel_w == window.stride_h == window.stride_w
             and out_h == height * kernel_h and out_w == width * kernel_w)
    if filt is None or bias is None or not tiles:
        return None
    taps = np.asarray(filt, np.float32).transpose(1, 2, 0, 3)  # (dy, dx, o, i)
    return (np.ascontiguousarray(taps.reshape(kernel_h * kernel_w * depth, 1, 1, channels)),
            np.tile(np.asarray(bias, np.float32).reshape(-1), kernel_h * kernel_w))


def _write_tiling(writer: Writer, ctx: OperationContext, window: TransposeWindow,
                  filt: Array, bias: Array) -> None:
    """The 1x1 CONV_2D (the transposed convolution's fused activation on it: DEPTH_TO_SPACE
    only moves values) and the DEPTH_TO_SPACE of :func:`_tiling_weights`."""
    options = fb.Conv2DOptionsT()
    options.padding = fb.Padding.VALID
    options.strideH = options.strideW = options.dilationHFactor = options.dilationWFactor = 1
    options.fusedActivationFunction = window.activation
    output = writer.result(ctx.index, options)
    source, dims = _source(writer, ctx.operation.inputs[0], window.nchw)
    block = window.stride_h
    target = writer.output(output, window.nchw)
    inputs = [source, writer.constant(f"filter_{ctx.index}", filt),
              writer.constant(f"bias_{ctx.index}", bias)]
    if block == 1:  # a 1x1 transposed convolution at stride 1 is the 1x1 convolution itself
        writer.operator(fb.BuiltinOperator.CONV_2D, inputs, [target],
                        fb.BuiltinOptions.Conv2DOptions, options)
        return
    taps = writer.add_tensor(f"taps_{ctx.index}", (*dims[:3], len(bias)))
    writer.operator(fb.BuiltinOperator.CONV_2D, inputs, [taps], fb.BuiltinOptions.Conv2DOptions,
                    options)
    space = fb.DepthToSpaceOptionsT()
    space.blockSize = block
    writer.operator(fb.BuiltinOperator.DEPTH_TO_SPACE, [taps], [target],
                    fb.BuiltinOptions.DepthToSpaceOptions, space)


def write_resize(writer: Writer, ctx: OperationContext) -> None:
    """RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR to the output size resolved here (sizes or
    scales alike: the source positions depend on the input and output sizes only, by the same
    rule in NNAPI and TFLite, whose kernels NNAPI's specify)."""
    op = ctx.operation
    nchw = flag(ctx, 3)
    builtin, options_type, options = _RESIZE[op.type]
    options = options()
    options.alignCorners = flag(ctx, 4)
    options.halfPixelCenters = flag(ctx, 5)
    dims = writer.model.inferred_dims[op.outputs[0]]
    height, width = (dims[2], dims[3]) if nchw else (dims[1], dims[2])
    size = writer.constant(f"size_{ctx.index}", np.asarray([height, width], np.int32))
    source, _ = _source(writer, op.inputs[0], nchw)
    writer.operator(builtin, [source, size], [writer.output(op.outputs[0], nchw)],
                    options_type, options)


def write_depth_space(writer: Writer, ctx: OperationContext) -> None:
    """DEPTH_TO_SPACE / SPACE_TO_DEPTH, in NHWC (TFLite's kernels are NNAPI's, DCR order)."""
    op = ctx.operation
    nchw = flag(ctx, 2)
    builtin, options_type, options = _DEPTH_SPACE[op.type]
    options = options()
    options.blockSize = int(ctx.scalar(1))
    source, _ = _source(writer, op.inputs[0], nchw)
    writer.operator(builtin, [source], [writer.output(op.outputs[0], nchw)], options_type,
                    options)


_DEPTH_SPACE: dict[OperationType, tuple[int, int, Any]] = {
    Op.DEPTH_TO_SPACE: (fb.BuiltinOperator.DEPTH_TO_SPACE,
                        fb.BuiltinOptions.DepthToSpaceOptions, fb.DepthToSpaceOptionsT),
    Op.SPACE_TO_DEPTH: (fb.BuiltinOperator.SPACE_TO_DEPTH,
                        fb.BuiltinOptions.SpaceToDepthOptions, fb.SpaceToDepthOptionsT),
}
_RESIZE: dict[OperationType, tuple[int, int, Any]] = {
    Op.RESIZE_NEAREST_NEIGHBOR: (fb.BuiltinOperator.RESIZE_NEAREST_NEIGHBOR,
                                 fb.BuiltinOptions.ResizeNearestNeighborOptions,
                                 fb.ResizeNearestNeighborOptionsT),
    Op.RESIZE_BILINEAR: (fb.BuiltinOperator.RESIZE_BILINEAR,
                         fb.BuiltinOptions.ResizeBilinearOptions, fb.ResizeBilinearOptionsT),
}


WRITERS: dict[OperationType, Callable[[Writer, OperationContext], None]] = {
    **dict.fromkeys(_BUILTINS, write_window),
    Op.TRANSPOSE_CONV_2D: write_transpose_conv,
    Op.RESIZE_NEAREST_NEIGHBOR: write_resize, Op.RESIZE_BILINEAR: write_resize,
    Op.DEPTH_TO_SPACE: write_depth_space, Op.SPACE_TO_DEPTH: write_depth_space,
}
#: Every builtin these writers write.
BUILTINS = frozenset({*_BUILTINS.values(), fb.BuiltinOperator.PAD, fb.BuiltinOperator.PADV2,
                      fb.BuiltinOperator.RESHAPE,
                      fb.BuiltinOperator.TRANSPOSE_CONV,
                      fb.BuiltinOperator.RESIZE_NEAREST_NEIGHBOR,
                      fb.BuiltinOperator.RESIZE_BILINEAR, fb.BuiltinOperator.DEPTH_TO_SPACE,
                      fb.BuiltinOperator.SPACE_TO_DEPTH})
