"""Window geometry of the 2-D pooling operations: parameters, implicit padding, output size.

NNAPI's pooling signatures carry either explicit padding (input, padding left/right/top/bottom,
stride width/height, filter width/height, activation[, layout]) or an implicit padding scheme
(input, padding code, stride width/height, filter width/height, activation[, layout]).
:func:`read_params` turns either form into one :class:`PoolParams`; :func:`check_params`
enforces NNAPI's runtime rules on the values (positive strides and filters, non-negative
padding smaller than the filter on every side). The implicit padding rule and the window count
are :mod:`nnrt.ops.padding`'s, shared with the convolutions.
"""

from __future__ import annotations

from dataclasses import dataclass

from nnrt.model.types import PaddingCode
from nnrt.ops._framework.context import OperationContext
from nnrt.ops.padding import implicit_padding

__all__ = [
    "EXPLICIT_COUNTS",
    "EXPLICIT_NAMES",
    "IMPLICIT_COUNTS",
    "IMPLICIT_NAMES",
    "PoolParams",
    "check_params",
    "is_explicit",
    "layout_slot",
    "param_slots",
    "read_params",
]

#: Input counts of the explicit-padding signature (without / with the layout flag).
EXPLICIT_COUNTS = (10, 11)
#: Input counts of the implicit-padding signature (without / with the layout flag).
IMPLICIT_COUNTS = (7, 8)

EXPLICIT_NAMES = ("input", "padding_left", "padding_right", "padding_top", "padding_bottom",
                  "stride_width", "stride_height", "filter_width", "filter_height",
                  "activation", "layout")
IMPLICIT_NAMES = ("input", "padding_scheme", "stride_width", "stride_height", "filter_width",
                  "filter_height", "activation", "layout")

# Input slots of the explicit signature.
PAD_LEFT, PAD_RIGHT, PAD_TOP, PAD_BOTTOM = 1, 2, 3, 4
EX_STRIDE_W, EX_STRIDE_H, EX_FILTER_W, EX_FILTER_H, EX_ACTIVATION, EX_LAYOUT = 5, 6, 7, 8, 9, 10
# Input slots of the implicit signature.
SCHEME, IM_STRIDE_W, IM_STRIDE_H, IM_FILTER_W, IM_FILTER_H, IM_ACTIVATION, IM_LAYOUT = (
    1, 2, 3, 4, 5, 6, 7)


def is_explicit(ctx: OperationContext) -> bool:
    """Whether the operation uses the explicit-padding signature (10 or 11 inputs)."""
    return ctx.n_inputs >= EXPLICIT_COUNTS[0]


def layout_slot(ctx: OperationContext) -> int:
    """The slot of the optional BOOL layout flag in this signature."""
    return EX_LAYOUT if is_explicit(ctx) else IM_LAYOUT


def param_slots(ctx: OperationContext) -> dict[str, int]:
    """Slot of each named INT32 parameter in this signature."""
    if is_explicit(ctx):
        return {"padding_left": PAD_LEFT, "padding_right": PAD_RIGHT, "padding_top": PAD_TOP,
                "padding_bottom": PAD_BOTTOM, "stride_width": EX_STRIDE_W,
                "stride_height": EX_STRIDE_H, "filter_width": EX_FILTER_W,
                "filter_height": EX_FILTER_H, "activation": EX_ACTIVATION}
    return {"padding_scheme": SCHEME, "stride_width": IM_STRIDE_W, "stride_height": IM_STRIDE_H,
            "filter_width": IM_FILTER_W, "filter_height": IM_FILTER_H,
            "activation": IM_ACTIVATION}


@dataclass(frozen=True)
class PoolParams:
    """Explicit pooling geometry of one operation, in NHWC terms."""

    pad_left: int
    pad_right: int
    pad_top: int
    pad_bottom: int
    stride_w: int
    stride_h: int
    filter_w: int
    filter_h: int
    activation: int
    nchw: bool


def _value(ctx: OperationContext, slot: int, static: bool) -> int | None:
    if static:
        value = ctx.constant(slot)
        return None if value is None else int(value)
    return int(ctx.scalar(slot))


def check_params(ctx: OperationContext, *, static: bool) -> None:
    """Enforce NNAPI's rules on the scalar parameters.

    With ``static`` only constant parameters are checked (at ``finish``); otherwise every value
    is read (raising ``Unknown`` when one is not known yet).
    """
    slots = param_slots(ctx)
    values = {name: _value(ctx, slot, static) for name, slot in slots.items()}
    for name in ("stride_width", "stride_height", "filter_width", "filter_height"):
        v = values[name]
        if v is not None and v <= 0:
            ctx.fail(f"{name.replace('_', ' ')} must be positive, got {v}", input=slots[name])
    scheme = values.get("padding_scheme")
    if scheme is not None and scheme not in tuple(PaddingCode):
        ctx.fail(f"invalid padding scheme {scheme} (expected 1=SAME or 2=VALID)",
                 input=slots["padding_scheme"])
    activation = values["activation"]
    if activation is not None and not 0 <= activation <= 3:
        ctx.fail(f"invalid fused activation code {activation} (expected 0=NONE, 1=RELU, "
                 "2=RELU1, 3=RELU6)", input=slots["activation"])
    if not is_explicit(ctx):
        return
    for pad, filt in (("padding_left", "filter_width"), ("padding_right", "filter_width"),
                      ("padding_top", "filter_height"), ("padding_bottom", "filter_height")):
        p, f = values[pad], values[filt]
        if p is not None and p < 0:
            ctx.fail(f"{pad.replace('_', ' ')} must not be negative, got {p}", input=slots[pad])
        if p is not None and f is not None and f > 0 and p >= f:
            ctx.fail(f"{pad.replace('_', ' ')} {p} must be smaller than the "
                     f"{filt.replace('_', ' ')} {f}", input=slots[pad])


def read_params(ctx: OperationContext, shape: tuple[int, ...]) -> PoolParams:
    """The explicit geometry of the operation for a 4-D input of ``shape`` (in its layout).

    Raises ``Unknown`` when a parameter is not known yet; call :func:`check_params` first.
    """
    slot = layout_slot(ctx)
    nchw = False if ctx.is_omitted(slot) else bool(ctx.scalar(slot))
    if is_explicit(ctx):
        left, right, top, bottom, stride_w, stride_h, filter_w, filter_h, activation = (
            int(ctx.scalar(i)) for i in (PAD_LEFT, PAD_RIGHT, PAD_TOP, PAD_BOTTOM, EX_STRIDE_W,
                                         EX_STRIDE_H, EX_FILTER_W, EX_FILTER_H, EX_ACTIVATION))
        return PoolParams(left, right, top, bottom, stride_w, stride_h, filter_w, filter_h,
                          activation, nchw)
    height, width = (shape[2], shape[3]) if nchw else (shape[1], shape[2])
    scheme = int(ctx.scalar(SCHEME))
    stride_w, stride_h, filter_w, filter_h, activation = (
        int(ctx.scalar(i)) for i in (IM_STRIDE_W, IM_STRIDE_H, IM_FILTER_W, IM_FILTER_H,
                                     IM_ACTIVATION))
    left, right = implicit_padding(scheme, width, stride_w, filter_w)
    top, bottom = implicit_padding(scheme, height, stride_h, filter_h)
    return PoolParams(left, right, top, bottom, stride_w, stride_h, filter_w, filter_h,
                      activation, nchw)
