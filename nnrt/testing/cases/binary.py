"""Conformance cases for ADD, SUB, MUL, DIV (float64 references written independently)."""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import OpCase, f32, i32, i32s, out

CASES: list[OpCase] = []

_ACT = {0: lambda x: x, 1: lambda x: np.maximum(x, 0.0), 2: lambda x: np.clip(x, -1.0, 1.0),
        3: lambda x: np.clip(x, 0.0, 6.0)}
_FLOAT_REF: dict[Op, Any] = {Op.ADD: lambda a, b: a + b, Op.SUB: lambda a, b: a - b,
                             Op.MUL: lambda a, b: a * b, Op.DIV: lambda a, b: a / b}

_A = np.array([[-2.5, 0.75, 3.0], [1.5, -0.25, 8.0]], np.float32)
_B = np.array([[1.25, -4.0, 0.5], [2.0, 0.5, -3.0]], np.float32)
_ROW = np.array([0.5, -1.5, 2.0], np.float32)

for _op, _fn in _FLOAT_REF.items():
    _name = _op.name.lower()
    for _act in (0, 1, 2, 3):
        CASES.append(OpCase(
            f"{_name}_act{_act}", _op,
            inputs=(f32(_A), f32(_B), i32s(_act)),
            outputs=(out(T.TENSOR_FLOAT32, (2, 3)),),
            reference=lambda a, b, act, fn=_fn: [_ACT[act](fn(a, b))],
        ))
    CASES.append(OpCase(
        f"{_name}_broadcast", _op,
        inputs=(f32(_A.reshape(2, 1, 3)), f32(_ROW.reshape(1, 3)), i32s(0)),
        outputs=(out(T.TENSOR_FLOAT32, (2, 1, 3)),),
        reference=lambda a, b, act, fn=_fn: [fn(a, b)],
    ))
    CASES.append(OpCase(
        f"{_name}_broadcast_both", _op,
        inputs=(f32(np.arange(1, 5, dtype=np.float32).reshape(4, 1)), f32(_ROW), i32s(0)),
        outputs=(out(T.TENSOR_FLOAT32, (4, 3)),),
        reference=lambda a, b, act, fn=_fn: [fn(a, b)],
    ))
    CASES.append(OpCase(
        f"{_name}_rank4", _op,
        inputs=(f32(np.linspace(-3, 3, 24, dtype=np.float32).reshape(1, 2, 3, 4)),
                f32(np.linspace(1, 2, 4, dtype=np.float32)), i32s(1)),
        outputs=(out(T.TENSOR_FLOAT32, (1, 2, 3, 4)),),
        reference=lambda a, b, act, fn=_fn: [np.maximum(fn(a, b), 0.0)],
    ))

_IA = np.array([[7, -7, 9], [-9, 100, 3]], np.int32)
_IB = np.array([[2, 2, -4], [4, -7, 3]], np.int32)
CASES += [
    OpCase("add_int32", Op.ADD, (i32(_IA), i32(_IB), i32s(0)), (out(T.TENSOR_INT32, (2, 3)),),
           reference=lambda a, b, act: [a + b]),
    OpCase("sub_int32", Op.SUB, (i32(_IA), i32(_IB), i32s(0)), (out(T.TENSOR_INT32, (2, 3)),),
           reference=lambda a, b, act: [a - b]),
    OpCase("mul_int32_broadcast", Op.MUL, (i32(_IA), i32([3, -1, 2]), i32s(0)),
           (out(T.TENSOR_INT32, (2, 3)),), reference=lambda a, b, act: [a * b]),
    # Integer DIV rounds toward negative infinity (NNAPI feature level 4).
    OpCase("div_int32_floor", Op.DIV, (i32(_IA), i32(_IB), i32s(0)),
           (out(T.TENSOR_INT32, (2, 3), [[3, -4, -3], [-3, -15, 1]]),)),
]
