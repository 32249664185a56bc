"""Shape-only operations: RESHAPE, SQUEEZE, EXPAND_DIMS, TRANSPOSE.

NNAPI signatures (output 0 always has input 0's type; for TENSOR_QUANT8_ASYMM(_SIGNED) also its
scale and zero point):

* RESHAPE (input, shape): input TENSOR_FLOAT16 / FLOAT32 / QUANT8_ASYMM / QUANT8_ASYMM_SIGNED of
  rank 1..4; shape a 1-D TENSOR_INT32 whose components are positive except at most one -1 (that
  size is inferred). The shape may be a model input: the output dims are then known only at
  execution.
* SQUEEZE (input, squeeze_dims): same types, rank 1..4; squeeze_dims an optional (NO_VALUE) 1-D
  TENSOR_INT32 of axes in [-rank, rank) naming size-1 dims; omitted squeezes every size-1 dim.
  Squeezing every dim gives shape [1].
* EXPAND_DIMS (input, axis): same types plus TENSOR_INT32, rank >= 1; axis an INT32 scalar in
  [-(rank+1), rank]; inserts a dim of size 1.
* TRANSPOSE (input, perm): RESHAPE's types, rank 1..4; perm an optional 1-D TENSOR_INT32
  permutation of [0, rank); omitted (or given as a zero-size tensor) means the reversed order
  (rank-1, ..., 0).

RESHAPE, SQUEEZE and TRANSPOSE take rank 1..6 with nnrt's ``com.nnrt.rank6`` extension (a
RESHAPE's target shape too: at most 6 components). All four move data only: the kernels
implement every listed type, the quantised ones on their stored integers (the output keeps the
input's scale and zero point, so no value is requantised).

Zero-size tensors: an input may have a dimension of extent 0 at execution (NNAPI 1.3); a
RESHAPE target may then hold 0 components, but cannot infer a -1 component from an empty
tensor (any size would do).
"""

from __future__ import annotations

import math

import numpy as np

from nnrt.model.types import NNRT_MAX_RANK, OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register
from nnrt.ops.shape_params import (
    DATA_INT_KERNELS,
    DATA_KERNELS,
    DATA_TYPES,
    DATA_TYPES_INT,
    Array,
    checked_shape,
    const_ints,
    expect_output_like,
    expect_output_rank,
    expect_tensor_and_ints,
    int_vector,
    known_axis,
)

T = OperandType

#: nnrt's rank limit for RESHAPE, SQUEEZE and TRANSPOSE (NNAPI's own is 4).
MAX_RANK = NNRT_MAX_RANK


@register(OperationType.RESHAPE, inputs=("input", "shape"), kernel_types=DATA_KERNELS,
          nnapi_max_rank=4)
class Reshape:
    """RESHAPE: same data, new shape; one -1 component is inferred from the element count."""

    INPUT, SHAPE = 0, 1

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's static rules for RESHAPE."""
        expect_tensor_and_ints(ctx, DATA_TYPES, Reshape.SHAPE, max_rank=MAX_RANK)
        target = const_ints(ctx, Reshape.SHAPE)
        if target is not None:
            _check_target(ctx, target)
            expect_output_rank(ctx, len(target), "(the length of the shape input)")

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """The target shape with its -1 component resolved."""
        shape = checked_shape(ctx, Reshape.INPUT, 1, MAX_RANK)
        target = int_vector(ctx, Reshape.SHAPE)
        _check_target(ctx, target)
        count = math.prod(shape)
        known = math.prod(d for d in target if d != -1)
        if -1 in target:
            if known == 0:
                ctx.fail(f"shape {tuple(target)} cannot infer its -1 component: the other "
                         "components hold no element", input=Reshape.SHAPE)
            if count % known:
                ctx.fail(f"shape {tuple(target)} cannot hold the {count} elements of input "
                         f"{Reshape.INPUT} {shape}", input=Reshape.SHAPE)
            target = [count // known if d == -1 else d for d in target]
        elif known != count:
            ctx.fail(f"shape {tuple(target)} has {known} elements, input {Reshape.INPUT} "
                     f"{shape} has {count}", input=Reshape.SHAPE)
        return [tuple(target)]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Row-major reshape."""
        return [ctx.tensor(Reshape.INPUT).reshape(ctx.output_shapes[0])]


def _check_target(ctx: OperationContext, target: list[int]) -> None:
    if not target:
        ctx.fail("the shape must have at least one component", input=Reshape.SHAPE)
    if len(target) > MAX_RANK:
        ctx.fail(f"expected a shape of rank between 1 and {MAX_RANK}, got rank {len(target)} "
                 f"({tuple(target)})", input=Reshape.SHAPE)
    if target.count(-1) > 1:
        ctx.fail(f"at most one component of the shape may be -1, got {tuple(target)}",
                 input=Reshape.SHAPE)
    if any(d < 0 and d != -1 for d in target):
        ctx.fail(f"shape components must be non-negative or -1, got {tuple(target)}",
                 input=Reshape.SHAPE)


@register(OperationType.SQUEEZE, inputs=("input", "squeeze_dims"), kernel_types=DATA_KERNELS,
          nnapi_max_rank=4)
class Squeeze:
    """SQUEEZE: drop the listed size-1 dims (all of them when squeeze_dims is omitted)."""

    INPUT, DIMS = 0, 1

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's static rules for SQUEEZE."""
        expect_tensor_and_ints(ctx, DATA_TYPES, Squeeze.DIMS, optional=True, max_rank=MAX_RANK)
        rank = ctx.rank_or_none(Squeeze.INPUT)
        axes = const_ints(ctx, Squeeze.DIMS)
        if rank is not None and axes is not None:
            _squeeze_axes(ctx, axes, rank)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """The input shape without the squeezed dims ([1] if none remain)."""
        shape = checked_shape(ctx, Squeeze.INPUT, 1, MAX_RANK)
        if ctx.is_omitted(Squeeze.DIMS):
            drop = {k for k, d in enumerate(shape) if d == 1}
        else:
            drop = _squeeze_axes(ctx, int_vector(ctx, Squeeze.DIMS), len(shape))
            for k in sorted(drop):
                if shape[k] != 1:
                    ctx.fail(f"cannot squeeze dimension {k} of size {shape[k]} (input shape "
                             f"{shape})", input=Squeeze.DIMS)
        kept = tuple(d for k, d in enumerate(shape) if k not in drop)
        return [kept or (1,)]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Row-major reshape to the squeezed shape."""
        return [ctx.tensor(Squeeze.INPUT).reshape(ctx.output_shapes[0])]


def _squeeze_axes(ctx: OperationContext, axes: list[int], rank: int) -> set[int]:
    result = set()
    for axis in axes:
        if not -rank <= axis < rank:
            ctx.fail(f"squeeze dimension {axis} is out of range for rank {rank} (expected "
                     f"[{-rank}, {rank}))", input=Squeeze.DIMS)
        result.add(axis % rank)
    return result


@register(OperationType.EXPAND_DIMS, inputs=("input", "axis"), kernel_types=DATA_INT_KERNELS)
class ExpandDims:
    """EXPAND_DIMS: insert a size-1 dim at ``axis`` (negative counts from the end)."""

    INPUT, AXIS = 0, 1

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's static rules for EXPAND_DIMS."""
        ctx.expect_counts(2, 1)
        ctx.expect_type(ExpandDims.INPUT, *DATA_TYPES_INT)
        ctx.expect_axis(ExpandDims.AXIS, ctx.rank_or_none(ExpandDims.INPUT), allow_end=True)
        expect_output_like(ctx)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """The input shape with a 1 inserted at the axis."""
        shape = checked_shape(ctx, ExpandDims.INPUT, 1, None)
        axis = known_axis(ctx, ExpandDims.AXIS, len(shape), allow_end=True)
        return [(*shape[:axis], 1, *shape[axis:])]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Row-major reshape to the expanded shape."""
        return [ctx.tensor(ExpandDims.INPUT).reshape(ctx.output_shapes[0])]


@register(OperationType.TRANSPOSE, inputs=("input", "perm"), kernel_types=DATA_KERNELS,
          nnapi_max_rank=4)
class Transpose:
    """TRANSPOSE: output dim i is input dim perm[i]; perm defaults to the reversed order."""

    INPUT, PERM = 0, 1

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's static rules for TRANSPOSE."""
        rank = expect_tensor_and_ints(ctx, DATA_TYPES, Transpose.PERM, one_per_dim=True,
                                      optional=True, max_rank=MAX_RANK)
        perm = const_ints(ctx, Transpose.PERM)
        if rank is not None and perm is not None:
            _check_perm(ctx, perm, rank)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """The input dims in ``perm`` order."""
        shape = checked_shape(ctx, Transpose.INPUT, 1, MAX_RANK)
        perm = _perm(ctx, len(shape))
        return [tuple(shape[k] for k in perm)]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """numpy transpose with the (defaulted) permutation."""
        x = ctx.tensor(Transpose.INPUT)
        return [np.transpose(x, _perm(ctx, x.ndim))]


def _perm(ctx: OperationContext, rank: int) -> list[int]:
    perm = [] if ctx.is_omitted(Transpose.PERM) else int_vector(ctx, Transpose.PERM)
    if not perm:  # omitted, or an empty (zero-size) tensor as in NNAPI's transpose_v1_2 test
        return list(range(rank - 1, -1, -1))
    _check_perm(ctx, perm, rank)
    return perm


def _check_perm(ctx: OperationContext, perm: list[int], rank: int) -> None:
    if len(perm) != rank:
        ctx.fail(f"expected {rank} elements (the input rank), got {len(perm)}",
                 input=Transpose.PERM)
    if sorted(perm) != list(range(rank)):
        ctx.fail(f"{tuple(perm)} is not a permutation of the dimensions 0..{rank - 1}",
                 input=Transpose.PERM)
