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

Quantised kernels (TENSOR_QUANT8_ASYMM and _SIGNED) are NNAPI's CPU executor's, bit for bit:

* RELU / RELU1 / RELU6: a clamp in the quantised domain to the activation's range for the
  input's scale and zero point (:func:`nnrt.ops.quant.activation_range`).
* LOGISTIC / TANH: the input, offset by its zero point, is scaled by the quantised multiplier of
  ``scale * 2**27`` into gemmlowp's FixedPoint<int32, 4>; inputs beyond the radius that
  representation holds saturate to the type's extremes, the others go through gemmlowp's
  fixed-point ``logistic`` / ``tanh`` (:mod:`nnrt.ops.fixed_point`) and a rounding shift to the
  fixed output quantisation. No float is involved.
* HARD_SWISH: TFLite's 16-bit fixed-point kernel (NNAPI 1.3): the input on a scale 128 times
  finer, a "relu-ish" factor in [0, 1] from a saturating rescale of ``x`` to [-3, 3], products
  by int16 doubling high multiplies, then the output multiplier's shift and zero point.
* PRELU: ``x >= 0 ? x * (scale / output_scale) : x * alpha * (scale * alpha_scale /
  output_scale)`` on the offset integers through two quantised multipliers (the first computed
  in float32, as NNAPI does), plus the output zero point, saturated.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nnrt.model.types import NNRT_MAX_RANK, FusedActivation, OperandType, OperationType
from nnrt.ops import fixed_point
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import OperationDef, Shape, add_definition, register
from nnrt.ops.quant import (
    activation_range,
    is_quantized,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    rounding_divide_by_pot,
    saturate,
)
from nnrt.ops.shapes import broadcast_shapes

__all__ = ["expect_output_quant", "scalar_type_for"]

T = OperandType
Array = np.ndarray[Any, Any]

INPUT, ALPHA = 0, 1

QUANT8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, *QUANT8)
_FLOAT_TYPES = frozenset({T.TENSOR_FLOAT32, T.TENSOR_FLOAT16})


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
    if is_quantized(ctx.input_type(INPUT)):
        return [_QUANT_KERNELS[ctx.op_type](ctx, ctx.tensor(INPUT).astype(np.int64))]
    x = ctx.tensor(INPUT).astype(np.float64)
    return [np.asarray(_KERNELS[ctx.op_type](x))]


# -- the quantised kernels ----------------------------------------------------------------------

_RELU_CODES = {OperationType.RELU: FusedActivation.RELU,
               OperationType.RELU1: FusedActivation.RELU1,
               OperationType.RELU6: FusedActivation.RELU6}
#: Integer bits of the fixed-point input of LOGISTIC and TANH (FixedPoint<int32, 4>).
_INPUT_INTEGER_BITS = 4


def _relu_quant8(ctx: ExecutionContext, q: Array) -> Array:
    src = ctx.operand(INPUT)
    low, high = activation_range(_RELU_CODES[ctx.op_type], src.scale, src.zero_point, src.type)
    return saturate(q, src.type, low, high)


def _fixed_point_input(ctx: ExecutionContext, q: Array) -> tuple[Array, Array, int]:
    """The offset input ``x`` and, where ``|x|`` is below the radius, ``x`` rescaled to
    FixedPoint<int32, 4> (NNAPI's ``QuantizeMultiplierGreaterThanOne(scale * 2**27)``)."""
    src = ctx.operand(INPUT)
    real = float(np.float32(src.scale)) * float(1 << (31 - _INPUT_INTEGER_BITS))
    if not real > 1.0:
        ctx.fail(f"input scale {src.scale:g} is too small for NNAPI's fixed-point kernel "
                 "(scale * 2**27 must exceed 1)", input=INPUT)
    multiplier, shift = quantize_multiplier(real)
    radius = fixed_point.input_radius(_INPUT_INTEGER_BITS, shift)
    x = q - src.zero_point
    inside = np.abs(x) < radius
    rescaled = multiply_by_quantized_multiplier(np.where(inside, x, 0), multiplier, shift)
    return x, rescaled, radius


def _logistic_quant8(ctx: ExecutionContext, q: Array) -> Array:
    x, rescaled, radius = _fixed_point_input(ctx, q)
    y = rounding_divide_by_pot(fixed_point.logistic(rescaled, _INPUT_INTEGER_BITS, 32), 23)
    y = np.where(x <= -radius, 0, np.where(x >= radius, 256, y))  # in units of 1/256
    out = ctx.output_operand(0)
    return saturate(y + out.zero_point, out.type)


def _tanh_quant8(ctx: ExecutionContext, q: Array) -> Array:
    x, rescaled, radius = _fixed_point_input(ctx, q)
    y = rounding_divide_by_pot(fixed_point.tanh(rescaled, _INPUT_INTEGER_BITS, 32), 24)
    y = np.where(x <= -radius, -128, np.where(x >= radius, 128, y))  # in units of 1/128
    out = ctx.output_operand(0)
    return saturate(y + out.zero_point, out.type)


def _hard_swish_quant8(ctx: ExecutionContext, q: Array) -> Array:
    """TFLite's ``reference_ops::HardSwish`` with NNAPI's parameters (see the module doc)."""
    src, out = ctx.operand(INPUT), ctx.output_operand(0)
    hires_input_scale = np.float32(1.0 / 128.0) * np.float32(src.scale)  # float32 throughout
    output_multiplier = hires_input_scale / np.float32(out.scale)
    reluish_multiplier = hires_input_scale / (np.float32(3.0) / np.float32(32768.0))
    out_m, out_exp = _int16_multiplier(float(output_multiplier))
    if out_exp > 0:
        ctx.fail(f"output scale {out.scale:g} is too small for NNAPI's HARD_SWISH kernel "
                 "(input scale / 128 / output scale must be below 1)", output=0)
    reluish_m, reluish_exp = _int16_multiplier(float(reluish_multiplier))
    hires = (q - src.zero_point) * 128
    preshift_output = fixed_point.mul(hires, out_m, 16)
    reluish = hires
    if reluish_exp > 0:  # shift left by all but one bit, saturating, before the multiply
        reluish = np.clip(reluish << (reluish_exp - 1), -(2**15), 2**15 - 1)
    reluish = fixed_point.mul(reluish, reluish_m, 16)
    if reluish_exp > 0:
        reluish = np.clip(reluish << 1, -(2**15), 2**15 - 1)
    elif reluish_exp < 0:
        reluish = _rounding_divide_by_pot16(reluish, -reluish_exp)
    reluish = (reluish + (1 << 15)) >> 1  # from [-1, 1] to [0, 1]
    result = _rounding_divide_by_pot16(_doubling_high_mul16(reluish, preshift_output), -out_exp)
    return saturate(fixed_point.wrap(result + out.zero_point, 16), out.type)


def _int16_multiplier(real: float) -> tuple[int, int]:
    """``QuantizeMultiplier`` then TFLite's ``DownScaleInt32ToInt16Multiplier``."""
    m32, exponent = quantize_multiplier(real)
    if m32 >= 2**31 - 1 - (1 << 15):
        return 2**15 - 1, exponent
    return (m32 + (1 << 15)) >> 16, exponent


def _doubling_high_mul16(a: Array, b: Array) -> Array:
    """TFLite's ``SaturatingDoublingHighMul`` on int16 (HARD_SWISH's own): ``a * b / 2**15``
    truncated toward zero, without the rounding nudge of :func:`nnrt.ops.fixed_point.mul`."""
    ab = a * b
    high = np.where(ab >= 0, ab >> 15, -((-ab) >> 15))
    overflow = (a == b) & (a == -(2**15))
    return np.where(overflow, 2**15 - 1, fixed_point.wrap(high, 16))


def _rounding_divide_by_pot16(x: Array, exponent: int) -> Array:
    """gemmlowp's ``RoundingDivideByPOT`` on int16: the mask wraps to int16 too, so from 16
    bits on it differs from :func:`nnrt.ops.quant.rounding_divide_by_pot`."""
    mask = int(fixed_point.wrap((1 << exponent) - 1, 16))
    threshold = (mask >> 1) + (x < 0)
    return fixed_point.wrap((x >> exponent) + ((x & mask) > threshold), 16)


_QUANT_KERNELS: dict[OperationType, Callable[[ExecutionContext, Array], Array]] = {
    OperationType.RELU: _relu_quant8,
    OperationType.RELU1: _relu_quant8,
    OperationType.RELU6: _relu_quant8,
    OperationType.LOGISTIC: _logistic_quant8,
    OperationType.TANH: _tanh_quant8,
    OperationType.HARD_SWISH: _hard_swish_quant8,
}

for _op in _KERNELS:
    add_definition(OperationDef(
        type=_op, validate=_validate_unary, prepare=_prepare_unary, execute=_execute_unary,
        inputs=("input",), kernel_types=frozenset(_TYPES),
        nnapi_max_rank=None if _op == OperationType.HARD_SWISH else 4,
    ))


# -- ELU ----------------------------------------------------------------------------------------

@register(OperationType.ELU, inputs=("input", "alpha"), kernel_types=_FLOAT_TYPES)
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

@register(OperationType.PRELU, inputs=("input", "alpha"), kernel_types=frozenset(_TYPES))
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
        if is_quantized(ctx.input_type(INPUT)):
            return [PRelu._execute_quant8(ctx)]
        x = ctx.tensor(INPUT).astype(np.float64)
        alpha = ctx.tensor(ALPHA).astype(np.float64)
        return [np.where(x >= 0, x, x * alpha)]

    @staticmethod
    def _execute_quant8(ctx: ExecutionContext) -> Array:
        """NNAPI's PRELU ``evalQuant8``: a quantised multiplier for each sign of the input."""
        src, alpha_op, out = ctx.operand(INPUT), ctx.operand(ALPHA), ctx.output_operand(0)
        s_in, s_alpha, s_out = (np.float32(o.scale) for o in (src, alpha_op, out))
        m_pos, shift_pos = quantize_multiplier(float(s_in / s_out))  # float32 division
        m_neg, shift_neg = quantize_multiplier(float(s_in * s_alpha) / float(s_out))
        x = ctx.tensor(INPUT).astype(np.int64) - src.zero_point
        alpha = ctx.tensor(ALPHA).astype(np.int64) - alpha_op.zero_point
        x, alpha = np.broadcast_arrays(x, alpha)
        positive = multiply_by_quantized_multiplier(x, m_pos, shift_pos)
        negative = multiply_by_quantized_multiplier(x * alpha, m_neg, shift_neg)
        return saturate(np.where(x >= 0, positive, negative) + out.zero_point, out.type)
