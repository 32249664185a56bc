"""gemmlowp fixed-point functions (nnrt/ops/fixed_width.py): accuracy, special values, rules.

Bit-exactness against NNAPI is checked end to end by the QUANTIZED_16BIT_LSTM and
QUANTIZED_LSTM conformance cases (their gates go through every function here); these tests pin
the properties gemmlowp documents.
"""

from __future__ import annotations

import numpy as np
import pytest

from nnrt.ops import fixed_width as fp

RAW16 = np.arange(-32768, 32768, dtype=np.int64)


@pytest.mark.parametrize("integer_bits", [0, 1, 3, 4, 6])
def test_int16_logistic_and_tanh_are_within_a_few_steps(integer_bits: int) -> None:
    x = RAW16 / 2.0 ** (15 - integer_bits)
    logistic = fp.logistic(RAW16, integer_bits, 16)
    tanh = fp.tanh(RAW16, integer_bits, 16)
    assert np.abs(logistic - 2.0**15 / (1 + np.exp(-x))).max() <= 8
    assert np.abs(tanh - 2.0**15 * np.tanh(x)).max() <= 16
    assert logistic.min() >= 0 and logistic.max() <= 32767
    assert tanh.min() >= -32767 and tanh.max() <= 32767


def test_special_values() -> None:
    assert fp.logistic(0, 3, 16) == 16384  # one half
    assert fp.tanh(0, 3, 16) == 0
    assert fp.exp_on_negative_values(0, 3, 16) == 32767  # one, the largest Q0.15 value
    # the most negative input (-8 in Q3.12): negation wraps, the symmetric formula still holds
    assert fp.logistic(-32768, 3, 16) == 32767 - fp.logistic(32767, 3, 16)
    # inputs below -32 give exactly 0 for more than 5 integer bits
    assert fp.exp_on_negative_values(-32768, 6, 16) == 0


def test_int32_functions_are_accurate() -> None:
    raw = np.random.default_rng(0).integers(-(2**31), 2**31, 20000)
    x = raw / 2.0**28
    assert np.abs(fp.logistic(raw, 3, 32) / 2.0**31 - 1 / (1 + np.exp(-x))).max() < 1e-6
    assert np.abs(fp.tanh(raw, 3, 32) / 2.0**31 - np.tanh(x)).max() < 1e-6


def test_mul_rounds_and_saturates_like_gemmlowp() -> None:
    assert fp.mul(-32768, -32768, 16) == 32767  # the one overflowing product
    assert fp.mul(16384, 16384, 16) == 8192  # 0.5 * 0.5 in Q0.15
    assert fp.mul(1, 16384, 16) == 1  # halves round up (the nudge is 2**14, or 1 - 2**14)
    assert fp.mul(-1, 16384, 16) == 0
    assert fp.mul(-3, 16384, 16) == -1


def test_rescale_saturates_upward_and_rounds_downward() -> None:
    assert fp.rescale(8191, 2, 0, 16) == 32764
    assert fp.rescale(8192, 2, 0, 16) == 32767
    assert fp.rescale(-8193, 2, 0, 16) == -32768
    assert fp.rescale(6, 0, 2, 16) == 2  # 6 / 4 = 1.5 rounds away from zero
    assert fp.constant(1 << 30, 16) == 16384


@pytest.mark.parametrize("value", [2, 3, 5, 100, 12345, 2**20 + 7, 2**28, 2**30 + 5, 2**31 - 1])
def test_inverse_sqrt_multiplier(value: int) -> None:
    multiplier, shift = fp.inv_sqrt_quantized_multiplier(value)
    assert 0 < multiplier < 2**31
    assert multiplier * 2.0 ** (shift - 31) == pytest.approx(value**-0.5, rel=2e-6)


def test_inverse_sqrt_of_zero_or_one_is_the_largest_multiplier() -> None:
    assert fp.inv_sqrt_quantized_multiplier(0) == (2**31 - 1, 0)
    assert fp.inv_sqrt_quantized_multiplier(1) == (2**31 - 1, 0)
