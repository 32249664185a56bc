"""Conformance cases for SLICE and STRIDED_SLICE.

References are independent of nnrt's kernels: SLICE reads every output position at its offset
from ``begin``; STRIDED_SLICE builds Python ``slice`` objects (``None`` for masked bounds, an
integer index for shrunk dimensions), whose clamping rules are TensorFlow's / NNAPI's.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import OpCase, f32, i32, i32s, out

CASES: list[OpCase] = []

Array = np.ndarray[Any, Any]

# -- SLICE ----------------------------------------------------------------------------------------


def _slice_dims(shape: Sequence[int], begin: Sequence[int], size: Sequence[int]
                ) -> tuple[int, ...]:
    return tuple(d - b if s == -1 else s for d, b, s in zip(shape, begin, size, strict=True))


def _ref_slice(x: Array, begin: Array, size: Array) -> list[Array]:
    dims = _slice_dims(x.shape, begin.tolist(), size.tolist())
    result = np.zeros(dims, dtype=x.dtype)
    for pos in itertools.product(*(range(n) for n in dims)):
        result[pos] = x[tuple(int(b) + p for b, p in zip(begin, pos, strict=True))]
    return [result]


_S2 = np.arange(12, dtype=np.float32).reshape(3, 4) * 0.25 - 1.0
_S4 = np.linspace(-2.0, 2.0, 2 * 3 * 4 * 2, dtype=np.float32).reshape(2, 3, 4, 2)
_S5 = np.arange(2 * 1 * 2 * 3 * 2, dtype=np.float32).reshape(2, 1, 2, 3, 2) * 0.125
_SI = np.array([[1, -2, 3], [4, -5, 6], [7, -8, 9]], np.int32)

for _name, _x, _begin, _size, _arg in (
    ("slice_2d", _S2, [1, 0], [2, 3], f32),
    ("slice_size_minus_one", _S2, [1, 2], [-1, -1], f32),
    ("slice_whole", _S2, [0, 0], [3, 4], f32),
    ("slice_rank1", np.array([0.5, 1.5, -2.5, 3.5, 4.0], np.float32), [3], [2], f32),
    ("slice_rank4", _S4, [1, 0, 1, 0], [1, 2, -1, 1], f32),
    ("slice_rank5", _S5, [0, 0, 1, 1, 0], [2, 1, 1, -1, 1], f32),
    ("slice_int32", _SI, [0, 1], [3, 1], i32),
):
    CASES.append(OpCase(
        _name, Op.SLICE,
        inputs=(_arg(_x), i32(_begin), i32(_size)),
        outputs=(out(T.TENSOR_INT32 if _arg is i32 else T.TENSOR_FLOAT32,
                     _slice_dims(np.shape(_x), _begin, _size)),),
        reference=_ref_slice,
    ))

# -- STRIDED_SLICE --------------------------------------------------------------------------------


def _ref_strided(x: Array, begin: Array, end: Array, strides: Array,
                 begin_mask: int, end_mask: int, shrink_mask: int) -> list[Array]:
    """The case's reference: called with the operation's seven inputs in order."""
    index: list[Any] = []
    for i in range(x.ndim):
        bit = 1 << i
        if shrink_mask & bit:
            index.append(int(begin[i]))
            continue
        start = None if begin_mask & bit else int(begin[i])
        stop = None if end_mask & bit else int(end[i])
        index.append(slice(start, stop, int(strides[i])))
    result = np.asarray(x[tuple(index)])
    return [result.reshape(result.shape or (1,))]


def _strided_case(name: str, x: Array, begin: Sequence[int], end: Sequence[int],
                  strides: Sequence[int], *, begin_mask: int = 0, end_mask: int = 0,
                  shrink_mask: int = 0) -> OpCase:
    expected = _ref_strided(x, np.asarray(begin), np.asarray(end), np.asarray(strides),
                            begin_mask, end_mask, shrink_mask)[0]
    return OpCase(
        name, Op.STRIDED_SLICE,
        inputs=(f32(x), i32(begin), i32(end), i32(strides), i32s(begin_mask), i32s(end_mask),
                i32s(shrink_mask)),
        outputs=(out(T.TENSOR_FLOAT32, expected.shape),),
        reference=_ref_strided,
    )


_R1 = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], np.float32) * 0.5
_R2 = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5
_R3 = np.arange(24, dtype=np.float32).reshape(2, 3, 4) * 0.25
_R4 = np.linspace(-3.0, 3.0, 2 * 3 * 2 * 4, dtype=np.float32).reshape(2, 3, 2, 4)

CASES += [
    _strided_case("strided_slice_basic", _R1, [1], [5], [2]),
    _strided_case("strided_slice_negative_stride", _R1, [4], [0], [-1]),
    _strided_case("strided_slice_negative_stride_step2", _R1, [-1], [-7], [-2]),
    _strided_case("strided_slice_reverse_with_masks", _R1, [0], [0], [-1], begin_mask=1,
                  end_mask=1),
    _strided_case("strided_slice_negative_indices", _R1, [-4], [-1], [1]),
    _strided_case("strided_slice_clamped_out_of_range", _R1, [-10], [10], [3]),
    _strided_case("strided_slice_2d_begin_mask", _R2, [2, 1], [3, 3], [1, 1], begin_mask=1),
    _strided_case("strided_slice_2d_end_mask", _R2, [1, 1], [2, 2], [1, 2], end_mask=2),
    _strided_case("strided_slice_2d_shrink_row", _R2, [1, 0], [2, 4], [1, 1], shrink_mask=1),
    _strided_case("strided_slice_2d_shrink_negative_begin", _R2, [0, -2], [3, -1], [1, 1],
                  shrink_mask=2),
    _strided_case("strided_slice_shrink_all", _R2, [2, 3], [3, 4], [1, 1], shrink_mask=3),
    _strided_case("strided_slice_3d_mixed", _R3, [1, -1, 0], [2, 0, 4], [1, -1, 3],
                  begin_mask=0, end_mask=0, shrink_mask=1),
    _strided_case("strided_slice_3d_masks_negative", _R3, [0, 9, 3], [2, 0, 0], [1, 2, -2],
                  begin_mask=2, end_mask=6),
    _strided_case("strided_slice_rank4", _R4, [0, 1, 0, -1], [2, 3, 1, 0], [1, 1, 1, -2],
                  shrink_mask=4),
]
