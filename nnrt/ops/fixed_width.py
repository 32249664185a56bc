"""gemmlowp's fixed-point arithmetic at a chosen word size (int16 or int32), for integer LSTMs.

gemmlowp's ``FixedPoint<tRawType, tIntegerBits>`` stores a real number ``x`` as the integer
``raw = x * 2**(bits - 1 - integer_bits)`` in a signed ``bits``-bit word (Q format: ``Q3.12`` is
int16 with 3 integer bits). NNAPI's and TFLite's quantised LSTM kernels compute their gates with
its transcendental functions; this module reproduces them bit for bit, vectorised over int64
numpy arrays that hold the raw values. Each function names the word size ``bits`` (16 or 32) and,
where it matters, the input's ``integer_bits``; results of logistic / tanh / exp have 0 integer
bits (``Q0.15`` for int16).

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

from typing import Any

import numpy as np

from nnrt.ops.quant import rounding_divide_by_pot

__all__ = [
    "constant",
    "exp_on_negative_values",
    "inv_sqrt_quantized_multiplier",
    "logistic",
    "mul",
    "one",
    "rescale",
    "rounding_half_sum",
    "saturating_rounding_multiply_by_pot",
    "tanh",
    "wrap",
]

Array = np.ndarray[Any, Any]


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
    """``Rescale<dst>``: a ``Q(src)`` raw as the ``Q(dst)`` raw of the same value (saturating)."""
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
    """exp(a) as a ``Q0`` raw, for a ``Q(integer_bits)`` raw ``a <= 0``."""
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


def _one_over_one_plus_x(a: Array, bits: int) -> Array:
    """``1 / (1 + a)`` as a ``Q0`` raw, for a ``Q0`` raw ``a`` in ``[0, 1]``."""
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
    if_positive = _one_over_one_plus_x(
        exp_on_negative_values(wrap(-abs_input, bits), integer_bits, bits), bits)
    if_negative = wrap(one(0, bits) - if_positive, bits)
    half = constant(1 << 30, bits)
    out: Array = np.where(a == 0, half, np.where(positive, if_positive, if_negative))
    return out


def tanh(a: Any, integer_bits: int, bits: int) -> Array:
    """``tanh(a)`` as a ``Q0`` raw, for a ``Q(integer_bits)`` raw ``a``."""
    a = _i64(a)
    negative = a < 0
    n = np.where(negative, a, wrap(-a, bits))
    # exp(2n): ExactMulByPot<1> reads the Q(i) raw as Q(i + 1)
    t = _one_minus_x_over_one_plus_x(exp_on_negative_values(n, integer_bits + 1, bits), bits)
    out: Array = np.where(a == 0, 0, np.where(negative, wrap(-t, bits), t))
    return out


def inv_sqrt_quantized_multiplier(value: int) -> tuple[int, int]:
    """``GetInvSqrtQuantizedMultiplierExp(value, reverse_shift=-1)``: ``(M, shift)`` with
    ``M * 2**(shift - 31) ≈ 1 / sqrt(value)``, a multiplier for
    :func:`~nnrt.ops.quant.multiply_by_quantized_multiplier`.

    Values ≤ 1 (a zero variance) give ``(INT32_MAX, 0)``. Otherwise ``value`` is normalised to
    ``[2**27, 2**29)`` by pairs of bits, and five Newton-Raphson steps on ``x = 1.5 x - v/2 x³``
    run in int32 ``Q3``.
    """
    if value <= 1:
        return (1 << 31) - 1, 0
    shift = 11
    while value >= 1 << 29:
        value //= 4
        shift += 1
    max_left_shift_bits = (32 - value.bit_length()) - 1
    left_shift_bit_pairs = max_left_shift_bits // 2 - 1
    shift -= left_shift_bit_pairs
    value <<= 2 * left_shift_bit_pairs
    bits = 32
    half_input = rounding_divide_by_pot(value >> 1, 1)
    half_three = (1 << 28) + (1 << 27)
    x = _i64(one(3, bits))
    for _ in range(5):
        x3 = rescale(mul(mul(x, x, bits), x, bits), 9, 3, bits)
        x = rescale(wrap(mul(half_three, x, bits) - mul(half_input, x3, bits), bits), 6, 3, bits)
    raw = int(mul(x, 1518500250, bits))  # sqrt(2) / 2 in Q0
    if shift < 0:
        raw = int(wrap(raw << -shift, bits))
        shift = 0
    return raw, -shift
