"""The fixed-point primitives of nnrt.ops.quant against scalar Python-int versions of the C
code they reproduce (gemmlowp's SaturatingRoundingDoublingHighMul and RoundingDivideByPOT,
TFLite's QuantizeMultiplier), written independently here with C's integer semantics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nnrt.model.types import FusedActivation
from nnrt.model.types import OperandType as T
from nnrt.ops import quant

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def _c_div(a: int, b: int) -> int:
    """C's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _srdhm(a: int, b: int) -> int:
    if a == b == INT32_MIN:
        return INT32_MAX
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    return _c_div(ab + nudge, 1 << 31)


def _rdbpot(x: int, exponent: int) -> int:
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def _mbqm(x: int, m: int, shift: int) -> int:
    left = max(shift, 0)
    right = max(-shift, 0)
    return _rdbpot(_srdhm(x * (1 << left), m), right)


def test_srdhm_matches_the_scalar_definition_including_saturation() -> None:
    rng = np.random.default_rng(1)
    a = np.concatenate([rng.integers(INT32_MIN, INT32_MAX, 2000, endpoint=True),
                        [INT32_MIN, INT32_MAX, 0, -1, 1, INT32_MIN]])
    b = np.concatenate([rng.integers(INT32_MIN, INT32_MAX, 2000, endpoint=True),
                        [INT32_MIN, INT32_MAX, 5, 1 << 30, -(1 << 30), INT32_MAX]])
    got = quant.saturating_rounding_doubling_high_mul(a, b)
    want = [_srdhm(int(x), int(y)) for x, y in zip(a, b, strict=True)]
    assert got.tolist() == want
    assert int(quant.saturating_rounding_doubling_high_mul(INT32_MIN, INT32_MIN)) == INT32_MAX


def test_rounding_divide_by_pot_rounds_halves_away_from_zero() -> None:
    x = np.array([5, -5, 6, -6, 7, -7, 3, -3, 0])
    assert quant.rounding_divide_by_pot(x, 1).tolist() == [3, -3, 3, -3, 4, -4, 2, -2, 0]
    rng = np.random.default_rng(2)
    y = rng.integers(-(2**31), 2**31, 1000)
    for e in (0, 1, 7, 20, 31):
        assert quant.rounding_divide_by_pot(y, e).tolist() == [_rdbpot(int(v), e) for v in y]


@pytest.mark.parametrize("real", [0.5, 1.0, 0.25, 1 / 3, 0.0039215, 2.5e-5, 1.75, 1e-12,
                                  0.999999999])
def test_quantize_multiplier_represents_the_real_value(real: float) -> None:
    m, shift = quant.quantize_multiplier(real)
    if real < 2.0**-31 * 0.5:  # too small to represent: zero
        assert (m, shift) == (0, 0)
        return
    assert 2**30 <= m < 2**31
    assert math.isclose(m * 2.0 ** (shift - 31), real, rel_tol=2**-30)


def test_quantize_multiplier_rounding_up_to_one_moves_the_exponent() -> None:
    almost_one = 1.0 - 2**-40  # the fraction rounds to 2**31: becomes 2**30 with shift + 1
    assert quant.quantize_multiplier(almost_one) == (2**30, 1)
    assert quant.quantize_multiplier(0.5) == (2**30, 0)
    assert quant.quantize_multiplier(0.0) == (0, 0)
    with pytest.raises(ValueError, match="finite and positive"):
        quant.quantize_multiplier(-0.5)


def test_multiply_by_quantized_multiplier_matches_the_scalar_code() -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(-(2**24), 2**24, 500)
    for real in (0.0003, 0.07, 0.5, 0.9, 1.5, 3.0):
        m, shift = quant.quantize_multiplier(real)
        got = quant.multiply_by_quantized_multiplier(x, m, shift)
        assert got.tolist() == [_mbqm(int(v), m, shift) for v in x]


def test_per_channel_multipliers_broadcast() -> None:
    x = np.array([[1000, 1000], [-999, 999]])
    pairs = [quant.quantize_multiplier(r) for r in (0.5, 0.25)]
    m = np.array([p[0] for p in pairs])
    s = np.array([p[1] for p in pairs])
    # -999 * 0.5: SRDHM's nudge for a negative product is 1 - 2**30, so -499.5 becomes -499
    assert quant.multiply_by_quantized_multiplier(x, m, s).tolist() == [[500, 250],
                                                                          [-499, 250]]


def test_activation_ranges_in_the_quantised_domain() -> None:
    # scale 0.5, zero point 10: real 0 -> 10, 6 -> 22, -1 -> 8, 1 -> 12
    u8 = T.TENSOR_QUANT8_ASYMM
    assert quant.activation_range(FusedActivation.NONE, 0.5, 10, u8) == (0, 255)
    assert quant.activation_range(FusedActivation.RELU, 0.5, 10, u8) == (10, 255)
    assert quant.activation_range(FusedActivation.RELU6, 0.5, 10, u8) == (10, 22)
    assert quant.activation_range(FusedActivation.RELU1, 0.5, 10, u8) == (8, 12)
    # a range beyond the type's is cut to it
    assert quant.activation_range(FusedActivation.RELU6, 0.01, 0,
                                  T.TENSOR_QUANT8_ASYMM_SIGNED) == (0, 127)
    with pytest.raises(ValueError, match="activation"):
        quant.activation_range(9, 0.5, 10, u8)


def test_quantize_rounds_halves_away_from_zero_and_saturates() -> None:
    got = quant.quantize([0.25, -0.25, 0.75, 100.0, -100.0], 0.5, 3, T.TENSOR_QUANT8_ASYMM)
    assert got.dtype == np.uint8
    assert got.tolist() == [4, 2, 5, 203, 0]
    signed = quant.quantize([63.75, -64.25], 0.5, 0, T.TENSOR_QUANT8_ASYMM_SIGNED)
    assert signed.tolist() == [127, -128]
