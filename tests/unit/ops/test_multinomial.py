"""RANDOM_MULTINOMIAL (nnrt/ops/multinomial.py): checked statistically, as NNAPI's tests do.

NNAPI's generated test for RANDOM_MULTINOMIAL compares each class's frequency among the samples
with ``softmax(logits)`` within a tolerance (``expectMultinomialDistributionWithinTolerance``);
the conformance kit compares values, so the operation is tested here instead.
"""

from __future__ import annotations

import numpy as np
import pytest
from single_op import build as _model

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op

F32 = T.TENSOR_FLOAT32


def _multinomial(shape: tuple[int, int], count: int | None, type_: T = F32,
                 seeds: object = (37, 42)) -> nnrt.Model:
    seed_value = None if seeds is None else np.asarray(seeds, np.int32)
    seed_dims = (2,) if seeds is None else seed_value.shape  # type: ignore[union-attr]
    return _model(Op.RANDOM_MULTINOMIAL,
                  [(type_, shape, None), (T.INT32, (), count), (T.TENSOR_INT32, seed_dims,
                                                                seed_value)],
                  [(T.TENSOR_INT32, (0, 0))])


def _sample(logits: np.ndarray, count: int, seeds: tuple[int, int] = (37, 42),
            type_: T = F32) -> np.ndarray:
    model = _multinomial(logits.shape, count, type_, seeds).finish()
    (out,) = nnrt.reference.run(model, [logits])
    return np.asarray(out)


def _expect_distribution(logits: np.ndarray, samples: np.ndarray, tolerance: float) -> None:
    """NNAPI's check: per batch and class, |frequency - softmax(logit)| <= tolerance."""
    x = logits.astype(np.float64)
    expected = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)
    for b in range(logits.shape[0]):
        frequency = np.bincount(samples[b], minlength=logits.shape[1]) / samples.shape[1]
        np.testing.assert_allclose(frequency, expected[b], atol=tolerance)


def test_output_shape_type_and_range() -> None:
    logits = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], np.float32))
    out = _sample(logits, 17)
    assert out.shape == (2, 17) and out.dtype == np.int32
    assert out.min() >= 0 and out.max() < 3


@pytest.mark.parametrize("type_", [T.TENSOR_FLOAT32, T.TENSOR_FLOAT16])
def test_frequencies_follow_the_softmax_of_the_logits(type_: T) -> None:
    dtype = np.float16 if type_ == T.TENSOR_FLOAT16 else np.float32
    logits = np.array([[0.0, 1.0, 2.0, -1.0, 0.5], [3.0, 3.0, -2.0, 0.0, 1.0]], dtype)
    _expect_distribution(logits, _sample(logits, 20000, type_=type_), 0.01)


def test_nnapi_shaped_example_1024_classes_128_samples() -> None:
    # the shape of NNAPI's random_multinomial example: one batch of 1024 classes, 128 samples,
    # every class's frequency within NNAPI's tolerance of its probability (equal logits: a
    # class drawn 4 times of 128 would miss it, which happens with probability ~1%)
    logits = np.zeros((1, 1024), np.float32)
    _expect_distribution(logits, _sample(logits, 128), 0.025)


def test_seeds_make_the_samples_reproducible() -> None:
    logits = np.zeros((2, 10), np.float32)
    first = _sample(logits, 50, (7, 9))
    np.testing.assert_array_equal(first, _sample(logits, 50, (7, 9)))
    assert not np.array_equal(first, _sample(logits, 50, (9, 7)))
    assert not np.array_equal(first, _sample(logits, 50, (-1, 9)))


def test_non_finite_logits_are_never_drawn() -> None:
    logits = np.array([[-np.inf, 0.0, np.nan, 0.0, np.inf]], np.float32)
    out = _sample(logits, 2000)
    assert set(np.unique(out)) == {1, 3}
    with pytest.raises(nnrt.BadData, match=r"\(RANDOM_MULTINOMIAL\), input 0 \(input\): batch 1 "
                                           "has no finite logit"):
        _sample(np.array([[0.0, 1.0], [-np.inf, np.nan]], np.float32), 3)


def test_malformed_models() -> None:
    with pytest.raises(nnrt.BadData, match=r"input 1 \(sample_count\): sample_count must be at "
                                           "least 1, got 0"):
        _multinomial((2, 3), 0).finish()
    with pytest.raises(nnrt.BadData, match=r"input 2 \(seeds\): expected shape \(2,\), got "
                                           r"\(3,\)"):
        _multinomial((2, 3), 4, seeds=(1, 2, 3)).finish()
    with pytest.raises(nnrt.BadData, match=r"input 0 \(input\): expected TENSOR_FLOAT32 or "
                                           "TENSOR_FLOAT16, got TENSOR_INT32"):
        _multinomial((2, 3), 4, T.TENSOR_INT32).finish()
    model = _model(Op.RANDOM_MULTINOMIAL, [(F32, (6,), None), (T.INT32, (), 2),
                                           (T.TENSOR_INT32, (2,), None)],
                   [(T.TENSOR_INT32, (0, 0))])
    with pytest.raises(nnrt.BadData, match=r"input 0 \(input\): expected rank 2, got 1"):
        model.finish()
