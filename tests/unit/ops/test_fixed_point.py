"""gemmlowp's fixed-point math (nnrt/ops/fixed_point.py) and NNAPI's requantisation
(nnrt.ops.quant.change_quantization), against float64 math and hand-worked values."""

from __future__ import annotations

import numpy as np

from nnrt import OperandType as T
from nnrt.ops import fixed_point
from nnrt.ops.quant import INT32_MAX, change_quantization


def _raw(x: np.ndarray, integer_bits: int) -> np.ndarray:
    return np.round(x * 2.0 ** (31 - integer_bits)).astype(np.int64)


def test_exp_logistic_tanh_track_float_math() -> None:
    # gemmlowp's exp is a fourth-order Taylor expansion on [-1/4, 0): errors stay below
    # (1/8)**5 / 120 ~ 2.5e-7, far below the 1/256 steps of the quantised outputs.
    x = np.linspace(-15.9, 15.9, 301)
    for fn, ref in ((fixed_point.logistic, lambda v: 1 / (1 + np.exp(-v))),
                    (fixed_point.tanh, np.tanh)):
        got = fn(_raw(x, 4), 4) / 2.0**31
        np.testing.assert_allclose(got, ref(x), atol=2.5e-7)
    negative = np.linspace(-31.9, 0, 200)
    got = fixed_point.exp_on_negative_values(_raw(negative, 5), 5) / 2.0**31
    np.testing.assert_allclose(got, np.exp(negative), atol=2.5e-7)


def test_special_values() -> None:
    zero = np.array([0])
    assert fixed_point.exp_on_negative_values(zero, 5)[0] == INT32_MAX  # exp(0): 1 - 2**-31
    assert fixed_point.logistic(zero, 4)[0] == 1 << 30  # exactly 0.5
    assert fixed_point.tanh(zero, 4)[0] == 0
    # below -32 (integer bits > 5) exp is 0
    assert fixed_point.exp_on_negative_values(np.array([-(33 << 25)]), 6)[0] == 0


def test_one_over_one_plus_x() -> None:
    x = np.linspace(0, 0.999, 50)
    got = fixed_point.one_over_one_plus_x(_raw(x, 0)) / 2.0**31
    np.testing.assert_allclose(got, 1 / (1 + x), atol=1e-8)


def test_inv_sqrt_multiplier() -> None:
    values = np.array([2, 3, 25, 12345, 1 << 28, (1 << 30) + 5, 2**31 - 1])
    m, shift = fixed_point.inv_sqrt_multiplier(values, -1)
    assert np.all(shift <= 0)
    np.testing.assert_allclose(m * 2.0 ** (shift - 31), 1 / np.sqrt(values), rtol=1e-5)
    # 0 and 1 are handled apart (TFLite: the largest multiplier, no shift)
    m, shift = fixed_point.inv_sqrt_multiplier(np.array([0, 1]), -1)
    assert m.tolist() == [INT32_MAX, INT32_MAX] and shift.tolist() == [0, 0]


def test_count_leading_zeros() -> None:
    got = fixed_point.count_leading_zeros(np.array([0, 1, 2, 3, 1 << 30, 2**31 - 1]))
    assert got.tolist() == [32, 31, 30, 30, 1, 1]


def test_rescale_saturates_left_and_rounds_right() -> None:
    x = np.array([3 << 28, -(3 << 28), 5, -5])
    assert fixed_point.rescale(x[:2], 2, 0).tolist() == [INT32_MAX, -(2**31)]
    assert fixed_point.rescale(x[2:], 0, 1).tolist() == [3, -3]  # 2.5 -> 3, -2.5 -> -3


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
