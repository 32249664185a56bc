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

Only the float kernels are implemented; quantised SOFTMAX validates but is unsupported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.model.operand import FLOAT_TENSOR_TYPES
from nnrt.model.types import NNRT_MAX_RANK, OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register
from nnrt.ops.activation import expect_output_quant, scalar_type_for

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


@register(OperationType.SOFTMAX, inputs=("input", "beta", "axis"),
          kernel_types=FLOAT_TENSOR_TYPES, nnapi_max_rank=4)
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
        """Numerically stable softmax in float64."""
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
