"""Conformance cases for RELU, RELU1, RELU6, LOGISTIC, TANH, HARD_SWISH, ELU and PRELU.

References are written independently of nnrt's kernels (piecewise / per-element formulas).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import OpCase, f32, f32s, out

CASES: list[OpCase] = []


def _elementwise(fn: Any) -> Any:
    """Apply a scalar Python function to every element (float64)."""
    return np.vectorize(fn, otypes=[np.float64])


_SCALAR_REF: dict[Op, Any] = {
    Op.RELU: lambda v: v if v > 0 else 0.0,
    Op.RELU1: lambda v: -1.0 if v < -1 else (1.0 if v > 1 else v),
    Op.RELU6: lambda v: 0.0 if v < 0 else (6.0 if v > 6 else v),
    Op.LOGISTIC: lambda v: 0.5 * (1.0 + math.tanh(v / 2.0)),
    Op.TANH: lambda v: (1.0 - math.exp(-2 * v)) / (1.0 + math.exp(-2 * v)),
    Op.HARD_SWISH: lambda v: 0.0 if v <= -3 else (v if v >= 3 else v * (v + 3.0) / 6.0),
}

_X1 = np.array([-7.5, -3.0, -1.25, -0.5, 0.0, 0.25, 0.9, 1.5, 3.0, 6.5], np.float32)
_X2 = np.array([[-4.0, -2.5, -1.0, -0.75], [0.5, 1.0, 2.75, 8.0]], np.float32)
_X4 = np.linspace(-7.0, 7.0, 24, dtype=np.float32).reshape(1, 2, 3, 4)

for _op, _fn in _SCALAR_REF.items():
    _name = _op.name.lower()
    _ref = _elementwise(_fn)
    for _suffix, _x in (("rank1", _X1), ("rank2", _X2), ("rank4", _X4)):
        CASES.append(OpCase(
            f"{_name}_{_suffix}", _op,
            inputs=(f32(_x),),
            outputs=(out(T.TENSOR_FLOAT32, _x.shape),),
            reference=lambda x, ref=_ref: [ref(x)],
        ))
    CASES.append(OpCase(
        f"{_name}_size1_dims", _op,
        inputs=(f32(np.array([[[-2.0]], [[0.75]]], np.float32)),),
        outputs=(out(T.TENSOR_FLOAT32, (2, 1, 1)),),
        reference=lambda x, ref=_ref: [ref(x)],
    ))

# HARD_SWISH has no rank limit (NNAPI: "from 1").
CASES.append(OpCase(
    "hard_swish_rank5", Op.HARD_SWISH,
    inputs=(f32(np.linspace(-4.0, 4.0, 32, dtype=np.float32).reshape(2, 1, 2, 4, 2)),),
    outputs=(out(T.TENSOR_FLOAT32, (2, 1, 2, 4, 2)),),
    reference=lambda x: [_elementwise(_SCALAR_REF[Op.HARD_SWISH])(x)],
))

# Literal values from the definitions: RELU6 and LOGISTIC at hand-checked points.
CASES += [
    OpCase("relu6_literal", Op.RELU6, (f32([-1.0, 0.0, 3.5, 6.0, 7.25]),),
           (out(T.TENSOR_FLOAT32, (5,), [0.0, 0.0, 3.5, 6.0, 6.0]),)),
    OpCase("logistic_literal", Op.LOGISTIC, (f32([0.0]),),
           (out(T.TENSOR_FLOAT32, (1,), [0.5]),)),
]


# -- ELU ---------------------------------------------------------------------------------------

def _elu_ref(x: Any, alpha: float) -> list[Any]:
    flat = [v if v >= 0 else alpha * (math.exp(v) - 1.0) for v in np.ravel(x)]
    return [np.array(flat, np.float64).reshape(np.shape(x))]


CASES += [
    OpCase("elu_alpha1_rank1", Op.ELU, (f32(_X1), f32s(1.0)),
           (out(T.TENSOR_FLOAT32, _X1.shape),), reference=_elu_ref),
    OpCase("elu_alpha_half_rank2", Op.ELU, (f32(_X2), f32s(0.5)),
           (out(T.TENSOR_FLOAT32, _X2.shape),), reference=_elu_ref),
    OpCase("elu_alpha2_rank4", Op.ELU, (f32(_X4 / 2), f32s(2.0)),
           (out(T.TENSOR_FLOAT32, _X4.shape),), reference=_elu_ref),
    OpCase("elu_alpha_zero", Op.ELU, (f32([[-3.0, -0.5, 0.0, 2.0]]), f32s(0.0)),
           (out(T.TENSOR_FLOAT32, (1, 4), [[0.0, 0.0, 0.0, 2.0]]),)),
]


# -- PRELU -------------------------------------------------------------------------------------

def _prelu_ref(x: Any, alpha: Any) -> list[Any]:
    xb, ab = np.broadcast_arrays(x, alpha)
    result = np.empty(xb.shape)
    for idx in np.ndindex(xb.shape):
        v = xb[idx]
        result[idx] = v if v >= 0 else v * ab[idx]
    return [result]


_PX = np.array([[[[-2.0, 1.0, -0.5], [3.0, -1.5, 0.0]],
                 [[-4.0, -3.0, 2.5], [0.25, -0.25, -6.0]]]], np.float32)  # [1, 2, 2, 3]
CASES += [
    OpCase("prelu_same_shape", Op.PRELU,
           (f32(_PX), f32(np.full(_PX.shape, 0.25, np.float32) * np.arange(1, 13).reshape(
               _PX.shape).astype(np.float32) / 4)),
           (out(T.TENSOR_FLOAT32, _PX.shape),), reference=_prelu_ref),
    OpCase("prelu_channel_alpha", Op.PRELU, (f32(_PX), f32([0.0, 0.5, 2.0])),
           (out(T.TENSOR_FLOAT32, _PX.shape),), reference=_prelu_ref),
    OpCase("prelu_alpha_broadcasts_input", Op.PRELU,
           (f32([[-1.0, 2.0, -3.0]]), f32([[[0.5]], [[-1.0]]])),
           (out(T.TENSOR_FLOAT32, (2, 1, 3)),), reference=_prelu_ref),
    OpCase("prelu_rank1_literal", Op.PRELU, (f32([-2.0, -1.0, 0.0, 1.0]), f32([0.1])),
           (out(T.TENSOR_FLOAT32, (4,), [-0.2, -0.1, 0.0, 1.0]),)),
]
