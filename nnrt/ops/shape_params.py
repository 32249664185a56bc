"""Rules shared by the shape, joining, padding and space families (``reshape``, ``tensor``,
``tensor_gen``, ``pad``, ``space``).

Several of these operations take their shape parameters as 1-D / 2-D TENSOR_INT32 operands that
may be constants (checked at ``finish()``) or model inputs (checked before each execution), and
most require a quantised output to keep the input's scale and zero point. The helpers here keep
those checks identical across the modules.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.model.types import OperandType
from nnrt.ops._framework.context import OperationContext, Unknown
from nnrt.ops._framework.registry import Shape

__all__ = [
    "DATA_INT_KERNELS",
    "DATA_KERNELS",
    "DATA_TYPES",
    "DATA_TYPES_INT",
    "FLOAT_INT_KERNELS",
    "FLOAT_KERNELS",
    "QUANT8",
    "Array",
    "check_rank",
    "checked_shape",
    "const_ints",
    "expect_int_vector",
    "expect_output_like",
    "expect_output_rank",
    "expect_tensor_and_ints",
    "known_axis",
    "int_matrix",
    "int_vector",
    "logical_zero",
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
#: Kernel types of the data-movement operations: they copy elements, so the quantised variants
#: are the same kernel on the integer values (output scale and zero point equal the input's).
DATA_KERNELS = frozenset(DATA_TYPES)
DATA_INT_KERNELS = frozenset(DATA_TYPES_INT)


def expect_output_like(ctx: OperationContext, j: int = 0, i: int = 0) -> None:
    """Require output ``j`` to have input ``i``'s type and, when quantised, scale and zero point."""
    ctx.expect_output_like_input(j, i)
    ctx.expect_output_quant_like_input(j, i)


def logical_zero(ctx: OperationContext, i: int = 0) -> int:
    """The stored value of real 0 in input ``i``: its zero point when quantised, else 0.

    What PAD and SPACE_TO_BATCH_ND pad with.
    """
    operand = ctx.operand(i)
    return int(operand.zero_point) if operand.type in QUANT8 else 0


def expect_int_vector(ctx: OperationContext, i: int, length: int | None = None) -> None:
    """Require input ``i`` to be a 1-D TENSOR_INT32 (of ``length`` elements, when both known)."""
    ctx.expect_type(i, T.TENSOR_INT32)
    ctx.expect_rank(i, 1)
    dims = ctx.dims(i)
    if length is not None and dims and dims[0] and dims[0] != length:
        noun = "element" if length == 1 else "elements"
        ctx.fail(f"expected {length} {noun}, got {dims[0]}", input=i)


def expect_tensor_and_ints(ctx: OperationContext, types: tuple[OperandType, ...], ints: int, *,
                           length: int | None = None, one_per_dim: bool = False,
                           optional: bool = False, max_rank: int | None = None) -> int | None:
    """The static rules of a (tensor, TENSOR_INT32 vector) -> tensor operation.

    Two inputs and one output; input 0 of one of ``types``; input ``ints`` a 1-D TENSOR_INT32 (of
    ``length`` elements, or with ``one_per_dim`` input 0's rank, when known; may be omitted when
    ``optional``); output 0 like input 0; input 0's rank at most ``max_rank`` (when given and
    known). Returns input 0's rank (None while unknown).
    """
    ctx.expect_counts(2, 1)
    ctx.expect_type(0, *types)
    rank = ctx.rank_or_none(0)
    if not (optional and ctx.is_omitted(ints)):
        expect_int_vector(ctx, ints, rank if one_per_dim else length)
    expect_output_like(ctx)
    if max_rank is not None:
        ctx.expect_rank_between(0, 1, max_rank)
    return rank


def expect_output_rank(ctx: OperationContext, rank: int | None, reason: str) -> None:
    """Require declared output 0 (if its rank is given) to have ``rank`` (if known)."""
    out_dims = ctx.output_operand(0).dims
    if out_dims and rank is not None and len(out_dims) != rank:
        ctx.fail(f"expected rank {rank} {reason}, got {len(out_dims)}", output=0)


def known_axis(ctx: OperationContext, i: int, rank: int, *, allow_end: bool = False) -> int:
    """The INT32 axis input ``i`` checked against ``rank`` and normalised (see ``expect_axis``).

    Raises ``Unknown`` while the axis is not known.
    """
    axis = ctx.expect_axis(i, rank, allow_end=allow_end)
    if axis is None:
        raise Unknown
    return axis


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


def checked_shape(ctx: OperationContext, i: int, low: int, high: int | None) -> Shape:
    """The shape of input ``i`` (``Unknown`` until known), its rank checked by ``check_rank``."""
    shape = ctx.shape(i)
    check_rank(ctx, i, shape, low, high)
    return shape
