"""Conformance cases for CAST, QUANTIZE and DEQUANTIZE (literal values worked out by hand, or
float64 references written independently)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import OpCase, b8, f16, f32, i32, out, tensor

CASES: list[OpCase] = []

_I32_MAX, _I32_MIN = 2**31 - 1, -(2**31)

# -- CAST --------------------------------------------------------------------------------------

CASES += [
    # Float -> int truncates toward zero (C++ static_cast).
    OpCase("cast_float32_to_int32_truncates", Op.CAST,
           (f32([-2.7, -0.5, 0.5, 2.9, 100.2, -100.9]),),
           (out(T.TENSOR_INT32, (6,), [-2, 0, 0, 2, 100, -100]),)),
    # Out-of-range values saturate (undefined in NNAPI; nnrt's documented choice). The float16
    # variant is skipped: float16 cannot hold these inputs.
    OpCase("cast_float32_to_int32_saturates", Op.CAST,
           (f32([[3e9, -3e9], [2147483520.0, -2147483648.0]]),),
           (out(T.TENSOR_INT32, (2, 2), [[_I32_MAX, _I32_MIN], [2147483520, _I32_MIN]]),),
           skip=("float16",)),
    OpCase("cast_float16_to_int32", Op.CAST, (f16([[-1.5, 2.5], [1000.5, -0.25]]),),
           (out(T.TENSOR_INT32, (2, 2), [[-1, 2], [1000, 0]]),)),
    OpCase("cast_int32_to_float32", Op.CAST, (i32([[-3, 0], [7, 1000]]),),
           (out(T.TENSOR_FLOAT32, (2, 2), [[-3.0, 0.0], [7.0, 1000.0]]),)),
    # float32 has 24 mantissa bits: 2**24 + 1 rounds to even. (Checks float32 rounding, so the
    # float16 variant, which retypes the output, is skipped.)
    OpCase("cast_int32_to_float32_rounds", Op.CAST, (i32([16777217, -16777219]),),
           (out(T.TENSOR_FLOAT32, (2,), [16777216.0, -16777220.0]),), skip=("float16",)),
    # float16 has 11 significant bits: 2049 and 4097 round to even.
    OpCase("cast_int32_to_float16", Op.CAST, (i32([-3, 2049, 4097, 65504]),),
           (out(T.TENSOR_FLOAT16, (4,), [-3.0, 2048.0, 4096.0, 65504.0]),)),
    OpCase("cast_float32_to_float16", Op.CAST, (f32([1.0, 0.1, -65504.0, 2049.0]),),
           (out(T.TENSOR_FLOAT16, (4,), [1.0, 0.0999755859375, -65504.0, 2048.0]),)),
    OpCase("cast_float16_to_float32", Op.CAST, (f16([[0.5, -3.25, 1000.0]]),),
           (out(T.TENSOR_FLOAT32, (1, 3), [[0.5, -3.25, 1000.0]]),)),
    OpCase("cast_float32_identity_rank4", Op.CAST,
           (f32(np.linspace(-2.0, 2.0, 16, dtype=np.float32).reshape(1, 2, 2, 4)),),
           (out(T.TENSOR_FLOAT32, (1, 2, 2, 4)),), reference=lambda x: [x]),
    OpCase("cast_int32_identity", Op.CAST, (i32([[_I32_MIN, -1], [0, _I32_MAX]]),),
           (out(T.TENSOR_INT32, (2, 2), [[_I32_MIN, -1], [0, _I32_MAX]]),)),
    OpCase("cast_bool8_identity", Op.CAST, (b8([[True, False, True]]),),
           (out(T.TENSOR_BOOL8, (1, 3), [[True, False, True]]),)),
]


# -- QUANTIZE ----------------------------------------------------------------------------------

def _quantize_ref(scale: float, zero_point: int, lo: int, hi: int) -> Any:
    def ref(x: Any) -> list[Any]:
        flat = []
        for v in np.ravel(x):
            r = float(v) / scale
            q = math.copysign(math.floor(abs(r) + 0.5), r)  # round half away from zero
            flat.append(min(hi, max(lo, int(q) + zero_point)))
        return [np.array(flat, np.int64).reshape(np.shape(x))]
    return ref


CASES += [
    # scale 0.5, zero point 128: ties round away from zero, results clamp to [0, 255].
    OpCase("quantize_quant8_asymm_ties_and_clamp", Op.QUANTIZE,
           (f32([-64.25, -1.25, -0.75, -0.25, 0.25, 0.75, 1.0, 63.5, 100.0, -100.0]),),
           (out(T.TENSOR_QUANT8_ASYMM, (10,), [0, 125, 126, 127, 129, 130, 130, 255, 255, 0],
                scale=0.5, zero_point=128),)),
    # scale 0.25, zero point -3: clamps to [-128, 127].
    OpCase("quantize_quant8_asymm_signed", Op.QUANTIZE,
           (f32([[-40.0, -0.375, -0.125, 0.125], [0.375, 31.0, 40.0, 0.0]]),),
           (out(T.TENSOR_QUANT8_ASYMM_SIGNED, (2, 4), [[-128, -5, -4, -2], [-1, 121, 127, -3]],
                scale=0.25, zero_point=-3),)),
    OpCase("quantize_non_power_of_two_scale", Op.QUANTIZE,
           (f32([0.0, 0.33, -0.47, 1.04, 2.6]),),
           (out(T.TENSOR_QUANT8_ASYMM, (5,), [10, 13, 5, 20, 36], scale=0.1, zero_point=10),)),
    OpCase("quantize_rank4", Op.QUANTIZE,
           (f32(np.linspace(-3.0, 3.0, 24, dtype=np.float32).reshape(1, 2, 3, 4)),),
           (out(T.TENSOR_QUANT8_ASYMM, (1, 2, 3, 4), scale=0.03, zero_point=100),),
           reference=_quantize_ref(0.03, 100, 0, 255)),
    OpCase("quantize_signed_rank3", Op.QUANTIZE,
           (f32(np.linspace(-1.9, 2.3, 12, dtype=np.float32).reshape(2, 3, 2)),),
           (out(T.TENSOR_QUANT8_ASYMM_SIGNED, (2, 3, 2), scale=0.02, zero_point=5),),
           reference=_quantize_ref(0.02, 5, -128, 127)),
]


# -- DEQUANTIZE --------------------------------------------------------------------------------

def _dequant_ref(scale: float, zero_point: int) -> Any:
    return lambda q: [(q - zero_point) * scale]


def _per_channel_ref(dim: int, scales: tuple[float, ...]) -> Any:
    def ref(q: Any) -> list[Any]:
        y = np.zeros(q.shape)
        for index in np.ndindex(q.shape):
            y[index] = q[index] * scales[index[dim]]
        return [y]
    return ref


_PC_DATA = np.arange(-6, 6, dtype=np.int8).reshape(2, 3, 2) * 10
_PC_SCALES = (0.5, 0.25, 2.0)
CASES += [
    OpCase("dequantize_quant8_asymm", Op.DEQUANTIZE,
           (tensor([0, 1, 127, 128, 255], T.TENSOR_QUANT8_ASYMM, scale=0.5, zero_point=127),),
           (out(T.TENSOR_FLOAT32, (5,), [-63.5, -63.0, 0.0, 0.5, 64.0]),)),
    OpCase("dequantize_quant8_asymm_signed", Op.DEQUANTIZE,
           (tensor([[-128, -1], [0, 127]], T.TENSOR_QUANT8_ASYMM_SIGNED, scale=0.25,
                   zero_point=-1),),
           (out(T.TENSOR_FLOAT32, (2, 2), [[-31.75, 0.0], [0.25, 32.0]]),)),
    OpCase("dequantize_quant8_symm", Op.DEQUANTIZE,
           (tensor([-127, -5, 0, 5, 127], T.TENSOR_QUANT8_SYMM, scale=0.1),),
           (out(T.TENSOR_FLOAT32, (5,)),), reference=_dequant_ref(0.1, 0)),
    OpCase("dequantize_to_float16", Op.DEQUANTIZE,
           (tensor([[3, 200], [50, 90]], T.TENSOR_QUANT8_ASYMM, scale=0.125, zero_point=64),),
           (out(T.TENSOR_FLOAT16, (2, 2), [[-7.625, 17.0], [-1.75, 3.25]]),)),
    OpCase("dequantize_rank4", Op.DEQUANTIZE,
           (tensor(np.arange(0, 240, 10).reshape(1, 2, 3, 4), T.TENSOR_QUANT8_ASYMM,
                   scale=0.03, zero_point=120),),
           (out(T.TENSOR_FLOAT32, (1, 2, 3, 4)),), reference=_dequant_ref(0.03, 120)),
    OpCase("dequantize_per_channel_dim1", Op.DEQUANTIZE,
           (replace(tensor(_PC_DATA, T.TENSOR_QUANT8_SYMM_PER_CHANNEL),
                    channel_quant=(1, _PC_SCALES)),),
           (out(T.TENSOR_FLOAT32, (2, 3, 2)),), reference=_per_channel_ref(1, _PC_SCALES)),
    OpCase("dequantize_per_channel_dim0", Op.DEQUANTIZE,
           (replace(tensor(_PC_DATA.reshape(2, 6), T.TENSOR_QUANT8_SYMM_PER_CHANNEL),
                    channel_quant=(0, (0.5, 0.125))),),
           (out(T.TENSOR_FLOAT32, (2, 6)),), reference=_per_channel_ref(0, (0.5, 0.125))),
]
