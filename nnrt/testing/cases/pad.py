"""Conformance cases for PAD, PAD_V2, MIRROR_PAD.

References map every output position back to an input position (or to the pad value) with
explicit index arithmetic; the SYMMETRIC example is TensorFlow's published MirrorPad example.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import OpCase, f32, f32s, i32, i32s, out

CASES: list[OpCase] = []


def _data(*shape: int) -> Any:
    """Distinct, float16-exact values."""
    n = int(np.prod(shape))
    return (np.arange(n, dtype=np.float32) * 0.5 + 0.5).reshape(shape)


def _out_shape(shape: tuple[int, ...], pads: list[list[int]]) -> tuple[int, ...]:
    return tuple(a + d + b for d, (a, b) in zip(shape, pads, strict=True))


def _constant_ref(x: Any, pads: Any, value: float) -> Any:
    """Pad with ``value``: positions outside the copied block keep the value."""
    shape = _out_shape(x.shape, pads.tolist())
    result = np.full(shape, value, dtype=np.float64)
    for pos in np.ndindex(*x.shape):
        result[tuple(p + int(pads[k][0]) for k, p in enumerate(pos))] = x[pos]
    return result


def _mirror_index(p: int, d: int, mode: int) -> int:
    """The input index mirrored to padded coordinate ``p`` (0 = REFLECT, 1 = SYMMETRIC)."""
    while p < 0 or p >= d:
        if p < 0:
            p = -p if mode == 0 else -p - 1
        else:
            p = 2 * (d - 1) - p if mode == 0 else 2 * d - 1 - p
    return p


def _mirror_ref(x: Any, pads: Any, mode: int) -> list[Any]:
    shape = _out_shape(x.shape, pads.tolist())
    result = np.zeros(shape, dtype=x.dtype)
    for pos in np.ndindex(*shape):
        src = tuple(_mirror_index(p - int(pads[k][0]), x.shape[k], mode)
                    for k, p in enumerate(pos))
        result[pos] = x[src]
    return [result]


# -- PAD --------------------------------------------------------------------------------------

for _name, _shape, _pads in [
    ("pad_rank2", (2, 3), [[1, 0], [2, 1]]),
    ("pad_rank4_spatial", (1, 2, 2, 1), [[0, 0], [1, 1], [1, 1], [0, 0]]),
    ("pad_rank4_all_dims", (1, 1, 2, 1), [[1, 0], [0, 1], [1, 2], [1, 1]]),
    ("pad_rank1", (3,), [[2, 3]]),
    ("pad_nothing", (2, 2), [[0, 0], [0, 0]]),
]:
    CASES.append(OpCase(
        _name, Op.PAD,
        inputs=(f32(_data(*_shape)), i32(_pads)),
        outputs=(out(T.TENSOR_FLOAT32, _out_shape(_shape, _pads)),),
        reference=lambda x, p: [_constant_ref(x, p, 0.0)],
    ))

# -- PAD_V2 -----------------------------------------------------------------------------------

for _name, _shape, _pads, _value in [
    ("pad_v2_rank2", (2, 3), [[1, 1], [0, 2]], -1.5),
    ("pad_v2_rank4", (1, 2, 2, 1), [[0, 0], [1, 0], [0, 1], [0, 0]], 2.25),
    ("pad_v2_rank3_zero_value", (2, 1, 2), [[0, 1], [1, 1], [0, 0]], 0.0),
    ("pad_v2_rank1", (2,), [[1, 2]], 9.0),
]:
    CASES.append(OpCase(
        _name, Op.PAD_V2,
        inputs=(f32(_data(*_shape)), i32(_pads), f32s(_value)),
        outputs=(out(T.TENSOR_FLOAT32, _out_shape(_shape, _pads)),),
        reference=lambda x, p, v: [_constant_ref(x, p, v)],
    ))

# -- MIRROR_PAD -------------------------------------------------------------------------------

# TensorFlow's MirrorPad example: t = [[1, 2, 3], [4, 5, 6]], paddings [[1, 1], [2, 2]].
CASES.append(OpCase(
    "mirror_pad_symmetric_tf_example", Op.MIRROR_PAD,
    inputs=(f32([[1, 2, 3], [4, 5, 6]]), i32([[1, 1], [2, 2]]), i32s(1)),
    outputs=(out(T.TENSOR_FLOAT32, (4, 7), [[2, 1, 1, 2, 3, 3, 2], [2, 1, 1, 2, 3, 3, 2],
                                            [5, 4, 4, 5, 6, 6, 5], [5, 4, 4, 5, 6, 6, 5]]),),
))
# REFLECT of [1, 2, 3] by [0, 2] is [1, 2, 3, 2, 1] (border not repeated).
CASES.append(OpCase(
    "mirror_pad_reflect_rank1_literal", Op.MIRROR_PAD,
    inputs=(f32([1, 2, 3]), i32([[0, 2]]), i32s(0)),
    outputs=(out(T.TENSOR_FLOAT32, (5,), [1, 2, 3, 2, 1]),),
))
for _name, _shape, _pads, _mode in [
    ("mirror_pad_reflect_rank2", (2, 3), [[1, 1], [2, 2]], 0),
    ("mirror_pad_reflect_max", (4,), [[3, 3]], 0),
    ("mirror_pad_symmetric_max", (3,), [[3, 3]], 1),
    ("mirror_pad_symmetric_rank4", (1, 2, 2, 1), [[0, 0], [2, 1], [1, 2], [0, 0]], 1),
    ("mirror_pad_reflect_rank3", (3, 2, 2), [[1, 2], [0, 1], [1, 0]], 0),
]:
    CASES.append(OpCase(
        _name, Op.MIRROR_PAD,
        inputs=(f32(_data(*_shape)), i32(_pads), i32s(_mode)),
        outputs=(out(T.TENSOR_FLOAT32, _out_shape(_shape, _pads)),),
        reference=_mirror_ref,
    ))
CASES.append(OpCase(
    "mirror_pad_int32_symmetric", Op.MIRROR_PAD,
    inputs=(i32([[1, 2], [3, 4]]), i32([[1, 0], [0, 1]]), i32s(1)),
    outputs=(out(T.TENSOR_INT32, (3, 3), [[1, 2, 2], [1, 2, 2], [3, 4, 4]]),),
))
