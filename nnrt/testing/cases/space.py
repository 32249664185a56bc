"""Conformance cases for DEPTH_TO_SPACE, SPACE_TO_DEPTH, BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND and
CHANNEL_SHUFFLE.

References are explicit loops over output elements (NHWC; the NCHW twins come from ``to_nchw``),
plus literal examples from NNAPI's operation reference.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import OpCase, bools, f32, i32, i32s, out, to_nchw

CASES: list[OpCase] = []

Array = np.ndarray[Any, Any]


def _data(*shape: int) -> np.ndarray[Any, Any]:
    """Distinct moderate values (multiples of 0.25, exact in float16)."""
    count = int(np.prod(shape))
    return (np.arange(count, dtype=np.float32) * 0.25 - count * 0.1).reshape(shape)


def _depth_to_space_ref(x: Array, b: int, *_: Any) -> list[Array]:
    n, h, w, c = x.shape
    co = c // (b * b)
    y = np.zeros((n, h * b, w * b, co))
    for bi, oy, ox, oc in itertools.product(range(n), range(h * b), range(w * b), range(co)):
        y[bi, oy, ox, oc] = x[bi, oy // b, ox // b, ((oy % b) * b + ox % b) * co + oc]
    return [y]


def _space_to_depth_ref(x: Array, b: int, *_: Any) -> list[Array]:
    n, h, w, c = x.shape
    y = np.zeros((n, h // b, w // b, c * b * b))
    for bi, oy, ox, oc in itertools.product(range(n), range(h // b), range(w // b),
                                            range(c * b * b)):
        offset, ic = divmod(oc, c)
        y[bi, oy, ox, oc] = x[bi, oy * b + offset // b, ox * b + offset % b, ic]
    return [y]


def _batch_to_space_ref(x: Array, block: Array, *_: Any) -> list[Array]:
    bh, bw = (int(v) for v in block)
    n, h, w, c = x.shape
    no = n // (bh * bw)
    y = np.zeros((no, h * bh, w * bw, c))
    for bi, oy, ox in itertools.product(range(no), range(h * bh), range(w * bw)):
        src_batch = ((oy % bh) * bw + ox % bw) * no + bi
        y[bi, oy, ox, :] = x[src_batch, oy // bh, ox // bw, :]
    return [y]


def _space_to_batch_ref(x: Array, block: Array, pads: Array, *_: Any) -> list[Array]:
    bh, bw = (int(v) for v in block)
    (top, bottom), (left, right) = pads.astype(int).tolist()
    n, h, w, c = x.shape
    oh, ow = (h + top + bottom) // bh, (w + left + right) // bw
    y = np.zeros((n * bh * bw, oh, ow, c))
    for ob, oy, ox in itertools.product(range(n * bh * bw), range(oh), range(ow)):
        offset, bi = divmod(ob, n)
        iy = oy * bh + offset // bw - top
        ix = ox * bw + offset % bw - left
        if 0 <= iy < h and 0 <= ix < w:
            y[ob, oy, ox, :] = x[bi, iy, ix, :]
    return [y]


def _channel_shuffle_ref(x: Array, groups: int, axis: int) -> list[Array]:
    moved = np.moveaxis(x, axis, 0)
    size = moved.shape[0]
    per_group = size // groups
    y = np.zeros(moved.shape)
    for oc in range(size):
        y[oc] = moved[(oc % groups) * per_group + oc // groups]
    return [np.moveaxis(y, 0, axis)]


def _add(case: OpCase, nchw_layout: int | None = None) -> None:
    CASES.append(case)
    if nchw_layout is not None:
        CASES.append(to_nchw(case, layout_input=nchw_layout))


# --- DEPTH_TO_SPACE ------------------------------------------------------------------------------
_D2S = Op.DEPTH_TO_SPACE
# NNAPI's test example: [1, 1, 1, 8] with block 2 keeps the memory order.
_D2S_SPEC = [1.4, 2.3, 3.2, 4.1, 5.4, 6.3, 7.2, 8.1]
_add(OpCase("depth_to_space_spec_example", _D2S,
            inputs=(f32(np.array(_D2S_SPEC, np.float32).reshape(1, 1, 1, 8)), i32s(2)),
            outputs=(out(T.TENSOR_FLOAT32, (1, 2, 2, 2),
                         np.array(_D2S_SPEC).reshape(1, 2, 2, 2)),)))
_add(OpCase("depth_to_space_block2", _D2S, inputs=(f32(_data(2, 2, 3, 8)), i32s(2), bools(False)),
            outputs=(out(T.TENSOR_FLOAT32, (2, 4, 6, 2)),), reference=_depth_to_space_ref), 2)
_add(OpCase("depth_to_space_block3", _D2S, inputs=(f32(_data(1, 2, 1, 9)), i32s(3), bools(False)),
            outputs=(out(T.TENSOR_FLOAT32, (1, 6, 3, 1)),), reference=_depth_to_space_ref), 2)
_add(OpCase("depth_to_space_block1", _D2S, inputs=(f32(_data(1, 2, 2, 3)), i32s(1)),
            outputs=(out(T.TENSOR_FLOAT32, (1, 2, 2, 3)),), reference=_depth_to_space_ref))

# --- SPACE_TO_DEPTH ------------------------------------------------------------------------------
_S2D = Op.SPACE_TO_DEPTH
_add(OpCase("space_to_depth_spec_example", _S2D,
            inputs=(f32(np.array(_D2S_SPEC, np.float32).reshape(1, 2, 2, 2)), i32s(2)),
            outputs=(out(T.TENSOR_FLOAT32, (1, 1, 1, 8), np.array(_D2S_SPEC).reshape(1, 1, 1, 8)),)))
_add(OpCase("space_to_depth_block2", _S2D, inputs=(f32(_data(2, 4, 6, 2)), i32s(2), bools(False)),
            outputs=(out(T.TENSOR_FLOAT32, (2, 2, 3, 8)),), reference=_space_to_depth_ref), 2)
_add(OpCase("space_to_depth_block3", _S2D, inputs=(f32(_data(1, 3, 6, 1)), i32s(3), bools(False)),
            outputs=(out(T.TENSOR_FLOAT32, (1, 1, 2, 9)),), reference=_space_to_depth_ref), 2)
_add(OpCase("space_to_depth_block1", _S2D, inputs=(f32(_data(1, 1, 3, 2)), i32s(1)),
            outputs=(out(T.TENSOR_FLOAT32, (1, 1, 3, 2)),), reference=_space_to_depth_ref))

# --- BATCH_TO_SPACE_ND ---------------------------------------------------------------------------
_B2S = Op.BATCH_TO_SPACE_ND
# NNAPI / TensorFlow example: [4, 1, 1, 1] with block [2, 2] -> [[1, 2], [3, 4]].
_add(OpCase("batch_to_space_nd_spec_example", _B2S,
            inputs=(f32(np.array([1, 2, 3, 4], np.float32).reshape(4, 1, 1, 1)), i32([2, 2])),
            outputs=(out(T.TENSOR_FLOAT32, (1, 2, 2, 1),
                         np.array([1, 2, 3, 4]).reshape(1, 2, 2, 1)),)))
_add(OpCase("batch_to_space_nd_2x2", _B2S,
            inputs=(f32(_data(8, 2, 1, 3)), i32([2, 2]), bools(False)),
            outputs=(out(T.TENSOR_FLOAT32, (2, 4, 2, 3)),), reference=_batch_to_space_ref), 2)
_add(OpCase("batch_to_space_nd_3x1", _B2S,
            inputs=(f32(_data(6, 2, 3, 2)), i32([3, 1]), bools(False)),
            outputs=(out(T.TENSOR_FLOAT32, (2, 6, 3, 2)),), reference=_batch_to_space_ref), 2)
_add(OpCase("batch_to_space_nd_1x2", _B2S, inputs=(f32(_data(2, 1, 2, 2)), i32([1, 2])),
            outputs=(out(T.TENSOR_FLOAT32, (1, 1, 4, 2)),), reference=_batch_to_space_ref))
_add(OpCase("batch_to_space_nd_1x1", _B2S, inputs=(f32(_data(2, 2, 2, 1)), i32([1, 1])),
            outputs=(out(T.TENSOR_FLOAT32, (2, 2, 2, 1)),), reference=_batch_to_space_ref))

# --- SPACE_TO_BATCH_ND ---------------------------------------------------------------------------
_S2B = Op.SPACE_TO_BATCH_ND
# TensorFlow's example: [1, 2, 2, 1] with block [2, 2] and no padding.
_add(OpCase("space_to_batch_nd_spec_example", _S2B,
            inputs=(f32(np.array([1, 2, 3, 4], np.float32).reshape(1, 2, 2, 1)), i32([2, 2]),
                    i32([[0, 0], [0, 0]])),
            outputs=(out(T.TENSOR_FLOAT32, (4, 1, 1, 1),
                         np.array([1, 2, 3, 4]).reshape(4, 1, 1, 1)),)))
_add(OpCase("space_to_batch_nd_2x2", _S2B,
            inputs=(f32(_data(2, 4, 2, 3)), i32([2, 2]), i32([[0, 0], [0, 0]]), bools(False)),
            outputs=(out(T.TENSOR_FLOAT32, (8, 2, 1, 3)),), reference=_space_to_batch_ref), 3)
_add(OpCase("space_to_batch_nd_padded", _S2B,
            inputs=(f32(_data(1, 5, 2, 2)), i32([3, 2]), i32([[1, 0], [2, 0]]), bools(False)),
            outputs=(out(T.TENSOR_FLOAT32, (6, 2, 2, 2)),), reference=_space_to_batch_ref), 3)
_add(OpCase("space_to_batch_nd_padded_both_sides", _S2B,
            inputs=(f32(_data(2, 3, 3, 1)), i32([2, 2]), i32([[0, 1], [2, 1]]), bools(False)),
            outputs=(out(T.TENSOR_FLOAT32, (8, 2, 3, 1)),), reference=_space_to_batch_ref), 3)
_add(OpCase("space_to_batch_nd_1x1", _S2B,
            inputs=(f32(_data(1, 2, 2, 2)), i32([1, 1]), i32([[1, 1], [0, 1]])),
            outputs=(out(T.TENSOR_FLOAT32, (1, 4, 3, 2)),), reference=_space_to_batch_ref))

# --- CHANNEL_SHUFFLE -----------------------------------------------------------------------------
_CS = Op.CHANNEL_SHUFFLE
for _name, _shape, _groups, _axis in (
    ("rank4_last", (1, 2, 2, 6), 2, -1),
    ("rank4_axis3", (2, 1, 2, 6), 3, 3),
    ("rank4_axis1", (1, 4, 2, 3), 2, 1),
    ("rank3_axis_neg2", (2, 6, 2), 3, -2),
    ("rank2_axis0", (8, 2), 4, 0),
    ("rank1", (12,), 3, 0),
    ("rank1_neg", (12,), 4, -1),
    ("one_group", (2, 5), 1, 1),
    ("groups_equal_size", (3, 4), 4, -1),
):
    _add(OpCase(f"channel_shuffle_{_name}", _CS,
                inputs=(f32(_data(*_shape)), i32s(_groups), i32s(_axis)),
                outputs=(out(T.TENSOR_FLOAT32, _shape),), reference=_channel_shuffle_ref))
# Worked by hand: 12 channels in 3 groups of 4 interleave as 0, 4, 8, 1, 5, 9, ...
_add(OpCase("channel_shuffle_spec_example", _CS,
            inputs=(f32(np.arange(12, dtype=np.float32).reshape(1, 12)), i32s(3), i32s(1)),
            outputs=(out(T.TENSOR_FLOAT32, (1, 12),
                         np.array([0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]).reshape(1, 12)),)))
