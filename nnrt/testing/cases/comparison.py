"""Conformance cases for the comparisons, LOGICAL_AND / OR / NOT and SELECT.

References loop over output positions with Python's own comparison and boolean operators,
broadcasting by hand (a size-1 dimension repeats its only element).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import OpCase, b8, f32, i32, out

CASES: list[OpCase] = []


def _broadcast_loop(fn: Callable[[Any, Any], Any], a: Any, b: Any, dtype: Any) -> np.ndarray:
    a, b = np.asarray(a), np.asarray(b)
    rank = max(a.ndim, b.ndim)
    a = a.reshape((1,) * (rank - a.ndim) + a.shape)
    b = b.reshape((1,) * (rank - b.ndim) + b.shape)
    shape = tuple(max(x, y) for x, y in zip(a.shape, b.shape, strict=True))
    result = np.empty(shape, dtype)
    for idx in np.ndindex(shape):
        ia = tuple(0 if n == 1 else k for k, n in zip(idx, a.shape, strict=True))
        ib = tuple(0 if n == 1 else k for k, n in zip(idx, b.shape, strict=True))
        result[idx] = fn(a[ia].item(), b[ib].item())
    return result


def _predicate(fn: Callable[[Any, Any], bool]) -> Callable[..., list[Any]]:
    return lambda a, b: [_broadcast_loop(fn, a, b, bool)]


# -- comparisons -----------------------------------------------------------------------------

_COMPARE: dict[Op, Callable[[Any, Any], bool]] = {
    Op.EQUAL: operator.eq,
    Op.NOT_EQUAL: operator.ne,
    Op.GREATER: operator.gt,
    Op.GREATER_EQUAL: operator.ge,
    Op.LESS: operator.lt,
    Op.LESS_EQUAL: operator.le,
}

_NAN = math.nan
# Ties, signed zeros and NaN (unordered: only NOT_EQUAL holds).
_FA = np.array([[-2.5, 0.75, 3.0, _NAN], [1.5, -0.0, 8.0, 2.0]], np.float32)
_FB = np.array([[1.25, 0.75, -3.0, 1.0], [1.5, 0.0, 9.0, _NAN]], np.float32)
_IA = np.array([[7, -7, 9], [-2147483648, 100, 2147483647]], np.int32)
_IB = np.array([[7, 2, -4], [-2147483647, 100, 2147483646]], np.int32)
_BA = np.array([[False, False], [True, True]])
_BB = np.array([[False, True], [False, True]])

for _op, _fn in _COMPARE.items():
    _name = _op.name.lower()
    _ref = _predicate(_fn)
    CASES += [
        OpCase(f"{_name}_float", _op, (f32(_FA), f32(_FB)), (out(T.TENSOR_BOOL8, (2, 4)),),
               reference=_ref),
        OpCase(f"{_name}_broadcast", _op,
               (f32(np.array([-1.0, 0.5, 2.0], np.float32).reshape(3, 1, 1)),
                f32(np.array([[0.5, -1.0, 2.0, 0.0]], np.float32))),
               (out(T.TENSOR_BOOL8, (3, 1, 4)),), reference=_ref),
        OpCase(f"{_name}_rank1_size1", _op, (f32([1.0]), f32([0.0, 1.0, 2.0])),
               (out(T.TENSOR_BOOL8, (3,)),), reference=_ref),
        OpCase(f"{_name}_rank5", _op,
               (f32(np.linspace(-2, 2, 12, dtype=np.float32).reshape(1, 2, 1, 2, 3)),
                f32(np.array([0.0, -2.0, 2.0], np.float32))),
               (out(T.TENSOR_BOOL8, (1, 2, 1, 2, 3)),), reference=_ref),
        OpCase(f"{_name}_int32", _op, (i32(_IA), i32(_IB)), (out(T.TENSOR_BOOL8, (2, 3)),),
               reference=_ref),
        OpCase(f"{_name}_int32_broadcast", _op, (i32(_IA), i32([[9], [100]])),
               (out(T.TENSOR_BOOL8, (2, 3)),), reference=_ref),
        # BOOL8 orders false < true.
        OpCase(f"{_name}_bool8", _op, (b8(_BA), b8(_BB)), (out(T.TENSOR_BOOL8, (2, 2)),),
               reference=_ref),
    ]

# Hand-worked values.
CASES += [
    OpCase("less_literal", Op.LESS, (f32([1.0, 2.0, 3.0, _NAN]), f32([2.0, 2.0, 2.0, 2.0])),
           (out(T.TENSOR_BOOL8, (4,), [True, False, False, False]),)),
    OpCase("not_equal_literal_nan", Op.NOT_EQUAL, (f32([_NAN, 1.0]), f32([_NAN, 1.0])),
           (out(T.TENSOR_BOOL8, (2,), [True, False]),)),
    OpCase("greater_equal_literal_bool8", Op.GREATER_EQUAL,
           (b8([False, False, True, True]), b8([False, True, False, True])),
           (out(T.TENSOR_BOOL8, (4,), [True, False, True, True]),)),
]

# -- LOGICAL_AND, LOGICAL_OR, LOGICAL_NOT ------------------------------------------------------

_LOGICAL: dict[Op, Callable[[Any, Any], bool]] = {
    Op.LOGICAL_AND: lambda x, y: bool(x) and bool(y),
    Op.LOGICAL_OR: lambda x, y: bool(x) or bool(y),
}
for _op, _fn in _LOGICAL.items():
    _name = _op.name.lower()
    _ref = _predicate(_fn)
    CASES += [
        OpCase(f"{_name}_same_shape", _op, (b8(_BA), b8(_BB)), (out(T.TENSOR_BOOL8, (2, 2)),),
               reference=_ref),
        OpCase(f"{_name}_broadcast", _op,
               (b8(np.array([True, False, True]).reshape(3, 1)), b8([[True, False]])),
               (out(T.TENSOR_BOOL8, (3, 2)),), reference=_ref),
        OpCase(f"{_name}_rank1_size1", _op, (b8([True, False, True]), b8([False])),
               (out(T.TENSOR_BOOL8, (3,)),), reference=_ref),
        OpCase(f"{_name}_rank4", _op,
               (b8((np.arange(16) % 3 == 0).reshape(2, 2, 2, 2)), b8([[[[True], [False]]]])),
               (out(T.TENSOR_BOOL8, (2, 2, 2, 2)),), reference=_ref),
    ]
CASES += [
    OpCase("logical_and_literal", Op.LOGICAL_AND, (b8([True, True, False]), b8([True, False, False])),
           (out(T.TENSOR_BOOL8, (3,), [True, False, False]),)),
    OpCase("logical_or_literal", Op.LOGICAL_OR, (b8([True, True, False]), b8([True, False, False])),
           (out(T.TENSOR_BOOL8, (3,), [True, True, False]),)),
    OpCase("logical_not_rank1", Op.LOGICAL_NOT, (b8([True, False, True]),),
           (out(T.TENSOR_BOOL8, (3,), [False, True, False]),)),
    OpCase("logical_not_rank1_size1", Op.LOGICAL_NOT, (b8([False]),),
           (out(T.TENSOR_BOOL8, (1,), [True]),)),
    OpCase("logical_not_rank4", Op.LOGICAL_NOT, (b8((np.arange(24) % 5 < 2).reshape(1, 2, 3, 4)),),
           (out(T.TENSOR_BOOL8, (1, 2, 3, 4)),),
           reference=lambda x: [np.array([not v for v in x.flat]).reshape(x.shape)]),
]

# -- SELECT ----------------------------------------------------------------------------------


def _select(condition: Any, a: Any, b: Any) -> list[Any]:
    result = np.empty(a.shape, a.dtype)
    for idx in np.ndindex(a.shape):
        result[idx] = a[idx] if condition[idx] else b[idx]
    return [result]


_COND = np.array([[True, False, True], [False, False, True]])
CASES += [
    OpCase("select_float", Op.SELECT,
           (b8(_COND), f32([[1.5, -2.0, _NAN], [4.0, 5.25, -6.0]]),
            f32([[-1.0, 2.5, 3.0], [_NAN, -5.0, 6.0]])),
           (out(T.TENSOR_FLOAT32, (2, 3)),), reference=_select),
    OpCase("select_int32", Op.SELECT,
           (b8(_COND), i32([[1, 2, 3], [4, 5, 6]]), i32([[-1, -2, -3], [-2147483648, -5, -6]])),
           (out(T.TENSOR_INT32, (2, 3), [[1, -2, 3], [-2147483648, -5, 6]]),)),
    OpCase("select_rank1_size1", Op.SELECT, (b8([False]), f32([1.0]), f32([2.0])),
           (out(T.TENSOR_FLOAT32, (1,), [2.0]),)),
    OpCase("select_rank4", Op.SELECT,
           (b8((np.arange(24) % 3 == 1).reshape(2, 3, 2, 2)),
            f32(np.linspace(-3, 3, 24, dtype=np.float32).reshape(2, 3, 2, 2)),
            f32(np.linspace(5, 7, 24, dtype=np.float32).reshape(2, 3, 2, 2))),
           (out(T.TENSOR_FLOAT32, (2, 3, 2, 2)),), reference=_select),
    OpCase("select_all_true_rank5", Op.SELECT,
           (b8(np.ones((1, 2, 1, 2, 2), bool)),
            f32(np.arange(8, dtype=np.float32).reshape(1, 2, 1, 2, 2)),
            f32(np.zeros((1, 2, 1, 2, 2), np.float32))),
           (out(T.TENSOR_FLOAT32, (1, 2, 1, 2, 2)),), reference=_select),
]
