"""Normalisations: L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION, INSTANCE_NORMALIZATION.

NNAPI signatures:

* L2_NORMALIZATION: input 0 a tensor of TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_QUANT8_ASYMM or
  TENSOR_QUANT8_ASYMM_SIGNED, rank 1..4; input 1 an optional INT32 axis in ``[-n, n)``, default
  -1. Output of the input's type and shape; quantised outputs need scale 1/128 and zero point
  128 (0 signed). ``output = x / max(sqrt(sum(x * x)), 1e-6)`` along the axis, so an all-zero
  slice gives zeros (NNAPI feature level 4 behaviour).
* LOCAL_RESPONSE_NORMALIZATION: input 0 TENSOR_FLOAT32 / TENSOR_FLOAT16 of rank 1..4; input 1
  an INT32 radius ≥ 0; inputs 2, 3, 4 bias, alpha and beta, FLOAT32 / FLOAT16
  scalars matching the tensor; input 5 an optional INT32 axis in ``[-n, n)``, default -1.
  ``output = x / (bias + alpha * sum(x[d - r .. d + r] ** 2)) ** beta`` along the axis.
* INSTANCE_NORMALIZATION: input 0 a 4-D TENSOR_FLOAT32 / TENSOR_FLOAT16; inputs 1, 2, 3 gamma,
  beta and epsilon, FLOAT32 / FLOAT16 scalars matching the tensor; input 4 a BOOL layout (true:
  NCHW). ``output = (x - mean) * gamma / sqrt(var + epsilon) + beta`` with mean and (population)
  variance over the spatial dimensions of each batch and channel.

Quantised L2_NORMALIZATION is NNAPI's integer kernel, bit for bit: the sum of the squared
offset inputs along the axis (int32) gives TFLite's fixed-point inverse square root multiplier
(:func:`nnrt.ops.fixed_point.inv_sqrt_quantized_multiplier`), which scales each offset input
times 128 to the output's 1/128 steps. TENSOR_QUANT8_ASYMM_SIGNED along the last axis uses
TFLite's int8 kernel, which folds the 128 into the shift instead (NNAPI runs that one there) —
the two may differ by one step. An all-zero slice gives zeros.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.model.operand import FLOAT_TENSOR_TYPES
from nnrt.model.types import OperandType, OperationType
from nnrt.ops import fixed_point
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register
from nnrt.ops.activation import expect_output_quant, scalar_type_for
from nnrt.ops.quant import is_quantized, multiply_by_quantized_multiplier, saturate
from nnrt.ops.softmax import optional_axis, validate_optional_axis

T = OperandType
Array = np.ndarray[Any, Any]

_FLOAT = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
_L2_TYPES = (*_FLOAT, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
_L2_QUANT = (1.0 / 128, {T.TENSOR_QUANT8_ASYMM: 128, T.TENSOR_QUANT8_ASYMM_SIGNED: 0})
_L2_EPSILON = 1e-6


@register(OperationType.L2_NORMALIZATION, inputs=("input", "axis"),
          kernel_types=frozenset(_L2_TYPES))
class L2Normalization:
    """L2_NORMALIZATION along one axis."""

    INPUT, AXIS = 0, 1

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """Types, rank 1..4, constant axis range, fixed quantised output params."""
        ctx.expect_counts((1, 2), 1)
        ctx.expect_type(L2Normalization.INPUT, *_L2_TYPES)
        validate_optional_axis(ctx, L2Normalization.AXIS)
        ctx.expect_output_like_input(0, L2Normalization.INPUT)
        ctx.expect_rank_between(L2Normalization.INPUT, 1, 4)
        expect_output_quant(ctx, 0, *_L2_QUANT)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Same shape as the input (axis checked when known)."""
        shape = ctx.shape(L2Normalization.INPUT)
        optional_axis(ctx, L2Normalization.AXIS, len(shape))
        return [shape]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """``x / max(||x||, 1e-6)`` along the axis (the integer kernel when quantised)."""
        x = ctx.tensor(L2Normalization.INPUT).astype(np.float64)
        axis = optional_axis(ctx, L2Normalization.AXIS, x.ndim)
        if is_quantized(ctx.input_type(L2Normalization.INPUT)):
            return [L2Normalization._execute_quant8(ctx, axis)]
        norm = np.sqrt(np.sum(x * x, axis=axis, keepdims=True))
        return [x / np.maximum(norm, _L2_EPSILON)]

    @staticmethod
    def _execute_quant8(ctx: ExecutionContext, axis: int) -> Array:
        src, out = ctx.operand(L2Normalization.INPUT), ctx.output_operand(0)
        x = ctx.tensor(L2Normalization.INPUT).astype(np.int64) - src.zero_point
        square_sum = fixed_point.wrap(np.sum(x * x, axis=axis, keepdims=True), 32)
        multiplier, shift = fixed_point.inv_sqrt_quantized_multiplier(square_sum)
        if src.type == T.TENSOR_QUANT8_ASYMM_SIGNED and axis == x.ndim - 1:
            y = multiply_by_quantized_multiplier(x, multiplier, shift + 7)
        else:
            y = multiply_by_quantized_multiplier(x * 128, multiplier, shift)
        return saturate(y + out.zero_point, out.type)


@register(OperationType.LOCAL_RESPONSE_NORMALIZATION,
          inputs=("input", "radius", "bias", "alpha", "beta", "axis"),
          kernel_types=FLOAT_TENSOR_TYPES)
class LocalResponseNormalization:
    """LOCAL_RESPONSE_NORMALIZATION over a window of ``2 * radius + 1`` along one axis."""

    INPUT, RADIUS, BIAS, ALPHA, BETA, AXIS = 0, 1, 2, 3, 4, 5

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """Types per slot, rank 1..4, radius ≥ 0 / axis range when constant."""
        cls = LocalResponseNormalization
        ctx.expect_counts((5, 6), 1)
        t = ctx.expect_type(cls.INPUT, *_FLOAT)
        ctx.expect_scalar(cls.RADIUS, T.INT32)
        for slot in (cls.BIAS, cls.ALPHA, cls.BETA):
            ctx.expect_scalar(slot, scalar_type_for(t))
        validate_optional_axis(ctx, cls.AXIS)
        ctx.expect_output_like_input(0, cls.INPUT)
        ctx.expect_rank_between(cls.INPUT, 1, 4)
        cls._check_params(ctx)

    @staticmethod
    def _check_params(ctx: OperationContext) -> None:
        cls = LocalResponseNormalization
        radius = ctx.constant(cls.RADIUS)
        if radius is not None and radius < 0:
            ctx.fail(f"radius must be non-negative, got {radius}", input=cls.RADIUS)
        # NNAPI's operation reference says bias "must not be zero", but its CPU implementation
        # does not check it and its CTS (local_response_normalization_v1_2.mod.py TEST 1) runs
        # bias 0, so a zero bias is accepted (x / (alpha * sum) ** beta).

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Same shape as the input (parameters checked when known)."""
        cls = LocalResponseNormalization
        cls._check_params(ctx)
        shape = ctx.shape(cls.INPUT)
        optional_axis(ctx, cls.AXIS, len(shape))
        return [shape]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Windowed sum of squares via a cumulative sum along the axis."""
        cls = LocalResponseNormalization
        x = ctx.tensor(cls.INPUT).astype(np.float64)
        axis = optional_axis(ctx, cls.AXIS, x.ndim)
        radius = int(ctx.scalar(cls.RADIUS))
        bias, alpha, beta = (float(ctx.scalar(s)) for s in (cls.BIAS, cls.ALPHA, cls.BETA))
        moved = np.moveaxis(x, axis, -1)
        n = moved.shape[-1]
        cumsum = np.concatenate([np.zeros((*moved.shape[:-1], 1)),
                                 np.cumsum(moved * moved, axis=-1)], axis=-1)
        index = np.arange(n)
        hi = np.minimum(index + radius + 1, n)
        lo = np.maximum(index - radius, 0)
        sqr_sum = cumsum[..., hi] - cumsum[..., lo]
        result = moved * np.power(bias + alpha * sqr_sum, -beta)
        return [np.moveaxis(result, -1, axis)]


@register(OperationType.INSTANCE_NORMALIZATION,
          inputs=("input", "gamma", "beta", "epsilon", "layout"),
          kernel_types=FLOAT_TENSOR_TYPES)
class InstanceNormalization:
    """INSTANCE_NORMALIZATION of each (batch, channel) plane of a 4-D tensor."""

    INPUT, GAMMA, BETA, EPSILON, LAYOUT = 0, 1, 2, 3, 4

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """4-D float tensor, matching float scalars, BOOL layout."""
        cls = InstanceNormalization
        ctx.expect_counts(5, 1)
        t = ctx.expect_type(cls.INPUT, *_FLOAT)
        for slot in (cls.GAMMA, cls.BETA, cls.EPSILON):
            ctx.expect_scalar(slot, scalar_type_for(t))
        ctx.expect_scalar(cls.LAYOUT, T.BOOL)
        ctx.expect_output_like_input(0, cls.INPUT)
        ctx.expect_rank(cls.INPUT, 4)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Same shape as the input."""
        shape = ctx.shape(InstanceNormalization.INPUT)
        if len(shape) != 4:
            ctx.fail(f"expected rank 4, got {len(shape)}", input=InstanceNormalization.INPUT)
        return [shape]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Normalise over H and W (axes 1, 2 in NHWC; 2, 3 in NCHW)."""
        cls = InstanceNormalization
        x = ctx.tensor(cls.INPUT).astype(np.float64)
        gamma, beta, epsilon = (float(ctx.scalar(s))
                                for s in (cls.GAMMA, cls.BETA, cls.EPSILON))
        spatial = (2, 3) if ctx.scalar(cls.LAYOUT) else (1, 2)
        mean = np.mean(x, axis=spatial, keepdims=True)
        var = np.mean((x - mean) ** 2, axis=spatial, keepdims=True)
        return [(x - mean) * gamma / np.sqrt(var + epsilon) + beta]
