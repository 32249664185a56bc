"""Conformance cases transcribed from NNAPI's published test specs (literal expected values):
RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR and the tensor / space-layout operations (RESHAPE,
SQUEEZE, EXPAND_DIMS, TRANSPOSE, CONCATENATION, SPLIT, TILE, DEPTH_TO_SPACE, SPACE_TO_DEPTH,
BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND, CHANNEL_SHUFFLE).

As in ``nnapi_data`` (which appends these cases): vectors of AOSP's
``runtime/test/specs/<version>/<stem>.mod.py``, case names ``<op>_nnapi_<stem>[_<what>]``, spec
``AddNchw`` examples given their NCHW twin with ``to_nchw``, float32 / int32 examples only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import Arg, OpCase, bools, f32, f32s, i32, i32s, out, to_nchw

CASES: list[OpCase] = []


def _f(dims: Sequence[int], values: Any) -> Arg:
    return f32(values, dims=dims)


def _i(dims: Sequence[int], values: Any, **kw: Any) -> Arg:
    return i32(values, dims=dims, **kw)


def _o(type: T, dims: Sequence[int], values: Any) -> Arg:
    return out(type, dims, np.reshape(np.asarray(values), dims))


def _add(name: str, op: Op, inputs: Sequence[Arg], outputs: Sequence[Arg], *,
         nchw_layout: int | None = None, **kw: Any) -> None:
    """Add the case and, when ``nchw_layout`` names the layout input, its NCHW twin."""
    case = OpCase(f"{name}_nhwc" if nchw_layout is not None else name, op,
                  inputs=tuple(inputs), outputs=tuple(outputs), **kw)
    CASES.append(case)
    if nchw_layout is not None:
        CASES.append(to_nchw(case, layout_input=nchw_layout, name=f"{name}_nchw"))


# The tables below reuse these loop variables with different element types.
_x: Any
_dims: Any
_odims: Any
_expected: Any
_w: Any
_h: Any


# -- RESIZE_BILINEAR ------------------------------------------------------------------------------

_F = T.TENSOR_FLOAT32
_THIRDS = [1.0, 1.0, 1.0, 1.666666667, 1.666666667, 1.666666667, 2.0, 2.0, 2.0]

# V1_0/resize_bilinear.mod.py: no layout input.
_add("resize_bilinear_nnapi_resize_bilinear", Op.RESIZE_BILINEAR,
     [_f((1, 2, 2, 1), [1.0, 1.0, 2.0, 2.0]), i32s(3), i32s(3)], [_o(_F, (1, 3, 3, 1), _THIRDS)])

# V1_2/resize_bilinear_v1_2.mod.py: tests 1 and 2 by output shape and by scale, NHWC and NCHW;
# test 3 without the layout input. (Tests 4 and 5 need zero-sized tensors: not transcribed.)
_RB2_IN = [3, 4, 6, 10, 9, 10, 12, 16]
_RB2_OUT = [3, 4, 5, 8, 6, 10, 7, 8, 9, 12, 10, 14, 9, 10, 11, 14, 12, 16]
for _n, _dims, _x, _odims, _expected, _scale in (
    (1, (1, 2, 2, 1), [1.0, 1.0, 2.0, 2.0], (1, 3, 3, 1), _THIRDS, 1.5),
    (2, (1, 2, 2, 2), _RB2_IN, (1, 3, 3, 2), _RB2_OUT, 1.6),
):
    for _how, _w, _h in (("shape", i32s(3), i32s(3)), ("scale", f32s(_scale), f32s(_scale))):
        _add(f"resize_bilinear_nnapi_resize_bilinear_v1_2_{_n}_{_how}", Op.RESIZE_BILINEAR,
             [_f(_dims, _x), _w, _h, bools(False)], [_o(_F, _odims, _expected)], nchw_layout=3)
_add("resize_bilinear_nnapi_resize_bilinear_v1_2_3_scale", Op.RESIZE_BILINEAR,
     [_f((1, 2, 2, 1), [1.0, 1.0, 2.0, 2.0]), f32s(1.8), f32s(1.8)],
     [_o(_F, (1, 3, 3, 1), _THIRDS)])

# V1_3/resize_bilinear_v1_3.mod.py: the small half_pixel_centers and align_corners examples
# (the 2x14x13x3 <-> 2x6x7x3 ones, ~1100 values each, are not transcribed).
for _name, _dims, _x, _w, _h, _align, _half, _odims, _expected in (
    ("half_pixel_centers_2x2x2x1_to_2x3x3x1", (2, 2, 2, 1), [1, 2, 3, 4, 1, 2, 3, 4], 3, 3,
     False, True, (2, 3, 3, 1), [1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4] * 2),
    ("align_corners_2x2_to_1x1", (1, 2, 2, 1), [1, 2, 3, 4], 1, 1, True, False, (1, 1, 1, 1),
     [1]),
    ("align_corners_2x2_to_3x3", (1, 2, 2, 1), [1, 2, 3, 4], 3, 3, True, False, (1, 3, 3, 1),
     [1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4]),
    ("align_corners_3x3_to_2x2", (1, 3, 3, 1), list(range(1, 10)), 2, 2, True, False,
     (1, 2, 2, 1), [1, 3, 7, 9]),
    ("align_corners_4x4_to_3x3", (1, 4, 4, 1), list(range(1, 17)), 3, 3, True, False,
     (1, 3, 3, 1), [1, 2.5, 4, 7, 8.5, 10, 13, 14.5, 16]),
):
    _add(f"resize_bilinear_nnapi_resize_bilinear_v1_3_{_name}", Op.RESIZE_BILINEAR,
         [_f(_dims, _x), i32s(_w), i32s(_h), bools(False), bools(_align), bools(_half)],
         [_o(_F, _odims, _expected)])

# -- RESIZE_NEAREST_NEIGHBOR ----------------------------------------------------------------------

# V1_2/resize_nearest_neighbor.mod.py tests 1-8, by output shape (width, height) and by scale,
# NHWC and NCHW. Tests 4 and 6 are from the current revision of the file, which passes width
# before height (an older revision had the two swapped against the declared output shapes).
_RN8_IN = [1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8]
_RN8_OUT = [1, 1, 1, 1, 2, 2, 1, 1, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4,
            5, 5, 5, 5, 6, 6, 5, 5, 5, 5, 6, 6, 7, 7, 7, 7, 8, 8]
for _n, _dims, _x, _w, _h, _sw, _sh, _odims, _expected in (
    (1, (1, 2, 2, 1), [1, 2, 3, 4], 1, 1, 0.5, 0.5, (1, 1, 1, 1), [1]),
    (2, (1, 2, 2, 1), [1, 2, 3, 4], 3, 3, 1.5, 1.5, (1, 3, 3, 1), [1, 1, 2, 1, 1, 2, 3, 3, 4]),
    (3, (1, 3, 3, 1), list(range(1, 10)), 2, 2, 0.8, 0.8, (1, 2, 2, 1), [1, 2, 4, 5]),
    (4, (1, 2, 2, 1), [1, 2, 3, 4], 5, 2, 2.6, 1.1, (1, 2, 5, 1),
     [1, 1, 1, 2, 2, 3, 3, 3, 4, 4]),
    (5, (1, 4, 4, 1), list(range(1, 17)), 3, 3, 0.9, 0.9, (1, 3, 3, 1),
     [1, 2, 3, 5, 6, 7, 9, 10, 11]),
    (6, (1, 2, 2, 1), [1, 2, 3, 4], 2, 5, 1.4, 2.8, (1, 5, 2, 1),
     [1, 2, 1, 2, 1, 2, 3, 4, 3, 4]),
    (7, (1, 2, 2, 1), [1, 2, 3, 4], 4, 4, 2.0, 2.0, (1, 4, 4, 1),
     [1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4]),
    (8, (2, 2, 2, 2), _RN8_IN, 3, 3, 1.6, 1.8, (2, 3, 3, 2), _RN8_OUT),
):
    for _how, _wa, _ha in (("shape", i32s(_w), i32s(_h)), ("scale", f32s(_sw), f32s(_sh))):
        _add(f"resize_nearest_neighbor_nnapi_resize_nearest_neighbor_{_n}_{_how}",
             Op.RESIZE_NEAREST_NEIGHBOR, [_f(_dims, _x), _wa, _ha, bools(False)],
             [_o(_F, _odims, _expected)], nchw_layout=3)

# V1_3/resize_nearest_neighbor_v1_3.mod.py: half_pixel_centers and align_corners examples.
for _name, _dims, _x, _w, _h, _align, _half, _odims, _expected in (
    ("half_pixel_centers_5x2_to_2x2", (1, 2, 5, 1), [1, 2, 3, 4, 5, 1, 2, 3, 4, 5], 2, 2,
     False, True, (1, 2, 2, 1), [2, 4, 2, 4]),
    ("half_pixel_centers_2x2_to_1x1", (1, 2, 2, 1), [1, 2, 3, 4], 1, 1, False, True,
     (1, 1, 1, 1), [4]),
    ("half_pixel_centers_2x2_to_3x3", (1, 2, 2, 1), [1, 2, 3, 4], 3, 3, False, True,
     (1, 3, 3, 1), [1, 2, 2, 3, 4, 4, 3, 4, 4]),
    ("half_pixel_centers_2x2_to_2x5", (1, 2, 2, 1), [1, 2, 3, 4], 5, 2, False, True,
     (1, 2, 5, 1), [1, 1, 2, 2, 2, 3, 3, 4, 4, 4]),
    ("half_pixel_centers_4x4_to_3x3", (1, 4, 4, 1), list(range(1, 17)), 3, 3, False, True,
     (1, 3, 3, 1), [1, 3, 4, 9, 11, 12, 13, 15, 16]),
    ("half_pixel_centers_2x2_to_5x2", (1, 2, 2, 1), [1, 2, 3, 4], 2, 5, False, True,
     (1, 5, 2, 1), [1, 2, 1, 2, 3, 4, 3, 4, 3, 4]),
    ("half_pixel_centers_2x2_to_4x4", (1, 2, 2, 1), [1, 2, 3, 4], 4, 4, False, True,
     (1, 4, 4, 1), [1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4]),
    ("half_pixel_centers_2x2x2x2_to_2x3x3x2", (2, 2, 2, 2), _RN8_IN, 3, 3, False, True,
     (2, 3, 3, 2), [1, 1, 2, 2, 2, 2, 3, 3, 4, 4, 4, 4, 3, 3, 4, 4, 4, 4,
                    5, 5, 6, 6, 6, 6, 7, 7, 8, 8, 8, 8, 7, 7, 8, 8, 8, 8]),
    ("align_corners_2x2_to_1x1", (1, 2, 2, 1), [1, 2, 3, 4], 1, 1, True, False, (1, 1, 1, 1),
     [1]),
    ("align_corners_2x2_to_3x3", (1, 2, 2, 1), [1, 2, 3, 4], 3, 3, True, False, (1, 3, 3, 1),
     [1, 2, 2, 3, 4, 4, 3, 4, 4]),
    ("align_corners_3x3_to_2x2", (1, 3, 3, 1), list(range(1, 10)), 2, 2, True, False,
     (1, 2, 2, 1), [1, 3, 7, 9]),
    ("align_corners_4x4_to_3x3", (1, 4, 4, 1), list(range(1, 17)), 3, 3, True, False,
     (1, 3, 3, 1), [1, 3, 4, 9, 11, 12, 13, 15, 16]),
):
    _add(f"resize_nearest_neighbor_nnapi_resize_nearest_neighbor_v1_3_{_name}",
         Op.RESIZE_NEAREST_NEIGHBOR,
         [_f(_dims, _x), i32s(_w), i32s(_h), bools(False), bools(_align), bools(_half)],
         [_o(_F, _odims, _expected)])

# -- RESHAPE, SQUEEZE, EXPAND_DIMS, TRANSPOSE -----------------------------------------------------

# V1_0/reshape_weights_as_inputs.mod.py (commented out upstream pending b/140641425, a driver
# issue; the vector itself is well defined): shape [-1] given as a model input.
_add("reshape_nnapi_reshape_weights_as_inputs", Op.RESHAPE,
     [_f((1, 1, 3, 3), list(range(1, 10))), _i((1,), [-1])], [_o(_F, (9,), list(range(1, 10)))])

# V1_1/squeeze.mod.py.
_SQ = [1.4, 2.3, 3.2, 4.1, 5.4, 6.3, 7.2, 8.1]
_add("squeeze_nnapi_squeeze", Op.SQUEEZE, [_f((4, 1, 1, 2), _SQ), _i((2,), [1, 2], role="const")],
     [_o(_F, (4, 2), _SQ)])

# V1_2/expand_dims.mod.py: axes 0, 1, 2 and -1.
for _axis, _odims in ((0, (1, 2, 2)), (1, (2, 1, 2)), (2, (2, 2, 1)), (-1, (2, 2, 1))):
    _tag = f"m{-_axis}" if _axis < 0 else str(_axis)
    _add(f"expand_dims_nnapi_expand_dims_axis_{_tag}", Op.EXPAND_DIMS,
         [_f((2, 2), [1.2, -3.4, 5.6, 7.8]), i32s(_axis)],
         [_o(_F, _odims, [1.2, -3.4, 5.6, 7.8])])

# V1_1/transpose_relaxed.mod.py (perm [0, 2, 1, 3]).
_add("transpose_nnapi_transpose_relaxed", Op.TRANSPOSE,
     [_f((1, 2, 2, 1), [1.0, 2.0, 3.0, 4.0]), _i((4,), [0, 2, 1, 3], role="const")],
     [_o(_F, (1, 2, 2, 1), [1.0, 3.0, 2.0, 4.0])])

# -- CONCATENATION, SPLIT, TILE -------------------------------------------------------------------

# V1_2/concat_float16_1.mod.py (written as float32; the float16 variant is automatic).
_add("concatenation_nnapi_concat_float16_1", Op.CONCATENATION,
     [_f((2, 3), [1, 2, 3, 4, 5, 6]), _f((2, 3), [7, 8, 9, 10, 11, 12]), i32s(0)],
     [_o(_F, (4, 3), list(range(1, 13)))])

# V1_2/split_float_3.mod.py: three outputs along axis 1.
_add("split_nnapi_split_float_3", Op.SPLIT,
     [_f((2, 3), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), i32s(1), i32s(3)],
     [_o(_F, (2, 1), [1.0, 4.0]), _o(_F, (2, 1), [2.0, 5.0]), _o(_F, (2, 1), [3.0, 6.0])])

# V1_2/tile_3.mod.py (multipliers a model input; with an "int32" variation).
_TILE_OUT = [11, 12, 13, 21, 22, 23] * 6
_add("tile_nnapi_tile_3", Op.TILE, [_f((1, 2, 3), [11, 12, 13, 21, 22, 23]), _i((3,), [2, 3, 1])],
     [_o(_F, (2, 6, 3), _TILE_OUT)])
_add("tile_nnapi_tile_3_int32", Op.TILE,
     [_i((1, 2, 3), [11, 12, 13, 21, 22, 23]), _i((3,), [2, 3, 1])],
     [_o(T.TENSOR_INT32, (2, 6, 3), _TILE_OUT)])

# -- DEPTH_TO_SPACE, SPACE_TO_DEPTH, BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND, CHANNEL_SHUFFLE --------

_D8 = [1.4, 2.3, 3.2, 4.1, 5.4, 6.3, 7.2, 8.1]
_D16A = [1., 2., 5., 6., 3., 4., 7., 8., 9., 10., 13., 14., 11., 12., 15., 16.]
_D32A = [10, 20, 11, 21, 14, 24, 15, 25, 12, 22, 13, 23, 16, 26, 17, 27,
         18, 28, 19, 29, 112, 212, 113, 213, 110, 210, 111, 211, 114, 214, 115, 215]
_D32B = [10, 20, 11, 21, 12, 22, 13, 23, 14, 24, 15, 25, 16, 26, 17, 27,
         18, 28, 19, 29, 110, 210, 111, 211, 112, 212, 113, 213, 114, 214, 115, 215]

# V1_2/depth_to_space_v1_2.mod.py and V1_2/space_to_depth_v1_2.mod.py: three tests each, block 2.
for _n, _deep, _shallow, _deep_x, _shallow_x in (
    (1, (1, 1, 1, 8), (1, 2, 2, 2), _D8, _D8),
    (2, (1, 2, 2, 4), (1, 4, 4, 1), _D16A, list(range(1, 17))),
    (3, (1, 2, 2, 8), (1, 4, 4, 2), _D32A, _D32B),
):
    _add(f"depth_to_space_nnapi_depth_to_space_v1_2_{_n}", Op.DEPTH_TO_SPACE,
         [_f(_deep, _deep_x), i32s(2), bools(False)], [_o(_F, _shallow, _shallow_x)],
         nchw_layout=2)
    _add(f"space_to_depth_nnapi_space_to_depth_v1_2_{_n}", Op.SPACE_TO_DEPTH,
         [_f(_shallow, _shallow_x), i32s(2), bools(False)], [_o(_F, _deep, _deep_x)],
         nchw_layout=2)

# V1_2/batch_to_space_v1_2.mod.py: two tests, block [2, 2] (a constant parameter).
for _n, _dims, _x, _odims, _expected in (
    (1, (4, 1, 1, 2), _D8, (1, 2, 2, 2), _D8),
    (2, (4, 2, 2, 1), list(range(1, 17)), (1, 4, 4, 1),
     [1, 5, 2, 6, 9, 13, 10, 14, 3, 7, 4, 8, 11, 15, 12, 16]),
):
    _add(f"batch_to_space_nd_nnapi_batch_to_space_v1_2_{_n}", Op.BATCH_TO_SPACE_ND,
         [_f(_dims, _x), _i((2,), [2, 2], role="const"), bools(False)],
         [_o(_F, _odims, _expected)], nchw_layout=2)

# V1_2/space_to_batch_v1_2.mod.py: four tests (block and paddings constant parameters).
for _n, _dims, _x, _block, _pads, _odims, _expected in (
    (1, (1, 2, 2, 2), _D8, [2, 2], [0, 0, 0, 0], (4, 1, 1, 2), _D8),
    (2, (1, 4, 4, 1), list(range(1, 17)), [2, 2], [0, 0, 0, 0], (4, 2, 2, 1),
     [1, 3, 9, 11, 2, 4, 10, 12, 5, 7, 13, 15, 6, 8, 14, 16]),
    (3, (1, 5, 2, 1), list(range(1, 11)), [3, 2], [1, 0, 2, 0], (6, 2, 2, 1),
     [0, 0, 0, 5, 0, 0, 0, 6, 0, 1, 0, 7, 0, 2, 0, 8, 0, 3, 0, 9, 0, 4, 0, 10]),
    (4, (1, 4, 2, 1), list(range(1, 9)), [3, 2], [1, 1, 2, 4], (6, 2, 4, 1),
     [0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 1, 0, 0, 0, 7, 0, 0,
      0, 2, 0, 0, 0, 8, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0]),
):
    _add(f"space_to_batch_nd_nnapi_space_to_batch_v1_2_{_n}", Op.SPACE_TO_BATCH_ND,
         [_f(_dims, _x), _i((2,), _block, role="const"), _i((2, 2), _pads, role="const"),
          bools(False)], [_o(_F, _odims, _expected)], nchw_layout=3)

# V1_2/channel_shuffle.mod.py: both tests, 3 groups along the last axis (the spec's revision
# stored here predates the axis input; axis -1 is the dimension it shuffles).
_add("channel_shuffle_nnapi_channel_shuffle_1", Op.CHANNEL_SHUFFLE,
     [_f((2, 6), [0, 1, 2, 3, 4, 5, 6, 9, 6, 9, 6, 9]), i32s(3), i32s(-1)],
     [_o(_F, (2, 6), [0, 2, 4, 1, 3, 5, 6, 6, 6, 9, 9, 9])])
_add("channel_shuffle_nnapi_channel_shuffle_2", Op.CHANNEL_SHUFFLE,
     [_f((2, 2, 3, 12), list(range(144))), i32s(3), i32s(-1)],
     [_o(_F, (2, 2, 3, 12),
         [12 * r + c for r in range(12) for c in (0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11)])])
