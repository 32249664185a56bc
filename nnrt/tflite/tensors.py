"""TFLite tensors as NNAPI operands: types, quantisation, and constants from buffers.

=============================  ==========================================================
TFLite tensor                  NNAPI operand
=============================  ==========================================================
FLOAT32 / FLOAT16 / BOOL       TENSOR_FLOAT32 / TENSOR_FLOAT16 / TENSOR_BOOL8
INT32 (bias: with a scale)     TENSOR_INT32 (with the scale; per-channel bias: scale 0)
INT64                          TENSOR_INT32 (int64 for callers at the boundary)
UINT8 / INT8, one scale        TENSOR_QUANT8_ASYMM / TENSOR_QUANT8_ASYMM_SIGNED
INT8, a scale per channel      TENSOR_QUANT8_SYMM_PER_CHANNEL (``quantized_dimension``)
INT16, quantised               TENSOR_QUANT16_SYMM
=============================  ==========================================================

A constant is viewed in the memory holding the file (the buffer's bytes) and referenced there
(CONSTANT_REFERENCE) when its type is what NNAPI stores and its offset is aligned to its element
size; otherwise (an unaligned buffer, INT64 narrowed to int32) it is copied.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from ai_edge_litert import schema_py_generated as fb

from nnrt.memory import Memory, find_memory
from nnrt.model.builder import ModelBuilder, Tensor
from nnrt.model.types import OperandType
from nnrt.tflite.errors import OperatorUnsupported
from nnrt.tflite.schema import stored_bytes

__all__ = ["OperandSpec", "constant", "operand_spec"]

Array = np.ndarray[Any, Any]
T = OperandType
_TT = fb.TensorType
_PLAIN = {_TT.FLOAT32: T.TENSOR_FLOAT32, _TT.FLOAT16: T.TENSOR_FLOAT16, _TT.INT32: T.TENSOR_INT32,
          _TT.INT64: T.TENSOR_INT32, _TT.BOOL: T.TENSOR_BOOL8}
_DTYPES = {_TT.FLOAT32: np.float32, _TT.FLOAT16: np.float16, _TT.INT32: np.int32,
           _TT.INT64: np.int64, _TT.BOOL: np.bool_, _TT.UINT8: np.uint8, _TT.INT8: np.int8,
           _TT.INT16: np.int16}
_NAMES = {v: k for k, v in vars(_TT).items() if not k.startswith("_")}
_INT32 = np.iinfo(np.int32)


@dataclass(frozen=True)
class OperandSpec:
    """The NNAPI operand a TFLite tensor becomes."""

    type: OperandType
    scale: float = 0.0
    zero_point: int = 0
    #: Per-channel scales and their axis (TENSOR_QUANT8_SYMM_PER_CHANNEL).
    channel_scales: tuple[float, ...] = ()
    channel_dim: int = 0
    #: "int64" when callers see the tensor as int64 (held as TENSOR_INT32).
    io_dtype: str | None = None

    @property
    def output_type(self) -> tuple[OperandType, float, int]:
        """The ``(type, scale, zero point)`` a builder output takes."""
        return self.type, self.scale, self.zero_point


def type_name(kind: int) -> str:
    """The schema's name of a TFLite tensor type."""
    return str(_NAMES.get(kind, f"type {kind}"))


def operand_spec(tensor: Any, where: str) -> OperandSpec:
    """The operand ``tensor`` becomes (``OperatorUnsupported`` for a type NNAPI lacks)."""
    q = tensor.quantization
    scales = [] if q is None or q.scale is None else [float(s) for s in q.scale]
    zeros = [] if q is None or q.zeroPoint is None else [int(z) for z in q.zeroPoint]
    kind = tensor.type
    if kind == _TT.INT32 and scales:
        return OperandSpec(T.TENSOR_INT32, scales[0] if len(scales) == 1 else 0.0)
    if kind in _PLAIN:
        return OperandSpec(_PLAIN[kind], io_dtype="int64" if kind == _TT.INT64 else None)
    if not scales:
        raise OperatorUnsupported(f"{where}: {type_name(kind)} tensor without quantisation "
                                  "parameters (NNAPI has no plain tensor of this type)")
    if any(not math.isfinite(s) or s <= 0 for s in scales):
        raise OperatorUnsupported(f"{where}: quantisation scale {scales[:4]} must be positive")
    zero = zeros[0] if zeros else 0
    if len(scales) > 1:
        if kind != _TT.INT8 or any(zeros):
            raise OperatorUnsupported(f"{where}: per-channel {type_name(kind)} quantisation "
                                      "(NNAPI has it for symmetric INT8 only)")
        return OperandSpec(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, channel_scales=tuple(scales),
                           channel_dim=int(q.quantizedDimension))
    if kind == _TT.UINT8 and 0 <= zero <= 255:
        return OperandSpec(T.TENSOR_QUANT8_ASYMM, scales[0], zero)
    if kind == _TT.INT8 and -128 <= zero <= 127:
        return OperandSpec(T.TENSOR_QUANT8_ASYMM_SIGNED, scales[0], zero)
    if kind == _TT.INT16 and zero == 0:
        return OperandSpec(T.TENSOR_QUANT16_SYMM, scales[0])
    raise OperatorUnsupported(f"{where}: {type_name(kind)} quantised with zero point {zero}")


def buffer_array(tensor: Any, buffer: Any, memory: Memory) -> Array | None:
    """The constant value of ``tensor`` as a view of ``memory`` (None: not a constant)."""
    shape = tuple(int(d) for d in tensor.shape) if tensor.shape is not None else ()
    dtype = _DTYPES.get(tensor.type)
    if dtype is None:
        return None
    if not stored_bytes(buffer):
        return None
    if buffer.offset > 1:  # data after the flatbuffer (checked to lie inside the file)
        raw = memory.ndarray(np.uint8, int(buffer.size), int(buffer.offset))
    else:
        raw = buffer.data
    itemsize = np.dtype(dtype).itemsize
    if tensor.sparsity is not None:  # the stored values only (see :mod:`nnrt.tflite.sparse`)
        shape = (len(raw) // itemsize,)
        raw = raw[:shape[0] * itemsize]
    found = find_memory(raw)
    if found is not None and found[1] % itemsize == 0:
        return memory.ndarray(np.dtype(dtype).newbyteorder("<"), shape, found[1])
    return np.frombuffer(raw.tobytes(), np.dtype(dtype).newbyteorder("<")).reshape(shape)


def constant(builder: ModelBuilder, value: Array, spec: OperandSpec, where: str) -> Tensor:
    """A constant operand of ``spec`` holding ``value`` (referenced in place when it can be)."""
    arr = value.reshape(1) if value.ndim == 0 else value
    if arr.dtype == np.int64:
        if arr.size and (arr.min() < _INT32.min or arr.max() > _INT32.max):
            raise OperatorUnsupported(f"{where}: INT64 values outside the int32 range NNAPI "
                                      "tensors hold")
        arr = arr.astype(np.int32)
    elif not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    model = builder.model
    index = model.add_operand(spec.type, arr.shape, spec.scale, spec.zero_point)
    if spec.channel_scales:
        model.set_operand_symm_per_channel_quant_params(index, spec.channel_dim,
                                                        list(spec.channel_scales))
    pooled = find_memory(arr) if arr.nbytes > 128 else None
    if pooled is not None:
        model.set_operand_value_from_memory(index, pooled[0], pooled[1], arr.nbytes)
    else:
        model.set_operand_value(index, arr)
    return Tensor(index, spec.type, tuple(arr.shape))
