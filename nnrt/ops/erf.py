"""The Gauss error function: com.nnrt.ERF (nnrt's extension, for ONNX ``Erf``).

Signature:

* com.nnrt.ERF: input 0 a TENSOR_FLOAT32 or TENSOR_FLOAT16 of any rank. Output 0 of the input's
  type and shape: ``erf(x) = 2 / sqrt(pi) * integral(exp(-t * t), t = 0 .. x)`` element-wise,
  so ``erf(±inf) = ±1`` and ``erf(NaN) = NaN``.

The reference kernel evaluates the C library's ``erf`` (``math.erf``) in float64 on every element
and rounds once to the output type, so it is exact to float32 rounding.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register

T = OperandType
Array = np.ndarray[Any, Any]

_FLOATS = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)


def _erf_float64(x: Array) -> Array:
    """``math.erf`` of every element of ``x``, as a float64 array of ``x``'s shape."""
    flat = np.asarray(x, np.float64).reshape(-1).tolist()
    return np.fromiter(map(math.erf, flat), np.float64, count=len(flat)).reshape(np.shape(x))


@register(OperationType.NNRT_ERF, inputs=("input",), kernel_types=frozenset(_FLOATS))
class Erf:
    """com.nnrt.ERF: the error function, element-wise."""

    INPUT = 0

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """One float tensor in, one tensor of its type out."""
        ctx.expect_counts(1, 1)
        ctx.expect_type(Erf.INPUT, *_FLOATS)
        ctx.expect_output_like_input(0, Erf.INPUT)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Same shape as the input."""
        return [ctx.shape(Erf.INPUT)]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """``math.erf`` in float64, rounded once to the output type."""
        return [_erf_float64(ctx.tensor(Erf.INPUT)).astype(ctx.output_dtype(0))]
