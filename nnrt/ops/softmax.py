"""SOFTMAX and LOG_SOFTMAX along one axis.

NNAPI signatures:

* SOFTMAX: input 0 a tensor of TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_QUANT8_ASYMM or
  TENSOR_QUANT8_ASYMM_SIGNED, rank 1..4 (1..6 with nnrt's ``com.nnrt.rank6`` extension);
  input 1 beta, a positive FLOAT16 scalar for
  TENSOR_FLOAT16 and FLOAT32 otherwise; input 2 an optional INT32 axis in ``[-n, n)``,
  default -1. Output of the input's type and shape; quantised outputs need scale 1/256 and
  zero point 0 (-128 signed).
  ``output = exp((x - max(x)) * beta) / sum(exp((x - max(x)) * beta))`` along the axis.
* LOG_SOFTMAX: input 0 TENSOR_FLOAT32 / TENSOR_FLOAT16 of rank ≥ 1; input 1 beta, a positive
  FLOAT32 / FLOAT16 scalar matching the tensor; input 2 a required INT32 axis in ``[-n, n)``.
  ``output = x * beta - log(sum(exp(x * beta)))`` along the axis.

Quantised SOFTMAX is NNAPI's fixed-point kernel (TFLite's), bit for bit: along the axis, each
input's difference from the maximum is scaled by the quantised multiplier of
``beta * scale * 2**26`` into FixedPoint<int32, 5> (differences beyond the radius that holds
give 0); gemmlowp's ``exp`` on negative values of those is summed in FixedPoint<int32, 12>, the
sum's reciprocal found by ``1 / (1 + x)`` on its normalised mantissa, and each ``exp`` times that
reciprocal shifted to the output's 1/256 steps (:mod:`nnrt.ops.fixed_point`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.model.operand import FLOAT_TENSOR_TYPES
from nnrt.model.types import NNRT_MAX_RANK, OperandType, OperationType
from nnrt.ops import fixed_point
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register
from nnrt.ops.activation import expect_output_quant, scalar_type_for
from nnrt.ops.quant import (
    INT32_MAX,
    is_quantized,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    rounding_divide_by_pot,
    saturate,
    saturating_rounding_doubling_high_mul,
)

__all__ = ["optional_axis", "validate_optional_axis"]

T = OperandType
Array = np.ndarray[Any, Any]

INPUT, BETA, AXIS = 0, 1, 2

_SOFTMAX_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM,
                  T.TENSOR_QUANT8_ASYMM_SIGNED)
_SOFTMAX_QUANT = (1.0 / 256, {T.TENSOR_QUANT8_ASYMM: 0, T.TENSOR_QUANT8_ASYMM_SIGNED: -128})


def _check_beta(ctx: OperationContext) -> None:
    """Beta must be positive (checked whenever its value is known)."""
    beta = ctx.constant(BETA)
    if beta is not None and not beta > 0:
        ctx.fail(f"beta must be positive, got {beta}", input=BETA)


def optional_axis(ctx: OperationContext, slot: int, rank: int) -> int:
    """The normalised value of the INT32 axis input ``slot`` (default -1 when omitted).

    Fails when the value is out of ``[-rank, rank)``. Shared with nnrt.ops.normalization.
    """
    if ctx.is_omitted(slot):
        return rank - 1
    axis = int(ctx.value(slot))
    if not -rank <= axis < rank:
        ctx.fail(f"axis {axis} is out of range for rank {rank} (expected [{-rank}, {rank}))",
                 input=slot)
    return axis % rank


def validate_optional_axis(ctx: OperationContext, slot: int, tensor: int = 0) -> None:
    """An optional INT32 axis ``slot``, in range for input ``tensor`` when both are known."""
    ctx.expect_optional_type(slot, T.INT32)
    if not ctx.is_omitted(slot):
        ctx.expect_axis(slot, ctx.rank_or_none(tensor))


def _prepare(ctx: OperationContext) -> list[Shape]:
    _check_beta(ctx)
    shape = ctx.shape(INPUT)
    optional_axis(ctx, AXIS, len(shape))
    return [shape]


def _shifted(ctx: ExecutionContext) -> tuple[Array, int]:
    """``(x - max(x)) * beta`` along the axis, and the axis."""
    x = ctx.tensor(INPUT).astype(np.float64)
    axis = optional_axis(ctx, AXIS, x.ndim)
    beta = float(ctx.scalar(BETA))
    return (x - np.max(x, axis=axis, keepdims=True)) * beta, axis


#: Integer bits of the scaled differences and of the sum of their exponentials.
_DIFF_INTEGER_BITS = 5
_SUM_INTEGER_BITS = 12


def _softmax_quant8(ctx: ExecutionContext) -> Array:
    """NNAPI's ``softmaxQuant8`` (see the module docstring)."""
    src, out = ctx.operand(INPUT), ctx.output_operand(0)
    q = ctx.tensor(INPUT)
    try:
        return softmax_quant8(q, optional_axis(ctx, AXIS, q.ndim), float(ctx.scalar(BETA)),
                              src.scale, out.zero_point, out.type)
    except ValueError as exc:
        ctx.fail(str(exc), input=BETA)
        raise


def softmax_quant8(q: Array, axis: int, beta: float, input_scale: float, output_zero_point: int,
                   output_type: OperandType) -> Array:
    """NNAPI's ``softmaxQuant8`` of the stored integers ``q`` along ``axis``; ``ValueError``
    when ``beta * input_scale`` is too small for its fixed-point arithmetic."""
    q = q.astype(np.int64)
    beta = float(np.float32(beta))
    real = min(beta * float(np.float32(input_scale)) * float(1 << (31 - _DIFF_INTEGER_BITS)),
               float(INT32_MAX))
    if not real > 1.0:
        raise ValueError(f"beta * input scale = {real / 2**26:g} is too small for NNAPI's "
                         "quantised kernel (it must exceed 2**-26)")
    multiplier, shift = quantize_multiplier(real)
    diff_min = -fixed_point.input_radius(_DIFF_INTEGER_BITS, shift)
    diff = q - np.max(q, axis=axis, keepdims=True)
    valid = diff >= diff_min
    scaled = multiply_by_quantized_multiplier(np.where(valid, diff, 0), multiplier, shift)
    exps = np.where(valid, fixed_point.exp_on_negative_values(scaled, _DIFF_INTEGER_BITS, 32), 0)
    total = fixed_point.wrap(np.sum(
        fixed_point.rescale(exps, 0, _SUM_INTEGER_BITS, 32), axis=axis, keepdims=True), 32)
    headroom_plus_one = fixed_point.count_leading_zeros(total)
    bits_over_unit = _SUM_INTEGER_BITS - headroom_plus_one
    shifted_minus_one = ((total << headroom_plus_one) & 0xFFFFFFFF) - (1 << 31)
    reciprocal = fixed_point.one_over_one_plus_x(shifted_minus_one, 32)
    y = rounding_divide_by_pot(saturating_rounding_doubling_high_mul(reciprocal, exps),
                               bits_over_unit + 31 - 8)
    y = np.where(valid, y + output_zero_point, output_zero_point)
    return saturate(y, output_type)


@register(OperationType.SOFTMAX, inputs=("input", "beta", "axis"),
          kernel_types=frozenset(_SOFTMAX_TYPES), nnapi_max_rank=4)
class Softmax:
    """SOFTMAX with a scaling factor beta and an optional axis."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """Types per slot, rank 1..6, constant axis range, fixed quantised output params."""
        ctx.expect_counts((2, 3), 1)
        t = ctx.expect_type(INPUT, *_SOFTMAX_TYPES)
        ctx.expect_scalar(BETA, scalar_type_for(t))
        validate_optional_axis(ctx, AXIS, INPUT)
        ctx.expect_output_like_input(0, INPUT)
        ctx.expect_rank_between(INPUT, 1, NNRT_MAX_RANK)
        expect_output_quant(ctx, 0, *_SOFTMAX_QUANT)
        _check_beta(ctx)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Same shape as the input (rank, beta and axis checked when known)."""
        ctx.expect_rank_between(INPUT, 1, NNRT_MAX_RANK)
        return _prepare(ctx)

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Numerically stable softmax in float64; NNAPI's fixed-point kernel when quantised."""
        if is_quantized(ctx.input_type(INPUT)):
            return [_softmax_quant8(ctx)]
        z, axis = _shifted(ctx)
        e = np.exp(z)
        return [e / np.sum(e, axis=axis, keepdims=True)]


@register(OperationType.LOG_SOFTMAX, inputs=("input", "beta", "axis"),
          kernel_types=FLOAT_TENSOR_TYPES)
class LogSoftmax:
    """LOG_SOFTMAX with a scaling factor beta and a required axis."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """Float tensor, matching float beta, INT32 axis in range when constant."""
        ctx.expect_counts(3, 1)
        t = ctx.expect_type(INPUT, T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
        ctx.expect_scalar(BETA, scalar_type_for(t))
        ctx.expect_axis(AXIS, ctx.rank_or_none(INPUT))
        ctx.expect_output_like_input(0, INPUT)
        _check_beta(ctx)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Same shape as the input (beta and axis checked when known)."""
        return _prepare(ctx)

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """``z - log(sum(exp(z)))`` with ``z = (x - max) * beta``."""
        z, axis = _shifted(ctx)
        return [z - np.log(np.sum(np.exp(z), axis=axis, keepdims=True))]
