"""Conformance cases for MEAN, REDUCE_* and ARGMAX / ARGMIN.

References are computed independently of nnrt's kernels: the reductions visit every output
position and fold the Python list of its input values (``math.fsum``, ``math.prod``, ``max``,
``any``, ...); arg-min/max scan each row with ``list.index`` (first occurrence wins ties).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import OpCase, b8, bools, f32, i32, i32s, out

CASES: list[OpCase] = []

Fold = Callable[[list[Any]], Any]


def _ref_reduce(x: np.ndarray[Any, Any], axes: Sequence[int], keep: bool, fold: Fold,
                dtype: Any = np.float64) -> np.ndarray[Any, Any]:
    """Fold the values of every reduced group; shape per NNAPI (``[1]`` if nothing is left)."""
    rank = x.ndim
    reduced = sorted({int(a) % rank for a in axes})
    kept_shape = [1 if a in reduced else x.shape[a] for a in range(rank)]
    values = []
    for pos in itertools.product(*(range(n) for n in kept_shape)):
        group = []
        for sub in itertools.product(*(range(x.shape[a]) for a in reduced)):
            index = list(pos)
            for a, k in zip(reduced, sub, strict=True):
                index[a] = k
            group.append(x[tuple(index)].item())
        values.append(fold(group))
    result = np.array(values, dtype=dtype).reshape(kept_shape)
    if keep:
        return result
    return result.reshape([x.shape[a] for a in range(rank) if a not in reduced] or [1])


def _mean(values: list[float]) -> float:
    return math.fsum(values) / len(values)


_X3 = (np.arange(24, dtype=np.float32).reshape(2, 3, 4) * 0.25 - 2.5) * np.array(
    [1.0, -1.0, 0.5, 2.0], np.float32)
_X4 = np.linspace(-3.0, 3.0, 24, dtype=np.float32).reshape(1, 2, 2, 6)
_XP = np.linspace(0.5, 1.5, 24, dtype=np.float32).reshape(2, 3, 4)  # products stay moderate
_X1 = np.array([0.5, -1.25, 3.0, 2.0, -0.75], np.float32)


def _dims(x: np.ndarray[Any, Any], axes: Sequence[int], keep: bool) -> tuple[int, ...]:
    return tuple(int(d) for d in _ref_reduce(np.zeros(x.shape), axes, keep, _mean).shape)


# -- MEAN (keep_dims is an INT32: positive keeps) -------------------------------------------------

for _name, _x, _axes, _keep in (
    ("mean_axis1", _X3, [1], 0),
    ("mean_keep_dims", _X3, [0, 2], 1),
    ("mean_negative_and_duplicate_axes", _X3, [-1, 2, 0], 0),
    ("mean_all_axes", _X3, [0, 1, 2], 0),
    ("mean_all_axes_keep_dims", _X3, [2, 1, 0], 1),
    ("mean_keep_dims_any_positive", _X4, [1, 2], 5),
    ("mean_keep_dims_negative_drops", _X4, [-3, -2], -1),
    ("mean_rank1", _X1, [0], 0),
):
    CASES.append(OpCase(
        _name, Op.MEAN,
        inputs=(f32(_x), i32(_axes), i32s(_keep)),
        outputs=(out(T.TENSOR_FLOAT32, _dims(_x, _axes, _keep > 0)),),
        reference=lambda x, axes, keep: [_ref_reduce(x, axes, keep > 0, _mean)],
    ))

# -- REDUCE_SUM / PROD / MAX / MIN (keep_dims is a BOOL) -------------------------------------------

_FLOAT_FOLDS: dict[Op, tuple[Fold, np.ndarray[Any, Any]]] = {
    Op.REDUCE_SUM: (math.fsum, _X3),
    Op.REDUCE_PROD: (math.prod, _XP),
    Op.REDUCE_MAX: (max, _X3),
    Op.REDUCE_MIN: (min, _X3),
}

for _op, (_fold, _x) in _FLOAT_FOLDS.items():
    _lower = _op.name.lower()
    for _suffix, _xx, _axes, _keep in (
        ("axis1", _x, [1], False),
        ("keep_dims_negative_axes", _x, [0, -1], True),
        ("duplicate_axes", _x, [2, -1, 2], False),
        ("all_axes", _x, [0, 1, 2], False),
        ("rank4", _X4 if _op != Op.REDUCE_PROD else _XP.reshape(1, 2, 3, 4), [1, 2], True),
        ("rank1", _X1, [-1], False),
    ):
        CASES.append(OpCase(
            f"{_lower}_{_suffix}", _op,
            inputs=(f32(_xx), i32(_axes), bools(_keep)),
            outputs=(out(T.TENSOR_FLOAT32, _dims(_xx, _axes, _keep)),),
            reference=lambda x, axes, keep, fold=_fold: [_ref_reduce(x, axes, keep, fold)],
        ))

# -- REDUCE_ANY / REDUCE_ALL on TENSOR_BOOL8 ------------------------------------------------------

_B = np.array([[[True, False, True], [True, True, True]],
               [[False, False, False], [True, False, True]]])
for _op, _fold in ((Op.REDUCE_ANY, any), (Op.REDUCE_ALL, all)):
    _lower = _op.name.lower()
    for _suffix, _axes, _keep in (
        ("axis2", [2], False),
        ("keep_dims", [0, -1], True),
        ("all_axes", [0, 1, 2], False),
        ("duplicate_axes", [1, -2], True),
    ):
        CASES.append(OpCase(
            f"{_lower}_{_suffix}", _op,
            inputs=(b8(_B), i32(_axes), bools(_keep)),
            outputs=(out(T.TENSOR_BOOL8, _dims(_B, _axes, _keep)),),
            reference=lambda x, axes, keep, fold=_fold: [
                _ref_reduce(x, axes, keep, fold, dtype=np.bool_)],
        ))
    CASES.append(OpCase(
        f"{_lower}_rank1", _op,
        inputs=(b8([False, True, False]), i32([0]), bools(False)),
        outputs=(out(T.TENSOR_BOOL8, (1,), [_op == Op.REDUCE_ANY]),),
    ))


# -- ARGMAX / ARGMIN ------------------------------------------------------------------------------


def _ref_arg(x: np.ndarray[Any, Any], axis: int, pick: Fold) -> np.ndarray[Any, Any]:
    """Index of the first extreme value of every row along ``axis`` (``[1]`` for a vector)."""
    moved = np.moveaxis(x, axis % x.ndim, -1)
    result = np.zeros(moved.shape[:-1], dtype=np.int64)
    for pos in np.ndindex(*moved.shape[:-1]):
        row = [v.item() for v in moved[pos]]
        result[pos] = row.index(pick(row))
    return result.reshape(result.shape or (1,))


_TIES = np.array([[1.5, 3.0, 3.0, -1.0], [-2.0, -2.0, 0.5, -2.0]], np.float32)
_IX = np.array([[7, -3, 7, 0], [2, 9, -8, -8], [5, 5, 5, 5]], np.int32)

for _op, _pick in ((Op.ARGMAX, max), (Op.ARGMIN, min)):
    _lower = _op.name.lower()
    for _suffix, _data, _axis, _arg in (
        ("axis1", _X3, 1, f32),
        ("axis_negative", _X3, -1, f32),
        ("axis0", _X3, 0, f32),
        ("ties_smallest_index", _TIES, 1, f32),
        ("rank4", _X4, 3, f32),
        ("rank1", _X1, 0, f32),
        ("int32", _IX, -1, i32),
        ("int32_axis0", _IX, 0, i32),
    ):
        CASES.append(OpCase(
            f"{_lower}_{_suffix}", _op,
            inputs=(_arg(_data), i32s(_axis)),
            outputs=(out(T.TENSOR_INT32, _ref_arg(np.asarray(_data), _axis, _pick).shape),),
            reference=lambda x, axis, pick=_pick: [_ref_arg(x, axis, pick)],
        ))
