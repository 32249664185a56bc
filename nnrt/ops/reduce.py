"""Reductions over axes and arg-min/max: MEAN, REDUCE_*, ARGMAX, ARGMIN.

NNAPI signatures:

* MEAN: input 0 a tensor of rank 1..4 (TENSOR_FLOAT32, _FLOAT16, _QUANT8_ASYMM, _SIGNED);
  input 1 a 1-D TENSOR_INT32 of axes in ``[-rank, rank)`` (duplicates allowed); input 2 an
  INT32 ``keep_dims`` (positive keeps the reduced dims with length 1). Output: the input's type
  (quantised: same scale and zero point).
* REDUCE_SUM, REDUCE_PROD (TENSOR_FLOAT32/16), REDUCE_MAX, REDUCE_MIN (also TENSOR_QUANT8_ASYMM
  and _SIGNED, same scale / zero point out), REDUCE_ANY, REDUCE_ALL (TENSOR_BOOL8): input 0 of
  rank 1..4, input 1 the axes as for MEAN, input 2 a BOOL ``keep_dims``.
* MEAN and REDUCE_* take rank 1..6 with nnrt's ``com.nnrt.rank6`` extension.
* Every reduction: reducing all dims without ``keep_dims`` gives output shape ``[1]``.
* ARGMAX, ARGMIN: input 0 of rank >= 1 (TENSOR_FLOAT32, _FLOAT16, _INT32, _QUANT8_ASYMM,
  _SIGNED); input 1 an INT32 axis in ``[-rank, rank)``. Output: TENSOR_INT32, the input shape
  with the axis removed (``[1]`` for a 1-D input); ties resolve to the smallest index.

Quantised variants validate but have no reference kernel yet.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnrt.model.types import NNRT_MAX_RANK, OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext, Unknown
from nnrt.ops._framework.registry import OperationDef, Shape, add_definition

T = OperandType
Array = np.ndarray[Any, Any]

INPUT, AXES, KEEP_DIMS = 0, 1, 2
AXIS = 1

_FLOATS = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
_QUANT8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
_FLOAT_KERNELS = frozenset(_FLOATS)




# -- MEAN and REDUCE_* ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Reduction:
    """One reduction operation: its types, its keep_dims operand type and its kernel."""

    op: OperationType
    types: tuple[OperandType, ...]
    keep_dims_type: OperandType
    kernel: Callable[..., Array]
    kernel_types: frozenset[OperandType]


def _normalise_axes(ctx: OperationContext, axes: Array, rank: int) -> tuple[int, ...]:
    """The distinct axes of ``axes`` in ``[0, rank)``, sorted; fails on an out-of-range axis."""
    flat = np.asarray(axes).reshape(-1)
    result: set[int] = set()
    for k, axis in enumerate(int(a) for a in flat):
        if not -rank <= axis < rank:
            ctx.fail(f"axes[{k}] = {axis} is out of range for rank {rank} (expected "
                     f"[{-rank}, {rank}))", input=AXES)
        result.add(axis % rank)
    return tuple(sorted(result))


def _keep_dims(ctx: OperationContext, spec: _Reduction) -> bool:
    value = ctx.scalar(KEEP_DIMS)
    if spec.keep_dims_type == T.INT32:
        return int(value) > 0  # MEAN: "if positive, retains reduced dimensions"
    return bool(value)


def _validate_reduction(ctx: OperationContext, spec: _Reduction) -> None:
    ctx.expect_counts(3, 1)
    ctx.expect_type(INPUT, *spec.types)
    ctx.expect_rank_between(INPUT, 1, NNRT_MAX_RANK)
    ctx.expect_type(AXES, T.TENSOR_INT32)
    ctx.expect_rank(AXES, 1)
    ctx.expect_scalar(KEEP_DIMS, spec.keep_dims_type)
    ctx.expect_output_like_input(0, INPUT)
    ctx.expect_output_quant_like_input()
    axes, rank = ctx.constant(AXES), ctx.rank_or_none(INPUT)
    if axes is not None and rank is not None:
        _normalise_axes(ctx, axes, rank)


def _prepare_reduction(ctx: OperationContext, spec: _Reduction) -> list[Shape]:
    shape = ctx.shape(INPUT)
    ctx.expect_rank_between(INPUT, 1, NNRT_MAX_RANK)
    axes_value = ctx.value(AXES)
    if np.ndim(axes_value) != 1:
        ctx.fail(f"expected a 1-D tensor of axes, got shape {np.shape(axes_value)}", input=AXES)
    axes = _normalise_axes(ctx, axes_value, len(shape))
    return [reduced_shape(shape, axes, _keep_dims(ctx, spec)) or (1,)]


def reduced_shape(shape: Sequence[int], axes: Collection[int], keep: bool) -> Shape:
    """``shape`` reduced over ``axes`` (kept as 1s when ``keep``); ``()`` when all go."""
    return tuple(1 if axis in axes else size for axis, size in enumerate(shape)
                 if keep or axis not in axes)


def _execute_reduction(ctx: ExecutionContext, spec: _Reduction) -> list[Array]:
    x = ctx.tensor(INPUT)
    if x.dtype.kind == "f":
        x = x.astype(np.float64)
    axes = _normalise_axes(ctx, ctx.tensor(AXES), x.ndim)
    result = np.asarray(spec.kernel(x, axis=axes, keepdims=True))
    return [result.reshape(ctx.output_shapes[0])]


_REDUCTIONS = (
    _Reduction(OperationType.MEAN, (*_FLOATS, *_QUANT8), T.INT32, np.mean, _FLOAT_KERNELS),
    _Reduction(OperationType.REDUCE_SUM, _FLOATS, T.BOOL, np.sum, _FLOAT_KERNELS),
    _Reduction(OperationType.REDUCE_PROD, _FLOATS, T.BOOL, np.prod, _FLOAT_KERNELS),
    _Reduction(OperationType.REDUCE_MAX, (*_FLOATS, *_QUANT8), T.BOOL, np.max, _FLOAT_KERNELS),
    _Reduction(OperationType.REDUCE_MIN, (*_FLOATS, *_QUANT8), T.BOOL, np.min, _FLOAT_KERNELS),
    _Reduction(OperationType.REDUCE_ANY, (T.TENSOR_BOOL8,), T.BOOL, np.any,
               frozenset({T.TENSOR_BOOL8})),
    _Reduction(OperationType.REDUCE_ALL, (T.TENSOR_BOOL8,), T.BOOL, np.all,
               frozenset({T.TENSOR_BOOL8})),
)


def _register_reduction(spec: _Reduction) -> None:
    def validate(ctx: OperationContext) -> None:
        _validate_reduction(ctx, spec)

    def prepare(ctx: OperationContext) -> list[Shape]:
        return _prepare_reduction(ctx, spec)

    def execute(ctx: ExecutionContext) -> list[Array]:
        return _execute_reduction(ctx, spec)

    add_definition(OperationDef(
        type=spec.op, validate=validate, prepare=prepare, execute=execute,
        inputs=("input", "axes", "keep_dims"), kernel_types=spec.kernel_types,
        nnapi_max_rank=4,
    ))


for _spec in _REDUCTIONS:
    _register_reduction(_spec)


# -- ARGMAX / ARGMIN ------------------------------------------------------------------------------

_ARG_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32, *_QUANT8)
_ARG_KERNELS = frozenset({T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32})


def _validate_arg(ctx: OperationContext) -> None:
    ctx.expect_counts(2, 1)
    ctx.expect_type(INPUT, *_ARG_TYPES)
    ctx.expect_axis(AXIS, ctx.rank_or_none(INPUT))
    ctx.expect_output_type(0, T.TENSOR_INT32)


def _prepare_arg(ctx: OperationContext) -> list[Shape]:
    shape = ctx.shape(INPUT)
    axis = ctx.expect_axis(AXIS, len(shape))
    if axis is None:
        raise Unknown
    out = shape[:axis] + shape[axis + 1:]
    return [out or (1,)]


def _execute_arg(ctx: ExecutionContext) -> list[Array]:
    x = ctx.tensor(INPUT)
    axis = int(ctx.scalar(AXIS)) % x.ndim
    # numpy returns the first occurrence of the extreme value: ties go to the smallest index.
    find = np.argmax if ctx.op_type == OperationType.ARGMAX else np.argmin
    result = find(x, axis=axis).astype(np.int32)
    return [result.reshape(ctx.output_shapes[0])]


for _op in (OperationType.ARGMAX, OperationType.ARGMIN):
    add_definition(OperationDef(
        type=_op, validate=_validate_arg, prepare=_prepare_arg, execute=_execute_arg,
        inputs=("input", "axis"), kernel_types=_ARG_KERNELS,
    ))
