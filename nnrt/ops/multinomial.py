"""RANDOM_MULTINOMIAL: samples drawn from categorical distributions given by logits.

NNAPI signature (3 inputs, 1 output):

* input 0 (input): a 2-D TENSOR_FLOAT32 or TENSOR_FLOAT16 ``[batches, classes]`` of unnormalised
  log-probabilities;
* input 1 (sample_count): INT32, the number of samples per batch (>= 1);
* input 2 (seeds): a 1-D TENSOR_INT32 ``[2]`` seeding the random generator.

Output 0: TENSOR_INT32 ``[batches, sample_count]`` of class indices in ``[0, classes)``.

NNAPI's kernel (TensorFlow's multinomial op) builds each batch's cumulative distribution in
double — ``exp(logit - max)`` summed over the finite logits, non-finite ones adding nothing — and
for each sample draws a uniform double ``u`` in ``[0, 1)`` and takes the first class whose
cumulative sum exceeds ``u * total``. So does this kernel. Only the random stream differs:
NNAPI draws from TensorFlow's Philox4x32-10 generator; nnrt from numpy's Philox (4x64-10),
keyed by the two seeds as unsigned 32-bit words (``key = seeds[0] + seeds[1] * 2**32``), one
generator per execution, batches in order. The samples therefore follow the same distribution
as NNAPI's but are not the same numbers: like NNAPI's own tests, check them statistically
(class frequencies against ``softmax(logits)``). The same seeds always give the same samples
(NNAPI's seeds ``(0, 0)`` ask TensorFlow for a random seed; nnrt stays deterministic). A batch
without any finite logit has no distribution and is reported as ``BadData``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register

T = OperandType
Array = np.ndarray[Any, Any]

_FLOATS = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)


def philox_generator(seeds: Array) -> np.random.Generator:
    """numpy's Philox generator keyed by the two INT32 seeds (as unsigned 32-bit words)."""
    low, high = (int(s) & 0xFFFFFFFF for s in np.asarray(seeds).reshape(-1)[:2])
    return np.random.Generator(np.random.Philox(key=low | (high << 32)))


def cumulative_distribution(logits: Array) -> Array:
    """Per row, the running sums of ``exp(logit - max)`` over finite logits, in float64."""
    x = np.asarray(logits, dtype=np.float64)
    finite = np.isfinite(x)
    row_max = np.max(np.where(finite, x, -np.inf), axis=-1, keepdims=True)
    weights = np.where(finite, np.exp(np.where(finite, x - row_max, 0.0)), 0.0)
    return np.cumsum(weights, axis=-1)


@register(OperationType.RANDOM_MULTINOMIAL, inputs=("input", "sample_count", "seeds"),
          kernel_types=frozenset(_FLOATS))
class RandomMultinomial:
    """RANDOM_MULTINOMIAL: ``sample_count`` class indices per batch."""

    INPUT, SAMPLE_COUNT, SEEDS = 0, 1, 2

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """Types and ranks: float logits of rank 2, INT32 count, TENSOR_INT32 seeds."""
        ctx.expect_counts(3, 1)
        ctx.expect_type(RandomMultinomial.INPUT, *_FLOATS)
        ctx.expect_scalar(RandomMultinomial.SAMPLE_COUNT, T.INT32)
        ctx.expect_type(RandomMultinomial.SEEDS, T.TENSOR_INT32)
        ctx.expect_output_type(0, T.TENSOR_INT32)
        ctx.expect_rank(RandomMultinomial.INPUT, 2)
        ctx.expect_rank(RandomMultinomial.SEEDS, 1)
        count = ctx.constant(RandomMultinomial.SAMPLE_COUNT)
        if count is not None:
            RandomMultinomial._check_count(ctx, count)

    @staticmethod
    def _check_count(ctx: OperationContext, count: int) -> None:
        if count < 1:
            ctx.fail(f"sample_count must be at least 1, got {count}",
                     input=RandomMultinomial.SAMPLE_COUNT)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """``[batches, sample_count]``; the seeds must be two values."""
        shape = ctx.shape(RandomMultinomial.INPUT)
        if len(shape) != 2:
            ctx.fail(f"expected rank 2, got {len(shape)}", input=RandomMultinomial.INPUT)
        seeds = ctx.shape(RandomMultinomial.SEEDS)
        if seeds != (2,):
            ctx.fail(f"expected shape (2,), got {seeds}", input=RandomMultinomial.SEEDS)
        count = int(ctx.scalar(RandomMultinomial.SAMPLE_COUNT))
        RandomMultinomial._check_count(ctx, count)
        return [(shape[0], count)]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Inverse-CDF sampling with uniform doubles from the seeded Philox generator."""
        cdf = cumulative_distribution(ctx.tensor(RandomMultinomial.INPUT))
        count = int(ctx.scalar(RandomMultinomial.SAMPLE_COUNT))
        totals = cdf[:, -1] if cdf.shape[1] else np.zeros(cdf.shape[0])
        empty = np.flatnonzero(~(totals > 0))
        if empty.size:
            ctx.fail(f"batch {int(empty[0])} has no finite logit: no distribution to sample",
                     input=RandomMultinomial.INPUT)
        generator = philox_generator(ctx.tensor(RandomMultinomial.SEEDS))
        uniforms = generator.random((cdf.shape[0], count))
        # u * total may round up to total: the last class with weight takes that draw
        last = cdf.shape[1] - 1 - np.argmax(np.diff(cdf, prepend=0.0)[:, ::-1] > 0, axis=1)
        out = np.empty((cdf.shape[0], count), dtype=np.int32)
        for b in range(cdf.shape[0]):
            picks = np.searchsorted(cdf[b], uniforms[b] * totals[b], side="right")
            out[b] = np.minimum(picks, last[b])
        return [out]
