"""Element-wise activations: RELU, RELU1, RELU6, LOGISTIC, TANH, HARD_SWISH, ELU, PRELU.

NNAPI signatures:

* RELU / RELU1 / RELU6 / LOGISTIC / TANH: input 0 a tensor of TENSOR_FLOAT32, TENSOR_FLOAT16,
  TENSOR_QUANT8_ASYMM or TENSOR_QUANT8_ASYMM_SIGNED, rank ≤ 4 (≤ 6 with nnrt's
  ``com.nnrt.rank6`` extension); output 0 of the same type and
  shape. Quantised outputs: RELU* keep the input's scale and zero point; LOGISTIC needs scale
  1/256 and zero point 0 (-128 signed); TANH needs scale 1/128 and zero point 128 (0 signed).
* HARD_SWISH: as above but any rank; quantised output scale / zero point are free.
  ``output = x * relu6(x + 3) / 6``.
* ELU: input 0 TENSOR_FLOAT32 / TENSOR_FLOAT16, input 1 alpha, a FLOAT32 / FLOAT16 scalar
  matching the tensor; ``output = x < 0 ? alpha * (exp(x) - 1) : x``.
* PRELU: input 0 and input 1 (alpha) tensors of the same type (float or quant8), broadcastable;
  output of that type and the broadcast shape; ``output = x < 0 ? alpha * x : x``.

Only the float kernels are implemented; quantised variants validate but are unsupported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nnrt.model.operand import FLOAT_TENSOR_TYPES
from nnrt.model.types import NNRT_MAX_RANK, OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import OperationDef, Shape, add_definition, register
from nnrt.ops.shapes import broadcast_shapes

__all__ = ["expect_output_quant", "scalar_type_for"]

T = OperandType
Array = np.ndarray[Any, Any]

INPUT, ALPHA = 0, 1

QUANT8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, *QUANT8)


def scalar_type_for(tensor_type: OperandType) -> OperandType:
    """The float scalar type NNAPI pairs with a tensor type (FLOAT16 for TENSOR_FLOAT16)."""
    return T.FLOAT16 if tensor_type == T.TENSOR_FLOAT16 else T.FLOAT32


def expect_output_quant(ctx: OperationContext, j: int, scale: float, zero_points: dict[
        OperandType, int]) -> None:
    """For a quant8 output ``j``, require NNAPI's fixed ``scale`` and per-type zero point."""
    operand = ctx.output_operand(j)
    zero_point = zero_points.get(operand.type)
    if zero_point is None:
        return
    if operand.scale != scale or operand.zero_point != zero_point:
        ctx.fail(f"{operand.type.name} output needs scale {scale:g} and zero point {zero_point}, "
                 f"got scale {operand.scale:g} and zero point {operand.zero_point}", output=j)




# -- RELU, RELU1, RELU6, LOGISTIC, TANH, HARD_SWISH -------------------------------------------

_KERNELS: dict[OperationType, Callable[[Array], Array]] = {
    OperationType.RELU: lambda x: np.maximum(x, 0.0),
    OperationType.RELU1: lambda x: np.clip(x, -1.0, 1.0),
    OperationType.RELU6: lambda x: np.clip(x, 0.0, 6.0),
    OperationType.LOGISTIC: lambda x: 1.0 / (1.0 + np.exp(-x)),
    OperationType.TANH: np.tanh,
    OperationType.HARD_SWISH: lambda x: x * np.clip(x + 3.0, 0.0, 6.0) / 6.0,
}

#: Fixed output quantisation (scale, zero point per type) of LOGISTIC and TANH.
_FIXED_QUANT: dict[OperationType, tuple[float, dict[OperandType, int]]] = {
    OperationType.LOGISTIC: (1.0 / 256, {T.TENSOR_QUANT8_ASYMM: 0,
                                         T.TENSOR_QUANT8_ASYMM_SIGNED: -128}),
    OperationType.TANH: (1.0 / 128, {T.TENSOR_QUANT8_ASYMM: 128,
                                      T.TENSOR_QUANT8_ASYMM_SIGNED: 0}),
}


def _validate_unary(ctx: OperationContext) -> None:
    ctx.expect_counts(1, 1)
    ctx.expect_type(INPUT, *_TYPES)
    ctx.expect_output_like_input(0, INPUT)
    if ctx.op_type == OperationType.HARD_SWISH:
        return  # any rank; quantised output scale and zero point are free
    ctx.expect_rank_between(INPUT, 1, NNRT_MAX_RANK)
    fixed = _FIXED_QUANT.get(ctx.op_type)
    if fixed is not None:
        expect_output_quant(ctx, 0, *fixed)
    else:
        ctx.expect_output_quant_like_input()


def _prepare_unary(ctx: OperationContext) -> list[Shape]:
    return [ctx.shape(INPUT)]


def _execute_unary(ctx: ExecutionContext) -> list[Array]:
    x = ctx.tensor(INPUT).astype(np.float64)
    return [np.asarray(_KERNELS[ctx.op_type](x))]


for _op in _KERNELS:
    add_definition(OperationDef(
        type=_op, validate=_validate_unary, prepare=_prepare_unary, execute=_execute_unary,
        inputs=("input",), kernel_types=FLOAT_TENSOR_TYPES,
        nnapi_max_rank=None if _op == OperationType.HARD_SWISH else 4,
    ))


# -- ELU ----------------------------------------------------------------------------------------

@register(OperationType.ELU, inputs=("input", "alpha"), kernel_types=FLOAT_TENSOR_TYPES)
class Elu:
    """ELU: exponential linear unit with a scalar ``alpha``."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """Float tensor of rank ≥ 1 and a matching float scalar alpha."""
        ctx.expect_counts(2, 1)
        t = ctx.expect_type(INPUT, T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
        ctx.expect_scalar(ALPHA, scalar_type_for(t))
        ctx.expect_output_like_input(0, INPUT)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Same shape as the input."""
        return [ctx.shape(INPUT)]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """``x < 0 ? alpha * (exp(x) - 1) : x``."""
        x = ctx.tensor(INPUT).astype(np.float64)
        alpha = float(ctx.scalar(ALPHA))
        return [np.where(x < 0, alpha * np.expm1(np.minimum(x, 0.0)), x)]


# -- PRELU --------------------------------------------------------------------------------------

@register(OperationType.PRELU, inputs=("input", "alpha"), kernel_types=FLOAT_TENSOR_TYPES)
class PRelu:
    """PRELU: leaky ReLU with a broadcast tensor ``alpha``."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """Input and alpha of one float / quant8 type; output of that type."""
        ctx.expect_counts(2, 1)
        ctx.expect_type(INPUT, *_TYPES)
        ctx.expect_type(ALPHA, *_TYPES)
        ctx.expect_same_type(ALPHA, INPUT)
        ctx.expect_output_like_input(0, INPUT)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """The broadcast shape of input and alpha."""
        return [broadcast_shapes(ctx, ctx.shape(INPUT), ctx.shape(ALPHA))]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """``x >= 0 ? x : alpha * x`` with broadcasting."""
        x = ctx.tensor(INPUT).astype(np.float64)
        alpha = ctx.tensor(ALPHA).astype(np.float64)
        return [np.where(x >= 0, x, x * alpha)]
