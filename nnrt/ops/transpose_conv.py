"""TRANSPOSE_CONV_2D: the gradient of CONV_2D with respect to its input (a "deconvolution").

NNAPI signatures (inputs 0..2 ``input, filter, bias``; filter ``[depth_out, h, w, depth_in]``,
bias ``[depth_out]``; the BOOL ``layout``, true meaning NCHW, is required):

* explicit padding (11 inputs): ``padding_left, padding_right, padding_top, padding_bottom,
  stride_width, stride_height, activation, layout``;
* implicit padding (9 inputs): ``output_shape`` (a 1-D TENSOR_INT32 of 4 elements, in the
  operation's layout), ``padding_code, stride_width, stride_height, activation, layout``. The
  padding is what makes a SAME (or VALID) convolution of the output produce the input: computed
  from output_shape's height and width, with a tail that may be negative.

Each input pixel ``(h, w)`` adds ``input[h, w, :] · filter[k, i, j, :]`` to output pixel
``(h * stride_h + i - padding_top, w * stride_w + j - padding_left)``; the output is
``in * stride + filter - stride - head - tail`` along each spatial dimension. Left / top
padding must be ≥ 0; right / bottom may be negative (they only extend the output), as in
NNAPI's reference. No dilation. Types as the other convolutions (quantised per-channel filters
along dimension 0); the quantised variants scatter zero-point-centred integers the same way,
then rescale as NNAPI does (:mod:`nnrt.ops.conv_quant`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from nnrt.model.types import OperandType, OperationType, PaddingCode
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register
from nnrt.ops.conv_geometry import (
    BIAS,
    FILTER,
    INPUT,
    KERNEL_TYPES,
    Geometry,
    Signature,
    build_signature,
    check_conv_types,
    check_param_values,
    from_nhwc,
    layout_of,
    nhwc_dims,
    output_dims,
    to_nhwc,
    validate_param_types,
)
from nnrt.ops.conv_quant import centred, output_stage
from nnrt.ops.fused import apply_activation
from nnrt.ops.padding import same_padding
from nnrt.ops.quant import is_quantized

T = OperandType
Array = np.ndarray[Any, Any]

OUTPUT_SHAPE = 3
_EXPLICIT = build_signature(explicit=True, extra=None, layout=True, dilation=False)
_IMPLICIT = replace(
    build_signature(explicit=False, extra=None, layout=True, dilation=False,
                    head=("input", "filter", "bias", "output_shape")),
    output_shape=OUTPUT_SHAPE)


def _signature(ctx: OperationContext) -> Signature:
    ctx.expect_counts((_IMPLICIT.n_inputs, _EXPLICIT.n_inputs), 1)
    return _EXPLICIT if ctx.n_inputs == _EXPLICIT.n_inputs else _IMPLICIT


def _signed_pads(sig: Signature) -> tuple[int, ...]:
    """Explicit right and bottom padding may be negative."""
    return (sig.padding[1], sig.padding[3]) if sig.explicit else ()


def _check_output_shape_dims(ctx: OperationContext, dims: tuple[int, ...]) -> None:
    if len(dims) == 1 and dims[0] not in (0, 4):
        ctx.fail(f"expected 4 elements (a 4-D shape), got {dims[0]}", input=OUTPUT_SHAPE)


@register(OperationType.TRANSPOSE_CONV_2D, inputs=_EXPLICIT.names, kernel_types=KERNEL_TYPES,
          signatures={sig.n_inputs: sig.names for sig in (_IMPLICIT, _EXPLICIT)})
class TransposeConv2D:
    """TRANSPOSE_CONV_2D, explicit or implicit padding, NHWC or NCHW."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's static rules for both signatures."""
        sig = _signature(ctx)
        check_conv_types(ctx, channel_dim=0)
        if sig.output_shape is not None:
            ctx.expect_type(sig.output_shape, T.TENSOR_INT32)
            ctx.expect_rank(sig.output_shape, 1)
            _check_output_shape_dims(ctx, ctx.dims(sig.output_shape))
        validate_param_types(ctx, sig, signed_pads=_signed_pads(sig))

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """The output shape, from the input size, filter, strides and padding."""
        return [resolve(ctx)[1]]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Scatter every input pixel's filter response, then crop by the padding."""
        geo, out_shape = resolve(ctx)
        x = to_nhwc(centred(ctx, INPUT), geo.nchw)
        w = centred(ctx, FILTER)
        bias = ctx.tensor(BIAS).astype(np.float64)
        _, oh, ow, _ = nhwc_dims(out_shape, geo.nchw)
        y = transpose_conv_nhwc(x, w, geo, (oh, ow)) + bias
        if is_quantized(ctx.input_type(INPUT)):
            y = output_stage(ctx, y, geo.activation)
        else:
            y = apply_activation(y, geo.activation)
        return [from_nhwc(y, geo.nchw)]


def resolve(ctx: OperationContext) -> tuple[Geometry, Shape]:
    """Geometry (the pads in explicit form) and output shape, checking every shape relation."""
    sig = _signature(ctx)
    for i, rank in ((INPUT, 4), (FILTER, 4), (BIAS, 1)):
        ctx.expect_rank(i, rank)
    in_shape, filt, bias = ctx.shape(INPUT), ctx.shape(FILTER), ctx.shape(BIAS)
    nchw = layout_of(ctx, sig)
    batches, height, width, depth_in = nhwc_dims(in_shape, nchw)
    depth_out, kh, kw, filter_in = filt
    if filter_in != depth_in:
        ctx.fail(f"filter depth_in {filter_in} does not match the input's {depth_in} channels",
                 input=FILTER)
    if bias[0] != depth_out:
        ctx.fail(f"bias has {bias[0]} elements, expected {depth_out} (filter depth_out)",
                 input=BIAS)
    check_param_values(ctx, sig, ctx.value, signed_pads=_signed_pads(sig))
    stride_w, stride_h = (int(ctx.value(s)) for s in sig.stride)
    if sig.explicit:
        left, right, top, bottom = (int(ctx.value(s)) for s in sig.padding)
    else:
        ctx.expect_rank(OUTPUT_SHAPE, 1)
        _check_output_shape_dims(ctx, ctx.shape(OUTPUT_SHAPE))
        target = [int(v) for v in np.asarray(ctx.value(OUTPUT_SHAPE)).reshape(-1)]
        _, target_h, target_w, _ = nhwc_dims(target, nchw)
        top = bottom = left = right = 0
        if ctx.value(sig.padding[0]) == PaddingCode.SAME:
            top, bottom = same_padding(target_h, stride_h, 1, kh, transpose=True)
            left, right = same_padding(target_w, stride_w, 1, kw, transpose=True)
    out_h = height * stride_h + kh - stride_h - top - bottom
    out_w = width * stride_w + kw - stride_w - left - right
    if out_h < 1 or out_w < 1:
        ctx.fail(f"the padding leaves an empty output ({out_h} x {out_w})", input=INPUT)
    geo = Geometry(pad_top=top, pad_bottom=bottom, pad_left=left, pad_right=right,
                   stride_h=stride_h, stride_w=stride_w,
                   activation=int(ctx.value(sig.activation)), nchw=nchw)
    return geo, output_dims(batches, out_h, out_w, depth_out, nchw)


def transpose_conv_nhwc(x: Array, w: Array, geo: Geometry, out_hw: tuple[int, int]) -> Array:
    """Transposed convolution of NHWC ``x`` with ``w`` ``[depth_out, kh, kw, depth_in]``.

    Every tap's response (one tensordot for all taps) is added into a full-size canvas with
    the stride; the output is the canvas window starting at (padding_top, padding_left),
    zero-extended where negative tail padding reaches past the canvas.
    """
    n, height, width, _ = x.shape
    depth_out, kh, kw, _ = w.shape
    oh, ow = out_hw
    sh, sw = geo.stride_h, geo.stride_w
    canvas_h = max((height - 1) * sh + kh, geo.pad_top + oh)
    canvas_w = max((width - 1) * sw + kw, geo.pad_left + ow)
    canvas = np.zeros((n, canvas_h, canvas_w, depth_out))
    response = np.tensordot(x, w, axes=([3], [3]))  # (n, h, w, depth_out, kh, kw)
    rows, cols = (height - 1) * sh + 1, (width - 1) * sw + 1
    for i in range(kh):
        for j in range(kw):
            canvas[:, i:i + rows:sh, j:j + cols:sw, :] += response[..., i, j]
    return canvas[:, geo.pad_top:geo.pad_top + oh, geo.pad_left:geo.pad_left + ow, :]
