"""LSH_PROJECTION: locality-sensitive hashing of the input's rows into bits.

NNAPI signature (4 inputs, 1 output):

* input 0 (hash): a 2-D TENSOR_FLOAT32 or TENSOR_FLOAT16 ``[num_hash, num_bits]`` of seeds,
  ``num_hash >= 1``, ``num_bits <= 32``;
* input 1 (input): a tensor of rank >= 1 of TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_INT32 or
  TENSOR_QUANT8_ASYMM with at least one row; its rows (slices along dimension 0) are hashed by
  their bytes;
* input 2 (weight): an optional 1-D tensor of the hash's type, one weight per input row;
* input 3 (type): INT32, 1 = SPARSE_DEPRECATED, 2 = DENSE, 3 = SPARSE.

Output 0, TENSOR_INT32: DENSE gives the ``num_hash * num_bits`` bits themselves; the sparse
types give one ``num_bits``-bit signature per hash function (first bit most significant),
SPARSE adding ``k * 2**num_bits`` to the signature of hash function ``k`` so they do not
collide (NNAPI requires ``num_bits + ceil(log2(num_hash)) <= 32`` for it). As NNAPI's kernel
does, the sparse types take no weight and DENSE requires one.

Bit ``(k, b)`` is the sign of a weighted sum over the input rows ``r``: the key is the seed
``hash[k, b]`` as float32 bytes (a TENSOR_FLOAT16 seed is widened to float32 first) followed
by the row's bytes, its FarmHash ``Fingerprint64`` (:mod:`nnrt.ops.farmhash`) is read as a
signed 64-bit integer and converted to double, multiplied by the row's weight (1.0 when there
is none) and summed in row order in double; the bit is 1 when the sum is positive. Every
type variant is implemented, bit-exact with NNAPI's kernel.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register
from nnrt.ops.farmhash import fingerprint64

T = OperandType
Array = np.ndarray[Any, Any]

SPARSE_DEPRECATED, DENSE, SPARSE = 1, 2, 3
_TYPES = {SPARSE_DEPRECATED: "SPARSE_DEPRECATED", DENSE: "DENSE", SPARSE: "SPARSE"}
_HASH_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
_INPUT_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM)
_MAX_BITS = 32


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _sign_bit(seed: float, rows: list[bytes], weights: list[float] | None) -> int:
    """1 when the weighted sum of the rows' fingerprints under ``seed`` is positive."""
    prefix = np.float32(seed).astype("<f4").tobytes()
    score = 0.0
    for r, row in enumerate(rows):
        value = float(_signed64(fingerprint64(prefix + row)))
        score += value if weights is None else weights[r] * value
    return 1 if score > 0 else 0


def _to_int32(value: int) -> int:
    return ((value + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


@register(OperationType.LSH_PROJECTION, inputs=("hash", "input", "weight", "type"),
          kernel_types=frozenset(_HASH_TYPES))
class LshProjection:
    """LSH_PROJECTION: sign bits of seeded fingerprints of the input rows."""

    HASH, INPUT, WEIGHT, TYPE = 0, 1, 2, 3

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """Operand types: float seeds, an input of any listed type, weights like the seeds."""
        ctx.expect_counts(4, 1)
        hash_type = ctx.expect_type(LshProjection.HASH, *_HASH_TYPES)
        ctx.expect_type(LshProjection.INPUT, *_INPUT_TYPES)
        ctx.expect_optional_type(LshProjection.WEIGHT, hash_type)
        ctx.expect_scalar(LshProjection.TYPE, T.INT32)
        ctx.expect_output_type(0, T.TENSOR_INT32)
        ctx.expect_rank(LshProjection.HASH, 2)
        if not ctx.is_omitted(LshProjection.WEIGHT):
            ctx.expect_rank(LshProjection.WEIGHT, 1)
        kind = ctx.constant(LshProjection.TYPE)
        if kind is not None:
            LshProjection._check_kind(ctx, kind)

    @staticmethod
    def _check_kind(ctx: OperationContext, kind: int) -> None:
        if kind not in _TYPES:
            ctx.fail(f"invalid projection type {kind} (expected 1=SPARSE_DEPRECATED, 2=DENSE "
                     "or 3=SPARSE)", input=LshProjection.TYPE)
        weighted = not ctx.is_omitted(LshProjection.WEIGHT)
        if kind == DENSE and not weighted:
            ctx.fail("a DENSE projection needs weights", input=LshProjection.WEIGHT)
        if kind != DENSE and weighted:
            ctx.fail(f"a {_TYPES[kind]} projection takes no weights (omit this input)",
                     input=LshProjection.WEIGHT)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """``[num_hash]`` for the sparse types, ``[num_hash * num_bits]`` for DENSE."""
        kind = int(ctx.scalar(LshProjection.TYPE))
        LshProjection._check_kind(ctx, kind)
        hash_shape = ctx.shape(LshProjection.HASH)
        if len(hash_shape) != 2:
            ctx.fail(f"expected rank 2, got {len(hash_shape)}", input=LshProjection.HASH)
        num_hash, num_bits = hash_shape
        if num_hash < 1:
            ctx.fail("expected at least one hash function", input=LshProjection.HASH)
        if num_bits > _MAX_BITS:
            ctx.fail(f"at most {_MAX_BITS} bits per hash function, got {num_bits}",
                     input=LshProjection.HASH)
        if kind == SPARSE and num_bits + math.ceil(math.log2(num_hash)) > _MAX_BITS:
            ctx.fail(f"a SPARSE projection needs num_bits + ceil(log2(num_hash)) <= 32, got "
                     f"{num_bits} bits and {num_hash} hash functions", input=LshProjection.HASH)
        input_shape = ctx.shape(LshProjection.INPUT)
        if not input_shape or input_shape[0] < 1:
            ctx.fail(f"expected rank >= 1 and at least one row, got shape {input_shape}",
                     input=LshProjection.INPUT)
        rows = input_shape[0]
        if not ctx.is_omitted(LshProjection.WEIGHT):
            weight = ctx.shape(LshProjection.WEIGHT)
            if weight != (rows,):
                ctx.fail(f"expected shape ({rows},), one weight per input row, got {weight}",
                         input=LshProjection.WEIGHT)
        return [(num_hash * num_bits,) if kind == DENSE else (num_hash,)]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Hash every row under every seed; pack the bits per the projection type."""
        kind = int(ctx.scalar(LshProjection.TYPE))
        seeds = ctx.tensor(LshProjection.HASH).astype(np.float32)
        x = ctx.tensor(LshProjection.INPUT)
        little = np.ascontiguousarray(x, dtype=x.dtype.newbyteorder("<"))
        rows = [little[r].tobytes() for r in range(x.shape[0])]
        weight = ctx.input(LshProjection.WEIGHT)
        weights = None if weight is None else [float(w) for w in weight]
        bits = np.array([[_sign_bit(float(s), rows, weights) for s in row] for row in seeds],
                        dtype=np.int64)
        if kind == DENSE:
            return [bits.reshape(-1).astype(np.int32)]
        num_hash, num_bits = seeds.shape
        signatures = []
        for k in range(num_hash):
            signature = 0
            for bit in bits[k]:
                signature = (signature << 1) | int(bit)
            if kind == SPARSE:
                signature += k << num_bits
            signatures.append(_to_int32(signature))
        return [np.array(signatures, dtype=np.int32)]
