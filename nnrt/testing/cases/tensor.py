"""Conformance cases for CONCATENATION, SPLIT, PACK, TILE, FILL, RANK, REVERSE.

References build each output element by element from the input position it comes from (index
arithmetic, not numpy's concatenate / split / stack / tile / flip), or are literal values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import OpCase, b8, f32, f32s, i32, i32s, out

CASES: list[OpCase] = []


def _gather(shape: Sequence[int], value: Callable[[tuple[int, ...]], Any], dtype: Any) -> Any:
    """An array of ``shape`` whose element at each position is ``value(position)``."""
    result = np.zeros(tuple(shape), dtype=dtype)
    for pos in np.ndindex(*shape):
        result[pos] = value(pos)
    return result


def _data(*shape: int, start: float = -2.0) -> Any:
    """Distinct, float16-exact values."""
    n = int(np.prod(shape))
    return (np.arange(n, dtype=np.float32) * 0.25 + start).reshape(shape)


# -- CONCATENATION ----------------------------------------------------------------------------


def _concat_ref(*args: Any) -> list[Any]:
    *parts, axis = args
    sizes = [p.shape[axis] for p in parts]
    shape = list(parts[0].shape)
    shape[axis] = sum(sizes)

    def value(pos: tuple[int, ...]) -> Any:
        k, offset = 0, pos[axis]
        while offset >= sizes[k]:
            offset -= sizes[k]
            k += 1
        return parts[k][(*pos[:axis], offset, *pos[axis + 1:])]

    return [_gather(shape, value, parts[0].dtype)]


_CONCAT: list[tuple[str, list[tuple[int, ...]], int, tuple[int, ...]]] = [
    ("concatenation_axis0_two", [(2, 3), (1, 3)], 0, (3, 3)),
    ("concatenation_axis1_three", [(2, 1), (2, 2), (2, 3)], 1, (2, 6)),
    ("concatenation_single_input", [(2, 2)], 1, (2, 2)),
    ("concatenation_rank4_axis3", [(1, 2, 2, 1), (1, 2, 2, 2)], 3, (1, 2, 2, 3)),
    ("concatenation_rank4_axis0", [(1, 2, 1, 2), (2, 2, 1, 2)], 0, (3, 2, 1, 2)),
    ("concatenation_rank1", [(3,), (2,)], 0, (5,)),
]
for _name, _shapes, _axis, _out in _CONCAT:
    _parts = tuple(f32(_data(*s, start=-2.0 + 3.0 * k)) for k, s in enumerate(_shapes))
    CASES.append(OpCase(
        _name, Op.CONCATENATION,
        inputs=(*_parts, i32s(_axis)),
        outputs=(out(T.TENSOR_FLOAT32, _out),),
        reference=_concat_ref,
    ))

# -- SPLIT ------------------------------------------------------------------------------------


def _split_ref(x: Any, axis: int, n: int) -> list[Any]:
    axis %= x.ndim
    size = x.shape[axis] // n
    shape = [*x.shape[:axis], size, *x.shape[axis + 1:]]

    def part(k: int) -> Any:
        return _gather(shape, lambda pos: x[(*pos[:axis], pos[axis] + k * size,
                                             *pos[axis + 1:])], x.dtype)

    return [part(k) for k in range(n)]


for _name, _shape, _axis, _n in [
    ("split_axis0_two", (4, 3), 0, 2),
    ("split_axis_neg1_three", (2, 6), -1, 3),
    ("split_one_part", (2, 3), 1, 1),
    ("split_rank3_axis1", (2, 4, 1), 1, 4),
    ("split_rank1", (6,), 0, 2),
]:
    _size = list(_shape)
    _size[_axis % len(_shape)] //= _n
    CASES.append(OpCase(
        _name, Op.SPLIT,
        inputs=(f32(_data(*_shape)), i32s(_axis), i32s(_n)),
        outputs=tuple(out(T.TENSOR_FLOAT32, tuple(_size)) for _ in range(_n)),
        reference=_split_ref,
    ))
CASES.append(OpCase(
    "split_int32", Op.SPLIT,
    inputs=(i32([[1, 2, 3, 4], [5, 6, 7, 8]]), i32s(1), i32s(2)),
    outputs=(out(T.TENSOR_INT32, (2, 2), [[1, 2], [5, 6]]),
             out(T.TENSOR_INT32, (2, 2), [[3, 4], [7, 8]])),
))

# -- PACK -------------------------------------------------------------------------------------


def _pack_ref(axis: int, *parts: Any) -> list[Any]:
    first = parts[0]
    shape = [*first.shape[:axis], len(parts), *first.shape[axis:]]
    return [_gather(shape, lambda pos: parts[pos[axis]][(*pos[:axis], *pos[axis + 1:])],
                    first.dtype)]


for _name, _shape, _n, _axis in [
    ("pack_axis0_two", (2, 3), 2, 0),
    ("pack_axis1_rank1_three", (2,), 3, 1),
    ("pack_axis_last", (2, 2), 2, 2),
    ("pack_single_input", (3,), 1, 0),
    ("pack_rank3_axis1", (1, 2, 2), 3, 1),
]:
    _parts = tuple(f32(_data(*_shape, start=-3.0 + 2.5 * k)) for k in range(_n))
    _out_shape = (*_shape[:_axis], _n, *_shape[_axis:])
    CASES.append(OpCase(
        _name, Op.PACK,
        inputs=(i32s(_axis), *_parts),
        outputs=(out(T.TENSOR_FLOAT32, _out_shape),),
        reference=_pack_ref,
    ))
CASES.append(OpCase(
    "pack_int32", Op.PACK,
    inputs=(i32s(1), i32([1, 2]), i32([3, 4])),
    outputs=(out(T.TENSOR_INT32, (2, 2), [[1, 3], [2, 4]]),),
))

# -- TILE -------------------------------------------------------------------------------------


def _tile_ref(x: Any, multiples: Any) -> list[Any]:
    shape = [d * int(m) for d, m in zip(x.shape, multiples, strict=True)]
    return [_gather(shape, lambda pos: x[tuple(p % d for p, d in zip(pos, x.shape,
                                                                       strict=True))], x.dtype)]


for _name, _shape, _multiples in [
    ("tile_rank1", (3,), [2]),
    ("tile_rank2", (2, 2), [2, 3]),
    ("tile_rank3_ones", (1, 2, 2), [1, 2, 1]),
    ("tile_rank4", (1, 2, 1, 2), [2, 1, 3, 1]),
]:
    _out_shape = tuple(d * m for d, m in zip(_shape, _multiples, strict=True))
    CASES.append(OpCase(
        _name, Op.TILE,
        inputs=(f32(_data(*_shape)), i32(_multiples)),
        outputs=(out(T.TENSOR_FLOAT32, _out_shape),),
        reference=_tile_ref,
    ))
CASES.append(OpCase(
    "tile_int32", Op.TILE,
    inputs=(i32([[1, -2]]), i32([2, 2])),
    outputs=(out(T.TENSOR_INT32, (2, 4), [[1, -2, 1, -2], [1, -2, 1, -2]]),),
))

# -- FILL -------------------------------------------------------------------------------------

for _name, _dims, _value in [
    ("fill_rank2", [2, 3], 1.5),
    ("fill_rank1", [4], -0.25),
    ("fill_rank4", [1, 2, 1, 2], 3.0),
]:
    CASES.append(OpCase(
        _name, Op.FILL,
        inputs=(i32(_dims), f32s(_value)),
        outputs=(out(T.TENSOR_FLOAT32, tuple(_dims)),),
        reference=lambda dims, v: [_gather([int(d) for d in dims], lambda pos: v, np.float64)],
    ))
CASES.append(OpCase(
    "fill_int32", Op.FILL,
    inputs=(i32([2, 1, 2]), i32s(-7)),
    outputs=(out(T.TENSOR_INT32, (2, 1, 2), [[[-7, -7]], [[-7, -7]]]),),
))

# -- RANK -------------------------------------------------------------------------------------

CASES += [
    OpCase("rank_float32_rank3", Op.RANK, (f32(_data(2, 1, 3)),), (out(T.INT32, (), 3),)),
    OpCase("rank_float32_rank1", Op.RANK, (f32([0.5]),), (out(T.INT32, (), 1),)),
    OpCase("rank_float32_rank4", Op.RANK, (f32(_data(1, 2, 2, 1)),), (out(T.INT32, (), 4),)),
    OpCase("rank_int32_rank2", Op.RANK, (i32([[1, 2, 3]]),), (out(T.INT32, (), 2),)),
    OpCase("rank_bool8_rank2", Op.RANK, (b8([[True], [False]]),), (out(T.INT32, (), 2),)),
]

# -- REVERSE ----------------------------------------------------------------------------------


def _reverse_ref(x: Any, axis: Any) -> list[Any]:
    a = int(axis[0])
    return [_gather(x.shape, lambda pos: x[(*pos[:a], x.shape[a] - 1 - pos[a], *pos[a + 1:])],
                    x.dtype)]


for _name, _shape, _axis in [
    ("reverse_rank2_axis0", (3, 2), 0),
    ("reverse_rank2_axis1", (2, 3), 1),
    ("reverse_rank1", (5,), 0),
    ("reverse_rank4_axis3", (1, 2, 2, 3), 3),
    ("reverse_size1_axis", (2, 1, 2), 1),
    ("reverse_rank8_max", (1, 2, 1, 1, 2, 1, 1, 3), 7),
]:
    CASES.append(OpCase(
        _name, Op.REVERSE,
        inputs=(f32(_data(*_shape)), i32([_axis])),
        outputs=(out(T.TENSOR_FLOAT32, _shape),),
        reference=_reverse_ref,
    ))
CASES.append(OpCase(
    "reverse_int32_axis2", Op.REVERSE,
    inputs=(i32([[[1, 2], [3, 4]], [[5, 6], [7, 8]]]), i32([2])),
    outputs=(out(T.TENSOR_INT32, (2, 2, 2), [[[2, 1], [4, 3]], [[6, 5], [8, 7]]]),),
))
