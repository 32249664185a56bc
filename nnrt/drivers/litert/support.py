"""Which operations the litert plugin selects, and why it rejects the others.

An operation is selected when a TFLite builtin computes exactly what NNAPI specifies for it:
its data tensors are TENSOR_FLOAT32 of static shape and rank at most 4, every parameter is a
constant, and the parameters have a TFLite equivalent — explicit padding that is not what
TFLite's SAME or VALID gives becomes a PAD before a VALID window (zeros for convolutions, -inf
for MAX_POOL_2D; AVERAGE_POOL_2D, which averages over real elements only, needs SAME or VALID),
SOFTMAX only on the last axis, MEAN not over every dim without ``keep_dims``.
NCHW operations (the layout flag) are taken too: the compiler computes whole NCHW regions in
NHWC (:mod:`.flatbuffer`). The reason for a rejection names the first rule the operation
breaks.
"""

from __future__ import annotations

from dataclasses import dataclass

from nnrt.drivers.litert.patterns import gelu_patterns
from nnrt.errors import NnrtError
from nnrt.model.model import Model
from nnrt.model.operation import operation_name
from nnrt.model.types import OperandType, OperationType, PaddingCode
from nnrt.ops._framework.context import OperationContext, Unknown, static_context
from nnrt.ops.conv_geometry import (
    layout_of,
    nhwc_dims,
    optional_tail_signature,
    read_geometry,
)
from nnrt.ops.padding import implicit_padding
from nnrt.ops.pooling_geometry import read_params

__all__ = ["SELECTED", "Window", "conv_window", "mean_axes", "pool_window", "tflite_padding",
           "unsupported_reason"]

T = OperandType
Op = OperationType

#: The operation types the compiler writes as TFLite builtins.
SELECTED = frozenset({
    Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.RELU, Op.RELU1, Op.RELU6, Op.LOGISTIC, Op.TANH,
    Op.FULLY_CONNECTED, Op.CONV_2D, Op.DEPTHWISE_CONV_2D, Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D,
    Op.SOFTMAX, Op.RESHAPE, Op.CONCATENATION, Op.MEAN, Op.TRANSPOSE, Op.BATCH_MATMUL,
    Op.NNRT_LAYER_NORMALIZATION, Op.NNRT_ERF,
})
#: (operation, input slot) of TENSOR_INT32 parameters (constants): shapes and axes.
_INT32_PARAMETERS = frozenset({(Op.RESHAPE, 1), (Op.MEAN, 1), (Op.TRANSPOSE, 1)})
#: Parameters are scalars (and RESHAPE's shape tensor), always constants.
_PARAMETER_TYPES = (T.INT32, T.FLOAT32, T.BOOL, T.TENSOR_INT32)
_MAX_RANK = 4


@dataclass(frozen=True)
class Window:
    """The TFLite form of a convolution or pooling window: padding, strides, sizes, dilation."""

    padding: str  # "SAME" or "VALID"
    stride_h: int
    stride_w: int
    filter_h: int
    filter_w: int
    dilation_h: int
    dilation_w: int
    activation: int
    #: DEPTHWISE_CONV_2D's depth multiplier (1 otherwise).
    multiplier: int = 1
    #: Whether the NNAPI operation is NCHW (the compiler then works in NHWC around it).
    nchw: bool = False
    #: Explicit (top, bottom, left, right) padding for a PAD before a VALID window, when the
    #: operation's padding is neither SAME nor VALID (None: none needed).
    pads: tuple[int, int, int, int] | None = None


def tflite_padding(pads: tuple[int, int, int, int], size: tuple[int, int],
                   stride: tuple[int, int], filter_hw: tuple[int, int],
                   dilation: tuple[int, int] = (1, 1)) -> str | None:
    """"VALID" or "SAME" when explicit ``pads`` (top, bottom, left, right) are what TFLite
    computes for that padding on an input of ``size`` (height, width); None otherwise."""
    if not any(pads):
        return "VALID"
    same = (*implicit_padding(PaddingCode.SAME, size[0], stride[0], filter_hw[0], dilation[0]),
            *implicit_padding(PaddingCode.SAME, size[1], stride[1], filter_hw[1], dilation[1]))
    return "SAME" if tuple(pads) == same else None


def conv_window(ctx: OperationContext) -> Window | str:
    """CONV_2D / DEPTHWISE_CONV_2D in TFLite terms, or why they have none."""
    depthwise = ctx.operation.type == Op.DEPTHWISE_CONV_2D
    sig = optional_tail_signature(ctx, "depth_multiplier" if depthwise else None)
    nchw = layout_of(ctx, sig)
    _, height, width, _ = nhwc_dims(ctx.shape(0), nchw)
    filt = ctx.shape(1)
    geo = read_geometry(ctx, sig, spatial=(height, width), filter_hw=(filt[1], filt[2]))
    pads = (geo.pad_top, geo.pad_bottom, geo.pad_left, geo.pad_right)
    padding = tflite_padding(pads, (height, width), (geo.stride_h, geo.stride_w),
                             (filt[1], filt[2]), (geo.dilation_h, geo.dilation_w))
    return Window(padding or "VALID", geo.stride_h, geo.stride_w, filt[1], filt[2],
                  geo.dilation_h, geo.dilation_w, geo.activation,
                  geo.extra if depthwise else 1, nchw, None if padding else pads)


def pool_window(ctx: OperationContext) -> Window | str:
    """AVERAGE_POOL_2D / MAX_POOL_2D in TFLite terms, or why they have none."""
    shape = ctx.shape(0)
    params = read_params(ctx, shape)
    _, height, width, _ = nhwc_dims(shape, params.nchw)
    padding = tflite_padding(
        (params.pad_top, params.pad_bottom, params.pad_left, params.pad_right),
        (height, width), (params.stride_h, params.stride_w),
        (params.filter_h, params.filter_w))
    pads = (params.pad_top, params.pad_bottom, params.pad_left, params.pad_right)
    if padding is None and ctx.operation.type == Op.AVERAGE_POOL_2D:
        return (f"explicit padding {pads} (top, bottom, left, right) is neither TFLite's SAME "
                "nor VALID (an AVERAGE_POOL_2D cannot take a PAD: it averages real elements)")
    return Window(padding or "VALID", params.stride_h, params.stride_w, params.filter_h,
                  params.filter_w, 1, 1, params.activation, 1, params.nchw,
                  None if padding else pads)


def mean_axes(ctx: OperationContext) -> tuple[list[int], bool]:
    """MEAN's axes (non-negative, sorted, without duplicates) and whether it keeps dims."""
    rank = len(ctx.shape(0))
    axes = sorted({int(a) % rank for a in ctx.constant(1).reshape(-1)})
    return axes, int(ctx.scalar(2)) > 0


def unsupported_reason(model: Model, index: int) -> str | None:
    """Why the litert plugin does not select operation ``index`` of ``model`` (None: it does)."""
    op = model.operations[index]
    if op.type not in SELECTED:
        return f"operation type {operation_name(op.type)} has no TFLite builtin here"
    operands = model.operands
    inferred = model.inferred_dims
    ctx = static_context(model, index)
    for slot, k in enumerate(op.inputs):
        operand = operands[k]
        if operand.is_omitted:
            continue
        name = ctx.where(input=slot).split(", ", 1)[1]
        is_shape = (op.type, slot) in _INT32_PARAMETERS
        if operand.type == T.TENSOR_FLOAT32:
            dims = inferred[k]
            if not dims or not all(d > 0 for d in dims):
                return f"{name} has no static shape"
            if len(dims) > _MAX_RANK:
                return f"{name} has rank {len(dims)} (at most {_MAX_RANK} here)"
        elif operand.type in _PARAMETER_TYPES and (is_shape or operand.type != T.TENSOR_INT32):
            if not operand.is_constant:
                return f"{name} is not a constant (parameters must be)"
        else:
            return f"{name}: {operand.type.name} not supported"
    for k in op.outputs:
        dims = inferred[k]
        if operands[k].type != T.TENSOR_FLOAT32:
            return f"output operand {k}: {operands[k].type.name} not supported"
        if not dims or not all(d > 0 for d in dims) or len(dims) > _MAX_RANK:
            return f"output operand {k} has no static shape of rank 1 to {_MAX_RANK}"
    return _variant_reason(model, ctx)


def _variant_reason(model: Model, ctx: OperationContext) -> str | None:
    kind = ctx.operation.type
    try:
        if kind in (Op.CONV_2D, Op.DEPTHWISE_CONV_2D):
            window = conv_window(ctx)
            return window if isinstance(window, str) else None
        if kind in (Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D):
            window = pool_window(ctx)
            return window if isinstance(window, str) else None
        if kind == Op.SOFTMAX and ctx.n_inputs > 2 and not ctx.is_omitted(2):
            axis = int(ctx.scalar(2))
            rank = len(ctx.shape(0))
            if axis not in (-1, rank - 1):
                return f"softmax on axis {axis} (TFLite's SOFTMAX takes the last axis only)"
        if kind == Op.NNRT_ERF and ctx.index not in gelu_patterns(model):
            return ("ERF has no TFLite builtin (taken only inside GELU: "
                    "x * 0.5 * (1 + erf(x / sqrt(2))))")
        if kind == Op.MEAN:
            axes, keep = mean_axes(ctx)
            if not keep and len(axes) == len(ctx.shape(0)):
                return ("MEAN over every dim without keep_dims (NNAPI gives shape [1], TFLite "
                        "a scalar)")
    except (NnrtError, Unknown) as exc:
        return f"cannot resolve the {operation_name(kind)} parameters: {exc}"
    return None
