"""Conformance cases for ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM, POW (independent float64 references)."""

from __future__ import annotations

import math
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

# -- MAXIMUM, MINIMUM --------------------------------------------------------------------------
# References pick with explicit comparisons (not np.maximum / np.minimum).


def _pick_max(a: Any, b: Any) -> list[Any]:
    a, b = np.broadcast_arrays(a, b)
    return [np.where(a >= b, a, b)]


def _pick_min(a: Any, b: Any) -> list[Any]:
    a, b = np.broadcast_arrays(a, b)
    return [np.where(a <= b, a, b)]


# Infinite results are checked in tests/unit/ops/test_binary_rules.py (nnrt.testing.check
# cannot compare equal infinities without a RuntimeWarning yet).
_MM = np.array([[-2.5, 0.75, 30.0], [1.5, -30.0, 8.0]], np.float32)
_MM_B = np.array([[1.25, 0.75, 0.5], [-2.0, 0.5, 8.0]], np.float32)

for _op, _ref in ((Op.MAXIMUM, _pick_max), (Op.MINIMUM, _pick_min)):
    _name = _op.name.lower()
    CASES += [
        OpCase(f"{_name}_same_shape", _op, (f32(_MM), f32(_MM_B)),
               (out(T.TENSOR_FLOAT32, (2, 3)),), reference=_ref),
        OpCase(f"{_name}_broadcast", _op, (f32(_MM_B.reshape(2, 1, 3)), f32(_ROW)),
               (out(T.TENSOR_FLOAT32, (2, 1, 3)),), reference=_ref),
        OpCase(f"{_name}_broadcast_both", _op,
               (f32([[-1.0], [0.25], [1.0], [3.0]]), f32(_ROW.reshape(1, 3))),
               (out(T.TENSOR_FLOAT32, (4, 3)),), reference=_ref),
        OpCase(f"{_name}_rank1_size1", _op, (f32([0.5]), f32([-3.0, 0.5, 1.0, 2.5, -0.0])),
               (out(T.TENSOR_FLOAT32, (5,)),), reference=_ref),
        OpCase(f"{_name}_rank5", _op,
               (f32(np.linspace(-2, 2, 12, dtype=np.float32).reshape(2, 1, 2, 1, 3)),
                f32(np.linspace(1, -1, 4, dtype=np.float32).reshape(1, 2, 1, 2, 1))),
               (out(T.TENSOR_FLOAT32, (2, 2, 2, 2, 3)),), reference=_ref),
        OpCase(f"{_name}_int32", _op, (i32(_IA), i32(_IB)), (out(T.TENSOR_INT32, (2, 3)),),
               reference=_ref),
        OpCase(f"{_name}_int32_broadcast", _op,
               (i32(_IA), i32([[2147483647], [-2147483648]])),
               (out(T.TENSOR_INT32, (2, 3)),), reference=_ref),
    ]
# Spot-check the references against hand-worked values.
CASES.append(OpCase("maximum_literal", Op.MAXIMUM, (i32([1, -5, 3]), i32([2, -7, 3])),
                    (out(T.TENSOR_INT32, (3,), [2, -5, 3]),)))
CASES.append(OpCase("minimum_literal", Op.MINIMUM, (f32([1.5, -5.0, 3.0]), f32([2.0, -7.0, 3.0])),
                    (out(T.TENSOR_FLOAT32, (3,), [1.5, -7.0, 3.0]),)))

# -- POW -------------------------------------------------------------------------------------
# Reference: exp(e * log(b)) per element for positive bases; edge values worked out by hand.


def _pow_positive(base: Any, exponent: Any) -> list[Any]:
    b, e = np.broadcast_arrays(base, exponent)
    result = np.empty(b.shape)
    for idx in np.ndindex(b.shape):
        result[idx] = math.exp(float(e[idx]) * math.log(float(b[idx])))
    return [result]


CASES += [
    OpCase("pow_same_shape", Op.POW,
           (f32([[0.5, 1.0, 2.0], [3.0, 1.5, 4.0]]), f32([[2.0, 7.5, 3.5], [-1.0, 2.5, 0.5]])),
           (out(T.TENSOR_FLOAT32, (2, 3)),), reference=_pow_positive),
    OpCase("pow_broadcast_exponent", Op.POW,
           (f32(np.linspace(0.25, 3, 8, dtype=np.float32).reshape(2, 4)), f32([2.0])),
           (out(T.TENSOR_FLOAT32, (2, 4)),), reference=_pow_positive),
    OpCase("pow_broadcast_both_rank4", Op.POW,
           (f32(np.linspace(0.5, 2.5, 6, dtype=np.float32).reshape(1, 2, 3, 1)),
            f32(np.array([-1.5, 0.0, 1.0, 2.25], np.float32).reshape(1, 1, 1, 4))),
           (out(T.TENSOR_FLOAT32, (1, 2, 3, 4)),), reference=_pow_positive),
    OpCase("pow_rank1_size1_base", Op.POW, (f32([2.5]), f32([0.5, 3.0, -2.0, 1.0])),
           (out(T.TENSOR_FLOAT32, (4,)),), reference=_pow_positive),
    # C pow: odd/even integer exponents keep/lose the sign of a negative base; a negative base
    # with a fractional exponent is NaN; anything ** 0 is 1.
    OpCase("pow_edge_values", Op.POW,
           (f32([-2.0, -2.0, -2.0, 0.0, 0.0, -3.0, 4.0, 0.0]),
            f32([3.0, 2.0, 0.5, 2.0, 0.0, 0.0, -0.5, 0.5])),
           (out(T.TENSOR_FLOAT32, (8,), [-8.0, 4.0, np.nan, 0.0, 1.0, 1.0, 0.5, 0.0]),)),
]

# -- infinite results -------------------------------------------------------------------------
# Worked out by hand; each holds in float32 and float16 alike (10 ** 40 overflows both).
_INF = math.inf
CASES += [
    # C pow: 0 ** -1 = +inf, (-0) ** -3 = -inf (odd exponent keeps the sign), 2 ** inf = inf,
    # 0.5 ** -inf = inf, inf ** 2 = inf, 10 ** 40 overflows.
    OpCase("pow_infinite_results", Op.POW,
           (f32([0.0, -0.0, 2.0, 0.5, _INF, 10.0]), f32([-1.0, -3.0, _INF, -_INF, 2.0, 40.0])),
           (out(T.TENSOR_FLOAT32, (6,), [_INF, -_INF, _INF, _INF, _INF, _INF]),)),
    # NaN in either input propagates; infinities order like any other value.
    OpCase("maximum_infinities_and_nan", Op.MAXIMUM,
           (f32([_INF, -_INF, 1.0, np.nan]), f32([1.0, 2.0, -_INF, 1.0])),
           (out(T.TENSOR_FLOAT32, (4,), [_INF, 2.0, 1.0, np.nan]),)),
    OpCase("minimum_infinities_and_nan", Op.MINIMUM,
           (f32([_INF, -_INF, 1.0, 1.0]), f32([1.0, 2.0, -_INF, np.nan])),
           (out(T.TENSOR_FLOAT32, (4,), [1.0, -_INF, -_INF, np.nan]),)),
]
