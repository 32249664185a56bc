"""The dims of a tensor at execution: com.nnrt.SHAPE (nnrt's extension, for ONNX ``Shape`` on
inputs whose dims are only known when the model runs).

Signature:

* com.nnrt.SHAPE: input 0 a tensor of any type and any rank ``r ≥ 1`` (TENSOR_FLOAT32,
  _FLOAT16, _INT32, _BOOL8 or a quantized tensor type). Output 0 a TENSOR_INT32 of shape
  ``[r]``: the input's dims, in order. Only the input's shape is read, never its values.

NNAPI has RANK but no operation returning the dims; a model whose input dims are unspecified
computes its shape arithmetic (ONNX's ``Shape -> Gather -> Concat -> Reshape``) from this
output. The output's shape is known once the input's rank is, so shape inference gives it at
``Model.finish()`` whenever the input's declared dims give the rank.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register

__all__ = ["ShapeOf"]

T = OperandType
Array = np.ndarray[Any, Any]

_TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_BOOL8,
          T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM,
          T.TENSOR_QUANT8_SYMM_PER_CHANNEL, T.TENSOR_QUANT16_SYMM, T.TENSOR_QUANT16_ASYMM)


@register(OperationType.NNRT_SHAPE, inputs=("input",), kernel_types=frozenset(_TYPES))
class ShapeOf:
    """com.nnrt.SHAPE: the input's dims as a rank-1 TENSOR_INT32."""

    INPUT = 0

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """One tensor in, one TENSOR_INT32 out."""
        ctx.expect_counts(1, 1)
        ctx.expect_type(ShapeOf.INPUT, *_TYPES)
        ctx.expect_output_type(0, T.TENSOR_INT32)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """``[rank]``, known as soon as the input's rank is (its dims need not be)."""
        rank = ctx.rank(ShapeOf.INPUT)
        if rank < 1:
            ctx.fail(f"expected rank of at least 1, got {rank}", input=ShapeOf.INPUT)
        return [(rank,)]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """The input array's shape, as int32."""
        return [np.asarray(ctx.shape(ShapeOf.INPUT), np.int32).reshape(-1)]
