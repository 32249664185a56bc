"""The quantised arithmetic of the convolutions and matrix products, as NNAPI computes it.

NNAPI's CPU executor computes CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D, TRANSPOSE_CONV_2D,
FULLY_CONNECTED and BATCH_MATMUL on quantised tensors in three steps:

1. accumulate ``(input - input_zero_point) * (filter - filter_zero_point)`` in int32 (padding
   contributes nothing) and add the INT32 bias;
2. rescale by the real multiplier ``input_scale * filter_scale / output_scale`` — the product
   of the two float32 scales rounded to float32, the quotient in double (NNAPI's
   ``GetQuantizedConvolutionMultiplier``), one multiplier per output channel for a
   TENSOR_QUANT8_SYMM_PER_CHANNEL filter — turned into a quantised multiplier and applied with
   :func:`~nnrt.ops.quant.multiply_by_quantized_multiplier`;
3. add the output zero point and clamp to the fused activation's range in the quantised domain
   (:func:`~nnrt.ops.quant.activation_range`), which lies within the output type's range.

The kernels do step 1 on :func:`centred` float64 arrays: every product and partial sum is an
integer far below 2**53, so numpy's (BLAS) products are exact in any summation order, and fast.
:func:`output_stage` wraps the sum to int32 as the C accumulator does, then does steps 2 and 3.
Inputs 0 and 1 are the operands whose scales multiply in every one of these operations
(input / lhs and filter / weights / rhs).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from nnrt.ops._framework.context import ExecutionContext
from nnrt.ops.quant import (
    activation_range,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    saturate,
)

__all__ = ["centred", "channel_multipliers", "output_multipliers", "output_stage"]

Array = np.ndarray[Any, Any]

_LHS, _RHS = 0, 1


def centred(ctx: ExecutionContext, i: int) -> Array:
    """Input ``i`` as float64 minus its zero point (float and symmetric operands have 0).

    For a quantised operand these are the exact integers ``q - zero_point``.
    """
    return ctx.tensor(i).astype(np.float64) - ctx.operand(i).zero_point


def output_multipliers(ctx: ExecutionContext, channels: int) -> tuple[Array, Array]:
    """The quantised multipliers and shifts of the ``channels`` output channels.

    One per channel for a per-channel input 1 (its scales are per output channel), else one
    value repeated. Fails with ``BadData`` when a scale product leaves float32's range.
    """
    rhs = ctx.operand(_RHS)
    scales = (rhs.channel_quant.scales if rhs.channel_quant is not None
              else (rhs.scale,) * channels)
    if len(scales) != channels:
        ctx.fail(f"{len(scales)} per-channel scales for {channels} output channels",
                 input=_RHS)
    try:
        return channel_multipliers(ctx.operand(_LHS).scale, scales,
                                   ctx.output_operand(0).scale)
    except ValueError as exc:
        ctx.fail(str(exc), input=_RHS)
        raise  # ctx.fail raises


def channel_multipliers(input_scale: float, filter_scales: Sequence[float],
                        output_scale: float) -> tuple[Array, Array]:
    """The quantised multipliers and shifts of ``input_scale * filter_scale / output_scale``
    for each filter scale, computed as NNAPI does (the scale product in float32, the quotient
    in double); ``ValueError`` when one is not a positive finite number."""
    x_scale = np.float32(input_scale)
    y_scale = float(np.float32(output_scale))
    multipliers = np.empty(len(filter_scales), np.int64)
    shifts = np.empty(len(filter_scales), np.int64)
    with np.errstate(over="ignore"):
        for c, scale in enumerate(filter_scales):
            real = float(x_scale * np.float32(scale)) / y_scale
            if not math.isfinite(real) or real <= 0:
                raise ValueError(f"the rescaling factor input_scale * filter_scale / "
                                 f"output_scale = {real} is not a positive finite number")
            multipliers[c], shifts[c] = quantize_multiplier(real)
    return multipliers, shifts


def output_stage(ctx: ExecutionContext, acc: Array, activation: int) -> Array:
    """Steps 2 and 3 on the accumulator ``acc`` (bias included, output channels last).

    ``acc`` holds exact integers (float64 or int); it is wrapped to int32 first. Returns the
    output in its quantised dtype.
    """
    total = np.asarray(acc).astype(np.int64).astype(np.int32).astype(np.int64)
    multipliers, shifts = output_multipliers(ctx, total.shape[-1])
    out = ctx.output_operand(0)
    scaled = multiply_by_quantized_multiplier(total, multipliers, shifts) + out.zero_point
    low, high = activation_range(activation, out.scale, out.zero_point, out.type)
    return saturate(scaled, out.type, low, high)
