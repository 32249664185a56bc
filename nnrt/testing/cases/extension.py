"""Conformance cases for nnrt's extension operations: com.nnrt.ERF, com.nnrt.LAYER_NORMALIZATION,
com.nnrt.GATHER_ND and com.nnrt.SHAPE.

References are float64 loops written independently of the kernels: ERF calls ``math.erf`` on
each element; LAYER_NORMALIZATION sums each normalised slice with Python arithmetic; GATHER_ND
visits every output position and reads the data element its index tuple names (negative
indices counted from the end by hand). The literal GATHER_ND expectations are worked out by hand
from ONNX's GatherND definition.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import OpCase, b8, f32, f32s, i32, i32s, omitted, out, per_channel, tensor

CASES: list[OpCase] = []

Array = np.ndarray[Any, Any]


def _positions(shape: tuple[int, ...]) -> list[tuple[int, ...]]:
    return list(itertools.product(*(range(n) for n in shape)))


# -- com.nnrt.ERF ---------------------------------------------------------------------------------


def _erf_ref(x: Array) -> list[Array]:
    y = np.zeros(x.shape)
    for pos in _positions(x.shape):
        y[pos] = math.erf(float(x[pos]))
    return [y]


_ERF_VALUES = np.array([-4.5, -3.0, -1.5, -0.75, -0.5, -1e-3, 0.0, 1e-3, 0.1, 0.25, 0.5, 0.9,
                        1.0, 1.1, 1.75, 2.0, 2.5, 3.5, 6.0], np.float32)
_ERF_DENSE = np.linspace(-3.2, 3.2, 64, dtype=np.float32).reshape(2, 2, 4, 4)
CASES += [
    OpCase("erf_values", Op.NNRT_ERF, (f32(_ERF_VALUES),),
           (out(T.TENSOR_FLOAT32, _ERF_VALUES.shape),), reference=_erf_ref),
    OpCase("erf_rank4", Op.NNRT_ERF, (f32(_ERF_DENSE),),
           (out(T.TENSOR_FLOAT32, _ERF_DENSE.shape),), reference=_erf_ref),
    # erf(±inf) = ±1, erf(NaN) = NaN, erf(-0) = -0.
    OpCase("erf_special_values", Op.NNRT_ERF, (f32([[np.inf, -np.inf], [np.nan, -0.0]]),),
           (out(T.TENSOR_FLOAT32, (2, 2), [[1.0, -1.0], [np.nan, -0.0]]),)),
    OpCase("erf_odd_symmetry", Op.NNRT_ERF, (f32([[0.3, -0.3], [1.3, -1.3], [2.3, -2.3]]),),
           (out(T.TENSOR_FLOAT32, (3, 2)),), reference=_erf_ref),
]


# -- com.nnrt.LAYER_NORMALIZATION -----------------------------------------------------------------


def _layer_norm_ref(x: Array, scale: Array, bias: Array | None, axis: int,
                    epsilon: float) -> list[Array]:
    axis %= x.ndim
    tail = x.shape[axis:]
    scale_t = np.broadcast_to(scale, tail)
    bias_t = np.zeros(tail) if bias is None else np.broadcast_to(bias, tail)
    inner = _positions(tail)
    y = np.zeros(x.shape)
    for outer in _positions(x.shape[:axis]):
        values = [float(x[outer + i]) for i in inner]
        mean = sum(values) / len(values)
        variance = sum((v - mean) ** 2 for v in values) / len(values)
        denominator = math.sqrt(variance + epsilon)
        for i, v in zip(inner, values, strict=True):
            y[outer + i] = (v - mean) / denominator * float(scale_t[i]) + float(bias_t[i])
    return [y]


def _ramp(shape: tuple[int, ...], lo: float, hi: float) -> Array:
    """Deterministic, unevenly spread values (so slices have different means and variances)."""
    n = math.prod(shape)
    base = np.linspace(lo, hi, n) + 0.4 * np.sin(np.arange(n) * 1.7)
    values: Array = base.astype(np.float32).reshape(shape)
    return values


_X25 = _ramp((2, 5), -2.0, 3.0)
_X234 = _ramp((2, 3, 4), -3.0, 2.0)
_X4 = _ramp((1, 2, 4, 8), -1.5, 2.5)
_FLOAT = T.TENSOR_FLOAT32
CASES += [
    OpCase("layer_norm_last_axis", Op.NNRT_LAYER_NORMALIZATION,
           (f32(_X25), f32(_ramp((5,), 0.5, 1.5)), f32(_ramp((5,), -0.2, 0.3)), i32s(-1),
            f32s(1e-5)),
           (out(_FLOAT, (2, 5)),), reference=_layer_norm_ref),
    OpCase("layer_norm_axis1_rank3", Op.NNRT_LAYER_NORMALIZATION,
           (f32(_X234), f32(_ramp((3, 4), -1.0, 1.0)), f32(_ramp((3, 4), 0.0, 0.5)), i32s(1),
            f32s(1e-3)),
           (out(_FLOAT, (2, 3, 4)),), reference=_layer_norm_ref),
    # scale [1, 4] and bias [4] broadcast to the normalised dims [3, 4].
    OpCase("layer_norm_broadcast_scale_bias", Op.NNRT_LAYER_NORMALIZATION,
           (f32(_X234), f32([[0.5, 1.0, 1.5, 2.0]]), f32([0.1, -0.1, 0.2, 0.0]), i32s(-2),
            f32s(1e-5)),
           (out(_FLOAT, (2, 3, 4)),), reference=_layer_norm_ref),
    OpCase("layer_norm_no_bias", Op.NNRT_LAYER_NORMALIZATION,
           (f32(_X234), f32(_ramp((4,), 0.8, 1.2)), omitted(_FLOAT), i32s(2), f32s(1e-5)),
           (out(_FLOAT, (2, 3, 4)),), reference=_layer_norm_ref),
    OpCase("layer_norm_axis0_whole_tensor", Op.NNRT_LAYER_NORMALIZATION,
           (f32(_X25), f32([1.25]), f32([[0.5], [-0.5]]), i32s(0), f32s(0.01)),
           (out(_FLOAT, (2, 5)),), reference=_layer_norm_ref),
    OpCase("layer_norm_rank1", Op.NNRT_LAYER_NORMALIZATION,
           (f32([1.0, -2.0, 0.5, 4.0, 3.0, -1.0]), f32([2.0]), omitted(_FLOAT), i32s(0),
            f32s(1e-5)),
           (out(_FLOAT, (6,)),), reference=_layer_norm_ref),
    # A constant slice has zero variance: it normalises to 0 and the output is the bias.
    OpCase("layer_norm_constant_slice", Op.NNRT_LAYER_NORMALIZATION,
           (f32([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]]), f32([1.0, 2.0, 3.0]),
            f32([0.25, -0.5, 0.75]), i32s(1), f32s(1e-5)),
           (out(_FLOAT, (2, 3)),), reference=_layer_norm_ref),
    OpCase("layer_norm_rank4_transformer", Op.NNRT_LAYER_NORMALIZATION,
           (f32(_X4), f32(_ramp((8,), 0.9, 1.1)), f32(_ramp((8,), -0.05, 0.05)), i32s(3),
            f32s(1e-6)),
           (out(_FLOAT, (1, 2, 4, 8)),), reference=_layer_norm_ref),
]


# -- com.nnrt.GATHER_ND ---------------------------------------------------------------------------


def _gather_nd_ref(data: Array, indices: Array, batch_dims: int) -> list[Array]:
    b, q, k = batch_dims, indices.ndim, indices.shape[-1]
    shape = indices.shape[:-1] + data.shape[b + k:]
    result = np.zeros(shape, dtype=data.dtype)
    for pos in _positions(shape):
        lead, rest = pos[:q - 1], pos[q - 1:]
        picked = []
        for j, index in enumerate(int(v) for v in indices[lead]):
            picked.append(index + data.shape[b + j] if index < 0 else index)
        result[pos] = data[(*lead[:b], *picked, *rest)]
    return [result]


_D22 = [[0, 1], [2, 3]]
_D222 = [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]
_F234 = np.arange(24, dtype=np.float32).reshape(2, 3, 4) * 0.25 - 3.0
_F3423 = np.linspace(-5.0, 5.0, 72, dtype=np.float32).reshape(3, 4, 2, 3)


def _nd(name: str, data: Any, indices: Any, batch_dims: int, expected: Any = None) -> OpCase:
    data_arg = data if not isinstance(data, np.ndarray) else f32(data)
    idx = np.asarray(indices, np.int32)
    dims = idx.shape[:-1] + data_arg.dims[batch_dims + idx.shape[-1]:]
    result = out(data_arg.type, dims, expected, scale=data_arg.scale,
                 zero_point=data_arg.zero_point)
    return OpCase(name, Op.NNRT_GATHER_ND, (data_arg, i32(idx), i32s(batch_dims)), (result,),
                  reference=None if expected is not None else _gather_nd_ref)


CASES += [
    # ONNX GatherND's documented examples (worked out by hand).
    _nd("gather_nd_elements", i32(_D22), [[0, 0], [1, 1]], 0, [0, 3]),
    _nd("gather_nd_rows", i32(_D22), [[1], [0]], 0, [[2, 3], [0, 1]]),
    _nd("gather_nd_rank3_pairs", i32(_D222), [[0, 1], [1, 0]], 0, [[2, 3], [4, 5]]),
    _nd("gather_nd_rank3_nested_indices", i32(_D222), [[[0, 1]], [[1, 0]]], 0,
        [[[2, 3]], [[4, 5]]]),
    _nd("gather_nd_batch_dims1", i32(_D222), [[1], [0]], 1, [[2, 3], [4, 5]]),
    # Negative indices count from the end.
    _nd("gather_nd_negative_indices", i32(_D222), [[-1, 0, -1], [0, -2, 1]], 0, [5, 1]),
    _nd("gather_nd_float_slices", _F234, [[1, -1], [0, 0], [1, 1]], 0),
    _nd("gather_nd_float_elements", _F234, [[[0, 2, 3]], [[1, 0, -4]]], 0),
    _nd("gather_nd_float_batch1", _F234, [[[2], [0]], [[-1], [1]]], 1),
    _nd("gather_nd_float_batch2", _F3423, [[[1], [0], [1], [0]], [[0], [0], [1], [1]],
                                           [[1], [1], [0], [-1]]], 2),
    _nd("gather_nd_float_batch1_pairs", _F3423, [[[3, 1], [0, -2]], [[2, 0], [1, 1]],
                                                 [[-1, 0], [0, 1]]], 1),
    _nd("gather_nd_bool8", b8([[True, False, True], [False, False, True]]),
        [[1, 2], [0, 1], [-2, 0]], 0, [True, False, True]),
    _nd("gather_nd_quant8_asymm",
        tensor([[10, 20, 30], [40, 50, 255]], T.TENSOR_QUANT8_ASYMM, scale=0.5, zero_point=128),
        [[1], [0], [1]], 0),
    _nd("gather_nd_quant8_asymm_signed",
        tensor([[[-128, 5], [7, 127]], [[0, -1], [3, 4]]], T.TENSOR_QUANT8_ASYMM_SIGNED,
               scale=0.25, zero_point=-3),
        [[0, 1], [1, 0]], 1),
]


# -- com.nnrt.SHAPE -------------------------------------------------------------------------------

CASES += [
    # The dims, whatever the values and the type.
    OpCase("shape_rank1", Op.NNRT_SHAPE, (f32(np.zeros(5)),), (out(T.TENSOR_INT32, (1,), [5]),)),
    OpCase("shape_rank4", Op.NNRT_SHAPE, (f32(np.ones((2, 3, 1, 7))),),
           (out(T.TENSOR_INT32, (4,), [2, 3, 1, 7]),)),
    OpCase("shape_int32", Op.NNRT_SHAPE, (i32([[1, 2, 3], [4, 5, 6]]),),
           (out(T.TENSOR_INT32, (2,), [2, 3]),)),
    OpCase("shape_bool8", Op.NNRT_SHAPE, (b8([[[True], [False]]]),),
           (out(T.TENSOR_INT32, (3,), [1, 2, 1]),)),
    OpCase("shape_quant8", Op.NNRT_SHAPE,
           (tensor([[1, 2]], T.TENSOR_QUANT8_ASYMM, scale=0.5, zero_point=1),),
           (out(T.TENSOR_INT32, (2,), [1, 2]),)),
    *(OpCase(f"shape_{t.name.lower()}", Op.NNRT_SHAPE,
             (tensor(np.zeros((3, 1, 2)), t, scale=0.25, zero_point=zp),),
             (out(T.TENSOR_INT32, (3,), [3, 1, 2]),))
      for t, zp in ((T.TENSOR_QUANT8_ASYMM_SIGNED, -3), (T.TENSOR_QUANT8_SYMM, 0),
                    (T.TENSOR_QUANT16_ASYMM, 7), (T.TENSOR_QUANT16_SYMM, 0))),
    OpCase("shape_quant8_per_channel", Op.NNRT_SHAPE,
           (per_channel(np.zeros((2, 3), np.int8), 1, (0.5, 0.25, 1.0)),),
           (out(T.TENSOR_INT32, (2,), [2, 3]),)),
]
