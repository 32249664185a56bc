"""gemmlowp's fixed-point arithmetic at a chosen word size (int16 or int32), as NNAPI's
quantised kernels compute it.

gemmlowp's ``FixedPoint<tRawType, tIntegerBits>`` stores a real number ``x`` as the integer
``raw = x * 2**(bits - 1 - integer_bits)`` in a signed ``bits``-bit word (Q format: ``Q3.12`` is
int16 with 3 integer bits, ``Q4.27`` int32 with 4). NNAPI's kernels build their transcendental
functions on it: LOGISTIC, TANH and SOFTMAX on quantised tensors are int32 ``logistic`` /
``tanh`` / ``exp`` and ``1 / (1 + x)`` plus rescaling, L2_NORMALIZATION and QUANTIZED_LSTM's
layer norm scale by TFLite's int32 inverse square root, and the gates of QUANTIZED_LSTM and
QUANTIZED_16BIT_LSTM are int16 ``logistic`` / ``tanh``. This module reproduces them bit for bit,
vectorised over int64 numpy arrays that hold the raw values (the int32 primitives they share with
the other kernels are in :mod:`nnrt.ops.quant`). Each function names the word size ``bits`` (16
or 32) and, where it matters, the input's ``integer_bits``; results of logistic / tanh / exp have
0 integer bits (``Q0.15`` for int16, ``Q0.31`` for int32). The helpers TFLite adds around them
(:func:`input_radius`, :func:`count_leading_zeros`, :func:`inv_sqrt_quantized_multiplier`) exist
for int32 only, the one word size their kernels use.

The rules of the type, as gemmlowp defines them:

* ``+`` and ``-`` of raw values wrap around (two's complement), unary minus too;
* the product of ``Q(a)`` and ``Q(b)`` is ``Q(a + b)``: a saturating rounding doubling high
  multiply of the raws (:func:`mul`);
* ``rescale`` to fewer integer bits is a saturating multiply by a power of two, to more a
  rounding divide (:func:`saturating_rounding_multiply_by_pot`);
* constants are written as int32 raws and rounded to the word size
  (:func:`constant`: ``RescaleConstantInitializer``); ``one`` of a type with no integer bits
  is its largest raw value;
* exp on ``[-1/4, 0)`` is a 4th-order Taylor polynomial around ``-1/8``, extended to all
  negative inputs by multiplying ``exp(-2**k)`` constants for the bits of ``-x`` above 1/4;
  ``1 / (1 + x)`` and ``(1 - x) / (1 + x)`` on ``[0, 1]`` use three Newton-Raphson steps from
  ``48/17 - 32/17 * d``; logistic and tanh are built on them by symmetry.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nnrt.ops.quant import INT32_MAX, Array, rounding_divide_by_pot

__all__ = [
    "constant",
    "count_leading_zeros",
    "exp_on_negative_values",
    "input_radius",
    "inv_sqrt_quantized_multiplier",
    "logistic",
    "mul",
    "one",
    "one_over_one_plus_x",
    "rescale",
    "rounding_half_sum",
    "saturating_rounding_multiply_by_pot",
    "tanh",
    "wrap",
]


def _i64(x: Any) -> Array:
    return np.asarray(x, dtype=np.int64)


def wrap(x: Any, bits: int) -> Array:
    """``x`` wrapped to a signed ``bits``-bit integer (C's conversion on two's complement)."""
    half = np.int64(1) << (bits - 1)
    wrapped: Array = ((_i64(x) + half) & ((half << 1) - 1)) - half
    return wrapped


def _limits(bits: int) -> tuple[int, int]:
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def mul(a: Any, b: Any, bits: int) -> Array:
    """``SaturatingRoundingDoublingHighMul``: the high half of ``2 * a * b``, rounded.

    The nudge (``2**(bits-2)``, or ``1 - 2**(bits-2)`` for a negative product) with C's
    truncating division rounds halves up; the one overflowing case (both operands the minimum)
    saturates to the maximum. The product of ``Q(m)`` and ``Q(n)`` raws is the ``Q(m + n)`` raw.
    At 32 bits this is :func:`nnrt.ops.quant.saturating_rounding_doubling_high_mul`.
    """
    a, b = _i64(a), _i64(b)
    low, high = _limits(bits)
    ab = a * b
    nudge = np.where(ab >= 0, 1 << (bits - 2), 1 - (1 << (bits - 2)))
    total = ab + nudge
    # C's integer division truncates toward zero
    quotient = np.where(total >= 0, total >> (bits - 1), -((-total) >> (bits - 1)))
    result: Array = np.where((a == low) & (b == low), high, quotient)
    return result


def rounding_half_sum(a: Any, b: Any) -> Array:
    """``RoundingHalfSum``: ``(a + b) / 2`` rounded half away from zero."""
    total = _i64(a) + _i64(b)
    sign = np.where(total >= 0, 1, -1)
    twice = total + sign
    # C's division truncates toward zero
    half: Array = np.where(twice >= 0, twice // 2, -((-twice) // 2))
    return half


def saturating_rounding_multiply_by_pot(x: Any, exponent: int, bits: int) -> Array:
    """``SaturatingRoundingMultiplyByPOT<exponent>``: ``x * 2**exponent``.

    A positive exponent shifts left, saturating values whose shift would overflow; a negative
    one divides with rounding half away from zero.
    """
    raw = _i64(x)
    if exponent == 0:
        return raw
    if exponent < 0:
        return rounding_divide_by_pot(raw, -exponent)
    low, high = _limits(bits)
    threshold = (1 << (bits - 1 - exponent)) - 1
    shifted: Array = np.where(raw > threshold, high,
                              np.where(raw < -threshold, low, raw << exponent))
    return shifted


def rescale(x: Any, src_integer_bits: int, dst_integer_bits: int, bits: int) -> Array:
    """``Rescale<dst>``: a ``Q(src)`` raw as the ``Q(dst)`` raw of the same value (a saturating
    left shift or a rounding right shift)."""
    return saturating_rounding_multiply_by_pot(x, src_integer_bits - dst_integer_bits, bits)


def constant(raw32: int, bits: int) -> int:
    """A constant written as its int32 raw, rounded to a ``bits``-bit raw."""
    return int(rounding_divide_by_pot(raw32, 32 - bits))


def one(integer_bits: int, bits: int) -> int:
    """The raw of 1.0 in ``Q(integer_bits)``; the largest raw when there are no integer bits."""
    if integer_bits == 0:
        return (1 << (bits - 1)) - 1
    return 1 << (bits - 1 - integer_bits)


def _pot(exponent: int, integer_bits: int, bits: int) -> int:
    """``ConstantPOT<exponent>``: the raw of ``2**exponent`` in ``Q(integer_bits)``."""
    return 1 << (bits - 1 - integer_bits + exponent)


def _exp_on_small_interval(a: Array, bits: int) -> Array:
    """exp(a) for a ``Q0`` raw ``a`` in ``[-1/4, 0)``: Taylor expansion around ``-1/8``."""
    constant_term = constant(1895147668, bits)  # exp(-1/8)
    one_third = constant(715827883, bits)
    x = wrap(a + _pot(-3, 0, bits), bits)
    x2 = mul(x, x, bits)
    x3 = mul(x2, x, bits)
    x4 = mul(x2, x2, bits)
    x4_over_4 = saturating_rounding_multiply_by_pot(x4, -2, bits)
    poly = saturating_rounding_multiply_by_pot(
        wrap(mul(wrap(x4_over_4 + x3, bits), one_third, bits) + x2, bits), -1, bits)
    term = mul(constant_term, wrap(x + poly, bits), bits)
    total = constant_term + term
    if bits == 16:  # gemmlowp's AddSaturatingIf16Bit
        saturated: Array = np.clip(total, *_limits(bits))
        return saturated
    return wrap(total, bits)


#: ``exp(-2**k)`` as int32 ``Q0`` raws, for k = -2 .. 4 (gemmlowp's barrel shifter).
_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
               (2, 39332535), (3, 720401), (4, 242))


def exp_on_negative_values(a: Any, integer_bits: int, bits: int) -> Array:
    """exp(a) as a ``Q0`` raw, for a ``Q(integer_bits)`` raw ``a <= 0``.

    ``a`` splits into a part in [-1/4, 0) (the Taylor expansion) and multiples of powers of
    two, each bit of which multiplies the result by the constant ``exp(-2**k)``.
    """
    a = _i64(a)
    fractional_bits = bits - 1 - integer_bits
    quarter = _pot(-2, integer_bits, bits)
    a_mod_quarter_minus_quarter = wrap((a & (quarter - 1)) - quarter, bits)
    result = _exp_on_small_interval(rescale(a_mod_quarter_minus_quarter, integer_bits, 0, bits),
                                    bits)
    remainder = wrap(a_mod_quarter_minus_quarter - a, bits)
    for exponent, multiplier in _EXP_BARREL:
        if integer_bits > exponent:
            bit = 1 << (fractional_bits + exponent)
            result = np.where((remainder & bit) != 0,
                              mul(result, constant(multiplier, bits), bits), result)
    if integer_bits > 5:
        clamp = constant(-(1 << (36 - integer_bits)), bits)  # -32
        result = np.where(a < clamp, 0, result)
    out: Array = np.where(a == 0, one(0, bits), result)
    return out


def _newton_reciprocal(half_denominator: Array, bits: int) -> Array:
    """``1 / (2 * half_denominator)`` as a ``Q2`` raw: three Newton-Raphson steps."""
    x = wrap(constant(1515870810, bits)  # 48/17
             + mul(half_denominator, constant(-1010580540, bits), bits), bits)  # -32/17
    one_q2 = one(2, bits)
    for _ in range(3):
        half_denominator_times_x = mul(half_denominator, x, bits)
        one_minus = wrap(one_q2 - half_denominator_times_x, bits)
        x = wrap(x + rescale(mul(x, one_minus, bits), 4, 2, bits), bits)
    return x


def one_over_one_plus_x(a: Any, bits: int) -> Array:
    """gemmlowp's ``one_over_one_plus_x_for_x_in_0_1``: ``1 / (1 + a)`` as a ``Q0`` raw, for a
    ``Q0`` raw ``a`` in ``[0, 1]``."""
    x = _newton_reciprocal(rounding_half_sum(a, one(0, bits)), bits)
    # ExactMulByPot<-1> reads the Q2 raw as Q1 (halving it), then Rescale<0>
    return rescale(x, 1, 0, bits)


def _one_minus_x_over_one_plus_x(a: Array, bits: int) -> Array:
    """``(1 - a) / (1 + a)`` as a ``Q0`` raw, for a ``Q0`` raw ``a`` in ``[0, 1]``."""
    x = _newton_reciprocal(rounding_half_sum(a, one(0, bits)), bits)
    return rescale(wrap(x - one(2, bits), bits), 2, 0, bits)


def logistic(a: Any, integer_bits: int, bits: int) -> Array:
    """``1 / (1 + exp(-a))`` as a ``Q0`` raw, for a ``Q(integer_bits)`` raw ``a``."""
    a = _i64(a)
    positive = a > 0
    abs_input = np.where(positive, a, wrap(-a, bits))
    if_positive = one_over_one_plus_x(
        exp_on_negative_values(wrap(-abs_input, bits), integer_bits, bits), bits)
    if_negative = wrap(one(0, bits) - if_positive, bits)
    half = constant(1 << 30, bits)
    out: Array = np.where(a == 0, half, np.where(positive, if_positive, if_negative))
    return out


def tanh(a: Any, integer_bits: int, bits: int) -> Array:
    """``tanh(a)`` as a ``Q0`` raw, for a ``Q(integer_bits)`` raw ``a``:
    ``(1 - exp(-2|a|)) / (1 + exp(-2|a|))`` with the sign of ``a``."""
    a = _i64(a)
    negative = a < 0
    n = np.where(negative, a, wrap(-a, bits))
    # exp(2n): ExactMulByPot<1> reads the Q(i) raw as Q(i + 1)
    t = _one_minus_x_over_one_plus_x(exp_on_negative_values(n, integer_bits + 1, bits), bits)
    out: Array = np.where(a == 0, 0, np.where(negative, wrap(-t, bits), t))
    return out


def input_radius(integer_bits: int, left_shift: int) -> int:
    """TFLite's ``CalculateInputRadius``: inputs of magnitude below this, scaled by a multiplier
    with ``left_shift``, fit an int32 ``Q(integer_bits)`` (the kernels saturate the others).
    """
    return math.floor(float((1 << integer_bits) - 1) * 2.0 ** (31 - integer_bits)
                      / 2.0**left_shift)


def count_leading_zeros(x: Any) -> Array:
    """Leading zero bits of ``x`` as a uint32 (32 for 0)."""
    x = _i64(x) & 0xFFFFFFFF
    _, bit_length = np.frexp(x.astype(np.float64))  # exact: x < 2**53
    leading: Array = 32 - bit_length.astype(np.int64)
    return leading


def inv_sqrt_quantized_multiplier(x: Any) -> tuple[Array, Array]:
    """TFLite's ``GetInvSqrtQuantizedMultiplierExp`` with ``reverse_shift = -1`` (the one NNAPI's
    kernels use): ``(M, shift)`` with ``M * 2**(shift - 31) ≈ 1 / sqrt(x)`` for the int32
    ``x`` (arrays allowed), a multiplier for
    :func:`~nnrt.ops.quant.multiply_by_quantized_multiplier`; ``shift <= 0``.

    Values ≤ 1 (a zero sum or variance) give ``(INT32_MAX, 0)``. Otherwise ``x`` is normalised
    to ``[2**27, 2**29)`` by pairs of bits, and five Newton-Raphson steps on
    ``y = 1.5 y - x/2 y³`` run in int32 ``Q3``.
    """
    bits = 32
    x = _i64(x)
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
    inv = np.full(x.shape, one(3, bits), np.int64)
    for _ in range(5):
        inv3 = rescale(mul(mul(inv, inv, bits), inv, bits), 9, 3, bits)
        inv = rescale(wrap(mul(half_three, inv, bits) - mul(half_input, inv3, bits), bits),
                      6, 3, bits)
    inv = mul(inv, 1518500250, bits)  # sqrt(2) / 2 in Q0
    negative = shift < 0
    inv = np.where(negative, wrap(inv << np.where(negative, -shift, 0), bits), inv)
    shift = np.where(negative, 0, shift)
    return np.where(small, INT32_MAX, inv), np.where(small, 0, -shift)
