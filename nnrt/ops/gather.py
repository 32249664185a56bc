"""Gathering by index: GATHER, EMBEDDING_LOOKUP, TOPK_V2.

NNAPI signatures:

* GATHER: input 0 an n-D tensor (TENSOR_FLOAT32, _FLOAT16, _INT32, _QUANT8_ASYMM, _SIGNED);
  input 1 an INT32 axis in ``[-n, n)``; input 2 a k-D TENSOR_INT32 of indices in
  ``[0, input.dims[axis])``. Output: the input's type (quantised: same scale and zero point),
  shape ``input.dims[:axis] + indices.dims + input.dims[axis + 1:]`` (rank n + k - 1).
* EMBEDDING_LOOKUP: input 0 (lookups) a 1-D TENSOR_INT32 of indices into the first dimension of
  input 1 (values), an n-D tensor with n >= 2 (TENSOR_FLOAT32, _FLOAT16, _INT32,
  _QUANT8_ASYMM, _SIGNED). Output: the values' type (quantised: same scale and zero point) and
  shape, with the first dimension replaced by the number of lookups.
* TOPK_V2: input 0 an n-D tensor (TENSOR_FLOAT32, _FLOAT16, _INT32, _QUANT8_ASYMM, _SIGNED);
  input 1 an INT32 k in ``[1, input.dims[-1]]``. Output 0: the k largest values along the last
  dimension, sorted in descending order, of the input's type (quantised: same scale and zero
  point); output 1: their TENSOR_INT32 indices within the last dimension. Equal values are
  ordered as NNAPI specifies: "the one with larger index appears first".

Out-of-range indices / lookups are ``BadData`` naming the index input (never wrapped).
The kernels implement every listed type: they copy (and TOPK_V2 compares) elements, the
quantised types as their stored integers. Empty index tensors and inputs with an extent of 0
(zero-size tensors, NNAPI 1.3) give zero-size outputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext, Unknown
from nnrt.ops._framework.registry import Shape, register

T = OperandType
Array = np.ndarray[Any, Any]

_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM,
          T.TENSOR_QUANT8_ASYMM_SIGNED)
_KERNEL_TYPES = frozenset(_TYPES)


def _check_indices(ctx: OperationContext, slot: int, indices: Array, size: int,
                   what: str) -> None:
    """Fail naming input ``slot`` unless every index is in ``[0, size)``."""
    flat = np.asarray(indices).reshape(-1)
    bad = np.flatnonzero((flat < 0) | (flat >= size))
    if bad.size:
        k = int(bad[0])
        ctx.fail(f"index {int(flat[k])} at position {k} is out of range for {what} of size "
                 f"{size} (expected [0, {size}))", input=slot)


@register(OperationType.GATHER, inputs=("input", "axis", "indices"),
          kernel_types=_KERNEL_TYPES)
class Gather:
    """GATHER: slices of the input along ``axis`` picked by ``indices``."""

    INPUT, AXIS, INDICES = 0, 1, 2

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's static rules for GATHER."""
        ctx.expect_counts(3, 1)
        ctx.expect_type(Gather.INPUT, *_TYPES)
        ctx.expect_axis(Gather.AXIS, ctx.rank_or_none(Gather.INPUT))
        ctx.expect_type(Gather.INDICES, T.TENSOR_INT32)
        ctx.expect_output_like_input(0, Gather.INPUT)
        ctx.expect_output_quant_like_input()

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Output shape; checks the indices when their values are known."""
        shape = ctx.shape(Gather.INPUT)
        axis = ctx.expect_axis(Gather.AXIS, len(shape))
        if axis is None:
            raise Unknown
        indices_shape = ctx.shape(Gather.INDICES)
        indices = ctx.constant(Gather.INDICES)
        if indices is not None:
            _check_indices(ctx, Gather.INDICES, indices, shape[axis], f"axis {axis}")
        return [shape[:axis] + indices_shape + shape[axis + 1:]]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Copy the selected slices (indices were range-checked by ``prepare``)."""
        x = ctx.tensor(Gather.INPUT)
        axis = int(ctx.scalar(Gather.AXIS)) % x.ndim
        indices = ctx.tensor(Gather.INDICES).astype(np.intp)
        return [np.take(x, indices, axis=axis)]


@register(OperationType.EMBEDDING_LOOKUP, inputs=("lookups", "values"),
          kernel_types=_KERNEL_TYPES, type_input=1)
class EmbeddingLookup:
    """EMBEDDING_LOOKUP: rows of ``values`` selected by ``lookups``."""

    LOOKUPS, VALUES = 0, 1

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's static rules for EMBEDDING_LOOKUP."""
        ctx.expect_counts(2, 1)
        ctx.expect_type(EmbeddingLookup.LOOKUPS, T.TENSOR_INT32)
        ctx.expect_rank(EmbeddingLookup.LOOKUPS, 1)
        ctx.expect_type(EmbeddingLookup.VALUES, *_TYPES)
        rank = ctx.rank_or_none(EmbeddingLookup.VALUES)
        if rank is not None and rank < 2:
            ctx.fail(f"expected rank at least 2, got {rank}", input=EmbeddingLookup.VALUES)
        ctx.expect_output_like_input(0, EmbeddingLookup.VALUES)
        ctx.expect_output_quant_like_input(0, EmbeddingLookup.VALUES)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Output shape; checks the lookups when their values are known."""
        lookups_shape = ctx.shape(EmbeddingLookup.LOOKUPS)
        values_shape = ctx.shape(EmbeddingLookup.VALUES)
        if len(lookups_shape) != 1:
            ctx.fail(f"expected rank 1, got {len(lookups_shape)}", input=EmbeddingLookup.LOOKUPS)
        if len(values_shape) < 2:
            ctx.fail(f"expected rank at least 2, got {len(values_shape)}",
                     input=EmbeddingLookup.VALUES)
        lookups = ctx.constant(EmbeddingLookup.LOOKUPS)
        if lookups is not None:
            _check_indices(ctx, EmbeddingLookup.LOOKUPS, lookups, values_shape[0],
                           "the first dimension of values")
        return [lookups_shape + values_shape[1:]]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Copy the looked-up rows (lookups were range-checked by ``prepare``)."""
        values = ctx.tensor(EmbeddingLookup.VALUES)
        lookups = ctx.tensor(EmbeddingLookup.LOOKUPS).astype(np.intp)
        return [values[lookups]]


@register(OperationType.TOPK_V2, inputs=("input", "k"), outputs=("values", "indices"),
          kernel_types=_KERNEL_TYPES)
class TopKV2:
    """TOPK_V2: the k largest entries of each last-dimension row, and their indices."""

    INPUT, K = 0, 1

    @staticmethod
    def _check_k(ctx: OperationContext, k: int, last: int | None) -> None:
        if k < 1 or (last is not None and k > last):
            bound = "at least 1" if last is None else f"[1, {last}] (the last dimension's size)"
            ctx.fail(f"k = {k} is out of range: expected {bound}", input=TopKV2.K)

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's static rules for TOPK_V2."""
        ctx.expect_counts(2, 2)
        ctx.expect_type(TopKV2.INPUT, *_TYPES)
        ctx.expect_scalar(TopKV2.K, T.INT32)
        ctx.expect_output_like_input(0, TopKV2.INPUT)
        ctx.expect_output_quant_like_input()
        ctx.expect_output_type(1, T.TENSOR_INT32)
        k = ctx.constant(TopKV2.K)
        if k is not None:
            dims = ctx.dims(TopKV2.INPUT)
            TopKV2._check_k(ctx, k, dims[-1] if dims and dims[-1] else None)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Both outputs: the input shape with the last dimension replaced by k."""
        shape = ctx.shape(TopKV2.INPUT)
        k = int(ctx.scalar(TopKV2.K))
        TopKV2._check_k(ctx, k, shape[-1])
        out = (*shape[:-1], k)
        return [out, out]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Sort each row by value descending, equal values by index descending; keep k."""
        x = ctx.tensor(TopKV2.INPUT)
        k = int(ctx.scalar(TopKV2.K))
        n = x.shape[-1]
        # Reverse each row so a stable sort puts the larger original index first among ties.
        reversed_rows = np.flip(x, axis=-1).astype(np.float64 if x.dtype.kind == "f"
                                                    else np.int64)
        order = np.argsort(-reversed_rows, axis=-1, kind="stable")[..., :k]
        indices = (n - 1 - order).astype(np.int32)
        return [np.take_along_axis(x, indices.astype(np.intp), axis=-1), indices]
