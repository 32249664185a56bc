"""HASHTABLE_LOOKUP: rows of a table picked by key.

NNAPI signature (3 inputs, 2 outputs):

* input 0 (lookups): a 1-D TENSOR_INT32 ``[k]`` of keys to look up;
* input 1 (keys): a 1-D TENSOR_INT32 ``[n]``, sorted in ascending order;
* input 2 (values): an n-D tensor ``[n, ...]`` of TENSOR_FLOAT32, TENSOR_INT32 or
  TENSOR_QUANT8_ASYMM; row ``i`` belongs to ``keys[i]``.

Outputs: 0 (output) ``[k, ...]`` of the values' type (quantised: the values' scale and zero
point), row ``j`` the row of ``lookups[j]`` or all zero bytes when the key is absent (for
TENSOR_QUANT8_ASYMM that is the raw value 0, not the zero point, as NNAPI's kernel writes);
1 (hits) ``[k]`` TENSOR_QUANT8_ASYMM with scale 1.0 and zero point 0: 1 for a hit, 0 for a miss.

NNAPI finds keys by binary search, so its result for unsorted keys is undefined: nnrt reports
unsorted keys as ``BadData``. Among equal keys the first row is taken. Every type is
implemented; the kernel copies raw values, so it is exact for each of them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register

T = OperandType
Array = np.ndarray[Any, Any]

_VALUE_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM)


def _check_sorted(ctx: OperationContext, slot: int, keys: Array) -> None:
    flat = np.asarray(keys).reshape(-1)
    bad = np.flatnonzero(flat[1:] < flat[:-1])
    if bad.size:
        k = int(bad[0])
        ctx.fail(f"keys must be sorted in ascending order: key {int(flat[k + 1])} at position "
                 f"{k + 1} follows {int(flat[k])}", input=slot)


@register(OperationType.HASHTABLE_LOOKUP, inputs=("lookups", "keys", "values"),
          outputs=("output", "hits"), kernel_types=frozenset(_VALUE_TYPES), type_input=2)
class HashtableLookup:
    """HASHTABLE_LOOKUP: the values row of each looked-up key, and whether it was found."""

    LOOKUPS, KEYS, VALUES = 0, 1, 2

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's static rules: operand types, ranks, the outputs' quantisation."""
        ctx.expect_counts(3, 2)
        ctx.expect_type(HashtableLookup.LOOKUPS, T.TENSOR_INT32)
        ctx.expect_type(HashtableLookup.KEYS, T.TENSOR_INT32)
        ctx.expect_type(HashtableLookup.VALUES, *_VALUE_TYPES)
        ctx.expect_rank(HashtableLookup.LOOKUPS, 1)
        ctx.expect_rank(HashtableLookup.KEYS, 1)
        ctx.expect_output_like_input(0, HashtableLookup.VALUES)
        ctx.expect_output_quant_like_input(0, HashtableLookup.VALUES)
        ctx.expect_output_type(1, T.TENSOR_QUANT8_ASYMM)
        hits = ctx.output_operand(1)
        if hits.scale != 1.0 or hits.zero_point != 0:
            ctx.fail(f"hits must have scale 1.0 and zero point 0, got ({hits.scale}, "
                     f"{hits.zero_point})", output=1)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """``[k, values.dims[1:]]`` and ``[k]``; keys must match the values' rows."""
        lookups = ctx.shape(HashtableLookup.LOOKUPS)
        keys = ctx.shape(HashtableLookup.KEYS)
        values = ctx.shape(HashtableLookup.VALUES)
        for slot, shape in ((HashtableLookup.LOOKUPS, lookups), (HashtableLookup.KEYS, keys)):
            if len(shape) != 1:
                ctx.fail(f"expected rank 1, got {len(shape)}", input=slot)
        if keys[0] != values[0]:
            ctx.fail(f"expected {values[0]} keys, one per row of values, got {keys[0]}",
                     input=HashtableLookup.KEYS)
        key_values = ctx.constant(HashtableLookup.KEYS)
        if key_values is not None:
            _check_sorted(ctx, HashtableLookup.KEYS, key_values)
        return [(lookups[0], *values[1:]), (lookups[0],)]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Binary-search each lookup among the keys; copy the row or write zeros."""
        lookups = ctx.tensor(HashtableLookup.LOOKUPS).astype(np.int64)
        keys = ctx.tensor(HashtableLookup.KEYS).astype(np.int64)
        values = ctx.tensor(HashtableLookup.VALUES)
        rows = np.searchsorted(keys, lookups, side="left")
        found = rows < keys.size
        found[found] = keys[rows[found]] == lookups[found]
        output = np.zeros((lookups.size, *values.shape[1:]), dtype=values.dtype)
        output[found] = values[rows[found]]
        return [output, found.astype(np.uint8)]
