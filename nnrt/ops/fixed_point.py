"""gemmlowp's fixed-point math functions, as NNAPI's quantised kernels compute them.

A value ``FixedPoint<int32, k>`` is an int32 ``raw`` standing for ``raw / 2**(31 - k)``: ``k``
integer bits, ``31 - k`` fractional bits. Multiplying two of them is a saturating rounding
doubling high multiply whose integer bits add up; additions and subtractions are plain int32
ones (they wrap, as the C kernels do in practice). On these, gemmlowp builds ``exp`` on
negative values, ``logistic``, ``tanh`` and ``1 / (1 + x)`` with Taylor series, a barrel
shifter of constants and Newton-Raphson divisions — and TFLite builds the inverse square root
that L2_NORMALIZATION scales by. LOGISTIC, TANH, SOFTMAX and L2_NORMALIZATION on quantised
tensors are these functions plus rescaling; this module reproduces them bit for bit,
vectorised over int64 numpy arrays holding int32 values (the primitives are in
:mod:`nnrt.ops.quant`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nnrt.ops.quant import (
    INT32_MAX,
    INT32_MIN,
    Array,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
)

__all__ = [
    "ONE_HALF",
    "count_leading_zeros",
    "exp_on_negative_values",
    "input_radius",
    "inv_sqrt_multiplier",
    "logistic",
    "one_over_one_plus_x",
    "rescale",
    "tanh",
    "wrap_int32",
]

_mul = saturating_rounding_doubling_high_mul

#: 0.5 as FixedPoint<int32, 0>.
ONE_HALF = 1 << 30
#: 1 as FixedPoint<int32, 0> (not representable: the largest value below it) and as <int32, 2>.
_ONE_F0 = INT32_MAX
_ONE_F2 = 1 << 29


def wrap_int32(x: Any) -> Array:
    """``x`` reduced to int32 two's complement (what an overflowing C int32 holds)."""
    wrapped: Array = ((np.asarray(x, np.int64) + 2**31) & 0xFFFFFFFF) - 2**31
    return wrapped


def _shift_left_saturating(x: Array, exponent: int) -> Array:
    """gemmlowp's ``SaturatingRoundingMultiplyByPOT`` with a positive exponent."""
    threshold = (1 << (31 - exponent)) - 1
    shifted = wrap_int32(x << exponent)
    return np.where(x > threshold, INT32_MAX, np.where(x < -threshold, INT32_MIN, shifted))


def rescale(x: Any, src_integer_bits: int, dst_integer_bits: int) -> Array:
    """gemmlowp's ``Rescale``: a fixed-point value moved to another number of integer bits
    (a saturating left shift or a rounding right shift of the raw value)."""
    raw: Array = np.asarray(x, np.int64)
    exponent = src_integer_bits - dst_integer_bits
    if exponent > 0:
        return _shift_left_saturating(raw, exponent)
    if exponent < 0:
        return rounding_divide_by_pot(raw, -exponent)
    return raw


def input_radius(integer_bits: int, left_shift: int) -> int:
    """TFLite's ``CalculateInputRadius``: inputs of magnitude below this, scaled by a multiplier
    with ``left_shift``, fit FixedPoint<int32, integer_bits> (the kernels saturate the others).
    """
    return math.floor(float((1 << integer_bits) - 1) * 2.0 ** (31 - integer_bits)
                      / 2.0**left_shift)


def _exp_on_interval_between_negative_one_quarter_and_0_excl(a: Array) -> Array:
    """``exp(a)`` for ``a`` in [-1/4, 0), FixedPoint<int32, 0> in and out: a Taylor expansion
    around -1/8 to the fourth order."""
    constant_term = 1895147668  # exp(-1/8)
    constant_1_over_3 = 715827883
    x = wrap_int32(a + (1 << 28))  # a + 1/8
    x2 = _mul(x, x)
    x3 = _mul(x2, x)
    x4 = _mul(x2, x2)
    x4_over_4 = rounding_divide_by_pot(x4, 2)
    poly = rounding_divide_by_pot(
        wrap_int32(_mul(wrap_int32(x4_over_4 + x3), constant_1_over_3) + x2), 1)
    return wrap_int32(constant_term + _mul(constant_term, wrap_int32(x + poly)))


#: (exponent, raw FixedPoint<int32, 0> of exp(-2**exponent)) for the barrel shifter.
_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
               (2, 39332535), (3, 720401), (4, 242))


def exp_on_negative_values(a: Any, integer_bits: int) -> Array:
    """``exp(a)`` for ``a <= 0`` given as FixedPoint<int32, integer_bits>; returns
    FixedPoint<int32, 0>.

    ``a`` splits into a part in [-1/4, 0) (the Taylor expansion) and multiples of powers of
    two, each bit of which multiplies the result by the constant ``exp(-2**k)``.
    """
    a = np.asarray(a, np.int64)
    fractional_bits = 31 - integer_bits
    one_quarter = 1 << (fractional_bits - 2)
    a_mod_quarter_minus_one_quarter = (a & (one_quarter - 1)) - one_quarter
    result = _exp_on_interval_between_negative_one_quarter_and_0_excl(
        rescale(a_mod_quarter_minus_one_quarter, integer_bits, 0))
    remainder = wrap_int32(a_mod_quarter_minus_one_quarter - a)
    for exponent, multiplier in _EXP_BARREL:
        if integer_bits > exponent:
            bit = (remainder >> (fractional_bits + exponent)) & 1
            result = np.where(bit != 0, _mul(result, multiplier), result)
    if integer_bits > 5:
        result = np.where(a < -(1 << (36 - integer_bits)), 0, result)  # below -32
    return np.where(a == 0, _ONE_F0, result)


def _rounding_half_sum(a: Array, b: int) -> Array:
    total = a + b
    sign = np.where(total >= 0, 1, -1)
    numerator = total + sign
    half: Array = np.where(numerator >= 0, numerator // 2, -((-numerator) // 2))
    return half


def _newton_reciprocal(half_denominator: Array) -> Array:
    """FixedPoint<int32, 2> ``1 / half_denominator`` for a denominator in [1/2, 1): three
    Newton-Raphson steps from the 48/17 - 32/17 x first guess."""
    x = wrap_int32(1515870810 + _mul(half_denominator, -1010580540))
    for _ in range(3):
        one_minus_half_denominator_times_x = wrap_int32(
            _ONE_F2 - _mul(half_denominator, x))
        x = wrap_int32(x + rescale(_mul(x, one_minus_half_denominator_times_x), 4, 2))
    return x


def one_over_one_plus_x(a: Any) -> Array:
    """gemmlowp's ``one_over_one_plus_x_for_x_in_0_1``: ``1 / (1 + a)`` for ``a`` in [0, 1),
    FixedPoint<int32, 0> in and out."""
    half_denominator = _rounding_half_sum(np.asarray(a, np.int64), _ONE_F0)
    return rescale(_newton_reciprocal(half_denominator), 1, 0)


def _one_minus_x_over_one_plus_x(a: Array) -> Array:
    half_denominator = _rounding_half_sum(a, _ONE_F0)
    return rescale(wrap_int32(_newton_reciprocal(half_denominator) - _ONE_F2), 2, 0)


def logistic(a: Any, integer_bits: int) -> Array:
    """``1 / (1 + exp(-a))`` for FixedPoint<int32, integer_bits> ``a``; FixedPoint<int32, 0>."""
    a = np.asarray(a, np.int64)
    positive = a > 0
    abs_input = np.where(positive, a, wrap_int32(-a))
    if_positive = one_over_one_plus_x(exp_on_negative_values(wrap_int32(-abs_input),
                                                             integer_bits))
    if_negative = wrap_int32(_ONE_F0 - if_positive)
    return np.where(a == 0, ONE_HALF, np.where(positive, if_positive, if_negative))


def tanh(a: Any, integer_bits: int) -> Array:
    """``tanh(a)`` for FixedPoint<int32, integer_bits> ``a``; FixedPoint<int32, 0>:
    ``(1 - exp(-2|a|)) / (1 + exp(-2|a|))`` with the sign of ``a``."""
    a = np.asarray(a, np.int64)
    negative = a < 0
    n = np.where(negative, a, wrap_int32(-a))
    # -2|a| is the same raw value with one more integer bit
    t = _one_minus_x_over_one_plus_x(exp_on_negative_values(n, integer_bits + 1))
    return np.where(a == 0, 0, np.where(negative, wrap_int32(-t), t))


def count_leading_zeros(x: Any) -> Array:
    """Leading zero bits of ``x`` as a uint32 (32 for 0)."""
    x = np.asarray(x, np.int64) & 0xFFFFFFFF
    _, bit_length = np.frexp(x.astype(np.float64))  # exact: x < 2**53
    leading: Array = 32 - bit_length.astype(np.int64)
    return leading


def inv_sqrt_multiplier(x: Any, reverse_shift: int) -> tuple[Array, Array]:
    """TFLite's ``GetInvSqrtQuantizedMultiplierExp``: ``(M, shift)`` with ``1 / sqrt(x) ≈
    M * 2**(shift * reverse_shift - 31)`` for the int32 ``x >= 0`` (arrays allowed).

    ``x`` is normalised to [2**27, 2**29) by shifts of two bits, its inverse square root found
    by five Newton-Raphson steps in FixedPoint<int32, 3>; 0 and 1 give ``(INT32_MAX, 0)``.
    """
    x = np.asarray(x, np.int64)
    small = x <= 1
    x = np.where(small, 2, x)
    shift = np.full(x.shape, 11, np.int64)
    while np.any(x >= 1 << 29):
        big = x >= 1 << 29
        x = np.where(big, x // 4, x)
        shift = shift + big
    left_shift_bit_pairs = (count_leading_zeros(x) - 1) // 2 - 1
    shift = shift - left_shift_bit_pairs
    x = x << (2 * left_shift_bit_pairs)
    half_input = rounding_divide_by_pot(x >> 1, 1)
    half_three = (1 << 28) + (1 << 27)
    inv = np.full(x.shape, 1 << 28, np.int64)  # 1.0 in FixedPoint<int32, 3>
    for _ in range(5):
        inv3 = rescale(_mul(_mul(inv, inv), inv), 9, 3)
        inv = rescale(wrap_int32(_mul(half_three, inv) - _mul(half_input, inv3)), 6, 3)
    inv = _mul(inv, 1518500250)  # * sqrt(2) / 2
    negative = shift < 0
    inv = np.where(negative, wrap_int32(inv << np.where(negative, -shift, 0)), inv)
    shift = np.where(negative, 0, shift)
    return np.where(small, INT32_MAX, inv), np.where(small, 0, shift * reverse_shift)
