"""Quantised arithmetic as NNAPI's CPU executor computes it: fixed-point multipliers and ranges.

NNAPI defines quantised operands by ``real = scale * (q - zero_point)``. Its kernels never
compute in float: they accumulate in int32 and rescale with a *quantised multiplier* — a real
factor ``m`` written as ``M * 2**(shift - 31)`` with ``M`` an int32 in ``[2**30, 2**31)`` —
applied by a saturating rounding doubling high multiply and a rounding right shift (the
gemmlowp fixed-point primitives that TFLite's and NNAPI's kernels share). The helpers here are
vectorised over int64 numpy arrays holding int32 values and reproduce those primitives bit for
bit, so a reference kernel written with them equals NNAPI's expected outputs exactly.

Ranges per type: :data:`QUANT_RANGES`. Fused activations in the quantised domain:
:func:`activation_range`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nnrt.model.types import FusedActivation, OperandType

__all__ = [
    "INT32_MAX",
    "INT32_MIN",
    "QUANT_RANGES",
    "Array",
    "activation_range",
    "change_quantization",
    "dequantize",
    "is_quantized",
    "multiply_by_quantized_multiplier",
    "quantize",
    "quantize_multiplier",
    "requantize",
    "round_half_away",
    "rounding_divide_by_pot",
    "saturate",
    "saturating_rounding_doubling_high_mul",
]

Array = np.ndarray[Any, Any]
T = OperandType

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1

#: (qmin, qmax) of each quantised tensor type.
QUANT_RANGES: dict[OperandType, tuple[int, int]] = {
    T.TENSOR_QUANT8_ASYMM: (0, 255),
    T.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127),
    T.TENSOR_QUANT8_SYMM: (-127, 127),
    T.TENSOR_QUANT8_SYMM_PER_CHANNEL: (-127, 127),
    T.TENSOR_QUANT16_ASYMM: (0, 65535),
    T.TENSOR_QUANT16_SYMM: (-32768, 32767),
}


def is_quantized(type_: OperandType) -> bool:
    """Whether ``type_`` is one of NNAPI's quantised tensor types."""
    return type_ in QUANT_RANGES


def round_half_away(x: Any) -> Any:
    """C's ``std::round``: halves round away from zero (numpy's ``round`` rounds them to even)."""
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def quantize_multiplier(real: float) -> tuple[int, int]:
    """``(M, shift)`` with ``real ≈ M * 2**(shift - 31)`` and ``M`` in ``[2**30, 2**31)``.

    TFLite's ``QuantizeMultiplier``: ``frexp`` splits ``real``, the fraction is rounded half
    away from zero to 31 bits (a fraction rounding up to 1.0 becomes ``2**30`` with ``shift +
    1``), and a multiplier too small to represent (``shift < -31``) becomes ``(0, 0)``.
    """
    if real == 0.0:
        return 0, 0
    if not math.isfinite(real) or real < 0:
        raise ValueError(f"quantised multiplier {real!r} must be finite and positive")
    fraction, shift = math.frexp(real)
    q = int(round_half_away(fraction * (1 << 31)))
    if q == 1 << 31:
        q //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return q, shift


def saturating_rounding_doubling_high_mul(a: Any, b: Any) -> Array:
    """gemmlowp's ``SaturatingRoundingDoublingHighMul`` on int32 values (held in int64).

    The high 32 bits of ``2 * a * b`` rounded to nearest (ties away from zero, as the nudge
    does), saturating the one overflowing case ``a == b == INT32_MIN`` to INT32_MAX.
    """
    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    ab = a * b
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    total = ab + nudge
    # C's integer division truncates toward zero
    high = np.where(total >= 0, total >> 31, -((-total) >> 31))
    overflow = (a == INT32_MIN) & (b == INT32_MIN)
    return np.where(overflow, INT32_MAX, high)


def rounding_divide_by_pot(x: Any, exponent: Any) -> Array:
    """gemmlowp's ``RoundingDivideByPOT``: ``x / 2**exponent`` rounded half away from zero."""
    x = np.asarray(x, np.int64)
    exponent = np.asarray(exponent, np.int64)
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    result: Array = (x >> exponent) + (remainder > threshold)
    return result


def _wrap_int32(x: Array) -> Array:
    wrapped: Array = ((x + 2**31) & 0xFFFFFFFF) - 2**31
    return wrapped


def multiply_by_quantized_multiplier(x: Any, multiplier: Any, shift: Any) -> Array:
    """TFLite's ``MultiplyByQuantizedMultiplier``: ``x * M * 2**(shift - 31)``, rounded.

    ``multiplier`` and ``shift`` may be arrays (per-channel) broadcasting against ``x``. A
    positive shift multiplies first, in int32 as the C kernels do.
    """
    x = np.asarray(x, np.int64)
    shift = np.asarray(shift, np.int64)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    scaled = _wrap_int32(x << left) if np.any(left) else x
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(scaled, multiplier),
                                  right)


def requantize(acc: Any, real_multiplier: float, output_zero_point: int,
               type_: OperandType) -> Array:
    """``acc * real_multiplier + output_zero_point`` through a quantised multiplier, saturated.

    The last step of NNAPI's quantised kernels (CONV_2D, FULLY_CONNECTED, ...): ``acc`` is the
    int32 accumulator, the result is clamped to ``type_``'s range (activation clamps come
    separately, :func:`activation_range`).
    """
    m, shift = quantize_multiplier(real_multiplier)
    out = multiply_by_quantized_multiplier(acc, m, shift) + output_zero_point
    return saturate(out, type_)


def saturate(x: Any, type_: OperandType, low: int | None = None,
             high: int | None = None) -> Array:
    """``x`` clamped to ``[low, high]`` (default ``type_``'s range), in ``type_``'s dtype."""
    qmin, qmax = QUANT_RANGES[type_]
    low = qmin if low is None else low
    high = qmax if high is None else high
    dtype = _DTYPES[type_]
    clipped: Array = np.clip(np.asarray(x), low, high).astype(dtype)
    return clipped


_DTYPES = {
    T.TENSOR_QUANT8_ASYMM: np.dtype(np.uint8),
    T.TENSOR_QUANT8_ASYMM_SIGNED: np.dtype(np.int8),
    T.TENSOR_QUANT8_SYMM: np.dtype(np.int8),
    T.TENSOR_QUANT8_SYMM_PER_CHANNEL: np.dtype(np.int8),
    T.TENSOR_QUANT16_ASYMM: np.dtype(np.uint16),
    T.TENSOR_QUANT16_SYMM: np.dtype(np.int16),
}


def activation_range(activation: int, scale: float, zero_point: int,
                     type_: OperandType) -> tuple[int, int]:
    """NNAPI's ``CalculateActivationRange`` for a quantised output: the ``[low, high]`` clamp.

    The activation's real bounds are quantised with ``zero_point + round(f / scale)`` (float32
    division, C rounding) and intersected with the type's range.
    """
    qmin, qmax = QUANT_RANGES[type_]
    s = np.float32(scale)

    def q(f: float) -> int:
        return zero_point + int(round_half_away(np.float32(f) / s))

    if activation == FusedActivation.NONE:
        return qmin, qmax
    if activation == FusedActivation.RELU:
        return max(qmin, q(0.0)), qmax
    if activation == FusedActivation.RELU6:
        return max(qmin, q(0.0)), min(qmax, q(6.0))
    if activation == FusedActivation.RELU1:
        return max(qmin, q(-1.0)), min(qmax, q(1.0))
    raise ValueError(f"invalid fused activation code {activation}")


def dequantize(q: Any, scale: Any, zero_point: Any = 0) -> Array:
    """``scale * (q - zero_point)`` in float64 (scale may be a per-channel array)."""
    real: Array = (np.asarray(q, np.float64) - zero_point) * np.asarray(scale, np.float64)
    return real


def quantize(real: Any, scale: float, zero_point: int, type_: OperandType) -> Array:
    """NNAPI's QUANTIZE: ``zero_point + round(real / scale)`` (float32, C rounding), saturated."""
    r = np.asarray(real, np.float32) / np.float32(scale)
    rounded: Array = round_half_away(r.astype(np.float64))
    return saturate(rounded + zero_point, type_)


def change_quantization(q: Any, scale: float, zero_point: int, new_scale: float,
                        new_zero_point: int, type_: OperandType) -> Array:
    """NNAPI's ``requantize``: quantised values ``q`` re-expressed with another scale and zero
    point (MAXIMUM, MINIMUM, SELECT and CONCATENATION of inputs quantised differently).

    ``(q - zero_point) * scale`` is computed in float32 (an int times a float in C), then
    ``/ new_scale + new_zero_point`` in float64, clamped to ``type_``'s range and rounded half
    away from zero.
    """
    real = (np.asarray(q, np.int64) - zero_point).astype(np.float32) * np.float32(scale)
    ratio = real.astype(np.float64) / float(np.float32(new_scale)) + new_zero_point
    qmin, qmax = QUANT_RANGES[type_]
    return saturate(round_half_away(np.clip(ratio, qmin, qmax)), type_)
