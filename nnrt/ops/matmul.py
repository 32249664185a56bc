"""Matrix products: FULLY_CONNECTED and BATCH_MATMUL.

FULLY_CONNECTED (4 inputs): input (rank 2..4, flattened to ``[batch, input_size]`` where
``input_size`` is weights dim 1 and must divide the element count), weights
``[num_units, input_size]``, bias ``[num_units]`` (required), INT32 fused activation. Types:
TENSOR_FLOAT32 / TENSOR_FLOAT16 (weights, bias and output alike) or TENSOR_QUANT8_ASYMM(_SIGNED)
(weights alike, bias TENSOR_INT32 with scale input_scale * weights_scale and zero point 0).
Output ``[batch, num_units]`` of the input's type; the quantised variants accumulate
``(input - zero_point) * (weights - zero_point) + bias`` and rescale with the activation clamped
in the quantised domain, as NNAPI does (:mod:`nnrt.ops.conv_quant`).

BATCH_MATMUL (4 inputs): lhs, rhs (same type, same rank 2..4 — 2..6 with nnrt's
``com.nnrt.rank6`` extension —, same batch dimensions), adj_x,
adj_y (BOOL; NO_VALUE means false) transposing the last two dims of lhs / rhs. Types:
TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_INT32, TENSOR_QUANT8_ASYMM_SIGNED (NNAPI defines no
TENSOR_QUANT8_ASYMM variant). Output ``[..., r_o, c_o]`` of the inputs' type (``r_o`` = lhs
rows after adj_x, ``c_o`` = rhs columns after adj_y). The quantised product is NNAPI's:
``(lhs - zero_point) · (rhs - zero_point)`` in int32, rescaled by lhs_scale * rhs_scale /
output_scale and saturated to int8 (no activation).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nnrt.model.types import NNRT_MAX_RANK, FusedActivation, OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register
from nnrt.ops.conv_quant import centred, output_stage
from nnrt.ops.fused import apply_activation
from nnrt.ops.quant import is_quantized

T = OperandType
Array = np.ndarray[Any, Any]

_QUANT_TYPES = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)


@register(OperationType.FULLY_CONNECTED, inputs=("input", "weights", "bias", "activation"),
          kernel_types={T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, *_QUANT_TYPES})
class FullyConnected:
    """FULLY_CONNECTED: ``activation(reshape(input) @ weights.T + bias)``."""

    INPUT, WEIGHTS, BIAS, ACTIVATION = 0, 1, 2, 3

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """Check counts, types, quantisation of the bias, ranks and static shape relations."""
        c = FullyConnected
        ctx.expect_counts(4, 1)
        t = ctx.expect_type(c.INPUT, T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, *_QUANT_TYPES)
        ctx.expect_type(c.WEIGHTS, t)
        ctx.expect_type(c.BIAS, T.TENSOR_INT32 if t in _QUANT_TYPES else t)
        ctx.expect_activation(c.ACTIVATION)
        ctx.expect_output_like_input(0, c.INPUT)
        ctx.expect_rank_between(c.INPUT, 2, 4)
        ctx.expect_rank(c.WEIGHTS, 2)
        ctx.expect_rank(c.BIAS, 1)
        if t in _QUANT_TYPES:
            product = ctx.operand(c.INPUT).scale * ctx.operand(c.WEIGHTS).scale
            bias = ctx.operand(c.BIAS)
            if abs(bias.scale - product) > 1e-6 * min(bias.scale, product):
                ctx.fail(f"bias scale {bias.scale} must equal input scale x weights scale "
                         f"({product})", input=c.BIAS)
        weights, bias_dims = ctx.dims(c.WEIGHTS), ctx.dims(c.BIAS)
        if len(weights) == 2 and len(bias_dims) == 1 and weights[0] and bias_dims[0] \
                and weights[0] != bias_dims[0]:
            ctx.fail(f"bias length {bias_dims[0]} does not match num_units {weights[0]} "
                     "(weights dim 0)", input=c.BIAS)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """``[batch, num_units]`` with ``batch = input elements / input_size``."""
        c = FullyConnected
        shape, weights, bias = ctx.shape(c.INPUT), ctx.shape(c.WEIGHTS), ctx.shape(c.BIAS)
        if not 2 <= len(shape) <= 4:
            ctx.fail(f"expected rank between 2 and 4, got {len(shape)}", input=c.INPUT)
        if len(weights) != 2:
            ctx.fail(f"expected rank 2, got {len(weights)}", input=c.WEIGHTS)
        if len(bias) != 1:
            ctx.fail(f"expected rank 1, got {len(bias)}", input=c.BIAS)
        num_units, input_size = weights
        if num_units <= 0 or input_size <= 0:
            ctx.fail(f"num_units and input_size must be positive, got shape {weights}",
                     input=c.WEIGHTS)
        if bias[0] != num_units:
            ctx.fail(f"bias length {bias[0]} does not match num_units {num_units} "
                     "(weights dim 0)", input=c.BIAS)
        elements = math.prod(shape)
        if elements % input_size:
            ctx.fail(f"{elements} elements of shape {shape} cannot be split into rows of "
                     f"input_size {input_size} (weights dim 1)", input=c.INPUT)
        return [(elements // input_size, num_units)]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Float64 product plus bias (exact on centred integers), then the fused activation."""
        c = FullyConnected
        batch, _ = ctx.output_shapes[0]
        weights = centred(ctx, c.WEIGHTS)
        x = centred(ctx, c.INPUT).reshape(batch, weights.shape[1])
        result = x @ weights.T + ctx.tensor(c.BIAS).astype(np.float64)
        activation = ctx.scalar(c.ACTIVATION)
        if is_quantized(ctx.input_type(c.INPUT)):
            return [output_stage(ctx, result, activation)]
        return [apply_activation(result, activation)]


@register(OperationType.BATCH_MATMUL, inputs=("lhs", "rhs", "adj_x", "adj_y"),
          kernel_types={T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32,
                        T.TENSOR_QUANT8_ASYMM_SIGNED}, nnapi_max_rank=4)
class BatchMatmul:
    """BATCH_MATMUL: per-batch matrix products with optional transposes (adjoints)."""

    LHS, RHS, ADJ_X, ADJ_Y = 0, 1, 2, 3
    _TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM_SIGNED)

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """Check counts, matching tensor types, BOOL flags, ranks and the output type."""
        c = BatchMatmul
        ctx.expect_counts(4, 1)
        t = ctx.expect_type(c.LHS, *c._TYPES)
        ctx.expect_type(c.RHS, t)
        ctx.expect_optional_type(c.ADJ_X, T.BOOL)
        ctx.expect_optional_type(c.ADJ_Y, T.BOOL)
        ctx.expect_output_like_input(0, c.LHS)
        ctx.expect_rank_between(c.LHS, 2, NNRT_MAX_RANK)
        ctx.expect_rank_between(c.RHS, 2, NNRT_MAX_RANK)
        lhs_rank, rhs_rank = ctx.rank_or_none(c.LHS), ctx.rank_or_none(c.RHS)
        if lhs_rank is not None and rhs_rank is not None and lhs_rank != rhs_rank:
            ctx.fail(f"rank {rhs_rank} differs from the rank {lhs_rank} of input 0 (lhs)",
                     input=c.RHS)

    @staticmethod
    def _flag(ctx: OperationContext, i: int) -> bool:
        return False if ctx.is_omitted(i) else bool(ctx.scalar(i))

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """``lhs batch dims + [r_o, c_o]`` after checking ranks, batches and inner sizes."""
        c = BatchMatmul
        lhs, rhs = ctx.shape(c.LHS), ctx.shape(c.RHS)
        if not 2 <= len(lhs) <= NNRT_MAX_RANK:
            ctx.fail(f"expected rank between 2 and {NNRT_MAX_RANK}, got {len(lhs)}",
                     input=c.LHS)
        if len(rhs) != len(lhs):
            ctx.fail(f"rank {len(rhs)} differs from the rank {len(lhs)} of input 0 (lhs)",
                     input=c.RHS)
        if lhs[:-2] != rhs[:-2]:
            ctx.fail(f"batch dimensions {rhs[:-2]} differ from those of input 0 (lhs) "
                     f"{lhs[:-2]}", input=c.RHS)
        adj_x, adj_y = c._flag(ctx, c.ADJ_X), c._flag(ctx, c.ADJ_Y)
        rows, inner = (lhs[-1], lhs[-2]) if adj_x else (lhs[-2], lhs[-1])
        inner_r, cols = (rhs[-1], rhs[-2]) if adj_y else (rhs[-2], rhs[-1])
        if inner != inner_r:
            ctx.fail(f"cannot multiply: lhs {lhs} (adj_x={adj_x}) has {inner} columns, rhs "
                     f"{rhs} (adj_y={adj_y}) has {inner_r} rows", input=c.RHS)
        return [(*lhs[:-2], rows, cols)]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Float64 (or exact int64, wrapped to int32) batched product; quantised: rescaled."""
        c = BatchMatmul
        t = ctx.input_type(c.LHS)
        if t == T.TENSOR_INT32:
            a, b = ctx.tensor(c.LHS).astype(np.int64), ctx.tensor(c.RHS).astype(np.int64)
        else:
            a, b = centred(ctx, c.LHS), centred(ctx, c.RHS)
        if c._flag(ctx, c.ADJ_X):
            a = np.swapaxes(a, -1, -2)
        if c._flag(ctx, c.ADJ_Y):
            b = np.swapaxes(b, -1, -2)
        result = np.matmul(a, b)
        if t == T.TENSOR_INT32:
            return [result.astype(np.int32)]
        if is_quantized(t):
            return [output_stage(ctx, result, FusedActivation.NONE)]
        return [result]
