"""ONNX element types and the nnrt operand types that hold them.

NNAPI has no 64-bit types: ONNX ``int64`` values travel as TENSOR_INT32 (constants are range
checked when imported; graph inputs are range checked when a caller passes int64 data), and
``double`` is refused rather than silently narrowed. NNAPI's 8- and 16-bit tensors are quantized,
so ONNX int8 / uint8 / int16 / uint16 / uint32 values travel as TENSOR_INT32 too
(:mod:`nnrt.onnx.smallint`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.model.types import OperandType

__all__ = ["ONNX_NUMPY", "SMALL_INTS", "onnx_dtype", "operand_type_for"]

T = OperandType

#: ONNX ``TensorProto.DataType`` code -> numpy dtype (the types nnrt can represent).
ONNX_NUMPY: dict[int, np.dtype[Any]] = {
    1: np.dtype(np.float32),   # FLOAT
    2: np.dtype(np.uint8),     # UINT8
    3: np.dtype(np.int8),      # INT8
    4: np.dtype(np.uint16),    # UINT16
    5: np.dtype(np.int16),     # INT16
    6: np.dtype(np.int32),     # INT32
    7: np.dtype(np.int64),     # INT64
    9: np.dtype(np.bool_),     # BOOL
    10: np.dtype(np.float16),  # FLOAT16
    12: np.dtype(np.uint32),   # UINT32
}

#: The integer types held in TENSOR_INT32 beside int32 and int64 (see :mod:`nnrt.onnx.smallint`).
SMALL_INTS = frozenset(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.uint32))

_NAMES = {0: "UNDEFINED", 1: "FLOAT", 2: "UINT8", 3: "INT8", 4: "UINT16", 5: "INT16",
          6: "INT32", 7: "INT64", 8: "STRING", 9: "BOOL", 10: "FLOAT16", 11: "DOUBLE",
          12: "UINT32", 13: "UINT64", 14: "COMPLEX64", 15: "COMPLEX128", 16: "BFLOAT16"}


def onnx_dtype(code: int, where: str) -> np.dtype[Any]:
    """The numpy dtype of ONNX element type ``code``; raises ValueError naming ``where``."""
    dtype = ONNX_NUMPY.get(code)
    if dtype is None:
        raise ValueError(f"{where}: element type {_NAMES.get(code, code)} is not supported "
                         "(NNAPI has no such tensor type)")
    return dtype


def operand_type_for(dtype: np.dtype[Any]) -> OperandType:
    """The operand type holding tensors of ``dtype`` (int64 and :data:`SMALL_INTS` ->
    TENSOR_INT32)."""
    kind = np.dtype(dtype)
    if kind == np.float32:
        return T.TENSOR_FLOAT32
    if kind == np.float16:
        return T.TENSOR_FLOAT16
    if kind in (np.int32, np.int64) or kind in SMALL_INTS:
        return T.TENSOR_INT32
    if kind == np.bool_:
        return T.TENSOR_BOOL8
    raise ValueError(f"{kind} tensors are not supported (NNAPI has no plain {kind} tensor type)")
