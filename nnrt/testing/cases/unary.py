"""Conformance cases for ABS, EXP, LOG, SQRT, RSQRT, NEG, SIN, FLOOR.

References apply Python's ``math`` functions element by element, handling the IEEE edge values
(NaN for LOG / SQRT / RSQRT of a negative number) explicitly; infinite inputs and results
(LOG(0), RSQRT(-0), EXP overflow, ...) are literal cases. The sign of a zero result
(SQRT(-0) = -0) is checked in ``tests/unit/ops/test_unary_rules.py``: the shared float
comparison treats -0 and +0 as equal.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import OpCase, f32, i32, out

CASES: list[OpCase] = []

_NAN = math.nan


def _log(v: float) -> float:
    if v > 0:
        return math.log(v)
    return -math.inf if v == 0 else _NAN


def _sqrt(v: float) -> float:
    return math.sqrt(v) if v >= 0 else _NAN


def _rsqrt(v: float) -> float:
    if v > 0:
        return 1.0 / math.sqrt(v)
    return math.copysign(math.inf, v) if v == 0 else _NAN


def _floor(v: float) -> float:
    return float(math.floor(v)) if math.isfinite(v) else v


_MATH: dict[Op, Callable[[float], float]] = {
    Op.ABS: math.fabs,
    Op.EXP: math.exp,
    Op.LOG: _log,
    Op.SQRT: _sqrt,
    Op.RSQRT: _rsqrt,
    Op.NEG: lambda v: -v,
    Op.SIN: math.sin,
    Op.FLOOR: _floor,
}


def _reference(fn: Callable[[float], float]) -> Callable[..., list[Any]]:
    def reference(x: Any) -> list[Any]:
        result = np.empty(np.shape(x))
        for idx in np.ndindex(result.shape):
            result[idx] = fn(float(x[idx]))
        return [result]

    return reference


# Per op: a 2-D case with the op's edge values, in a domain that keeps float16 results finite.
_EDGES: dict[Op, list[list[float]]] = {
    Op.ABS: [[-2.5, 0.0, 3.25], [-0.0, _NAN, -7.5]],
    Op.EXP: [[-2.5, 0.0, 1.0], [-np.inf, _NAN, 3.0]],
    Op.LOG: [[0.25, 1.0, 2.718281828], [-1.0, _NAN, 50.0]],
    Op.SQRT: [[0.25, 0.0, 2.0], [-4.0, _NAN, 49.0]],
    Op.RSQRT: [[0.25, 1.0, 2.0], [-4.0, _NAN, 0.01]],
    Op.NEG: [[-2.5, 0.0, 3.25], [-0.0, _NAN, 1e4]],
    Op.SIN: [[-3.14159265, -1.5, 0.0], [0.5, _NAN, 3.0]],
    Op.FLOOR: [[-2.5, -0.5, 0.0], [2.0, _NAN, 7.75]],
}
# Positive values, so every op has a finite, non-NaN result.
_RANK4 = np.linspace(0.125, 4.0, 24, dtype=np.float32).reshape(1, 2, 3, 4)
_RANK5 = np.linspace(0.5, 3.0, 32, dtype=np.float32).reshape(2, 2, 2, 2, 2)

for _op, _fn in _MATH.items():
    _name = _op.name.lower()
    _ref = _reference(_fn)
    CASES += [
        OpCase(f"{_name}_edge_values", _op, (f32(_EDGES[_op]),),
               (out(T.TENSOR_FLOAT32, (2, 3)),), reference=_ref),
        OpCase(f"{_name}_rank1_size1", _op, (f32([0.75]),), (out(T.TENSOR_FLOAT32, (1,)),),
               reference=_ref),
        OpCase(f"{_name}_rank4", _op, (f32(-_RANK4 if _op == Op.NEG else _RANK4),),
               (out(T.TENSOR_FLOAT32, (1, 2, 3, 4)),), reference=_ref),
    ]
    if _op != Op.FLOOR:  # FLOOR is limited to rank 4
        CASES.append(OpCase(f"{_name}_rank5", _op, (f32(_RANK5),),
                            (out(T.TENSOR_FLOAT32, (2, 2, 2, 2, 2)),), reference=_ref))

# Hand-worked values.
CASES += [
    OpCase("floor_literal", Op.FLOOR, (f32([-1.5, -1.0, 0.25, 1.999]),),
           (out(T.TENSOR_FLOAT32, (4,), [-2.0, -1.0, 0.0, 1.0]),)),
    OpCase("sqrt_literal", Op.SQRT, (f32([[4.0, 0.0], [-1.0, 2.25]]),),
           (out(T.TENSOR_FLOAT32, (2, 2), [[2.0, 0.0], [_NAN, 1.5]]),)),
    OpCase("rsqrt_literal", Op.RSQRT, (f32([4.0, 0.25, -1.0, 16.0]),),
           (out(T.TENSOR_FLOAT32, (4,), [0.5, 2.0, _NAN, 0.25]),)),
    OpCase("log_literal", Op.LOG, (f32([1.0, -2.0]),), (out(T.TENSOR_FLOAT32, (2,), [0.0, _NAN]),)),
]

# TENSOR_INT32 (ABS, NEG).
_INTS = [[-7, 0, 5], [2147483647, -2147483647, -1]]
CASES += [
    OpCase("abs_int32", Op.ABS, (i32(_INTS),),
           (out(T.TENSOR_INT32, (2, 3), [[7, 0, 5], [2147483647, 2147483647, 1]]),)),
    OpCase("neg_int32", Op.NEG, (i32(_INTS),),
           (out(T.TENSOR_INT32, (2, 3), [[7, 0, -5], [-2147483647, 2147483647, 1]]),)),
    OpCase("abs_int32_rank4", Op.ABS, (i32(np.arange(-12, 12).reshape(2, 3, 1, 4)),),
           (out(T.TENSOR_INT32, (2, 3, 1, 4)),),
           reference=lambda x: [np.where(x < 0, -x, x)]),
    OpCase("neg_int32_rank1", Op.NEG, (i32([3]),), (out(T.TENSOR_INT32, (1,), [-3]),)),
]

# Infinite inputs and results, worked out by hand from C's math library; each holds in float32
# and float16 alike (EXP(100) overflows both).
_INF = math.inf
for _op, _values, _expected in (
        (Op.LOG, [0.0, -0.0, _INF, -1.0, -_INF], [-_INF, -_INF, _INF, _NAN, _NAN]),
        (Op.RSQRT, [0.0, -0.0, _INF, -1.0], [_INF, -_INF, 0.0, _NAN]),
        (Op.SQRT, [_INF, -_INF, -0.0], [_INF, _NAN, -0.0]),
        (Op.EXP, [_INF, -_INF, 100.0], [_INF, 0.0, _INF]),
        (Op.ABS, [-_INF, _INF], [_INF, _INF]),
        (Op.NEG, [-_INF, _INF], [_INF, -_INF]),
        (Op.FLOOR, [-_INF, _INF], [-_INF, _INF]),
        (Op.SIN, [_INF, -_INF], [_NAN, _NAN])):
    CASES.append(OpCase(f"{_op.name.lower()}_infinities", _op, (f32(_values),),
                        (out(T.TENSOR_FLOAT32, (len(_values),), _expected),)))
