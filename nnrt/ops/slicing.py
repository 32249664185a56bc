"""Slicing: SLICE and STRIDED_SLICE.

NNAPI signatures:

* SLICE: input 0 an n-D tensor, n >= 1 (TENSOR_FLOAT32, _FLOAT16, _INT32, _QUANT8_ASYMM,
  _SIGNED); input 1 ``begin`` and input 2 ``size``, 1-D TENSOR_INT32 of length n. ``size[i]``
  of -1 takes the rest of dimension i; otherwise ``0 <= begin[i]`` and
  ``begin[i] + size[i] <= dims[i]``. Output: the input's type (quantised: same scale and zero
  point) with shape ``size`` (-1 resolved).
* STRIDED_SLICE: input 0 an n-D tensor, n <= 4 (n <= 6 with nnrt's ``com.nnrt.rank6``
  extension) (TENSOR_FLOAT32, _FLOAT16, _QUANT8_ASYMM,
  _SIGNED); inputs 1..3 ``begin``, ``end``, ``strides``, 1-D TENSOR_INT32 of length n, strides
  non-zero; inputs 4..6 INT32 ``begin_mask``, ``end_mask``, ``shrink_axis_mask``. Bit i of a
  mask applies to dimension i: begin_mask / end_mask take the fullest range, shrink_axis_mask
  removes dimension i, whose specification must then select exactly one element with a positive
  stride. Indices are clamped as in TensorFlow (negative ones count from the end). Output: the
  input's type (quantised: same scale and zero point), rank n minus the shrunk dimensions
  (``[1]`` when every dimension is shrunk).

Bad begin / size / end / strides values are ``BadData`` naming the offending input.
The kernels implement every listed type: they copy elements, the quantised types as their
stored integers. A dimension of extent 0 (a zero-size tensor, NNAPI 1.3) slices to extent 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.model.types import NNRT_MAX_RANK, OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register

T = OperandType
Array = np.ndarray[Any, Any]

_QUANT8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
_FLOATS = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)


def _expect_index_vector(ctx: OperationContext, slot: int, rank: int | None) -> None:
    """Require input ``slot`` to be a 1-D TENSOR_INT32 of length ``rank`` (when known)."""
    ctx.expect_type(slot, T.TENSOR_INT32)
    ctx.expect_rank(slot, 1)
    dims = ctx.dims(slot)
    if rank is not None and len(dims) == 1 and dims[0] and dims[0] != rank:
        ctx.fail(f"expected {rank} elements (the rank of input 0), got {dims[0]}", input=slot)


def _index_vector(ctx: OperationContext, slot: int, rank: int) -> list[int]:
    """The values of 1-D input ``slot``, which must hold ``rank`` elements."""
    value = np.asarray(ctx.value(slot))
    if value.ndim != 1 or value.shape[0] != rank:
        ctx.fail(f"expected a 1-D tensor of {rank} elements (the rank of input 0), got shape "
                 f"{value.shape}", input=slot)
    return [int(v) for v in value]


@register(OperationType.SLICE, inputs=("input", "begin", "size"),
          kernel_types={*_FLOATS, T.TENSOR_INT32, *_QUANT8})
class Slice:
    """SLICE: a box of the input given by its corner and its size."""

    INPUT, BEGIN, SIZE = 0, 1, 2

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's static rules for SLICE."""
        ctx.expect_counts(3, 1)
        ctx.expect_type(Slice.INPUT, *_FLOATS, T.TENSOR_INT32, *_QUANT8)
        rank = ctx.rank_or_none(Slice.INPUT)
        _expect_index_vector(ctx, Slice.BEGIN, rank)
        _expect_index_vector(ctx, Slice.SIZE, rank)
        ctx.expect_output_like_input(0, Slice.INPUT)
        ctx.expect_output_quant_like_input()

    @staticmethod
    def bounds(ctx: OperationContext) -> list[tuple[int, int]]:
        """Per dimension, the checked (begin, size) with -1 sizes resolved."""
        shape = ctx.shape(Slice.INPUT)
        begin = _index_vector(ctx, Slice.BEGIN, len(shape))
        size = _index_vector(ctx, Slice.SIZE, len(shape))
        bounds = []
        for i, (dim, b, s) in enumerate(zip(shape, begin, size, strict=True)):
            if not 0 <= b <= dim:
                ctx.fail(f"begin[{i}] = {b} is out of range for dimension {i} of size {dim} "
                         f"(expected [0, {dim}])", input=Slice.BEGIN)
            n = dim - b if s == -1 else s
            if n < 0 or b + n > dim:
                ctx.fail(f"size[{i}] = {s} does not fit dimension {i} of size {dim} from "
                         f"begin {b} (expected -1 or [0, {dim - b}])", input=Slice.SIZE)
            bounds.append((b, n))
        return bounds

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Output shape: the resolved sizes."""
        return [tuple(n for _, n in Slice.bounds(ctx))]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Copy the box."""
        x = ctx.tensor(Slice.INPUT)
        box = tuple(slice(b, b + n) for b, n in Slice.bounds(ctx))
        return [x[box]]


def _clamp(index: int, dim: int, positive: bool) -> int:
    """TensorFlow's clamping of a begin / end index for a positive or negative stride
    (a dimension of extent 0 has only the empty range)."""
    if dim == 0:
        return 0 if positive else -1
    if positive:
        return dim if index >= dim else min(max(index, -dim), dim) % dim
    return -1 if index < -dim else min(max(index, -dim), dim - 1) % dim


@register(OperationType.STRIDED_SLICE,
          inputs=("input", "begin", "end", "strides", "begin_mask", "end_mask",
                  "shrink_axis_mask"),
          kernel_types={*_FLOATS, *_QUANT8}, nnapi_max_rank=4)
class StridedSlice:
    """STRIDED_SLICE: TensorFlow-style strided slicing with begin / end / shrink masks."""

    INPUT, BEGIN, END, STRIDES, BEGIN_MASK, END_MASK, SHRINK_AXIS_MASK = range(7)

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's static rules for STRIDED_SLICE."""
        ctx.expect_counts(7, 1)
        ctx.expect_type(StridedSlice.INPUT, *_FLOATS, *_QUANT8)
        ctx.expect_rank_between(StridedSlice.INPUT, 1, NNRT_MAX_RANK)
        rank = ctx.rank_or_none(StridedSlice.INPUT)
        for slot in (StridedSlice.BEGIN, StridedSlice.END, StridedSlice.STRIDES):
            _expect_index_vector(ctx, slot, rank)
        for slot in (StridedSlice.BEGIN_MASK, StridedSlice.END_MASK,
                     StridedSlice.SHRINK_AXIS_MASK):
            ctx.expect_scalar(slot, T.INT32)
        ctx.expect_output_like_input(0, StridedSlice.INPUT)
        ctx.expect_output_quant_like_input()
        strides = ctx.constant(StridedSlice.STRIDES)
        if strides is not None and np.any(strides == 0):
            k = int(np.flatnonzero(strides.reshape(-1) == 0)[0])
            ctx.fail(f"strides[{k}] is 0; strides must be non-zero", input=StridedSlice.STRIDES)

    @staticmethod
    def ranges(ctx: OperationContext) -> tuple[list[tuple[int, int, int]], Shape]:
        """Per dimension (start, stride, count), and the output shape."""
        shape = ctx.shape(StridedSlice.INPUT)
        n = len(shape)
        begin = _index_vector(ctx, StridedSlice.BEGIN, n)
        end = _index_vector(ctx, StridedSlice.END, n)
        strides = _index_vector(ctx, StridedSlice.STRIDES, n)
        begin_mask = int(ctx.scalar(StridedSlice.BEGIN_MASK))
        end_mask = int(ctx.scalar(StridedSlice.END_MASK))
        shrink_mask = int(ctx.scalar(StridedSlice.SHRINK_AXIS_MASK))
        ranges: list[tuple[int, int, int]] = []
        out: list[int] = []
        for i, dim in enumerate(shape):
            stride = strides[i]
            if stride == 0:
                ctx.fail(f"strides[{i}] is 0; strides must be non-zero",
                         input=StridedSlice.STRIDES)
            positive = stride > 0
            bit = 1 << i
            start = _clamp(begin[i], dim, positive)
            if begin_mask & bit:  # the fullest range: the first element in stride order
                start = 0 if positive else dim - 1
            stop = _clamp(end[i], dim, positive)
            if end_mask & bit:  # ... up to and including the last one
                stop = dim if positive else -1
            count = max(0, -((start - stop) // stride))  # ceil((stop - start) / stride)
            if shrink_mask & bit:
                if not positive:
                    ctx.fail(f"dimension {i} is shrunk (shrink_axis_mask) but strides[{i}] = "
                             f"{stride} is not positive", input=StridedSlice.STRIDES)
                if count != 1:
                    ctx.fail(f"dimension {i} is shrunk (shrink_axis_mask) but its slice has "
                             f"{count} elements, expected 1", input=StridedSlice.SHRINK_AXIS_MASK)
            else:
                out.append(count)
            ranges.append((start, stride, count))
        return ranges, tuple(out) or (1,)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Output shape from the clamped ranges and the shrink mask."""
        ctx.expect_rank_between(StridedSlice.INPUT, 1, NNRT_MAX_RANK)
        return [StridedSlice.ranges(ctx)[1]]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Gather the strided index grid, then drop the shrunk dimensions."""
        x = ctx.tensor(StridedSlice.INPUT)
        ranges, out_shape = StridedSlice.ranges(ctx)
        grid = np.ix_(*[start + stride * np.arange(count) for start, stride, count in ranges])
        return [x[grid].reshape(out_shape)]
