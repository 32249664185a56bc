"""Space/depth/batch rearrangements: DEPTH_TO_SPACE, SPACE_TO_DEPTH, BATCH_TO_SPACE_ND,
SPACE_TO_BATCH_ND and CHANNEL_SHUFFLE.

Input tensor types (all five): TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_QUANT8_ASYMM,
TENSOR_QUANT8_ASYMM_SIGNED; the output has the input's type (quantised: same scale and zero
point). The kernels implement every type: they move elements, the quantised types as their
stored integers (SPACE_TO_BATCH_ND pads with real 0, the zero point). A batch of 0 (a zero-size
tensor, NNAPI 1.3) gives an empty output. NNAPI signatures:

* DEPTH_TO_SPACE: 0 ``input`` 4-D; 1 ``block_size`` INT32 ≥ 1, ``block_size²`` dividing the
  depth; 2 ``layout`` optional BOOL (true: NCHW). Output
  ``[batches, height * b, width * b, depth / b²]``; output pixel ``(h*b + i, w*b + j)`` channel
  ``c`` is input pixel ``(h, w)`` channel ``(i*b + j) * depth_out + c``.
* SPACE_TO_DEPTH: the inverse; ``block_size`` ≥ 1 must divide height and width.
* BATCH_TO_SPACE_ND: 0 ``input`` 4-D; 1 ``block_shape`` TENSOR_INT32 ``[2]`` (values ≥ 1, their
  product dividing the batch); 2 ``layout`` optional BOOL. NNAPI has no crops input. Output batch
  ``n``, pixel ``(h*bh + i, w*bw + j)`` is input batch ``(i*bw + j) * batches_out + n``, pixel
  ``(h, w)``.
* SPACE_TO_BATCH_ND: 0 ``input`` 4-D; 1 ``block_shape`` TENSOR_INT32 ``[2]`` (values ≥ 1);
  2 ``paddings`` TENSOR_INT32 ``[2, 2]`` (``[[top, bottom], [left, right]]``, values ≥ 0, padded
  sizes divisible by the block); 3 ``layout`` optional BOOL. Pads with real 0, then the inverse
  of BATCH_TO_SPACE_ND.
* CHANNEL_SHUFFLE: 0 ``input`` of rank 1..4; 1 ``num_groups`` INT32 > 0 dividing the axis size;
  2 ``axis`` INT32 in ``[-rank, rank)``. Output channel ``k * num_groups + g`` is input channel
  ``g * (size / num_groups) + k``.
"""

from __future__ import annotations

import numpy as np

from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register
from nnrt.ops.shape_params import known_axis, logical_zero
from nnrt.ops.space_layout import (
    IMAGE_TYPES,
    Array,
    expect_bool_flags,
    from_nhwc,
    from_nhwc_array,
    nhwc_input,
    nhwc_shape,
)

T = OperandType

_KERNEL_TYPES = frozenset(IMAGE_TYPES)


def _common(ctx: OperationContext, counts: tuple[int, ...], layout: int) -> None:
    """Counts, a 4-D image input, the optional layout flag and the output type."""
    ctx.expect_counts(counts, 1)
    ctx.expect_type(0, *IMAGE_TYPES)
    ctx.expect_rank(0, 4)
    expect_bool_flags(ctx, layout)
    ctx.expect_output_like_input(0, 0)
    ctx.expect_output_quant_like_input(0, 0)


def _expect_block_size(ctx: OperationContext, i: int, value: int | None) -> None:
    if value is not None and value < 1:
        ctx.fail(f"block size must be at least 1, got {value}", input=i)


class _BlockSizeOp:
    """What DEPTH_TO_SPACE and SPACE_TO_DEPTH share: (input, block_size[, layout])."""

    INPUT, BLOCK_SIZE, LAYOUT = 0, 1, 2

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's rules for DEPTH_TO_SPACE / SPACE_TO_DEPTH."""
        _common(ctx, (2, 3), _BlockSizeOp.LAYOUT)
        ctx.expect_scalar(_BlockSizeOp.BLOCK_SIZE, T.INT32)
        _expect_block_size(ctx, _BlockSizeOp.BLOCK_SIZE, ctx.constant(_BlockSizeOp.BLOCK_SIZE))

    @staticmethod
    def image(ctx: OperationContext) -> tuple[bool, Shape, int]:
        """The layout flag, the NHWC input shape and the (checked) block size."""
        nchw, shape = nhwc_shape(ctx, _BlockSizeOp.LAYOUT)
        b = int(ctx.scalar(_BlockSizeOp.BLOCK_SIZE))
        _expect_block_size(ctx, _BlockSizeOp.BLOCK_SIZE, b)
        return nchw, shape, b

    @staticmethod
    def tensor(ctx: ExecutionContext) -> tuple[bool, int, Array]:
        """The layout flag, the block size and input 0 as an NHWC array."""
        nchw, x = nhwc_input(ctx, _BlockSizeOp.LAYOUT)
        return nchw, int(ctx.scalar(_BlockSizeOp.BLOCK_SIZE)), x


def _expect_block_shape(ctx: OperationContext, i: int) -> None:
    """Require a [2] TENSOR_INT32 block shape (values ≥ 1 when constant)."""
    _expect_int_tensor(ctx, i, (2,))
    value = ctx.constant(i)
    if value is not None and np.any(np.asarray(value) < 1):
        ctx.fail(f"block sizes must be at least 1, got {np.asarray(value).tolist()}", input=i)


def _expect_int_tensor(ctx: OperationContext, i: int, dims: tuple[int, ...]) -> None:
    """Require a TENSOR_INT32 input of shape ``dims`` (checked as far as known)."""
    ctx.expect_type(i, T.TENSOR_INT32)
    ctx.expect_rank(i, len(dims))
    known = ctx.dims(i)
    if len(known) == len(dims) and any(k not in (0, d) for k, d in zip(known, dims, strict=True)):
        ctx.fail(f"expected shape {list(dims)}, got {list(known)}", input=i)


def _block_shape(ctx: OperationContext, i: int) -> tuple[int, int]:
    """The [2] block shape of input ``i``, checked (values ≥ 1)."""
    value = np.asarray(ctx.value(i))
    if value.shape != (2,):
        ctx.fail(f"expected shape [2], got {list(value.shape)}", input=i)
    if np.any(value < 1):
        ctx.fail(f"block sizes must be at least 1, got {value.tolist()}", input=i)
    return int(value[0]), int(value[1])


@register(OperationType.DEPTH_TO_SPACE, inputs=("input", "block_size", "layout"),
          kernel_types=_KERNEL_TYPES)
class DepthToSpace(_BlockSizeOp):
    """Moves blocks of depth into spatial blocks."""

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """``[n, h * b, w * b, c / b²]`` in the input's layout."""
        nchw, (n, h, w, c), b = _BlockSizeOp.image(ctx)
        if c % (b * b):
            ctx.fail(f"depth {c} is not divisible by block_size² = {b * b}", input=0)
        return [from_nhwc((n, h * b, w * b, c // (b * b)), nchw)]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Reshape the depth into (b, b, c_out) and interleave it with height and width."""
        nchw, b, x = _BlockSizeOp.tensor(ctx)
        n, h, w, c = x.shape
        y = x.reshape(n, h, w, b, b, c // (b * b)).transpose(0, 1, 3, 2, 4, 5)
        return [from_nhwc_array(y.reshape(n, h * b, w * b, c // (b * b)), nchw)]


@register(OperationType.SPACE_TO_DEPTH, inputs=("input", "block_size", "layout"),
          kernel_types=_KERNEL_TYPES)
class SpaceToDepth(_BlockSizeOp):
    """Moves spatial blocks into depth."""

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """``[n, h / b, w / b, c * b²]`` in the input's layout."""
        nchw, (n, h, w, c), b = _BlockSizeOp.image(ctx)
        if h % b or w % b:
            ctx.fail(f"height {h} and width {w} must be divisible by block_size {b}", input=0)
        return [from_nhwc((n, h // b, w // b, c * b * b), nchw)]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Split height and width into blocks and move the block offsets into depth."""
        nchw, b, x = _BlockSizeOp.tensor(ctx)
        n, h, w, c = x.shape
        y = x.reshape(n, h // b, b, w // b, b, c).transpose(0, 1, 3, 2, 4, 5)
        return [from_nhwc_array(y.reshape(n, h // b, w // b, b * b * c), nchw)]


@register(OperationType.BATCH_TO_SPACE_ND, inputs=("input", "block_shape", "layout"),
          kernel_types=_KERNEL_TYPES)
class BatchToSpaceNd:
    """Moves batch blocks into spatial blocks (no crops in NNAPI)."""

    INPUT, BLOCK_SHAPE, LAYOUT = 0, 1, 2

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's rules for BATCH_TO_SPACE_ND."""
        _common(ctx, (2, 3), BatchToSpaceNd.LAYOUT)
        _expect_block_shape(ctx, BatchToSpaceNd.BLOCK_SHAPE)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """``[n / (bh * bw), h * bh, w * bw, c]`` in the input's layout."""
        nchw, (n, h, w, c) = nhwc_shape(ctx, BatchToSpaceNd.LAYOUT)
        bh, bw = _block_shape(ctx, BatchToSpaceNd.BLOCK_SHAPE)
        if n % (bh * bw):
            ctx.fail(f"batch {n} is not divisible by the block size product {bh * bw}",
                     input=0)
        return [from_nhwc((n // (bh * bw), h * bh, w * bw, c), nchw)]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Split the batch into (bh, bw, n_out) and interleave it with height and width."""
        nchw, x = nhwc_input(ctx, BatchToSpaceNd.LAYOUT)
        bh, bw = _block_shape(ctx, BatchToSpaceNd.BLOCK_SHAPE)
        n, h, w, c = x.shape
        n_out = n // (bh * bw)
        y = x.reshape(bh, bw, n_out, h, w, c).transpose(2, 3, 0, 4, 1, 5)
        return [from_nhwc_array(y.reshape(n_out, h * bh, w * bw, c), nchw)]


@register(OperationType.SPACE_TO_BATCH_ND,
          inputs=("input", "block_shape", "paddings", "layout"), kernel_types=_KERNEL_TYPES)
class SpaceToBatchNd:
    """Pads height and width with real 0, then moves spatial blocks into the batch."""

    INPUT, BLOCK_SHAPE, PADDINGS, LAYOUT = 0, 1, 2, 3

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's rules for SPACE_TO_BATCH_ND."""
        _common(ctx, (3, 4), SpaceToBatchNd.LAYOUT)
        _expect_block_shape(ctx, SpaceToBatchNd.BLOCK_SHAPE)
        _expect_int_tensor(ctx, SpaceToBatchNd.PADDINGS, (2, 2))
        pads = ctx.constant(SpaceToBatchNd.PADDINGS)
        if pads is not None and np.any(np.asarray(pads) < 0):
            ctx.fail(f"paddings must be non-negative, got {np.asarray(pads).tolist()}",
                     input=SpaceToBatchNd.PADDINGS)

    @staticmethod
    def _paddings(ctx: OperationContext) -> tuple[int, int, int, int]:
        value = np.asarray(ctx.value(SpaceToBatchNd.PADDINGS))
        if value.shape != (2, 2):
            ctx.fail(f"expected shape [2, 2], got {list(value.shape)}",
                     input=SpaceToBatchNd.PADDINGS)
        if np.any(value < 0):
            ctx.fail(f"paddings must be non-negative, got {value.tolist()}",
                     input=SpaceToBatchNd.PADDINGS)
        top, bottom, left, right = (int(v) for v in value.reshape(4))
        return top, bottom, left, right

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """``[n * bh * bw, (h + pads) / bh, (w + pads) / bw, c]`` in the input's layout."""
        nchw, (n, h, w, c) = nhwc_shape(ctx, SpaceToBatchNd.LAYOUT)
        bh, bw = _block_shape(ctx, SpaceToBatchNd.BLOCK_SHAPE)
        top, bottom, left, right = SpaceToBatchNd._paddings(ctx)
        ph, pw = h + top + bottom, w + left + right
        if ph % bh or pw % bw:
            ctx.fail(f"padded height {ph} and width {pw} must be divisible by the block shape "
                     f"[{bh}, {bw}]", input=SpaceToBatchNd.PADDINGS)
        return [from_nhwc((n * bh * bw, ph // bh, pw // bw, c), nchw)]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Pad with real 0, split height and width into blocks and move the offsets into the
        batch."""
        nchw, x = nhwc_input(ctx, SpaceToBatchNd.LAYOUT)
        bh, bw = _block_shape(ctx, SpaceToBatchNd.BLOCK_SHAPE)
        top, bottom, left, right = SpaceToBatchNd._paddings(ctx)
        x = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)),
                   constant_values=logical_zero(ctx, SpaceToBatchNd.INPUT))
        n, h, w, c = x.shape
        y = x.reshape(n, h // bh, bh, w // bw, bw, c).transpose(2, 4, 0, 1, 3, 5)
        return [from_nhwc_array(y.reshape(bh * bw * n, h // bh, w // bw, c), nchw)]


@register(OperationType.CHANNEL_SHUFFLE, inputs=("input", "num_groups", "axis"),
          kernel_types=_KERNEL_TYPES)
class ChannelShuffle:
    """Transposes the (num_groups, group_size) split of one axis."""

    INPUT, NUM_GROUPS, AXIS = 0, 1, 2

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's rules for CHANNEL_SHUFFLE."""
        ctx.expect_counts(3, 1)
        ctx.expect_type(ChannelShuffle.INPUT, *IMAGE_TYPES)
        ctx.expect_rank_between(ChannelShuffle.INPUT, 1, 4)
        ctx.expect_scalar(ChannelShuffle.NUM_GROUPS, T.INT32)
        groups = ctx.constant(ChannelShuffle.NUM_GROUPS)
        if groups is not None and groups < 1:
            ctx.fail(f"num_groups must be positive, got {groups}",
                     input=ChannelShuffle.NUM_GROUPS)
        ctx.expect_axis(ChannelShuffle.AXIS, ctx.rank_or_none(ChannelShuffle.INPUT))
        ctx.expect_output_like_input(0, 0)
        ctx.expect_output_quant_like_input(0, 0)

    @staticmethod
    def _params(ctx: OperationContext) -> tuple[int, int]:
        """The normalised axis and the group count, checked against the input shape."""
        shape = ctx.shape(ChannelShuffle.INPUT)
        axis = known_axis(ctx, ChannelShuffle.AXIS, len(shape))
        groups = int(ctx.scalar(ChannelShuffle.NUM_GROUPS))
        if groups < 1:
            ctx.fail(f"num_groups must be positive, got {groups}",
                     input=ChannelShuffle.NUM_GROUPS)
        if shape[axis] % groups:
            ctx.fail(f"axis {axis} size {shape[axis]} is not divisible by num_groups {groups}",
                     input=ChannelShuffle.NUM_GROUPS)
        return axis, groups

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """The input's shape."""
        ChannelShuffle._params(ctx)
        return [ctx.shape(ChannelShuffle.INPUT)]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Split the axis as (groups, size / groups), swap the two and flatten back."""
        axis, groups = ChannelShuffle._params(ctx)
        x = np.moveaxis(ctx.tensor(ChannelShuffle.INPUT), axis, -1)
        lead, size = x.shape[:-1], x.shape[-1]
        y = x.reshape(*lead, groups, size // groups).swapaxes(-1, -2).reshape(*lead, size)
        return [np.moveaxis(y, -1, axis)]
