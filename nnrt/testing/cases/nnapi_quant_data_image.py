"""Quantised conformance cases transcribed from NNAPI's published test specs: the shape, joining
and space-layout operations — RESHAPE, SQUEEZE, EXPAND_DIMS, TRANSPOSE, CONCATENATION, SPLIT,
TILE, DEPTH_TO_SPACE, SPACE_TO_DEPTH, BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND, CHANNEL_SHUFFLE
(plus PACK and RANK, whose quantised variants have cases of nnrt's own).

As in ``nnapi_quant_data`` (which appends these cases): vectors of AOSP's
``runtime/test/specs/<version>/<stem>.mod.py``, literal or quantised as the test generator does,
V1_3 ``*_quant8_signed`` copies of literal specs 128 lower; spec ``AddNchw`` examples get their
NCHW twin with ``to_nchw``. CONCATENATION's mixed-scale examples exercise NNAPI's requantisation
(one-step tolerance); everything else is exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import (
    Arg,
    OpCase,
    bools,
    i32,
    i32s,
    out,
    per_channel,
    quant,
    spec_quantize,
    tensor,
    to_nchw,
)

CASES: list[OpCase] = []

Q8, Q8S = T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED
_EXACT = (0.0, 0.0)
#: Each quantised type with the zero point of the V1_3 signed copies of literal V1_0 / V1_1 specs.
_LITERAL = ((Q8, 0, "quant8"), (Q8S, -128, "quant8_signed"))


def _q(type: T, dims: Sequence[int], values: Any, scale: float, zp: int, **kw: Any) -> Arg:
    return quant(np.reshape(np.asarray(values), dims), type, scale, zp, **kw)


def _qo(type: T, dims: Sequence[int], values: Any, scale: float, zp: int) -> Arg:
    return out(type, dims, np.reshape(np.asarray(values), dims), scale=scale, zero_point=zp)


def _cq(type: T, dims: Sequence[int], real: Any, scale: float, zp: int) -> Arg:
    return _q(type, dims, spec_quantize(real, type, scale, zp), scale, zp)


def _cqo(type: T, dims: Sequence[int], real: Any, scale: float, zp: int) -> Arg:
    return _qo(type, dims, spec_quantize(real, type, scale, zp), scale, zp)


def _i(dims: Sequence[int], values: Any, **kw: Any) -> Arg:
    return i32(np.reshape(np.asarray(values), dims), **kw)


def _lit(type: T, values: Any) -> list[int]:
    """A literal uint8 spec vector as ``type`` stores it (128 lower in the signed copies)."""
    shift = 128 if type == Q8S else 0
    return [int(v) - shift for v in np.asarray(values).reshape(-1)]


def _add(name: str, op: Op, inputs: Sequence[Arg], outputs: Sequence[Arg], *,
         nchw_layout: int | None = None, **kw: Any) -> None:
    """Add the case (exact unless ``tolerance`` says otherwise) and, when ``nchw_layout`` names
    the layout input, its NCHW twin."""
    kw.setdefault("tolerance", _EXACT)
    case = OpCase(f"{name}_nhwc" if nchw_layout is not None else name, op,
                  inputs=tuple(inputs), outputs=tuple(outputs), **kw)
    CASES.append(case)
    if nchw_layout is not None:
        CASES.append(to_nchw(case, layout_input=nchw_layout, name=f"{name}_nchw"))


# The tables below reuse these loop variables.
_t: Any
_dims: Any
_odims: Any
_z: Any
_s: Any
_x: Any
_y: Any


# -- RESHAPE, SQUEEZE, EXPAND_DIMS, TRANSPOSE -----------------------------------------------------

# V1_0/reshape_quant8.mod.py ({1, 1, 3, 3}, 1.0, 0; shape [-1]), V1_1/squeeze_quant8_1.mod.py
# ({1, 24, 1}, 1.0, 0; squeeze dim 2), V1_1/transpose_quant8_1.mod.py ({2, 3, 4, 5}, 1.0, 0;
# perm [2, 0, 1, 3]) and their V1_3 *_quant8_signed copies.
_T120 = [0, 1, 2, 3, 4, 20, 21, 22, 23, 24, 40, 41, 42, 43, 44,
         60, 61, 62, 63, 64, 80, 81, 82, 83, 84, 100, 101, 102, 103, 104,
         5, 6, 7, 8, 9, 25, 26, 27, 28, 29, 45, 46, 47, 48, 49,
         65, 66, 67, 68, 69, 85, 86, 87, 88, 89, 105, 106, 107, 108, 109,
         10, 11, 12, 13, 14, 30, 31, 32, 33, 34, 50, 51, 52, 53, 54,
         70, 71, 72, 73, 74, 90, 91, 92, 93, 94, 110, 111, 112, 113, 114,
         15, 16, 17, 18, 19, 35, 36, 37, 38, 39, 55, 56, 57, 58, 59,
         75, 76, 77, 78, 79, 95, 96, 97, 98, 99, 115, 116, 117, 118, 119]
for _t, _z, _s in _LITERAL:
    _x = _lit(_t, range(1, 10))
    _add(f"reshape_nnapi_reshape_{_s}", Op.RESHAPE,
         [_q(_t, (1, 1, 3, 3), _x, 1.0, _z), _i((1,), [-1])], [_qo(_t, (9,), _x, 1.0, _z)])
    _x = _lit(_t, range(1, 25))
    _add(f"squeeze_nnapi_squeeze_{_s}{'_1' if _t == Q8 else ''}", Op.SQUEEZE,
         [_q(_t, (1, 24, 1), _x, 1.0, _z), _i((1,), [2])], [_qo(_t, (1, 24), _x, 1.0, _z)])
    _add(f"transpose_nnapi_transpose_{_s}{'_1' if _t == Q8 else ''}", Op.TRANSPOSE,
         [_q(_t, (2, 3, 4, 5), _lit(_t, range(120)), 1.0, _z), _i((4,), [2, 0, 1, 3])],
         [_qo(_t, (4, 2, 3, 5), _lit(_t, _T120), 1.0, _z)])

# V1_2/transpose_v1_2.mod.py, quant8 variation (0.5, 0): perm is a zero-size model input, which
# means the default (reversed) order.
_add("transpose_nnapi_transpose_v1_2_quant8", Op.TRANSPOSE,
     [_cq(Q8, (2, 2), [1.0, 2.0, 3.0, 4.0], 0.5, 0), i32(np.zeros(0), role="input")],
     [_cqo(Q8, (2, 2), [1.0, 3.0, 2.0, 4.0], 0.5, 0)])

# V1_2/expand_dims.mod.py, quant8 variation (0.5, 127), and V1_3/expand_dims_quant8_signed.mod.py
# (0.5, -1): axes 0, 1, 2 and -1.
for _t, _z, _s in ((Q8, 127, "expand_dims_quant8"), (Q8S, -1, "expand_dims_quant8_signed")):
    for _axis, _odims in ((0, (1, 2, 2)), (1, (2, 1, 2)), (2, (2, 2, 1)), (-1, (2, 2, 1))):
        _x = [1.2, -3.4, 5.6, 7.8]
        _add(f"expand_dims_nnapi_{_s}_axis{_axis}", Op.EXPAND_DIMS,
             [_cq(_t, (2, 2), _x, 0.5, _z), i32s(_axis)], [_cqo(_t, _odims, _x, 0.5, _z)])

# -- CONCATENATION --------------------------------------------------------------------------------

# V1_0/concat_quant8_1.mod.py ({2, 3} x 2, axis 1), concat_quant8_2.mod.py ({52, 300} +
# {40, 300}, axis 0), concat_quant8_3.mod.py ({400, 60} + {400, 30}, axis 1), all 0.5, 0, and
# their copies in V1_3/concat_quant8_signed.mod.py. concat_quant8_3's output is built as the spec
# builds it, row by row.
for _t, _z, _s in _LITERAL:
    _add(f"concatenation_nnapi_concat_{_s}_1", Op.CONCATENATION,
         [_q(_t, (2, 3), _lit(_t, [1, 2, 3, 4, 5, 6]), 0.5, _z),
          _q(_t, (2, 3), _lit(_t, [7, 8, 9, 10, 11, 12]), 0.5, _z), i32s(1)],
         [_qo(_t, (2, 6), _lit(_t, [1, 2, 3, 7, 8, 9, 4, 5, 6, 10, 11, 12]), 0.5, _z)])
    _add(f"concatenation_nnapi_concat_{_s}_2", Op.CONCATENATION,
         [_q(_t, (52, 300), _lit(_t, [x % 256 for x in range(52 * 300)]), 0.5, _z),
          _q(_t, (40, 300), _lit(_t, [(x + 52 * 300) % 256 for x in range(40 * 300)]), 0.5, _z),
          i32s(0)],
         [_qo(_t, (92, 300), _lit(_t, [x % 256 for x in range(92 * 300)]), 0.5, _z)])
    _x = [x % 128 + 128 for x in range(400 * 60)]
    _y = [x % 128 for x in range(400 * 30)]
    _rows = [_x[60 * r:60 * (r + 1)] + _y[30 * r:30 * (r + 1)] for r in range(400)]
    _add(f"concatenation_nnapi_concat_{_s}_3", Op.CONCATENATION,
         [_q(_t, (400, 60), _lit(_t, _x), 0.5, _z), _q(_t, (400, 30), _lit(_t, _y), 0.5, _z),
          i32s(1)],
         [_qo(_t, (400, 90), _lit(_t, [v for row in _rows for v in row]), 0.5, _z)])

# V1_2/concat_mixed_quant.mod.py: four inputs of different scales and zero points requantised
# into the output's, axis 2 (its quant8 and quant8_2 variations, the generated stored values);
# V1_3/concat_quant8_signed.mod.py's two converter examples (FourInputsQuantizedMixedRange and
# its ClampingLogic twin).
_MIXED_REAL = ([1.0, -3.0, -4.0, -7.0], [1.1, 3.1, 4.1, 7.1], [1.2, -3.2, -4.2, 7.2],
               [1.3, 3.3, 4.3, 7.3])
_MIXED_Q8 = ([139, 91, 79, 44], [22, 62, 82, 142], [136, 87, 76, 204], [45, 114, 148, 252])
_MIXED_PARAMS = ((0.084, 127), (0.05, 0), (0.089, 123), (0.029, 0))
for _n, (_s, _z, _y) in enumerate((
    (0.1, 127, [137, 97, 138, 158, 139, 95, 140, 160, 87, 57, 168, 198, 85, 199, 170, 200]),
    (0.0078125, 127, [255, 0, 255, 255, 255, 0, 255, 255, 0, 0, 255, 255, 0, 255, 255, 255]),
), start=1):
    _add(f"concatenation_nnapi_concat_mixed_quant_quant8{'_2' if _n == 2 else ''}",
         Op.CONCATENATION,
         [*(_q(Q8, (2, 1, 2), v, s, z) for v, (s, z) in zip(_MIXED_Q8, _MIXED_PARAMS,
                                                           strict=True)), i32s(2)],
         [_qo(Q8, (2, 1, 8), _y, _s, _z)], tolerance=None)
_MIXED_S_PARAMS = ((0.084, -1), (0.05, -128), (0.089, -5), (0.029, -128))
for _n, (_s, _y) in enumerate((
    (0.1, [1.0, -3.0, 1.1, 3.1, 1.2, -3.2, 1.3, 3.3, -4.0, -7.0, 4.1, 7.1, -4.2, 7.2, 4.3, 7.3]),
    (0.0078125, [1.0, -1.0, 1.0, 1.0, 1.0, -1.0, 1.0, 1.0, -1.0, -1.0, 1.0, 1.0, -1.0, 1.0, 1.0,
                 1.0]),
), start=1):
    _add(f"concatenation_nnapi_concat_quant8_signed_mixed_{_n}", Op.CONCATENATION,
         [*(_cq(Q8S, (2, 1, 2), v, s, z) for v, (s, z) in zip(_MIXED_REAL, _MIXED_S_PARAMS,
                                                             strict=True)), i32s(2)],
         [_cqo(Q8S, (2, 1, 8), _y, _s, -1)], tolerance=None)

# -- SPLIT, TILE, PACK, RANK ----------------------------------------------------------------------

# V1_2/split_quant8_{1,2,3,4}.mod.py and V1_3/split_quant8_signed.mod.py (the same four, 128
# lower): (input dims, scale, zero point, axis, splits, output dims, expected parts).
for _n, (_dims, _s, _z, _axis, _odims, _parts) in enumerate((
    ((6,), 1.0, 0, 0, (2,), ([1, 2], [3, 4], [5, 6])),
    ((2, 3), 2.0, 3, 0, (1, 3), ([1, 2, 3], [4, 5, 6])),
    ((2, 3), 2.0, 3, 1, (2, 1), ([1, 4], [2, 5], [3, 6])),
    ((2, 2, 2), 1.0, 0, 1, (2, 1, 2), ([1, 2, 5, 6], [3, 4, 7, 8])),
), start=1):
    for _t, _stem in ((Q8, f"split_quant8_{_n}"), (Q8S, f"split_quant8_signed_{_n}")):
        _zt = _z - 128 if _t == Q8S else _z
        _add(f"split_nnapi_{_stem}", Op.SPLIT,
             [_q(_t, _dims, _lit(_t, range(1, 1 + int(np.prod(_dims)))), _s, _zt), i32s(_axis),
              i32s(len(_parts))],
             [_qo(_t, _odims, _lit(_t, p), _s, _zt) for p in _parts])

# V1_2/tile_{1,2,3}.mod.py, quant8 variation (0.5, 127), and V1_3/tile_quant8_signed.mod.py
# (0.5, -1); multipliers a model input.
_TILE_23 = [11, 12, 13, 21, 22, 23]
for _t, _z, _s in ((Q8, 127, "tile_{}_quant8"), (Q8S, -1, "tile_quant8_signed_{}")):
    for _n, (_dims, _x, _mult, _odims, _y) in enumerate((
        ((3,), [1.2, -3.4, 5.6], [2], (6,), [1.2, -3.4, 5.6] * 2),
        ((2, 3), _TILE_23, [2, 1], (4, 3), _TILE_23 * 2),
        ((1, 2, 3), _TILE_23, [2, 3, 1], (2, 6, 3), _TILE_23 * 6),
    ), start=1):
        _add(f"tile_nnapi_{_s.format(_n)}", Op.TILE,
             [_cq(_t, _dims, _x, 0.5, _z), _i((len(_mult),), _mult)],
             [_cqo(_t, _odims, _y, 0.5, _z)])

# nnrt's own: PACK of stored values, and RANK of every quantised type NNAPI lists for it.
for _t, _z in ((Q8, 250), (Q8S, -128)):
    _add(f"pack_{_t.name.lower()}", Op.PACK,
         [i32s(1), _q(_t, (2, 2), [_z, _z + 1, _z + 2, _z + 3], 0.5, 3),
          _q(_t, (2, 2), [_z + 4, _z + 5, 0, 1], 0.5, 3)],
         [_qo(_t, (2, 2, 2), [_z, _z + 1, _z + 4, _z + 5, _z + 2, _z + 3, 0, 1], 0.5, 3)])
for _t, _z in ((Q8, 3), (Q8S, -3), (T.TENSOR_QUANT8_SYMM, 0), (T.TENSOR_QUANT16_SYMM, 0),
               (T.TENSOR_QUANT16_ASYMM, 7)):
    _add(f"rank_{_t.name.lower()}", Op.RANK, [tensor(np.zeros((2, 1, 3)), _t, scale=0.5,
                                                     zero_point=_z)],
         [out(T.INT32, (), np.int32(3))])
_add("rank_tensor_quant8_symm_per_channel", Op.RANK,
     [per_channel(np.zeros((3, 2)), 0, [0.5, 0.25, 1.0])], [out(T.INT32, (), np.int32(2))])

# -- DEPTH_TO_SPACE, SPACE_TO_DEPTH, BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND -------------------------

# V1_0/depth_to_space_quant8_{1,2}.mod.py, space_to_depth_quant8_{1,2}.mod.py (0.5, 0; block 2)
# and V1_1/batch_to_space_quant8_1.mod.py (1.0, 0; block [2, 2]), with their V1_3 signed copies.
_D8 = [1, 2, 3, 4, 252, 253, 254, 255]
_D16 = [0, 1, 2, 3, 4, 5, 6, 7, 248, 249, 250, 251, 252, 253, 254, 255]
_D16_BLOCKS = [0, 1, 4, 5, 2, 3, 6, 7, 248, 249, 252, 253, 250, 251, 254, 255]
_B16 = list(range(1, 17))
for _t, _z, _s in _LITERAL:
    for _op, _stem, _dims, _x, _odims, _y in (
        (Op.DEPTH_TO_SPACE, "depth_to_space_{}_1", (1, 1, 1, 8), _D8, (1, 2, 2, 2), _D8),
        (Op.DEPTH_TO_SPACE, "depth_to_space_{}_2", (1, 2, 2, 4), _D16_BLOCKS, (1, 4, 4, 1), _D16),
        (Op.SPACE_TO_DEPTH, "space_to_depth_{}_1", (1, 2, 2, 2), _D8, (1, 1, 1, 8), _D8),
        (Op.SPACE_TO_DEPTH, "space_to_depth_{}_2", (1, 4, 4, 1), _D16, (1, 2, 2, 4), _D16_BLOCKS),
    ):
        _add(f"{_op.name.lower()}_nnapi_{_stem.format(_s)}", _op,
             [_q(_t, _dims, _lit(_t, _x), 0.5, _z), i32s(2)],
             [_qo(_t, _odims, _lit(_t, _y), 0.5, _z)])
    _add(f"batch_to_space_nd_nnapi_batch_to_space_{_s}_1", Op.BATCH_TO_SPACE_ND,
         [_q(_t, (4, 2, 2, 1), _lit(_t, _B16), 1.0, _z), _i((2,), [2, 2])],
         [_qo(_t, (1, 4, 4, 1),
              _lit(_t, [1, 5, 2, 6, 9, 13, 10, 14, 3, 7, 4, 8, 11, 15, 12, 16]), 1.0, _z)])

# V1_1/space_to_batch_quant8_{1,2,3}.mod.py, V1_2/space_to_batch_quant8_nonzero.mod.py (zero point
# 9: the padding is real 0) and the four literal examples of V1_3/space_to_batch_quant8_signed.mod.py
# (the same, 128 lower): (input dims, input, block, paddings, output dims, expected, zero point).
_S2B_10 = [0, 0, 0, 5, 0, 0, 0, 6, 0, 1, 0, 7, 0, 2, 0, 8, 0, 3, 0, 9, 0, 4, 0, 10]
_S2B_8 = [0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 1, 0, 0, 0, 7, 0, 0,
          0, 2, 0, 0, 0, 8, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0]
for _n, (_stem, _dims, _x, _block, _pads, _odims, _y, _z) in enumerate((
    ("quant8_1", (1, 4, 4, 1), _B16, [2, 2], [0, 0, 0, 0], (4, 2, 2, 1),
     [1, 3, 9, 11, 2, 4, 10, 12, 5, 7, 13, 15, 6, 8, 14, 16], 0),
    ("quant8_2", (1, 5, 2, 1), list(range(1, 11)), [3, 2], [1, 0, 2, 0], (6, 2, 2, 1), _S2B_10, 0),
    ("quant8_3", (1, 4, 2, 1), list(range(1, 9)), [3, 2], [1, 1, 2, 4], (6, 2, 4, 1), _S2B_8, 0),
    ("quant8_nonzero", (1, 5, 2, 1), list(range(1, 11)), [3, 2], [1, 0, 2, 0], (6, 2, 2, 1),
     [9 if v == 0 else v for v in _S2B_10], 9),
), start=1):
    for _t, _name in ((Q8, _stem), (Q8S, f"quant8_signed_{_n}")):
        _zt = _z - 128 if _t == Q8S else _z
        _add(f"space_to_batch_nd_nnapi_space_to_batch_{_name}", Op.SPACE_TO_BATCH_ND,
             [_q(_t, _dims, _lit(_t, _x), 1.0, _zt), _i((2,), _block), _i((2, 2), _pads)],
             [_qo(_t, _odims, _lit(_t, _y), 1.0, _zt)])

# V1_3/space_to_batch_quant8_signed.mod.py's converter examples (SPACE_TO_BATCH_NCHW_1 .. 4 of
# V1_2/space_to_batch_v1_2.mod.py), NHWC and NCHW.
for _n, (_dims, _x, _block, _pads, _odims, _y, _s, _z) in enumerate((
    ((1, 2, 2, 2), [1.4, 2.3, 3.2, 4.1, 5.4, 6.3, 7.2, 8.1], [2, 2], [0, 0, 0, 0], (4, 1, 1, 2),
     [1.4, 2.3, 3.2, 4.1, 5.4, 6.3, 7.2, 8.1], 0.1, -128),
    ((1, 4, 4, 1), _B16, [2, 2], [0, 0, 0, 0], (4, 2, 2, 1),
     [1, 3, 9, 11, 2, 4, 10, 12, 5, 7, 13, 15, 6, 8, 14, 16], 0.5, -128),
    ((1, 5, 2, 1), list(range(1, 11)), [3, 2], [1, 0, 2, 0], (6, 2, 2, 1), _S2B_10, 0.5, 0),
    ((1, 4, 2, 1), list(range(1, 9)), [3, 2], [1, 1, 2, 4], (6, 2, 4, 1), _S2B_8, 0.25, 0),
), start=1):
    _add(f"space_to_batch_nd_nnapi_space_to_batch_quant8_signed_v1_2_{_n}", Op.SPACE_TO_BATCH_ND,
         [_cq(Q8S, _dims, _x, _s, _z), _i((2,), _block, role="const"),
          _i((2, 2), _pads, role="const"), bools(False)],
         [_cqo(Q8S, _odims, _y, _s, _z)], nchw_layout=3)

# -- CHANNEL_SHUFFLE ------------------------------------------------------------------------------

# V1_3/channel_shuffle_quant8_signed.mod.py (0.25, 0) and V1_2/channel_shuffle.mod.py's quant8
# variation (0.25, 128): {2, 2, 3, 12} holding 0..143, 3 groups along the last axis. The specs'
# AddAllDimsAndAxis variations move that axis; here axes 0 and 1 of the same 4-D data (input and
# expected output both moved with np.moveaxis).
_SHUFFLE_ROW = [0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]
_CS_IN = np.arange(144, dtype=np.float64).reshape(2, 2, 3, 12)
_CS_OUT = np.asarray([12 * r + c for r in range(12) for c in _SHUFFLE_ROW],
                     np.float64).reshape(2, 2, 3, 12)
for _t, _z, _s in ((Q8, 128, "channel_shuffle_quant8"), (Q8S, 0, "channel_shuffle_quant8_signed")):
    for _axis in (-1, 0, 1):
        _x, _y = np.moveaxis(_CS_IN, -1, _axis), np.moveaxis(_CS_OUT, -1, _axis)
        _add(f"channel_shuffle_nnapi_{_s}_axis{_axis}", Op.CHANNEL_SHUFFLE,
             [_cq(_t, _x.shape, _x, 0.25, _z), i32s(3), i32s(_axis)],
             [_cqo(_t, _y.shape, _y, 0.25, _z)])
