"""Rules shared by the shape, joining and padding families (``reshape``, ``tensor``, ``pad``).

Several of these operations take their shape parameters as 1-D / 2-D TENSOR_INT32 operands that
may be constants (checked at ``finish()``) or model inputs (checked before each execution), and
most require a quantised output to keep the input's scale and zero point. The helpers here keep
those checks identical across the modules.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.model.types import OperandType
from nnrt.ops.context import OperationContext
from nnrt.ops.registry import Shape

__all__ = [
    "DATA_TYPES",
    "DATA_TYPES_INT",
    "FLOAT_INT_KERNELS",
    "FLOAT_KERNELS",
    "QUANT8",
    "Array",
    "check_rank",
    "const_ints",
    "expect_int_vector",
    "expect_output_like",
    "int_matrix",
    "int_vector",
]

T = OperandType
Array = np.ndarray[Any, Any]

QUANT8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
#: The operand types NNAPI lists for most data-movement operations.
DATA_TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, *QUANT8)
#: ``DATA_TYPES`` plus TENSOR_INT32 (EXPAND_DIMS, SPLIT, TILE, PACK, MIRROR_PAD, REVERSE).
DATA_TYPES_INT = (*DATA_TYPES, T.TENSOR_INT32)
FLOAT_KERNELS = frozenset({T.TENSOR_FLOAT32, T.TENSOR_FLOAT16})
FLOAT_INT_KERNELS = FLOAT_KERNELS | {T.TENSOR_INT32}




def expect_output_like(ctx: OperationContext, j: int = 0, i: int = 0) -> None:
    """Require output ``j`` to have input ``i``'s type and, when quantised, scale and zero point."""
    ctx.expect_output_like_input(j, i)
    ctx.expect_output_quant_like_input(j, i)


def expect_int_vector(ctx: OperationContext, i: int, length: int | None = None) -> None:
    """Require input ``i`` to be a 1-D TENSOR_INT32 (of ``length`` elements, when both known)."""
    ctx.expect_type(i, T.TENSOR_INT32)
    ctx.expect_rank(i, 1)
    dims = ctx.dims(i)
    if length is not None and dims and dims[0] and dims[0] != length:
        noun = "element" if length == 1 else "elements"
        ctx.fail(f"expected {length} {noun}, got {dims[0]}", input=i)


def const_ints(ctx: OperationContext, i: int) -> list[int] | None:
    """The elements of tensor input ``i`` as Python ints if its value is known now, else None."""
    value = ctx.constant(i)
    if value is None:
        return None
    return [int(v) for v in np.asarray(value).reshape(-1)]


def int_vector(ctx: OperationContext, i: int) -> list[int]:
    """The value of 1-D TENSOR_INT32 input ``i`` (raises ``Unknown`` when not known yet)."""
    shape = ctx.shape(i)
    if len(shape) != 1:
        ctx.fail(f"expected rank 1, got {len(shape)}", input=i)
    return [int(v) for v in np.asarray(ctx.value(i)).reshape(-1)]


def int_matrix(ctx: OperationContext, i: int, rows: int) -> list[tuple[int, int]]:
    """The value of a [rows, 2] TENSOR_INT32 input (paddings), as (before, after) pairs."""
    shape = ctx.shape(i)
    if shape != (rows, 2):
        ctx.fail(f"expected shape ({rows}, 2), got {shape}", input=i)
    value = np.asarray(ctx.value(i)).reshape(rows, 2)
    return [(int(a), int(b)) for a, b in value]


def check_rank(ctx: OperationContext, i: int, shape: Shape, low: int, high: int | None) -> None:
    """Require ``low <= len(shape) <= high`` (``high`` None: no upper bound) for input ``i``."""
    rank = len(shape)
    if rank < low or (high is not None and rank > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        ctx.fail(f"expected rank {bound}, got {rank}", input=i)
