"""Conformance cases for GATHER, EMBEDDING_LOOKUP and TOPK_V2.

References are independent of nnrt's kernels: GATHER visits every output position and reads the
input element its index formula names; EMBEDDING_LOOKUP stacks Python-indexed rows; TOPK_V2
sorts each row's (value, index) pairs with Python's ``sorted``. TOPK_V2 orders equal values as
NNAPI's operation reference states: "the one with larger index appears first".
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import OpCase, f32, i32, i32s, out

CASES: list[OpCase] = []

Array = np.ndarray[Any, Any]


# -- GATHER ---------------------------------------------------------------------------------------


def _gather_dims(shape: tuple[int, ...], axis: int, idx_shape: tuple[int, ...]
                 ) -> tuple[int, ...]:
    axis %= len(shape)
    return (*shape[:axis], *idx_shape, *shape[axis + 1:])


def _ref_gather(x: Array, axis: int, indices: Array) -> Array:
    """output[a..., i..., b...] = x[a..., indices[i...], b...], one position at a time."""
    axis %= x.ndim
    k = indices.ndim
    dims = _gather_dims(x.shape, axis, indices.shape)
    result = np.zeros(dims, dtype=x.dtype)
    for pos in itertools.product(*(range(n) for n in dims)):
        before, idx, after = pos[:axis], pos[axis:axis + k], pos[axis + k:]
        result[pos] = x[(*before, int(indices[idx]), *after)]
    return result


_G = np.arange(12, dtype=np.float32).reshape(3, 4) * 0.5 - 2.0
_G4 = np.linspace(-4.0, 4.0, 48, dtype=np.float32).reshape(2, 3, 4, 2)
_GI = np.array([[10, -20, 30], [40, 50, -60]], np.int32)

for _name, _x, _axis, _indices, _arg in (
    ("gather_axis0", _G, 0, [2, 0], f32),
    ("gather_axis1_matrix_indices", _G, 1, [[0, 3], [1, 1]], f32),
    ("gather_negative_axis", _G, -1, [3, 2, 2, 0, 1], f32),
    ("gather_negative_axis_first", _G, -2, [1], f32),
    ("gather_rank1", np.array([1.5, -2.0, 0.25, 4.0], np.float32), 0, [3, 3, 0], f32),
    ("gather_rank4_axis2", _G4, 2, [[3], [0]], f32),
    ("gather_rank4_axis3", _G4, 3, [1, 0, 1], f32),
    ("gather_int32", _GI, 1, [2, 0], i32),
    ("gather_int32_3d_indices", _GI, 0, [[[1, 0]], [[0, 0]]], i32),
):
    _idx = np.asarray(_indices)
    CASES.append(OpCase(
        _name, Op.GATHER,
        inputs=(_arg(_x), i32s(_axis), i32(_idx)),
        outputs=(out(T.TENSOR_INT32 if _arg is i32 else T.TENSOR_FLOAT32,
                     _gather_dims(np.shape(_x), _axis, _idx.shape)),),
        reference=lambda x, axis, indices: [_ref_gather(x, axis, indices)],
    ))

# -- EMBEDDING_LOOKUP -----------------------------------------------------------------------------


def _ref_lookup(lookups: Array, values: Array) -> Array:
    return np.stack([values[int(i)] for i in lookups.tolist()])


_V2 = np.array([[0.0, 0.5, 1.0], [1.5, 2.0, 2.5], [-1.0, -0.5, 0.25], [3.0, -3.0, 0.75]],
               np.float32)
_V3 = np.linspace(-2.0, 2.0, 12, dtype=np.float32).reshape(3, 2, 2)
_V4 = np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(2, 3, 2, 2)
_VI = np.array([[1, 2], [3, 4], [5, 6]], np.int32)

for _name, _lookups, _values, _arg in (
    ("embedding_lookup_2d", [1, 3, 1], _V2, f32),
    ("embedding_lookup_single", [2], _V2, f32),
    ("embedding_lookup_3d", [2, 0], _V3, f32),
    ("embedding_lookup_4d", [1, 0, 1, 1], _V4, f32),
    ("embedding_lookup_int32", [2, 2, 0, 1], _VI, i32),
):
    CASES.append(OpCase(
        _name, Op.EMBEDDING_LOOKUP,
        inputs=(i32(_lookups), _arg(_values)),
        outputs=(out(T.TENSOR_INT32 if _arg is i32 else T.TENSOR_FLOAT32,
                     (len(_lookups), *np.shape(_values)[1:])),),
        reference=lambda lookups, values: [_ref_lookup(lookups, values)],
    ))

# -- TOPK_V2 --------------------------------------------------------------------------------------


def _ref_topk(x: Array, k: int) -> list[Array]:
    rows = x.reshape(-1, x.shape[-1])
    values, indices = [], []
    for row in rows:
        ranked = sorted(enumerate(row.tolist()), key=lambda p: (p[1], p[0]), reverse=True)[:k]
        indices.append([i for i, _ in ranked])
        values.append([v for _, v in ranked])
    shape = (*x.shape[:-1], k)
    return [np.array(values, dtype=x.dtype).reshape(shape),
            np.array(indices, dtype=np.int64).reshape(shape)]


_K2 = np.array([[0.5, -1.0, 3.0, 2.0, 1.25], [4.0, 4.5, -2.0, 0.0, 4.25]], np.float32)
_KT = np.array([[1.0, 3.0, 1.0, 3.0, 2.0, 3.0]], np.float32)
_K3 = np.linspace(3.0, -3.0, 24, dtype=np.float32).reshape(2, 3, 4) * np.array(
    [1.0, -1.0, 0.5, -0.25], np.float32)
_KI = np.array([[5, -7, 5, 100], [0, 0, 0, 0], [-1, -2, -3, -4]], np.int32)

for _name, _x, _k, _arg in (
    ("topk_v2_k2", _K2, 2, f32),
    ("topk_v2_k1", _K2, 1, f32),
    ("topk_v2_ties_larger_index_first", _KT, 4, f32),
    ("topk_v2_k_full_row", _K2, 5, f32),
    ("topk_v2_rank1", np.array([2.0, -1.0, 8.0, 0.5], np.float32), 3, f32),
    ("topk_v2_rank3", _K3, 2, f32),
    ("topk_v2_int32", _KI, 3, i32),
):
    _out_type = T.TENSOR_INT32 if _arg is i32 else T.TENSOR_FLOAT32
    _shape = (*np.shape(_x)[:-1], _k)
    CASES.append(OpCase(
        _name, Op.TOPK_V2,
        inputs=(_arg(_x), i32s(_k)),
        outputs=(out(_out_type, _shape), out(T.TENSOR_INT32, _shape)),
        reference=_ref_topk,
    ))
