"""NNAPI window parameters in TFLite's terms: convolutions, pooling, transposed convolutions.

TFLite's windows take SAME or VALID padding, which TFLite computes from the sizes; NNAPI's take
explicit pads or an implicit padding code. :func:`conv_window` and :func:`pool_window` give the
TFLite form of a convolution or pooling (a PAD before a VALID window where the pads are neither
SAME nor VALID), :func:`transpose_conv_window` that of a TRANSPOSE_CONV_2D (whose output TFLite
places by the padding it computes from the output size: the NNAPI pads must be exactly those),
or a string saying why there is none. Shared by the partition step (:mod:`.support`), the
rewrites (:mod:`.folding`) and the writers.
"""

from __future__ import annotations

from dataclasses import dataclass

from nnrt.model.types import OperationType, PaddingCode
from nnrt.ops._framework.context import OperationContext
from nnrt.ops.conv_geometry import (
    layout_of,
    nhwc_dims,
    optional_tail_signature,
    read_geometry,
)
from nnrt.ops.padding import implicit_padding
from nnrt.ops.pooling_geometry import read_params
from nnrt.ops.transpose_conv import resolve

__all__ = ["TransposeWindow", "Window", "conv_window", "pool_window", "reduction_axes",
           "tflite_padding", "transpose_conv_window"]

Op = OperationType


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


@dataclass(frozen=True)
class TransposeWindow:
    """The TFLite form of a TRANSPOSE_CONV_2D: padding, strides, output shape (NHWC)."""

    padding: str  # "SAME" or "VALID"
    stride_h: int
    stride_w: int
    activation: int
    nchw: bool
    output_nhwc: tuple[int, int, int, int]


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


def _transpose_padding(out: int, stride: int, size: int) -> dict[str, tuple[int, int]]:
    """Per TFLite padding: (the input size TFLite expects, the leading pad it crops) for a
    TRANSPOSE_CONV output of ``out`` elements with a window of ``size`` along one axis."""
    same_total = max(((out + stride - 1) // stride - 1) * stride + size - out, 0)
    return {"VALID": ((out + stride - size) // stride, 0),
            "SAME": ((out + stride - 1) // stride, same_total // 2)}


def transpose_conv_window(ctx: OperationContext) -> TransposeWindow | str:
    """TRANSPOSE_CONV_2D in TFLite terms, or why it has none.

    TFLite's TRANSPOSE_CONV takes the output shape and computes its padding from it as for a
    convolution of the output giving the input: VALID crops nothing at the top / left, SAME
    crops half the SAME padding (rounded down). It refuses output shapes whose convolution
    would not give the input's size. The NNAPI output is the full result cropped by
    (top, left) with the size the bottom / right pads leave: one padding must match both.
    """
    geo, out_shape = resolve(ctx)
    _, height, width, _ = nhwc_dims(ctx.shape(0), geo.nchw)
    batches, out_h, out_w, depth = nhwc_dims(out_shape, geo.nchw)
    _, kernel_h, kernel_w, _ = ctx.shape(1)
    rows = _transpose_padding(out_h, geo.stride_h, kernel_h)
    cols = _transpose_padding(out_w, geo.stride_w, kernel_w)
    for padding in ("VALID", "SAME"):
        if rows[padding] == (height, geo.pad_top) and cols[padding] == (width, geo.pad_left):
            return TransposeWindow(padding, geo.stride_h, geo.stride_w, geo.activation,
                                   geo.nchw, (batches, out_h, out_w, depth))
    pads = (geo.pad_top, geo.pad_bottom, geo.pad_left, geo.pad_right)
    return (f"padding {pads} (top, bottom, left, right) for a {out_h}x{out_w} output is "
            "neither TFLite's SAME nor VALID for TRANSPOSE_CONV (which computes its padding "
            "from the output size)")


def reduction_axes(ctx: OperationContext) -> tuple[list[int], bool]:
    """A reduction's axes (non-negative, sorted, without duplicates) and whether it keeps
    dims (MEAN's INT32 ``keep_dims`` > 0, the REDUCE_* operations' BOOL)."""
    rank = len(ctx.shape(0))
    axes = sorted({int(a) % rank for a in ctx.constant(1).reshape(-1)})
    return axes, int(ctx.scalar(2)) > 0
