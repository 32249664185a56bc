"""Padding: PAD, PAD_V2, MIRROR_PAD.

NNAPI signatures (output 0 has input 0's type and, for TENSOR_QUANT8_ASYMM(_SIGNED), its scale and
zero point; output dim i = paddings[i, 0] + input dim i + paddings[i, 1]):

* PAD (input, paddings): input TENSOR_FLOAT16 / FLOAT32 / QUANT8_ASYMM / QUANT8_ASYMM_SIGNED of
  rank 1..4 (1..6 with nnrt's ``com.nnrt.rank6`` extension); paddings a TENSOR_INT32 of shape
  [rank, 2] with non-negative entries. Pads with (logical) zero, i.e. the zero point for
  quantised tensors.
* PAD_V2 (input, paddings, pad_value): as PAD, padding with pad_value, a FLOAT16 scalar for
  TENSOR_FLOAT16, FLOAT32 for TENSOR_FLOAT32 and INT32 (a stored quantised value, which must
  lie in the type's range: [0, 255] or [-128, 127]) for the quant types.
* MIRROR_PAD (input, paddings, mode): input of PAD's types or TENSOR_INT32, rank >= 1; mode an
  INT32 scalar, 0 = REFLECT (border not repeated: paddings at most dim - 1) or 1 = SYMMETRIC
  (border repeated: paddings at most dim).

Paddings may be model inputs; the output dims are then known only at execution. The kernels
implement every listed type; quantised tensors are padded with stored integers, so no value is
requantised. An input dimension of extent 0 (a zero-size tensor, NNAPI 1.3) may be padded with
PAD / PAD_V2 (the result holds only padding) and must have zero MIRROR_PAD paddings.
"""

from __future__ import annotations

import numpy as np

from nnrt.model.types import NNRT_MAX_RANK, OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register
from nnrt.ops.quant import QUANT_RANGES
from nnrt.ops.shape_params import (
    DATA_INT_KERNELS,
    DATA_KERNELS,
    DATA_TYPES,
    DATA_TYPES_INT,
    QUANT8,
    Array,
    check_rank,
    const_ints,
    expect_output_like,
    int_matrix,
    logical_zero,
)

T = OperandType

INPUT, PADDINGS, PARAM = 0, 1, 2

MAX_PAD_RANK = NNRT_MAX_RANK
REFLECT, SYMMETRIC = 0, 1

_PAD_VALUE_TYPES = {T.TENSOR_FLOAT16: T.FLOAT16, T.TENSOR_FLOAT32: T.FLOAT32,
                    **dict.fromkeys(QUANT8, T.INT32)}


def _validate_common(ctx: OperationContext, n_inputs: int, types: tuple[OperandType, ...],
                     max_rank: int | None) -> OperandType:
    """Counts, input / paddings / output types and the static shape of the paddings."""
    ctx.expect_counts(n_inputs, 1)
    t = ctx.expect_type(INPUT, *types)
    ctx.expect_type(PADDINGS, T.TENSOR_INT32)
    ctx.expect_rank(PADDINGS, 2)
    expect_output_like(ctx)
    if max_rank is not None:
        ctx.expect_rank_between(INPUT, 1, max_rank)
    rank = ctx.rank_or_none(INPUT)
    dims = ctx.dims(PADDINGS)
    if dims:
        if dims[1] and dims[1] != 2:
            ctx.fail(f"expected shape (rank, 2), got second dimension {dims[1]}", input=PADDINGS)
        if dims[0] and rank is not None and dims[0] != rank:
            ctx.fail(f"expected {rank} rows (the input rank), got {dims[0]}", input=PADDINGS)
    out_dims = ctx.output_operand(0).dims
    if out_dims and rank is not None and len(out_dims) != rank:
        ctx.fail(f"expected rank {rank} like input {INPUT}, got {len(out_dims)}", output=0)
    pads = const_ints(ctx, PADDINGS)
    if pads is not None and any(p < 0 for p in pads):
        ctx.fail(f"paddings must be non-negative, got {pads}", input=PADDINGS)
    return t


def _paddings(ctx: OperationContext, shape: Shape) -> list[tuple[int, int]]:
    """The (before, after) pairs, one per input dim, checked non-negative."""
    pads = int_matrix(ctx, PADDINGS, len(shape))
    if any(a < 0 or b < 0 for a, b in pads):
        ctx.fail(f"paddings must be non-negative, got {[list(p) for p in pads]}",
                 input=PADDINGS)
    return pads


def _padded(shape: Shape, pads: list[tuple[int, int]]) -> Shape:
    return tuple(a + d + b for d, (a, b) in zip(shape, pads, strict=True))


@register(OperationType.PAD, inputs=("input", "paddings"), kernel_types=DATA_KERNELS,
          nnapi_max_rank=4)
class Pad:
    """PAD: constant padding with (logical) zero."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's static rules for PAD."""
        _validate_common(ctx, 2, DATA_TYPES, MAX_PAD_RANK)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Input dims plus the paddings."""
        shape = ctx.shape(INPUT)
        check_rank(ctx, INPUT, shape, 1, MAX_PAD_RANK)
        return [_padded(shape, _paddings(ctx, shape))]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """numpy constant pad with real 0 (the zero point of a quantised input)."""
        x = ctx.tensor(INPUT)
        return [np.pad(x, _paddings(ctx, x.shape), mode="constant",
                       constant_values=logical_zero(ctx, INPUT))]


@register(OperationType.PAD_V2, inputs=("input", "paddings", "pad_value"),
          kernel_types=DATA_KERNELS, nnapi_max_rank=4)
class PadV2:
    """PAD_V2: constant padding with a given scalar value."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's static rules for PAD_V2: the input type selects the pad value's type."""
        t = _validate_common(ctx, 3, DATA_TYPES, MAX_PAD_RANK)
        ctx.expect_scalar(PARAM, _PAD_VALUE_TYPES[t])
        value = ctx.constant(PARAM)
        if value is not None:
            _check_quant_pad_value(ctx, value)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Input dims plus the paddings."""
        return Pad.prepare(ctx)

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """numpy constant pad with the pad value (in the input's dtype)."""
        x = ctx.tensor(INPUT)
        value = ctx.scalar(PARAM)
        _check_quant_pad_value(ctx, value)
        return [np.pad(x, _paddings(ctx, x.shape), mode="constant",
                       constant_values=np.asarray(value).astype(x.dtype))]


def _check_quant_pad_value(ctx: OperationContext, value: int | float) -> None:
    """A quantised PAD_V2 pads with a stored value: it must fit the input type's range."""
    t = ctx.input_type(INPUT)
    if t in QUANT8:
        low, high = QUANT_RANGES[t]
        if not low <= value <= high:
            ctx.fail(f"pad value {value} is out of the range of {t.name} ([{low}, {high}])",
                     input=PARAM)


@register(OperationType.MIRROR_PAD, inputs=("input", "paddings", "mode"),
          kernel_types=DATA_INT_KERNELS)
class MirrorPad:
    """MIRROR_PAD: padding with values mirrored at the borders (REFLECT or SYMMETRIC)."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's static rules for MIRROR_PAD."""
        _validate_common(ctx, 3, DATA_TYPES_INT, None)
        ctx.expect_scalar(PARAM, T.INT32)
        mode = ctx.constant(PARAM)
        if mode is not None:
            _check_mode(ctx, mode)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Input dims plus the paddings, which the mode bounds by each input dim."""
        shape = ctx.shape(INPUT)
        check_rank(ctx, INPUT, shape, 1, None)
        pads = _paddings(ctx, shape)
        mode = _check_mode(ctx, ctx.scalar(PARAM))
        for axis, (d, (a, b)) in enumerate(zip(shape, pads, strict=True)):
            limit = max(d - 1, 0) if mode == REFLECT else d
            if max(a, b) > limit:
                name = "REFLECT" if mode == REFLECT else "SYMMETRIC"
                ctx.fail(f"{name} paddings of dimension {axis} (size {d}) must be at most "
                         f"{limit}, got ({a}, {b})", input=PADDINGS)
        return [_padded(shape, pads)]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """numpy reflect / symmetric pad."""
        x = ctx.tensor(INPUT)
        pads = _paddings(ctx, x.shape)
        if ctx.scalar(PARAM) == REFLECT:
            return [np.pad(x, pads, mode="reflect")]
        return [np.pad(x, pads, mode="symmetric")]


def _check_mode(ctx: OperationContext, mode: int) -> int:
    if mode not in (REFLECT, SYMMETRIC):
        ctx.fail(f"invalid mode {mode} (expected 0=REFLECT or 1=SYMMETRIC)", input=PARAM)
    return mode
