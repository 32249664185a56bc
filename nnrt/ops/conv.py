"""Convolutions: CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D.

NNAPI signatures (inputs 0..2 are ``input, filter, bias`` in every one; strides and dilation
factors come width first; ``layout`` is a BOOL, true meaning NCHW, NHWC otherwise):

* CONV_2D, filter ``[depth_out, h, w, depth_in]``:
  explicit ``pad_left, pad_right, pad_top, pad_bottom, stride_w, stride_h, activation``
  (10 inputs) ``[, layout [, dilation_w, dilation_h]]`` (11 / 13); implicit
  ``padding_code, stride_w, stride_h, activation`` (7) ``[, layout [, dilations]]`` (8 / 10).
* DEPTHWISE_CONV_2D, filter ``[1, h, w, depth_out]`` with depth_out = depth_in *
  depth_multiplier; output channel ``k`` reads input channel ``k // depth_multiplier``:
  as CONV_2D with ``depth_multiplier`` before ``activation`` (explicit 11 / 12 / 14, implicit
  8 / 9 / 11 inputs).
* GROUPED_CONV_2D, filter ``[depth_out, h, w, depth_in / num_groups]``, depth_out divisible by
  num_groups; output channels are split into consecutive groups, each reading its own slice of
  input channels: explicit ``pads…, stride_w, stride_h, num_groups, activation, layout`` (12)
  or implicit ``padding_code, stride_w, stride_h, num_groups, activation, layout`` (9); no
  dilation.

Bias is ``[depth_out]``. Types: TENSOR_FLOAT32 / FLOAT16 throughout, or QUANT8_ASYMM(_SIGNED)
input and output with a filter of the input's type or TENSOR_QUANT8_SYMM_PER_CHANNEL (scales
along the output-channel dimension: 0, or 3 for DEPTHWISE_CONV_2D) and an INT32 bias (see
:func:`~nnrt.ops.conv_geometry.check_conv_types`). Every padding must be smaller than the
(dilated) filter size. Kernels gather the input patches once (im2col over filter taps) and
multiply per group; the quantised variants run the same product on zero-point-centred integers
and rescale as NNAPI does (:mod:`nnrt.ops.conv_quant`), all types and layouts alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnrt.model.types import OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import OperationDef, Shape, add_definition
from nnrt.ops.conv_geometry import (
    BIAS,
    FILTER,
    INPUT,
    KERNEL_TYPES,
    Geometry,
    Signature,
    build_signature,
    check_conv_types,
    from_nhwc,
    layout_of,
    named,
    nhwc_dims,
    optional_tail_names,
    optional_tail_signature,
    output_dims,
    read_geometry,
    to_nhwc,
    validate_param_types,
)
from nnrt.ops.conv_quant import centred, output_stage
from nnrt.ops.fused import apply_activation
from nnrt.ops.padding import conv_out_size
from nnrt.ops.quant import is_quantized

Array = np.ndarray[Any, Any]


@dataclass(frozen=True)
class _Family:
    """What distinguishes the three convolutions."""

    #: Name of the extra INT32 parameter (depth_multiplier / num_groups), if any.
    extra: str | None
    #: Dimension a per-channel quantised filter must be quantised along.
    channel_dim: int
    choose: Callable[[OperationContext], Signature]
    #: (out channels, groups) from input channels, filter and bias shapes and ``extra``;
    #: raises BadData on mismatches.
    channels: Callable[[OperationContext, int, Shape, Shape, int], tuple[int, int]]
    #: The filter rearranged as a grouped filter ``[depth_out, h, w, depth_in / groups]``.
    as_grouped: Callable[[Array], Array]


def _grouped_signature(ctx: OperationContext) -> Signature:
    ctx.expect_counts((9, 12), 1)
    return build_signature(explicit=ctx.n_inputs == 12, extra="num_groups", layout=True,
                           dilation=False)


def _conv_channels(ctx: OperationContext, depth_in: int, filt: Shape, bias: Shape,
                   extra: int) -> tuple[int, int]:
    if filt[3] != depth_in:
        ctx.fail(f"filter depth_in {filt[3]} does not match the input's {depth_in} channels",
                 input=FILTER)
    _check_bias(ctx, bias, filt[0], "filter depth_out")
    return filt[0], 1


def _depthwise_channels(ctx: OperationContext, depth_in: int, filt: Shape, bias: Shape,
                        multiplier: int) -> tuple[int, int]:
    if filt[0] != 1:
        ctx.fail(f"filter dimension 0 must be 1 (filter is [1, h, w, depth_out]), got "
                 f"{filt[0]}", input=FILTER)
    if filt[3] != depth_in * multiplier:
        ctx.fail(f"filter depth_out {filt[3]} must equal input channels {depth_in} * "
                 f"depth_multiplier {multiplier}", input=FILTER)
    _check_bias(ctx, bias, filt[3], "filter depth_out")
    return filt[3], depth_in


def _grouped_channels(ctx: OperationContext, depth_in: int, filt: Shape, bias: Shape,
                      groups: int) -> tuple[int, int]:
    if filt[3] * groups != depth_in:
        ctx.fail(f"filter depth_group {filt[3]} * num_groups {groups} must equal the input's "
                 f"{depth_in} channels", input=FILTER)
    if filt[0] % groups:
        ctx.fail(f"filter depth_out {filt[0]} is not divisible by num_groups {groups}",
                 input=FILTER)
    _check_bias(ctx, bias, filt[0], "filter depth_out")
    return filt[0], groups


def _check_bias(ctx: OperationContext, bias: Shape, depth_out: int, what: str) -> None:
    if bias[0] != depth_out:
        ctx.fail(f"bias has {bias[0]} elements, expected {depth_out} ({what})", input=BIAS)


_FAMILIES = {
    OperationType.CONV_2D: _Family(
        None, 0, lambda ctx: optional_tail_signature(ctx, None), _conv_channels, lambda f: f),
    OperationType.DEPTHWISE_CONV_2D: _Family(
        "depth_multiplier", 3, lambda ctx: optional_tail_signature(ctx, "depth_multiplier"),
        _depthwise_channels, lambda f: np.transpose(f, (3, 1, 2, 0))),
    OperationType.GROUPED_CONV_2D: _Family(
        "num_groups", 0, _grouped_signature, _grouped_channels, lambda f: f),
}


def _validate(ctx: OperationContext) -> None:
    family = _FAMILIES[ctx.op_type]
    sig = family.choose(ctx)
    ctx = named(ctx, sig)
    check_conv_types(ctx, channel_dim=family.channel_dim)
    validate_param_types(ctx, sig)


def _resolve(ctx: OperationContext) -> tuple[Geometry, int, Shape]:
    """Geometry, group count and output shape, checking every shape relation."""
    family = _FAMILIES[ctx.op_type]
    sig = family.choose(ctx)
    ctx = named(ctx, sig)
    for i, rank in ((INPUT, 4), (FILTER, 4), (BIAS, 1)):
        ctx.expect_rank(i, rank)
    in_shape, filt, bias = ctx.shape(INPUT), ctx.shape(FILTER), ctx.shape(BIAS)
    nchw = layout_of(ctx, sig)
    batches, height, width, depth_in = nhwc_dims(in_shape, nchw)
    geo = read_geometry(ctx, sig, spatial=(height, width), filter_hw=(filt[1], filt[2]))
    depth_out, groups = family.channels(ctx, depth_in, filt, bias, geo.extra)
    sizes = []
    for size, k, stride, dil, head, tail, slots in (
            (height, filt[1], geo.stride_h, geo.dilation_h, geo.pad_top, geo.pad_bottom,
             sig.padding[2:] if sig.explicit else sig.padding),
            (width, filt[2], geo.stride_w, geo.dilation_w, geo.pad_left, geo.pad_right,
             sig.padding[:2] if sig.explicit else sig.padding)):
        effective = (k - 1) * dil + 1
        if max(head, tail) >= effective:
            slot = slots[0] if head >= effective or len(slots) == 1 else slots[1]
            ctx.fail(f"padding ({head}, {tail}) must be smaller than the effective filter size "
                     f"{effective}", input=slot)
        out = conv_out_size(size, k, stride, dil, (head, tail))
        if out < 1:
            ctx.fail(f"input size {size} with padding ({head}, {tail}) is smaller than the "
                     f"effective filter size {effective}", input=INPUT)
        sizes.append(out)
    return geo, groups, output_dims(batches, sizes[0], sizes[1], depth_out, nchw)


def _prepare(ctx: OperationContext) -> list[Shape]:
    return [_resolve(ctx)[2]]


def grouped_conv_nhwc(x: Array, w: Array, bias: Array, geo: Geometry, *, groups: int,
                      out_hw: tuple[int, int]) -> Array:
    """Grouped 2-D convolution of NHWC ``x`` with ``w`` ``[depth_out, kh, kw, depth_in/groups]``.

    Builds the im2col matrix (one strided slice per filter tap), then one matrix product per
    group. CONV_2D is ``groups == 1``; DEPTHWISE_CONV_2D is ``groups == depth_in``.
    """
    n = x.shape[0]
    depth_out, kh, kw, depth_group = w.shape
    oh, ow = out_hw
    xp = np.pad(x, ((0, 0), (geo.pad_top, geo.pad_bottom), (geo.pad_left, geo.pad_right),
                    (0, 0)))
    rows_end, cols_end = (oh - 1) * geo.stride_h + 1, (ow - 1) * geo.stride_w + 1
    taps = [xp[:, i * geo.dilation_h:i * geo.dilation_h + rows_end:geo.stride_h,
               j * geo.dilation_w:j * geo.dilation_w + cols_end:geo.stride_w, :]
            for i in range(kh) for j in range(kw)]
    cols = np.stack(taps, axis=3)  # (n, oh, ow, taps, depth_in)
    positions = n * oh * ow
    cols = (cols.reshape(positions, kh * kw, groups, depth_group)
            .transpose(2, 0, 1, 3).reshape(groups, positions, kh * kw * depth_group))
    per_group = depth_out // groups
    weights = w.reshape(groups, per_group, kh * kw * depth_group).transpose(0, 2, 1)
    out = np.matmul(cols, weights)  # (groups, positions, per_group)
    out = out.transpose(1, 0, 2).reshape(n, oh, ow, depth_out)
    return np.asarray(out + bias)


def _execute(ctx: ExecutionContext) -> list[Array]:
    geo, groups, out_shape = _resolve(ctx)
    family = _FAMILIES[ctx.op_type]
    x = to_nhwc(centred(ctx, INPUT), geo.nchw)
    w = family.as_grouped(centred(ctx, FILTER))
    bias = ctx.tensor(BIAS).astype(np.float64)
    _, oh, ow, _ = nhwc_dims(out_shape, geo.nchw)
    y = grouped_conv_nhwc(x, w, bias, geo, groups=groups, out_hw=(oh, ow))
    if is_quantized(ctx.input_type(INPUT)):
        y = output_stage(ctx, y, geo.activation)
    else:
        y = apply_activation(y, geo.activation)
    return [from_nhwc(y, geo.nchw)]


def _names(op: OperationType) -> dict[int, tuple[str, ...]]:
    """Input names per input count (``named`` resolves CONV_2D / DEPTHWISE's ambiguous one)."""
    if op == OperationType.GROUPED_CONV_2D:
        return {9 + 3 * explicit: build_signature(explicit=explicit, extra="num_groups",
                                                  layout=True, dilation=False).names
                for explicit in (False, True)}
    return optional_tail_names(_FAMILIES[op].extra)


for _op in _FAMILIES:
    _signatures = _names(_op)
    add_definition(OperationDef(
        type=_op, validate=_validate, prepare=_prepare, execute=_execute,
        inputs=_signatures[max(_signatures)], kernel_types=KERNEL_TYPES, signatures=_signatures,
    ))
