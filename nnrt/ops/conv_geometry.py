"""Geometry shared by the convolution family: signatures, padding, strides, dilation, layout.

CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D and TRANSPOSE_CONV_2D all take ``input, filter,
bias`` followed by scalar parameters whose positions depend on the signature (explicit padding
``left, right, top, bottom`` or an implicit ``PaddingCode``; strides width then height; an
optional or required BOOL layout, true meaning NCHW; optional dilation factors width then
height). :class:`Signature` records where each parameter lives for one operation's input count,
so the operation modules only describe their layouts. Operand types and quantisation rules
shared by the four operations live here too (:func:`check_conv_types`). The implicit padding
rule itself lives in :mod:`nnrt.ops.padding`, shared with pooling.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from nnrt.model.types import FusedActivation, OperandType, PaddingCode
from nnrt.ops._framework.context import OperationContext
from nnrt.ops.padding import implicit_padding

__all__ = [
    "BIAS",
    "FLOAT_TYPES",
    "FILTER",
    "INPUT",
    "KERNEL_TYPES",
    "Geometry",
    "Signature",
    "build_signature",
    "check_conv_types",
    "check_param_values",
    "from_nhwc",
    "layout_of",
    "named",
    "nhwc_dims",
    "optional_tail_names",
    "optional_tail_signature",
    "output_dims",
    "read_geometry",
    "to_nhwc",
    "validate_param_types",
]

T = OperandType
Array = np.ndarray[Any, Any]

INPUT, FILTER, BIAS = 0, 1, 2

FLOAT_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
QUANT_TYPES = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
#: The input types the reference kernels implement: all of them.
KERNEL_TYPES = frozenset(FLOAT_TYPES + QUANT_TYPES)

_HEAD = ("input", "filter", "bias")
_EXPLICIT_PADS = ("padding_left", "padding_right", "padding_top", "padding_bottom")
_STRIDES = ("stride_width", "stride_height")
_DILATIONS = ("dilation_width", "dilation_height")
#: NNAPI's relative tolerance on bias_scale == input_scale * filter_scale.
_BIAS_SCALE_RTOL = 1e-6


@dataclass(frozen=True)
class Signature:
    """Where each parameter of one signature of a convolution operation lives (input slots)."""

    explicit: bool
    names: tuple[str, ...]
    #: Explicit: (left, right, top, bottom); implicit: (padding code,).
    padding: tuple[int, ...]
    #: (width, height).
    stride: tuple[int, int]
    activation: int
    #: depth_multiplier / num_groups slot, if the operation has one.
    extra: int | None = None
    layout: int | None = None
    #: (width, height), when the signature carries dilation factors.
    dilation: tuple[int, int] | None = None
    #: TRANSPOSE_CONV_2D's implicit-padding output_shape tensor.
    output_shape: int | None = None

    @property
    def n_inputs(self) -> int:
        """How many inputs this signature has."""
        return len(self.names)

    def scalar_slots(self) -> list[int]:
        """Every INT32 scalar parameter slot (padding, strides, extra, activation, dilation)."""
        slots = [*self.padding, *self.stride, self.activation]
        if self.extra is not None:
            slots.append(self.extra)
        if self.dilation is not None:
            slots.extend(self.dilation)
        return sorted(slots)


def build_signature(*, explicit: bool, extra: str | None, layout: bool, dilation: bool,
                    head: Sequence[str] = _HEAD) -> Signature:
    """The signature ``head, padding…, strides, [extra], activation, [layout], [dilations]``."""
    names = list(head)
    pads = _EXPLICIT_PADS if explicit else ("padding",)
    padding = tuple(range(len(names), len(names) + len(pads)))
    names += pads
    stride = (len(names), len(names) + 1)
    names += _STRIDES
    extra_slot = None
    if extra is not None:
        extra_slot = len(names)
        names.append(extra)
    activation = len(names)
    names.append("activation")
    layout_slot = None
    if layout:
        layout_slot = len(names)
        names.append("layout")
    dilation_slots = None
    if dilation:
        dilation_slots = (len(names), len(names) + 1)
        names += _DILATIONS
    return Signature(explicit, tuple(names), padding, (stride[0], stride[1]), activation,
                     extra_slot, layout_slot, dilation_slots)


def optional_tail_signature(ctx: OperationContext, extra: str | None) -> Signature:
    """CONV_2D / DEPTHWISE_CONV_2D: which signature the input count and types select.

    Implicit padding has ``n`` = 7 (+1 with ``extra``) inputs, explicit ``n + 3``; each may add
    the layout flag, then both dilation factors. An input count of ``n + 3`` is explicit padding
    when input ``n`` is INT32 (a stride) and implicit padding with layout and dilation otherwise.
    """
    base = 7 + (extra is not None)
    allowed = (base, base + 1, base + 3, base + 4, base + 6)
    count = ctx.n_inputs
    if count in (base + 2, base + 5):
        ctx.fail(f"got {count} inputs: dilation needs both a width and a height factor "
                 f"(expected {', '.join(map(str, allowed[:-1]))} or {allowed[-1]} inputs)")
    ctx.expect_counts(allowed, 1)
    explicit = count > base + 3 or (count == base + 3 and ctx.input_type(base) == T.INT32)
    tail = count - (base + 3 if explicit else base)
    return build_signature(explicit=explicit, extra=extra, layout=tail >= 1, dilation=tail == 3)


def named(ctx: OperationContext, signature: Signature) -> OperationContext:
    """A shallow copy of ``ctx`` whose error messages name inputs as ``signature`` does.

    The registry's per-count names cannot tell CONV_2D's 10 inputs (explicit padding) from its
    10 inputs (implicit padding, layout and dilation), so each phase re-labels after choosing.
    """
    if ctx.definition is None:
        return ctx
    relabelled = copy.copy(ctx)
    relabelled.definition = replace(ctx.definition, inputs=signature.names, signatures=None)
    return relabelled


def optional_tail_names(extra: str | None) -> dict[int, tuple[str, ...]]:
    """Input names per count for CONV_2D / DEPTHWISE_CONV_2D (explicit where ambiguous)."""
    names: dict[int, tuple[str, ...]] = {}
    for explicit in (False, True):
        for layout, dilation in ((False, False), (True, False), (True, True)):
            sig = build_signature(explicit=explicit, extra=extra, layout=layout,
                                  dilation=dilation)
            names[sig.n_inputs] = sig.names
    return names


# -- operand types and quantisation --------------------------------------------------------------


def check_conv_types(ctx: OperationContext, *, channel_dim: int) -> OperandType:
    """Input / filter / bias / output types of the convolution family; returns the input type.

    Float: all four share TENSOR_FLOAT32 or TENSOR_FLOAT16. Quantised: input QUANT8_ASYMM or
    QUANT8_ASYMM_SIGNED; filter of the input's type, or TENSOR_QUANT8_SYMM_PER_CHANNEL quantised
    along ``channel_dim``; bias TENSOR_INT32 with bias_scale == input_scale * filter_scale (0 for
    a per-channel filter, whose effective scales are input_scale * filter_scale[i]); the output
    of the input's type. Ranks: input and filter 4, bias 1.
    """
    t = ctx.expect_type(INPUT, *FLOAT_TYPES, *QUANT_TYPES)
    if t in FLOAT_TYPES:
        ctx.expect_type(FILTER, t)
        ctx.expect_type(BIAS, t)
    else:
        filter_type = ctx.expect_type(FILTER, t, T.TENSOR_QUANT8_SYMM_PER_CHANNEL)
        ctx.expect_type(BIAS, T.TENSOR_INT32)
        bias_scale = ctx.operand(BIAS).scale
        if filter_type == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
            quant = ctx.operand(FILTER).channel_quant
            if quant is not None and quant.channel_dim != channel_dim:
                ctx.fail(f"per-channel quantisation must be along dimension {channel_dim}, got "
                         f"{quant.channel_dim}", input=FILTER)
            if bias_scale != 0:
                ctx.fail("with a per-channel filter the bias scale must be 0 (each channel's "
                         f"scale is input_scale * filter_scale[i]), got {bias_scale}", input=BIAS)
        else:
            product = ctx.operand(INPUT).scale * ctx.operand(FILTER).scale
            if abs(product - bias_scale) > _BIAS_SCALE_RTOL * min(product, bias_scale):
                ctx.fail(f"bias scale must equal input_scale * filter_scale = {product:g}, got "
                         f"{bias_scale:g}", input=BIAS)
    ctx.expect_output_like_input(0, INPUT)
    ctx.expect_rank(INPUT, 4)
    ctx.expect_rank(FILTER, 4)
    ctx.expect_rank(BIAS, 1)
    return t


# -- scalar parameters ---------------------------------------------------------------------------


def validate_param_types(ctx: OperationContext, sig: Signature, *,
                         signed_pads: Sequence[int] = ()) -> None:
    """Types of the scalar parameters, and their ranges where they are constants."""
    for slot in sig.scalar_slots():
        ctx.expect_scalar(slot, T.INT32)
    if sig.layout is not None:
        ctx.expect_scalar(sig.layout, T.BOOL)
    check_param_values(ctx, sig, ctx.constant, signed_pads=signed_pads)


def check_param_values(ctx: OperationContext, sig: Signature, get: Callable[[int], Any], *,
                       signed_pads: Sequence[int] = ()) -> None:
    """Range rules of the scalar parameters whose value ``get`` knows (None = unknown).

    Explicit paddings ≥ 0 except the ``signed_pads`` slots (TRANSPOSE_CONV_2D's right and
    bottom), the padding code SAME or VALID, strides, dilations and ``extra`` ≥ 1, activation a
    FuseCode.
    """
    def check(slot: int, low: int, what: str) -> None:
        value = get(slot)
        if value is not None and value < low:
            ctx.fail(f"{what} must be at least {low}, got {value}", input=slot)

    if sig.explicit:
        for slot in sig.padding:
            if slot not in signed_pads:
                check(slot, 0, "padding")
    else:
        code = get(sig.padding[0])
        if code is not None and code not in tuple(PaddingCode):
            ctx.fail(f"invalid padding code {code} (expected 1=SAME or 2=VALID)",
                     input=sig.padding[0])
    for slot in sig.stride:
        check(slot, 1, "stride")
    for slot in sig.dilation or ():
        check(slot, 1, "dilation factor")
    if sig.extra is not None:
        check(sig.extra, 1, sig.names[sig.extra].replace("_", " "))
    code = get(sig.activation)
    if code is not None and code not in tuple(FusedActivation):
        ctx.fail(f"invalid fused activation code {code} (expected 0=NONE, 1=RELU, 2=RELU1, "
                 "3=RELU6)", input=sig.activation)


# -- geometry ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Geometry:
    """Resolved parameters of one convolution: explicit padding, strides, dilation, layout."""

    pad_top: int
    pad_bottom: int
    pad_left: int
    pad_right: int
    stride_h: int
    stride_w: int
    dilation_h: int = 1
    dilation_w: int = 1
    activation: int = 0
    nchw: bool = False
    #: depth_multiplier / num_groups (1 when the operation has none).
    extra: int = 1


def read_geometry(ctx: OperationContext, sig: Signature, *, spatial: tuple[int, int],
                  filter_hw: tuple[int, int]) -> Geometry:
    """Resolve ``sig``'s parameters for an input of ``spatial`` (height, width) dims.

    Values come from ``ctx.value`` (raising ``Unknown`` statically when not constants) and are
    range-checked. Implicit padding is computed from the input size (CONV_2D family;
    TRANSPOSE_CONV_2D derives its own from output_shape).
    """
    check_param_values(ctx, sig, ctx.value)
    stride_w, stride_h = (int(ctx.value(s)) for s in sig.stride)
    dil_w, dil_h = (int(ctx.value(s)) for s in sig.dilation) if sig.dilation else (1, 1)
    if sig.explicit:
        left, right, top, bottom = (int(ctx.value(s)) for s in sig.padding)
    else:
        code = int(ctx.value(sig.padding[0]))
        top, bottom = implicit_padding(code, spatial[0], stride_h, filter_hw[0], dil_h)
        left, right = implicit_padding(code, spatial[1], stride_w, filter_hw[1], dil_w)
    return Geometry(
        pad_top=top, pad_bottom=bottom, pad_left=left, pad_right=right,
        stride_h=stride_h, stride_w=stride_w, dilation_h=dil_h, dilation_w=dil_w,
        activation=int(ctx.value(sig.activation)), nchw=layout_of(ctx, sig),
        extra=int(ctx.value(sig.extra)) if sig.extra is not None else 1,
    )


def layout_of(ctx: OperationContext, sig: Signature) -> bool:
    """Whether the operation uses NCHW (its layout input is true); NHWC without one."""
    return bool(ctx.value(sig.layout)) if sig.layout is not None else False


def nhwc_dims(shape: Sequence[int], nchw: bool) -> tuple[int, int, int, int]:
    """(batches, height, width, channels) of a 4-D shape in the given layout."""
    n, a, b, c = shape
    return (n, b, c, a) if nchw else (n, a, b, c)


def output_dims(batches: int, height: int, width: int, channels: int,
                nchw: bool) -> tuple[int, int, int, int]:
    """A 4-D output shape in the given layout."""
    return (batches, channels, height, width) if nchw else (batches, height, width, channels)


def to_nhwc(x: Array, nchw: bool) -> Array:
    """``x`` as NHWC (a transposed view when it is NCHW)."""
    return np.transpose(x, (0, 2, 3, 1)) if nchw else x


def from_nhwc(y: Array, nchw: bool) -> Array:
    """An NHWC result in the operation's layout."""
    return np.ascontiguousarray(np.transpose(y, (0, 3, 1, 2))) if nchw else y
