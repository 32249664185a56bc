"""Type conversions: CAST, QUANTIZE, DEQUANTIZE.

NNAPI signatures (one input tensor of rank ≥ 1, one output of the same shape):

* CAST: any combination of TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_INT32 and TENSOR_QUANT8_ASYMM
  for input and output; TENSOR_BOOL8, TENSOR_QUANT16_ASYMM, TENSOR_QUANT16_SYMM,
  TENSOR_QUANT8_ASYMM_SIGNED and TENSOR_QUANT8_SYMM only cast to the same type. Scale and zero
  point are ignored (quantised data is treated as plain integers). Float → integer conversion
  truncates toward zero (C++ ``static_cast``); a TENSOR_QUANT8_ASYMM output first clamps to
  [0, 255] as NNAPI does; nnrt saturates out-of-range values to the int32 range and maps NaN to
  0 (NNAPI leaves these undefined). An identity cast copies the values.
* QUANTIZE: TENSOR_FLOAT16 / TENSOR_FLOAT32 → TENSOR_QUANT8_ASYMM (_SIGNED) using the output's
  scale and zero point: ``clamp(round(x / scale) + zeroPoint)``; ``x / scale`` is computed in
  float32 as NNAPI does, ``round`` rounds half away from zero, NaN clamps to the maximum.
* DEQUANTIZE: TENSOR_QUANT8_ASYMM, TENSOR_QUANT8_ASYMM_SIGNED, TENSOR_QUANT8_SYMM or
  TENSOR_QUANT8_SYMM_PER_CHANNEL (rank ≤ 4) → TENSOR_FLOAT16 / TENSOR_FLOAT32:
  ``(q - zeroPoint) * scale`` with the per-channel scales along ``channel_dim`` where given,
  computed in float32 as NNAPI does (then rounded to float16 for a TENSOR_FLOAT16 output).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.model.operand import dtype_of
from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register

T = OperandType
Array = np.ndarray[Any, Any]

INPUT = 0

_FLOAT = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
#: CAST types convertible to each other.
_CAST_ANY = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM)
#: CAST types that only cast to themselves (feature level 4).
_CAST_IDENTITY = (T.TENSOR_BOOL8, T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT16_SYMM,
                  T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM)
_QUANT8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
_DEQUANT_INPUTS = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM,
                   T.TENSOR_QUANT8_SYMM_PER_CHANNEL)
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _same_shape(ctx: OperationContext) -> list[Shape]:
    return [ctx.shape(INPUT)]


@register(OperationType.CAST, inputs=("input",),
          kernel_types=frozenset((*_CAST_ANY, *_CAST_IDENTITY)))
class Cast:
    """CAST between tensor types (values converted, quantisation ignored)."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's CAST type matrix."""
        ctx.expect_counts(1, 1)
        t = ctx.expect_type(INPUT, *_CAST_ANY, *_CAST_IDENTITY)
        if t in _CAST_ANY:
            ctx.expect_output_type(0, *_CAST_ANY)
        else:
            ctx.expect_output_type(0, t)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Same shape as the input."""
        return _same_shape(ctx)

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Convert, truncating float → integer and saturating; returns the output dtype."""
        x = ctx.tensor(INPUT)
        dtype = ctx.output_dtype(0)
        if ctx.input_type(INPUT) == ctx.output_type(0):
            return [x.copy()]
        if dtype.kind in "iu":
            low, high = ((0, 255) if ctx.output_type(0) == T.TENSOR_QUANT8_ASYMM
                         else (_INT32_MIN, _INT32_MAX))
            v = np.clip(x.astype(np.float64), low, high)
            if x.dtype.kind == "f":
                v = np.where(np.isnan(v), 0.0, np.trunc(v))
            return [v.astype(dtype)]
        return [x.astype(dtype)]


@register(OperationType.QUANTIZE, inputs=("input",), kernel_types=frozenset(_FLOAT))
class Quantize:
    """QUANTIZE a float tensor with the output operand's scale and zero point."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """Float input, quant8 (signed or not) output."""
        ctx.expect_counts(1, 1)
        ctx.expect_type(INPUT, *_FLOAT)
        ctx.expect_output_type(0, *_QUANT8)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Same shape as the input."""
        return _same_shape(ctx)

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """``clamp(round_half_away(float32(x) / float32(scale)) + zeroPoint)``."""
        out = ctx.output_operand(0)
        dtype = dtype_of(out.type)
        info = np.iinfo(dtype)
        quotient = (ctx.tensor(INPUT).astype(np.float32) / np.float32(out.scale)).astype(
            np.float64)
        rounded = np.sign(quotient) * np.floor(np.abs(quotient) + 0.5)
        q = np.clip(rounded + out.zero_point, info.min, info.max)
        q = np.where(np.isnan(q), info.max, q)
        return [q.astype(dtype)]


@register(OperationType.DEQUANTIZE, inputs=("input",), kernel_types=frozenset(_DEQUANT_INPUTS))
class Dequantize:
    """DEQUANTIZE a quant8 tensor to float (per-tensor or per-channel scales)."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """Quant8 input of rank ≤ 4, float output."""
        ctx.expect_counts(1, 1)
        ctx.expect_type(INPUT, *_DEQUANT_INPUTS)
        ctx.expect_output_type(0, *_FLOAT)
        ctx.expect_rank_between(INPUT, 1, 4)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Same shape as the input."""
        shape = ctx.shape(INPUT)
        if len(shape) > 4:
            ctx.fail(f"expected rank between 1 and 4, got {len(shape)}", input=INPUT)
        return [shape]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """``(q - zeroPoint) * scale`` in float32, then the output's dtype."""
        operand = ctx.operand(INPUT)
        q = (ctx.tensor(INPUT).astype(np.int64) - operand.zero_point).astype(np.float32)
        quant = operand.channel_quant
        scales: Any
        if quant is None:
            scales = np.float32(operand.scale)
        else:
            shape = [1] * q.ndim
            shape[quant.channel_dim] = len(quant.scales)
            scales = np.asarray(quant.scales, dtype=np.float32).reshape(shape)
        return [(q * scales).astype(ctx.output_dtype(0))]
