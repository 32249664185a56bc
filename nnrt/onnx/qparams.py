"""Quantisation parameters of ONNX values, and the NNAPI operand types that hold them.

ONNX's ``QuantizeLinear`` / ``DequantizeLinear`` give a value's ``real = scale * (q -
zero_point)`` per tensor or per slice along ``axis``. NNAPI holds the per-tensor uint8 values
as TENSOR_QUANT8_ASYMM, int8 as TENSOR_QUANT8_ASYMM_SIGNED, int32 biases as TENSOR_INT32 with a
scale (and zero point 0), and per-axis int8 with zero points 0 as
TENSOR_QUANT8_SYMM_PER_CHANNEL (the per-channel scales along ``channel_dim``). A uint8 and an
int8 quantisation of the same real values differ by 128 in both the values and the zero
point, so a constant converts exactly between the two (:meth:`QParams.retyped`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from nnrt.model.types import OperandType

__all__ = ["QParams", "quantize_array"]

Array = np.ndarray[Any, Any]
T = OperandType

_PER_TENSOR_TYPES = {np.dtype(np.uint8): T.TENSOR_QUANT8_ASYMM,
                     np.dtype(np.int8): T.TENSOR_QUANT8_ASYMM_SIGNED,
                     np.dtype(np.int32): T.TENSOR_INT32}


@dataclass(frozen=True, eq=False)
class QParams:
    """The quantisation of one ONNX value: ``real = scale * (q - zero_point)``.

    ``scale`` (float32) and ``zero_point`` (of ``dtype``) are 0-D arrays, or 1-D with one entry
    per slice along ``axis`` (per-axis quantisation).
    """

    dtype: np.dtype[Any]
    scale: Array
    zero_point: Array
    axis: int | None = None

    @classmethod
    def per_tensor(cls, dtype: Any, scale: float, zero_point: int = 0) -> QParams:
        """Per-tensor parameters."""
        kind = np.dtype(dtype)
        return cls(kind, np.asarray(scale, np.float32), np.asarray(zero_point, kind))

    @property
    def per_axis(self) -> bool:
        """Whether the parameters differ per slice along :attr:`axis`."""
        return self.axis is not None

    @property
    def scale_value(self) -> float:
        """The per-tensor scale, as the float an NNAPI operand holds."""
        return float(self.scale.reshape(-1)[0])

    @property
    def zero_point_value(self) -> int:
        """The per-tensor zero point."""
        return int(self.zero_point.reshape(-1)[0])

    def same(self, other: QParams | None) -> bool:
        """Whether ``other`` quantises exactly as these parameters do."""
        return other is not None and self.dtype == other.dtype and self.axis == other.axis and (
            self.scale.shape == other.scale.shape) and bool(
            np.array_equal(self.scale, other.scale)) and bool(
            np.array_equal(self.zero_point.astype(np.int64), other.zero_point.astype(np.int64)))

    def operand_type(self) -> OperandType | None:
        """The NNAPI tensor type holding values of these parameters, or None when none does
        (per-axis with a zero point other than 0, or per-axis of another type than int8)."""
        if not self.per_axis:
            return _PER_TENSOR_TYPES.get(self.dtype)
        if self.dtype == np.int8 and not self.zero_point.any():
            return T.TENSOR_QUANT8_SYMM_PER_CHANNEL
        return None

    def broadcast(self, rank: int) -> tuple[Array, Array]:
        """``scale`` and ``zero_point`` shaped to broadcast against a tensor of ``rank``."""
        if not self.per_axis:
            return self.scale, self.zero_point
        shape = [1] * rank
        shape[self.axis or 0] = -1
        return self.scale.reshape(shape), self.zero_point.reshape(shape)

    def dequantized(self, q: Array) -> Array:
        """ONNX's DequantizeLinear of ``q``: ``(q - zero_point) * scale`` in float32."""
        scale, zero_point = self.broadcast(q.ndim)
        centred = q.astype(np.int64) - zero_point.astype(np.int64)
        return np.asarray(centred.astype(np.float32) * scale, np.float32)

    def moved(self, axis: int | None) -> QParams:
        """The same parameters along another axis (a transposed constant's)."""
        return QParams(self.dtype, self.scale, self.zero_point, axis if self.per_axis else None)

    def retyped(self, q: Array, dtype: Any) -> tuple[QParams, Array]:
        """``q`` and these parameters as ``dtype`` (uint8 <-> int8: values and zero points
        move by 128, the real values stay the same)."""
        kind = np.dtype(dtype)
        if kind == self.dtype:
            return self, q
        if {kind, self.dtype} != {np.dtype(np.uint8), np.dtype(np.int8)}:
            raise ValueError(f"cannot hold {self.dtype} quantised values as {kind}")
        shift = -128 if kind == np.int8 else 128
        moved = (q.astype(np.int16) + shift).astype(kind)
        zero_point = (self.zero_point.astype(np.int16) + shift).astype(kind)
        return QParams(kind, self.scale, zero_point, self.axis), moved

    def describe(self) -> str:
        """``uint8 scale 0.0123 zero point 128`` (or per-axis)."""
        if self.per_axis:
            return f"{self.dtype} per-axis ({self.scale.size} scales along axis {self.axis})"
        return f"{self.dtype} scale {self.scale_value:g} zero point {self.zero_point_value}"


def quantize_array(x: Array, params: QParams) -> Array:
    """ONNX's QuantizeLinear of a known ``x``: ``saturate(round(x / scale) + zero_point)``,
    rounding half to even, in float32 as onnxruntime computes it."""
    scale, zero_point = params.broadcast(x.ndim)
    info = np.iinfo(params.dtype)
    q = np.rint(np.asarray(x, np.float32) / scale) + zero_point.astype(np.float32)
    return np.asarray(np.clip(q, info.min, info.max).astype(params.dtype))
