"""Gathering by index tuples: com.nnrt.GATHER_ND (nnrt's extension, for ONNX ``GatherND``).

Signature (ONNX GatherND, opset 12+):

* com.nnrt.GATHER_ND: input 0 (data) a tensor of rank ``r ≥ 1`` (TENSOR_FLOAT32, _FLOAT16,
  _INT32, _BOOL8, _QUANT8_ASYMM, _QUANT8_ASYMM_SIGNED); input 1 (indices) a TENSOR_INT32 of rank
  ``q ≥ 1`` whose last dimension ``k`` is in ``[1, r - b]``; input 2 (batch_dims) an INT32
  ``b ≥ 0`` with ``b < min(q, r)`` and ``data.shape[:b] == indices.shape[:b]``. Output 0 of
  data's type (quantised: same scale and zero point), shape
  ``indices.shape[:-1] + data.shape[b + k:]``:
  ``output[i..., j] = data[i_batch..., indices[i...][0], ..., indices[i...][k - 1], ...]`` —
  each index tuple picks one element (``k = r - b``) or one slice of ``data``, within its batch.

Indices count from the end when negative (``-1`` is the last); an index outside
``[-size, size)`` is ``BadData`` naming the indices input, the index and its position (at
``Model.finish()`` for constant indices, else at execution).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register

T = OperandType
Array = np.ndarray[Any, Any]

_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32, T.TENSOR_BOOL8,
          T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)


@register(OperationType.NNRT_GATHER_ND, inputs=("data", "indices", "batch_dims"),
          kernel_types=frozenset(_TYPES))
class GatherNd:
    """com.nnrt.GATHER_ND: elements or slices of ``data`` addressed by index tuples."""

    DATA, INDICES, BATCH_DIMS = 0, 1, 2

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """Types, batch_dims ≥ 0, and the rank / dimension rules that the known dims allow."""
        cls = GatherNd
        ctx.expect_counts(3, 1)
        ctx.expect_type(cls.DATA, *_TYPES)
        ctx.expect_type(cls.INDICES, T.TENSOR_INT32)
        ctx.expect_scalar(cls.BATCH_DIMS, T.INT32)
        ctx.expect_output_like_input(0, cls.DATA)
        ctx.expect_output_quant_like_input(0, cls.DATA)
        batch_dims = ctx.constant(cls.BATCH_DIMS)
        if batch_dims is not None:
            _check_shapes(ctx, ctx.dims(cls.DATA), ctx.dims(cls.INDICES), batch_dims)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Output shape; checks every index when the indices' values are known."""
        cls = GatherNd
        data, indices = ctx.shape(cls.DATA), ctx.shape(cls.INDICES)
        batch_dims = int(ctx.scalar(cls.BATCH_DIMS))
        for slot, shape in ((cls.DATA, data), (cls.INDICES, indices)):
            if not shape:
                ctx.fail("expected rank of at least 1, got 0", input=slot)
        _check_shapes(ctx, data, indices, batch_dims)
        values = ctx.constant(cls.INDICES)
        if values is not None:
            _check_indices(ctx, values, data, batch_dims)
        return [indices[:-1] + data[batch_dims + indices[-1]:]]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """One fancy-indexing gather per batch (indices were range-checked by ``prepare``)."""
        cls = GatherNd
        data = ctx.tensor(cls.DATA)
        indices = ctx.tensor(cls.INDICES).astype(np.intp)
        b = int(ctx.scalar(cls.BATCH_DIMS))
        k = indices.shape[-1]
        batches = int(np.prod(data.shape[:b], dtype=np.int64))
        sizes = np.asarray(data.shape[b:b + k], np.intp)
        tuples = indices.reshape(batches, -1, k) % sizes  # negative indices count from the end
        per_batch = data.reshape(batches, *data.shape[b:])
        batch = np.arange(batches).reshape(batches, 1)
        picked = per_batch[(batch, *(tuples[..., j] for j in range(k)))]
        return [picked.reshape(indices.shape[:-1] + data.shape[b + k:])]


def _check_shapes(ctx: OperationContext, data: Shape, indices: Shape, batch_dims: int) -> None:
    """GatherND's shape rules on the known dims (0 = unknown, ``()`` = unknown rank)."""
    cls = GatherNd
    if batch_dims < 0:
        ctx.fail(f"batch_dims must be non-negative, got {batch_dims}", input=cls.BATCH_DIMS)
    for what, dims in (("data", data), ("indices", indices)):
        if dims and batch_dims >= len(dims):
            ctx.fail(f"batch_dims = {batch_dims} must be less than the rank of {what} "
                     f"({len(dims)})", input=cls.BATCH_DIMS)
    if not indices or not indices[-1]:
        return
    k = indices[-1]
    if data and not 1 <= k <= len(data) - batch_dims:
        ctx.fail(f"the last dimension of indices ({k}) must be in [1, {len(data) - batch_dims}] "
                 f"(data rank {len(data)} minus batch_dims {batch_dims})", input=cls.INDICES)
    if not data:
        return
    for axis in range(batch_dims):
        if data[axis] and indices[axis] and data[axis] != indices[axis]:
            ctx.fail(f"dimension {axis} ({indices[axis]}) must equal data's dimension {axis} "
                     f"({data[axis]}): the first batch_dims = {batch_dims} dimensions are "
                     "batch dimensions", input=cls.INDICES)


def _check_indices(ctx: OperationContext, indices: Array, data: Shape, batch_dims: int) -> None:
    """Fail naming the indices input unless index ``j`` of every tuple is in
    ``[-size, size)`` for ``size = data[batch_dims + j]``."""
    values = np.asarray(indices, np.int64)
    k = values.shape[-1]
    bounds = np.asarray(data[batch_dims:batch_dims + k], np.int64)
    bad = np.argwhere((values < -bounds) | (values >= bounds))
    if bad.size:
        position = tuple(int(p) for p in bad[0])
        value, axis = int(values[position]), batch_dims + position[-1]
        size = data[axis]
        ctx.fail(f"index {value} at position {position} is out of range for data dimension "
                 f"{axis} of size {size} (expected [{-size}, {size}))", input=GatherNd.INDICES)
