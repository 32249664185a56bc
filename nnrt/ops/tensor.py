"""Joining, splitting and repeating tensors: CONCATENATION, SPLIT, PACK, TILE.

NNAPI signatures (for TENSOR_QUANT8_ASYMM(_SIGNED), outputs keep the input's scale and zero point
except in CONCATENATION, whose inputs and output may each have their own since NNAPI 1.2):

* CONCATENATION (input 0 .. input n-1, axis): n >= 1 tensors of one type among TENSOR_FLOAT16 /
  FLOAT32 / QUANT8_ASYMM / QUANT8_ASYMM_SIGNED, rank 1..4 (1..6 with nnrt's ``com.nnrt.rank6``
  extension), equal ranks and dims except along the
  axis; axis an INT32 scalar in [0, rank). Output: dims summed along the axis.
* SPLIT (input, axis, num_splits) -> num_splits outputs: input of the types above or
  TENSOR_INT32, rank >= 1; axis an INT32 scalar in [-rank, rank); num_splits an INT32 scalar equal
  to the number of outputs, dividing the axis dim.
* PACK (axis, input 0 .. input n-1): axis an INT32 scalar in [0, rank]; n >= 1 tensors of SPLIT's
  types with identical dims, rank >= 1. Output: rank + 1, the new dim (size n) at the axis.
* TILE (input, multiples): SPLIT's types, rank >= 1; multiples a 1-D TENSOR_INT32 with one
  positive count per input dim. Output dim i = input dim i * multiples[i].

The kernels implement every listed type. SPLIT, PACK and TILE copy elements, the quantised
types as their stored integers. CONCATENATION copies an input whose scale and zero point equal
the output's and requantises any other as NNAPI's CPU executor does (TFLite's
``ConcatenationWithScaling``, in float32 — bit-exact with it): ``q_out = zp_out +
round(q * s + b)`` with ``s = scale_in * (1 / scale_out)``, ``b = -zp_in * s``, ``round``
halves away from zero, saturated to the type's range.

Zero-size tensors (an extent of 0 at execution, NNAPI 1.3) pass through every kernel: a
concatenated input may be empty, a split part may be empty.

FILL, RANK and REVERSE live in ``tensor_gen`` (imported below so they register).
"""

from __future__ import annotations

import numpy as np

from nnrt.model.types import NNRT_MAX_RANK, OperandType, OperationType
from nnrt.ops import tensor_gen  # noqa: F401 - registers FILL, RANK, REVERSE
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register
from nnrt.ops.quant import round_half_away, saturate
from nnrt.ops.shape_params import (
    DATA_INT_KERNELS,
    DATA_KERNELS,
    DATA_TYPES,
    DATA_TYPES_INT,
    QUANT8,
    Array,
    checked_shape,
    const_ints,
    expect_output_like,
    expect_tensor_and_ints,
    int_vector,
    known_axis,
)

T = OperandType

MAX_CONCAT_RANK = NNRT_MAX_RANK


@register(OperationType.CONCATENATION, inputs=("input0",), kernel_types=DATA_KERNELS,
          nnapi_max_rank=4)
class Concatenation:
    """CONCATENATION: join n tensors along a non-negative axis (the last input)."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's static rules for CONCATENATION (variable input count)."""
        if ctx.n_inputs < 2:
            ctx.fail(f"expected at least 2 inputs (tensors, then the axis), got {ctx.n_inputs}")
        ctx.expect_counts(ctx.n_inputs, 1)
        axis_slot = ctx.n_inputs - 1
        ctx.expect_type(0, *DATA_TYPES)
        for i in range(1, axis_slot):
            ctx.expect_present(i)
            ctx.expect_same_type(i, 0)
        ctx.expect_scalar(axis_slot, T.INT32)
        ctx.expect_output_like_input(0, 0)
        ranks = {i: ctx.rank_or_none(i) for i in range(axis_slot)}
        for i, rank in ranks.items():
            if rank is not None and rank > MAX_CONCAT_RANK:
                ctx.fail(f"expected rank between 1 and {MAX_CONCAT_RANK}, got {rank}", input=i)
        known = [(i, r) for i, r in ranks.items() if r is not None]
        for i, rank in known[1:]:
            if rank != known[0][1]:
                ctx.fail(f"expected rank {known[0][1]} like input {known[0][0]}, got {rank}",
                         input=i)
        axis = ctx.constant(axis_slot)
        if axis is not None and known:
            _concat_axis(ctx, axis, known[0][1])

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Input 0's dims with the axis dims summed; other dims must agree."""
        axis_slot = ctx.n_inputs - 1
        first = checked_shape(ctx, 0, 1, MAX_CONCAT_RANK)
        axis = _concat_axis(ctx, ctx.scalar(axis_slot), len(first))
        total = first[axis]
        for i in range(1, axis_slot):
            shape = ctx.shape(i)
            same = len(shape) == len(first) and all(
                a == b for k, (a, b) in enumerate(zip(shape, first, strict=True)) if k != axis)
            if not same:
                ctx.fail(f"shape {shape} does not match input 0 {first} outside axis {axis}",
                         input=i)
            total += shape[axis]
        return [(*first[:axis], total, *first[axis + 1:])]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """numpy concatenate along the axis (quantised inputs first requantised to the output's
        scale and zero point)."""
        axis_slot = ctx.n_inputs - 1
        parts = [_in_output_quant(ctx, i) for i in range(axis_slot)]
        return [np.concatenate(parts, axis=int(ctx.scalar(axis_slot)))]


def _in_output_quant(ctx: ExecutionContext, i: int) -> Array:
    """Input ``i``'s stored values expressed in output 0's quantisation (unchanged when the two
    agree, or for non-quantised types)."""
    x = ctx.tensor(i)
    src, dst = ctx.operand(i), ctx.output_operand(0)
    if dst.type not in QUANT8 or (src.scale == dst.scale and src.zero_point == dst.zero_point):
        return x
    f32 = np.float32
    scale = f32(src.scale) * (f32(1.0) / f32(dst.scale))
    bias = f32(-src.zero_point) * scale
    real = x.astype(f32) * scale + bias
    return saturate(round_half_away(real.astype(np.float64)) + dst.zero_point, dst.type)


def _concat_axis(ctx: OperationContext, axis: int, rank: int) -> int:
    if not 0 <= axis < rank:
        ctx.fail(f"axis {axis} is out of range for rank {rank} (expected [0, {rank}))",
                 input=ctx.n_inputs - 1)
    return axis


@register(OperationType.SPLIT, inputs=("input", "axis", "num_splits"),
          outputs=("output0",), kernel_types=DATA_INT_KERNELS)
class Split:
    """SPLIT: cut the input into num_splits equal parts along the axis."""

    INPUT, AXIS, NUM_SPLITS = 0, 1, 2

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's static rules for SPLIT (one output per split)."""
        ctx.expect_counts(3, ctx.n_outputs)
        ctx.expect_type(Split.INPUT, *DATA_TYPES_INT)
        ctx.expect_axis(Split.AXIS, ctx.rank_or_none(Split.INPUT))
        ctx.expect_scalar(Split.NUM_SPLITS, T.INT32)
        for j in range(ctx.n_outputs):
            expect_output_like(ctx, j, Split.INPUT)
        splits = ctx.constant(Split.NUM_SPLITS)
        if splits is not None:
            _check_splits(ctx, splits)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """num_splits copies of the input shape with the axis dim divided."""
        shape = checked_shape(ctx, Split.INPUT, 1, None)
        splits = _check_splits(ctx, ctx.scalar(Split.NUM_SPLITS))
        axis = known_axis(ctx, Split.AXIS, len(shape))
        if shape[axis] % splits:
            ctx.fail(f"dimension {axis} of size {shape[axis]} cannot be split into {splits} "
                     "equal parts", input=Split.NUM_SPLITS)
        part = (*shape[:axis], shape[axis] // splits, *shape[axis + 1:])
        return [part] * splits

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """numpy split into equal parts."""
        x = ctx.tensor(Split.INPUT)
        splits = int(ctx.scalar(Split.NUM_SPLITS))
        return list(np.split(x, splits, axis=known_axis(ctx, Split.AXIS, x.ndim)))


def _check_splits(ctx: OperationContext, splits: int) -> int:
    if splits < 1:
        ctx.fail(f"num_splits must be positive, got {splits}", input=Split.NUM_SPLITS)
    if splits != ctx.n_outputs:
        ctx.fail(f"num_splits is {splits} but the operation has {ctx.n_outputs} outputs",
                 input=Split.NUM_SPLITS)
    return splits


@register(OperationType.PACK, inputs=("axis", "input0"), kernel_types=DATA_INT_KERNELS,
          type_input=1)
class Pack:
    """PACK: stack n same-shaped tensors along a new dim at the axis."""

    AXIS, FIRST = 0, 1

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's static rules for PACK (variable input count)."""
        if ctx.n_inputs < 2:
            ctx.fail(f"expected at least 2 inputs (the axis, then tensors), got {ctx.n_inputs}")
        ctx.expect_counts(ctx.n_inputs, 1)
        ctx.expect_scalar(Pack.AXIS, T.INT32)
        out_type = ctx.expect_output_type(0, *DATA_TYPES_INT)
        out_rank = len(ctx.output_operand(0).dims) or None
        rank = out_rank - 1 if out_rank is not None else None
        for i in range(Pack.FIRST, ctx.n_inputs):
            ctx.expect_type(i, out_type)
            ctx.expect_output_quant_like_input(0, i)
            r = ctx.rank_or_none(i)
            if r is not None and rank is not None and r != rank:
                ctx.fail(f"expected rank {rank} (one less than the output, like the other "
                         f"inputs), got {r}", input=i)
            if rank is None:
                rank = r
        axis = ctx.constant(Pack.AXIS)
        if axis is not None and rank is not None:
            _pack_axis(ctx, axis, rank)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Input dims with n inserted at the axis; every input must have input 1's dims."""
        first = checked_shape(ctx, Pack.FIRST, 1, None)
        for i in range(Pack.FIRST + 1, ctx.n_inputs):
            shape = ctx.shape(i)
            if shape != first:
                ctx.fail(f"shape {shape} does not match input {Pack.FIRST} {first}", input=i)
        axis = _pack_axis(ctx, ctx.scalar(Pack.AXIS), len(first))
        return [(*first[:axis], ctx.n_inputs - 1, *first[axis:])]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """numpy stack along the axis."""
        parts = [ctx.tensor(i) for i in range(Pack.FIRST, ctx.n_inputs)]
        return [np.stack(parts, axis=int(ctx.scalar(Pack.AXIS)))]


def _pack_axis(ctx: OperationContext, axis: int, rank: int) -> int:
    if not 0 <= axis <= rank:
        ctx.fail(f"axis {axis} is out of range for input rank {rank} (expected [0, {rank}])",
                 input=Pack.AXIS)
    return axis


@register(OperationType.TILE, inputs=("input", "multiples"), kernel_types=DATA_INT_KERNELS)
class Tile:
    """TILE: repeat the input multiples[i] times along each dim i."""

    INPUT, MULTIPLES = 0, 1

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's static rules for TILE."""
        rank = expect_tensor_and_ints(ctx, DATA_TYPES_INT, Tile.MULTIPLES, one_per_dim=True)
        multiples = const_ints(ctx, Tile.MULTIPLES)
        if multiples is not None:
            _check_multiples(ctx, multiples, rank)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Input dims times the multiples."""
        shape = checked_shape(ctx, Tile.INPUT, 1, None)
        multiples = _check_multiples(ctx, int_vector(ctx, Tile.MULTIPLES), len(shape))
        return [tuple(d * m for d, m in zip(shape, multiples, strict=True))]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """numpy tile."""
        return [np.tile(ctx.tensor(Tile.INPUT), int_vector(ctx, Tile.MULTIPLES))]


def _check_multiples(ctx: OperationContext, multiples: list[int], rank: int | None) -> list[int]:
    if rank is not None and len(multiples) != rank:
        ctx.fail(f"expected {rank} multiples (the input rank), got {len(multiples)}",
                 input=Tile.MULTIPLES)
    if any(m < 1 for m in multiples):
        ctx.fail(f"multiples must be positive, got {tuple(multiples)}", input=Tile.MULTIPLES)
    return multiples
