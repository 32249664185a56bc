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

The kernels implement every listed type. Quantised REDUCE_MAX / REDUCE_MIN / ARGMAX / ARGMIN
compare the stored integers (the output keeps the input's scale and zero point, and the
quantisation is monotonic). Quantised MEAN is NNAPI's CPU kernel (TFLite's reference ``Mean``):
the stored integers are summed in integer arithmetic and the sum divided by the element count
with C's integer division, i.e. truncated toward zero (no zero-point correction is needed: the
output has the input's scale and zero point).

Zero-size tensors (an extent of 0 at execution, NNAPI 1.3): reducing an empty set gives the
identity of the reduction, as ONNX specifies — REDUCE_SUM 0, REDUCE_PROD 1, REDUCE_ANY false,
REDUCE_ALL true, REDUCE_MAX -inf (floats) or the type's lowest value (quantised), REDUCE_MIN
+inf or the highest value. MEAN of an empty set is NaN for floats (0 / 0); a quantised type has
no such value, so a quantised MEAN over an empty set is ``BadData``, and so is ARGMAX / ARGMIN
along an axis of extent 0 (there is no index to return). Reductions whose output is itself
empty (a non-reduced extent of 0) just return it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnrt.model.types import NNRT_MAX_RANK, OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext, Unknown
from nnrt.ops._framework.registry import OperationDef, Shape, add_definition
from nnrt.ops.quant import QUANT_RANGES

T = OperandType
Array = np.ndarray[Any, Any]

INPUT, AXES, KEEP_DIMS = 0, 1, 2
AXIS = 1

_FLOATS = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
_QUANT8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)


# -- MEAN and REDUCE_* ----------------------------------------------------------------------------

#: A reduction kernel: (context, input (floats as float64), sorted distinct axes) -> the result
#: with the reduced dims kept as 1s.
Kernel = Callable[[ExecutionContext, Array, tuple[int, ...]], Array]


@dataclass(frozen=True)
class _Reduction:
    """One reduction operation: its types, its keep_dims operand type and its kernel (which
    implements all of ``types``)."""

    op: OperationType
    types: tuple[OperandType, ...]
    keep_dims_type: OperandType
    kernel: Kernel


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
    result = np.asarray(spec.kernel(ctx, x, axes))
    return [result.reshape(ctx.output_shapes[0])]


def _mean(ctx: ExecutionContext, x: Array, axes: tuple[int, ...]) -> Array:
    """MEAN: float64 mean of floats (NaN over an empty set); NNAPI's truncating integer mean
    of quantised values."""
    count = math.prod(x.shape[a] for a in axes)
    sums = np.sum(x if x.dtype.kind == "f" else x.astype(np.int64), axis=axes, keepdims=True)
    if x.dtype.kind == "f":
        return sums / count if count else np.full(sums.shape, np.nan)
    if not count and sums.size:
        ctx.fail(f"the mean of an empty set (axes {list(axes)} of shape {x.shape} hold no "
                 f"element) has no {ctx.input_type(INPUT).name} value", input=INPUT)
    truncated: Array = np.sign(sums) * (np.abs(sums) // max(count, 1))
    return truncated


def _extreme(find: Callable[..., Array], lowest: bool) -> Kernel:
    """REDUCE_MAX (``lowest``: the empty set gives the lowest value) or REDUCE_MIN."""

    def kernel(ctx: ExecutionContext, x: Array, axes: tuple[int, ...]) -> Array:
        t = ctx.input_type(INPUT)
        if t in QUANT_RANGES:
            low, high = QUANT_RANGES[t]
            identity: float = low if lowest else high
        else:
            identity = -np.inf if lowest else np.inf
        return find(x, axis=axes, keepdims=True, initial=identity)

    return kernel


def _numpy(reduce: Callable[..., Array]) -> Kernel:
    """A reduction numpy computes as NNAPI / ONNX define it, empty sets included."""

    def kernel(ctx: ExecutionContext, x: Array, axes: tuple[int, ...]) -> Array:
        return reduce(x, axis=axes, keepdims=True)

    return kernel


_REDUCTIONS = (
    _Reduction(OperationType.MEAN, (*_FLOATS, *_QUANT8), T.INT32, _mean),
    _Reduction(OperationType.REDUCE_SUM, _FLOATS, T.BOOL, _numpy(np.sum)),
    _Reduction(OperationType.REDUCE_PROD, _FLOATS, T.BOOL, _numpy(np.prod)),
    _Reduction(OperationType.REDUCE_MAX, (*_FLOATS, *_QUANT8), T.BOOL, _extreme(np.max, True)),
    _Reduction(OperationType.REDUCE_MIN, (*_FLOATS, *_QUANT8), T.BOOL, _extreme(np.min, False)),
    _Reduction(OperationType.REDUCE_ANY, (T.TENSOR_BOOL8,), T.BOOL, _numpy(np.any)),
    _Reduction(OperationType.REDUCE_ALL, (T.TENSOR_BOOL8,), T.BOOL, _numpy(np.all)),
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
        inputs=("input", "axes", "keep_dims"), kernel_types=frozenset(spec.types),
        nnapi_max_rank=4,
    ))


for _spec in _REDUCTIONS:
    _register_reduction(_spec)


# -- ARGMAX / ARGMIN ------------------------------------------------------------------------------

_ARG_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32, *_QUANT8)


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
    out_shape = ctx.output_shapes[0]
    if x.shape[axis] == 0:
        if math.prod(out_shape):
            ctx.fail(f"axis {axis} of shape {x.shape} has no element, so no index to return",
                     input=INPUT)
        return [np.zeros(out_shape, np.int32)]
    # numpy returns the first occurrence of the extreme value: ties go to the smallest index.
    find = np.argmax if ctx.op_type == OperationType.ARGMAX else np.argmin
    result = find(x, axis=axis).astype(np.int32)
    return [result.reshape(out_shape)]


for _op in (OperationType.ARGMAX, OperationType.ARGMIN):
    add_definition(OperationDef(
        type=_op, validate=_validate_arg, prepare=_prepare_arg, execute=_execute_arg,
        inputs=("input", "axis"), kernel_types=frozenset(_ARG_TYPES),
    ))
