"""gemmlowp's fixed-point math (nnrt/ops/fixed_point.py) at both word sizes, and NNAPI's
requantisation (nnrt.ops.quant.change_quantization), against float64 math and hand-worked values.

Bit-exactness against NNAPI is checked end to end by the LOGISTIC, TANH, SOFTMAX,
L2_NORMALIZATION, QUANTIZED_16BIT_LSTM and QUANTIZED_LSTM conformance cases (their kernels go
through every function here); these tests pin the properties gemmlowp documents.
"""

from __future__ import annotations

import numpy as np
import pytest

from nnrt import OperandType as T
from nnrt.ops import fixed_point as fp
from nnrt.ops.quant import INT32_MAX, change_quantization

RAW16 = np.arange(-32768, 32768, dtype=np.int64)


def _raw(x: np.ndarray, integer_bits: int) -> np.ndarray:
    return np.round(x * 2.0 ** (31 - integer_bits)).astype(np.int64)


# -- int32 --------------------------------------------------------------------------------


def test_int32_exp_logistic_tanh_track_float_math() -> None:
    # gemmlowp's exp is a fourth-order Taylor expansion on [-1/4, 0): errors stay below
    # (1/8)**5 / 120 ~ 2.5e-7, far below the 1/256 steps of the quantised outputs.
    x = np.linspace(-15.9, 15.9, 301)
    for fn, ref in ((fp.logistic, lambda v: 1 / (1 + np.exp(-v))), (fp.tanh, np.tanh)):
        got = fn(_raw(x, 4), 4, 32) / 2.0**31
        np.testing.assert_allclose(got, ref(x), atol=2.5e-7)
    negative = np.linspace(-31.9, 0, 200)
    got = fp.exp_on_negative_values(_raw(negative, 5), 5, 32) / 2.0**31
    np.testing.assert_allclose(got, np.exp(negative), atol=2.5e-7)


def test_int32_functions_are_accurate_on_random_raws() -> None:
    raw = np.random.default_rng(0).integers(-(2**31), 2**31, 20000)
    x = raw / 2.0**28
    assert np.abs(fp.logistic(raw, 3, 32) / 2.0**31 - 1 / (1 + np.exp(-x))).max() < 1e-6
    assert np.abs(fp.tanh(raw, 3, 32) / 2.0**31 - np.tanh(x)).max() < 1e-6


def test_int32_special_values() -> None:
    zero = np.array([0])
    assert fp.exp_on_negative_values(zero, 5, 32)[0] == INT32_MAX  # exp(0): 1 - 2**-31
    assert fp.logistic(zero, 4, 32)[0] == 1 << 30  # exactly 0.5
    assert fp.tanh(zero, 4, 32)[0] == 0
    # below -32 (integer bits > 5) exp is 0
    assert fp.exp_on_negative_values(np.array([-(33 << 25)]), 6, 32)[0] == 0


def test_one_over_one_plus_x() -> None:
    x = np.linspace(0, 0.999, 50)
    got = fp.one_over_one_plus_x(_raw(x, 0), 32) / 2.0**31
    np.testing.assert_allclose(got, 1 / (1 + x), atol=1e-8)


def test_int32_rescale_saturates_left_and_rounds_right() -> None:
    x = np.array([3 << 28, -(3 << 28), 5, -5])
    assert fp.rescale(x[:2], 2, 0, 32).tolist() == [INT32_MAX, -(2**31)]
    assert fp.rescale(x[2:], 0, 1, 32).tolist() == [3, -3]  # 2.5 -> 3, -2.5 -> -3


def test_count_leading_zeros() -> None:
    got = fp.count_leading_zeros(np.array([0, 1, 2, 3, 1 << 30, 2**31 - 1]))
    assert got.tolist() == [32, 31, 30, 30, 1, 1]


# -- int16 --------------------------------------------------------------------------------


@pytest.mark.parametrize("integer_bits", [0, 1, 3, 4, 6])
def test_int16_logistic_and_tanh_are_within_a_few_steps(integer_bits: int) -> None:
    x = RAW16 / 2.0 ** (15 - integer_bits)
    logistic = fp.logistic(RAW16, integer_bits, 16)
    tanh = fp.tanh(RAW16, integer_bits, 16)
    assert np.abs(logistic - 2.0**15 / (1 + np.exp(-x))).max() <= 8
    assert np.abs(tanh - 2.0**15 * np.tanh(x)).max() <= 16
    assert logistic.min() >= 0 and logistic.max() <= 32767
    assert tanh.min() >= -32767 and tanh.max() <= 32767


def test_int16_special_values() -> None:
    assert fp.logistic(0, 3, 16) == 16384  # one half
    assert fp.tanh(0, 3, 16) == 0
    assert fp.exp_on_negative_values(0, 3, 16) == 32767  # one, the largest Q0.15 value
    # the most negative input (-8 in Q3.12): negation wraps, the symmetric formula still holds
    assert fp.logistic(-32768, 3, 16) == 32767 - fp.logistic(32767, 3, 16)
    # inputs below -32 give exactly 0 for more than 5 integer bits
    assert fp.exp_on_negative_values(-32768, 6, 16) == 0


def test_mul_rounds_and_saturates_like_gemmlowp() -> None:
    assert fp.mul(-32768, -32768, 16) == 32767  # the one overflowing product
    assert fp.mul(16384, 16384, 16) == 8192  # 0.5 * 0.5 in Q0.15
    assert fp.mul(1, 16384, 16) == 1  # halves round up (the nudge is 2**14, or 1 - 2**14)
    assert fp.mul(-1, 16384, 16) == 0
    assert fp.mul(-3, 16384, 16) == -1


def test_int16_rescale_saturates_upward_and_rounds_downward() -> None:
    assert fp.rescale(8191, 2, 0, 16) == 32764
    assert fp.rescale(8192, 2, 0, 16) == 32767
    assert fp.rescale(-8193, 2, 0, 16) == -32768
    assert fp.rescale(6, 0, 2, 16) == 2  # 6 / 4 = 1.5 rounds away from zero
    assert fp.constant(1 << 30, 16) == 16384


# -- inverse square root (int32) ----------------------------------------------------------


@pytest.mark.parametrize("value", [2, 3, 5, 25, 100, 12345, 2**20 + 7, 2**28, 2**30 + 5,
                                   2**31 - 1])
def test_inverse_sqrt_multiplier(value: int) -> None:
    multiplier, shift = fp.inv_sqrt_quantized_multiplier(value)
    assert 0 < multiplier < 2**31 and shift <= 0
    assert multiplier * 2.0 ** (shift - 31) == pytest.approx(value**-0.5, rel=2e-6)


def test_inverse_sqrt_multiplier_is_vectorised() -> None:
    values = np.array([2, 3, 25, 12345, 1 << 28, (1 << 30) + 5, 2**31 - 1])
    m, shift = fp.inv_sqrt_quantized_multiplier(values)
    assert np.all(shift <= 0)
    np.testing.assert_allclose(m * 2.0 ** (shift - 31), 1 / np.sqrt(values), rtol=1e-5)
    one_by_one = [fp.inv_sqrt_quantized_multiplier(int(v)) for v in values]
    assert m.tolist() == [int(a) for a, _ in one_by_one]
    assert shift.tolist() == [int(b) for _, b in one_by_one]


def test_inverse_sqrt_of_zero_or_one_is_the_largest_multiplier() -> None:
    # 0 and 1 are handled apart (TFLite: the largest multiplier, no shift)
    assert fp.inv_sqrt_quantized_multiplier(0) == (2**31 - 1, 0)
    assert fp.inv_sqrt_quantized_multiplier(1) == (2**31 - 1, 0)
    m, shift = fp.inv_sqrt_quantized_multiplier(np.array([0, 1]))
    assert m.tolist() == [INT32_MAX, INT32_MAX] and shift.tolist() == [0, 0]


# -- requantisation -----------------------------------------------------------------------


def test_change_quantization_rounds_half_away_and_saturates() -> None:
    q = np.array([0, 1, 3, 5, 255])
    # reals (q - 1) * 0.5 = [-0.5, 0, 1, 2, 127] in steps of 1.0 around 10: 9.5 rounds to 10
    got = change_quantization(q, 0.5, 1, 1.0, 10, T.TENSOR_QUANT8_ASYMM)
    assert got.dtype == np.uint8
    assert got.tolist() == [10, 10, 11, 12, 137]
    # -2.5 rounds to -3 (half away from zero, C's round); +-256 saturate
    got = change_quantization(np.array([-5, 5, -128, 127]), 0.5, 0, 1.0, 0,
                              T.TENSOR_QUANT8_ASYMM_SIGNED)
    assert got.tolist() == [-3, 3, -64, 64]
    got = change_quantization(np.array([-128, 127]), 2.0, 0, 1.0, 0,
                              T.TENSOR_QUANT8_ASYMM_SIGNED)
    assert got.tolist() == [-128, 127]
