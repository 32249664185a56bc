"""Comparisons, logical operations and SELECT.

NNAPI signatures:

* EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL: input 0 and 1 tensors of the same
  type among TENSOR_BOOL8 / FLOAT16 / FLOAT32 / INT32 / QUANT8_ASYMM / QUANT8_ASYMM_SIGNED
  (quantised inputs may have different scales and zero points), rank ≥ 1, broadcastable;
  output 0 a TENSOR_BOOL8 of the broadcast shape. BOOL8 orders false < true.
* LOGICAL_AND, LOGICAL_OR: input 0 and 1 TENSOR_BOOL8, rank ≥ 1, broadcastable; output 0
  TENSOR_BOOL8 of the broadcast shape.
* LOGICAL_NOT: input 0 TENSOR_BOOL8, rank ≥ 1; output 0 TENSOR_BOOL8 of the same shape.
* SELECT: input 0 (condition) TENSOR_BOOL8; inputs 1 and 2 tensors of the same type among
  TENSOR_FLOAT16 / FLOAT32 / INT32 / QUANT8_ASYMM / QUANT8_ASYMM_SIGNED; all three of exactly
  the same shape (no broadcasting), rank ≥ 1; output 0 of input 1's type and shape, taking
  input 1 where the condition is true and input 2 elsewhere.

Float comparisons follow IEEE 754 (NaN compares unequal to everything, so only NOT_EQUAL is true
for it). Quantised comparisons compare real values as NNAPI's kernel does: each input's
``(q - zero_point) * scale`` in float32. Quantised SELECT requantises the chosen values to the
output's scale and zero point (:func:`nnrt.ops.quant.change_quantization`), as NNAPI's kernel
does for both inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import OperationDef, Shape, add_definition
from nnrt.ops.quant import change_quantization, is_quantized
from nnrt.ops.shapes import broadcast_inputs, expect_typed_pair

T = OperandType
Op = OperationType
Array = np.ndarray[Any, Any]

INPUT1, INPUT2 = 0, 1
CONDITION, TRUE_VALUES, FALSE_VALUES = 0, 1, 2

_QUANT8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
_COMPARE_TYPES = (T.TENSOR_BOOL8, T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32, *_QUANT8)
_SELECT_TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32, *_QUANT8)

_COMPARISONS: dict[OperationType, Callable[[Array, Array], Array]] = {
    Op.EQUAL: np.equal,
    Op.NOT_EQUAL: np.not_equal,
    Op.GREATER: np.greater,
    Op.GREATER_EQUAL: np.greater_equal,
    Op.LESS: np.less,
    Op.LESS_EQUAL: np.less_equal,
}
_LOGICAL: dict[OperationType, Callable[[Array, Array], Array]] = {
    Op.LOGICAL_AND: np.logical_and,
    Op.LOGICAL_OR: np.logical_or,
}


# -- broadcasting binary predicates: comparisons, LOGICAL_AND, LOGICAL_OR --------------------

def _check_binary_ranks(ctx: OperationContext) -> None:
    for i in (INPUT1, INPUT2):
        ctx.expect_rank_at_least(i, 1)


def _validate_compare(ctx: OperationContext) -> None:
    ctx.expect_counts(2, 1)
    types = _COMPARE_TYPES if ctx.op_type in _COMPARISONS else (T.TENSOR_BOOL8,)
    expect_typed_pair(ctx, *types)
    ctx.expect_output_type(0, T.TENSOR_BOOL8)
    _check_binary_ranks(ctx)


def _prepare_compare(ctx: OperationContext) -> list[Shape]:
    _check_binary_ranks(ctx)
    return broadcast_inputs(ctx)


def _execute_compare(ctx: ExecutionContext) -> list[Array]:
    a, b = ctx.tensor(INPUT1), ctx.tensor(INPUT2)
    if ctx.op_type in _LOGICAL:
        return [_LOGICAL[ctx.op_type](a.astype(bool), b.astype(bool))]
    if is_quantized(ctx.input_type(INPUT1)):
        a, b = _real32(ctx, INPUT1, a), _real32(ctx, INPUT2, b)
    elif a.dtype.kind == "f":
        # float16 values widen exactly, so comparing in float64 is comparing the inputs.
        a, b = a.astype(np.float64), b.astype(np.float64)
    elif a.dtype.kind in "iu":
        a, b = a.astype(np.int64), b.astype(np.int64)
    return [np.asarray(_COMPARISONS[ctx.op_type](a, b), dtype=bool)]


def _real32(ctx: ExecutionContext, i: int, q: Array) -> Array:
    """``(q - zero_point) * scale`` of quantised input ``i``, in float32 as NNAPI computes it."""
    operand = ctx.operand(i)
    real: Array = (q.astype(np.int64) - operand.zero_point).astype(np.float32) * np.float32(
        operand.scale)
    return real


# -- LOGICAL_NOT ----------------------------------------------------------------------------

def _validate_not(ctx: OperationContext) -> None:
    ctx.expect_counts(1, 1)
    ctx.expect_type(INPUT1, T.TENSOR_BOOL8)
    ctx.expect_output_type(0, T.TENSOR_BOOL8)
    ctx.expect_rank_at_least(INPUT1, 1)


def _prepare_not(ctx: OperationContext) -> list[Shape]:
    ctx.expect_rank_at_least(INPUT1, 1)
    return [ctx.shape(INPUT1)]


def _execute_not(ctx: ExecutionContext) -> list[Array]:
    return [np.logical_not(ctx.tensor(INPUT1).astype(bool))]


# -- SELECT ---------------------------------------------------------------------------------

def _check_select_ranks(ctx: OperationContext) -> None:
    for i in (CONDITION, TRUE_VALUES, FALSE_VALUES):
        ctx.expect_rank_at_least(i, 1)
    ranks = [ctx.rank_or_none(i) for i in (CONDITION, TRUE_VALUES, FALSE_VALUES)]
    for i in (TRUE_VALUES, FALSE_VALUES):
        if ranks[0] is not None and ranks[i] is not None and ranks[i] != ranks[0]:
            ctx.fail(f"rank {ranks[i]} differs from the condition's rank {ranks[0]} "
                     "(SELECT does not broadcast)", input=i)


def _validate_select(ctx: OperationContext) -> None:
    ctx.expect_counts(3, 1)
    ctx.expect_type(CONDITION, T.TENSOR_BOOL8)
    ctx.expect_type(TRUE_VALUES, *_SELECT_TYPES)
    ctx.expect_type(FALSE_VALUES, *_SELECT_TYPES)
    ctx.expect_same_type(FALSE_VALUES, TRUE_VALUES)
    ctx.expect_output_like_input(0, TRUE_VALUES)
    _check_select_ranks(ctx)


def _prepare_select(ctx: OperationContext) -> list[Shape]:
    _check_select_ranks(ctx)
    condition = ctx.shape(CONDITION)
    for i in (TRUE_VALUES, FALSE_VALUES):
        shape = ctx.shape(i)
        if shape != condition:
            ctx.fail(f"shape {shape} differs from the condition's shape {condition} "
                     "(SELECT does not broadcast)", input=i)
    return [condition]


def _execute_select(ctx: ExecutionContext) -> list[Array]:
    condition = ctx.tensor(CONDITION).astype(bool)
    a, b = ctx.tensor(TRUE_VALUES), ctx.tensor(FALSE_VALUES)
    t = ctx.input_type(TRUE_VALUES)
    if is_quantized(t):
        out = ctx.output_operand(0)
        a, b = (change_quantization(x, ctx.operand(i).scale, ctx.operand(i).zero_point,
                                    out.scale, out.zero_point, t)
                for i, x in ((TRUE_VALUES, a), (FALSE_VALUES, b)))
    return [np.where(condition, a, b)]


# -- registration ---------------------------------------------------------------------------

for _op in _COMPARISONS:
    add_definition(OperationDef(
        type=_op, validate=_validate_compare, prepare=_prepare_compare,
        execute=_execute_compare, inputs=("input1", "input2"),
        kernel_types=frozenset(_COMPARE_TYPES),
    ))
for _op in _LOGICAL:
    add_definition(OperationDef(
        type=_op, validate=_validate_compare, prepare=_prepare_compare,
        execute=_execute_compare, inputs=("input1", "input2"),
        kernel_types=frozenset({T.TENSOR_BOOL8}),
    ))
add_definition(OperationDef(
    type=Op.LOGICAL_NOT, validate=_validate_not, prepare=_prepare_not, execute=_execute_not,
    inputs=("input",), kernel_types=frozenset({T.TENSOR_BOOL8}),
))
add_definition(OperationDef(
    type=Op.SELECT, validate=_validate_select, prepare=_prepare_select,
    execute=_execute_select, inputs=("condition", "input1", "input2"),
    kernel_types=frozenset(_SELECT_TYPES), type_input=TRUE_VALUES,
))
