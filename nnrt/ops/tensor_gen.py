"""Generating and inspecting tensors: FILL, RANK, REVERSE (imported by ``nnrt.ops.tensor``).

NNAPI signatures:

* FILL (dims, value): dims a 1-D TENSOR_INT32 of non-negative sizes (a 0 makes a zero-size
  tensor, NNAPI 1.3); value a scalar whose type follows the output's: FLOAT16 for
  TENSOR_FLOAT16, FLOAT32 for TENSOR_FLOAT32, INT32 for TENSOR_INT32. The dims may be a model
  input: the output shape is then known only at execution.
* RANK (input): any tensor of TENSOR_FLOAT16 / FLOAT32 / INT32 / BOOL8 / QUANT8_ASYMM /
  QUANT8_ASYMM_SIGNED / QUANT8_SYMM / QUANT8_SYMM_PER_CHANNEL / QUANT16_SYMM / QUANT16_ASYMM,
  rank >= 1. Output: an INT32 scalar.
* REVERSE (input, axis): input TENSOR_FLOAT16 / FLOAT32 / INT32 / QUANT8_ASYMM /
  QUANT8_ASYMM_SIGNED of rank 1..8; axis a TENSOR_INT32 of shape [1] with a value in [0, rank).
  Output: input's type, shape, scale and zero point, reversed along the axis.

The kernels implement every listed type: RANK reads only the shape, REVERSE copies elements
(the quantised types as their stored integers).
"""

from __future__ import annotations

import numpy as np

from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register
from nnrt.ops.shape_params import (
    DATA_INT_KERNELS,
    DATA_TYPES_INT,
    Array,
    checked_shape,
    const_ints,
    expect_int_vector,
    expect_output_rank,
    expect_tensor_and_ints,
    int_vector,
)

T = OperandType

_FILL_VALUE_TYPES = {T.TENSOR_FLOAT16: T.FLOAT16, T.TENSOR_FLOAT32: T.FLOAT32,
                     T.TENSOR_INT32: T.INT32}

_RANK_TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_BOOL8,
               T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM,
               T.TENSOR_QUANT8_SYMM_PER_CHANNEL, T.TENSOR_QUANT16_SYMM, T.TENSOR_QUANT16_ASYMM)

MAX_REVERSE_RANK = 8


@register(OperationType.FILL, inputs=("dims", "value"),
          kernel_types={T.FLOAT16, T.FLOAT32, T.INT32}, type_input=1)
class Fill:
    """FILL: a tensor of the given dims with every element equal to value."""

    DIMS, VALUE = 0, 1

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's static rules for FILL: the output type selects the value's type."""
        ctx.expect_counts(2, 1)
        out_type = ctx.expect_output_type(0, *_FILL_VALUE_TYPES)
        expect_int_vector(ctx, Fill.DIMS)
        ctx.expect_scalar(Fill.VALUE, _FILL_VALUE_TYPES[out_type])
        dims = const_ints(ctx, Fill.DIMS)
        if dims is not None:
            _check_dims(ctx, dims)
            expect_output_rank(ctx, len(dims), "(the length of the dims input)")

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """The shape is the value of the dims input."""
        return [tuple(_check_dims(ctx, int_vector(ctx, Fill.DIMS)))]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """A constant array of the output's dtype."""
        return [np.full(ctx.output_shapes[0], ctx.scalar(Fill.VALUE), dtype=ctx.output_dtype(0))]


def _check_dims(ctx: OperationContext, dims: list[int]) -> list[int]:
    if not dims:
        ctx.fail("the dims must have at least one element", input=Fill.DIMS)
    if any(d < 0 for d in dims):
        ctx.fail(f"dims must be non-negative, got {tuple(dims)}", input=Fill.DIMS)
    return dims


@register(OperationType.RANK, inputs=("input",), kernel_types=frozenset(_RANK_TYPES))
class Rank:
    """RANK: the number of dims of the input, as an INT32 scalar."""

    INPUT = 0

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's static rules for RANK."""
        ctx.expect_counts(1, 1)
        ctx.expect_type(Rank.INPUT, *_RANK_TYPES)
        ctx.expect_output_type(0, T.INT32)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """A scalar output."""
        return [()]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """The input's ndim."""
        rank = len(checked_shape(ctx, Rank.INPUT, 1, None))
        return [np.array(rank, dtype=np.int32)]


@register(OperationType.REVERSE, inputs=("input", "axis"), kernel_types=DATA_INT_KERNELS)
class Reverse:
    """REVERSE: flip the input along one non-negative axis given as a [1] tensor."""

    INPUT, AXIS = 0, 1

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's static rules for REVERSE."""
        rank = expect_tensor_and_ints(ctx, DATA_TYPES_INT, Reverse.AXIS, length=1,
                                      max_rank=MAX_REVERSE_RANK)
        expect_output_rank(ctx, rank, f"like input {Reverse.INPUT}")
        axis = const_ints(ctx, Reverse.AXIS)
        if axis is not None:
            _reverse_axis(ctx, axis, rank)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """The input shape."""
        shape = checked_shape(ctx, Reverse.INPUT, 1, MAX_REVERSE_RANK)
        _reverse_axis(ctx, int_vector(ctx, Reverse.AXIS), len(shape))
        return [shape]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """numpy flip along the axis."""
        x = ctx.tensor(Reverse.INPUT)
        return [np.flip(x, axis=_reverse_axis(ctx, int_vector(ctx, Reverse.AXIS), x.ndim))]


def _reverse_axis(ctx: OperationContext, axis: list[int], rank: int | None) -> int:
    if len(axis) != 1:
        ctx.fail(f"expected exactly one axis, got {len(axis)}", input=Reverse.AXIS)
    if axis[0] < 0 or (rank is not None and axis[0] >= rank):
        upper = rank if rank is not None else "rank"
        ctx.fail(f"axis {axis[0]} is out of range (expected [0, {upper}))", input=Reverse.AXIS)
    return axis[0]
