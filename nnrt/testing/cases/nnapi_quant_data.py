"""Quantised conformance cases transcribed from NNAPI's published test specs: reductions,
indexing, slicing and padding — MEAN, REDUCE_MAX / REDUCE_MIN, ARGMAX / ARGMIN, GATHER,
EMBEDDING_LOOKUP, TOPK_V2, SLICE, STRIDED_SLICE, PAD, PAD_V2 (plus MIRROR_PAD and REVERSE,
whose quantised variants have cases of nnrt's own).

Vectors are those of AOSP's ``runtime/test/specs/<version>/<stem>.mod.py`` (named in each
comment and case name, ``<op>_nnapi_<stem>[_<n>]``). V1_0 / V1_1 quant8 specs give literal
uint8 values. Specs that define float vectors with a ``DataTypeConverter`` variation are
quantised here as the test generator does (:func:`spec_quantize`), operand by operand. The V1_3
``*_quant8_signed`` copies of the V1_0 / V1_1 literal specs store every value and zero point
128 lower (``_shift``); their converter-based ones use the zero points named in the comments.

Data movement is exact (``tolerance=_EXACT``: 0 quantisation steps); MEAN keeps NNAPI's
one-step tolerance. Zero-size tensors and the shape / space-layout operations are in
``nnapi_quant_data_image`` (appended below).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.cases import nnapi_quant_data_image
from nnrt.testing.spec import Arg, OpCase, bools, i32, i32s, out, quant, spec_quantize

CASES: list[OpCase] = []

Q8, Q8S = T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED
_EXACT = (0.0, 0.0)


def _q(type: T, dims: Sequence[int], values: Any, scale: float, zp: int, **kw: Any) -> Arg:
    """A quantised input of ``dims`` holding the stored (already quantised) ``values``."""
    return quant(np.reshape(np.asarray(values), dims), type, scale, zp, **kw)


def _qo(type: T, dims: Sequence[int], values: Any, scale: float, zp: int) -> Arg:
    """A quantised output of ``dims`` whose expected stored values are ``values``."""
    return out(type, dims, np.reshape(np.asarray(values), dims), scale=scale, zero_point=zp)


def _cq(type: T, dims: Sequence[int], real: Any, scale: float, zp: int) -> Arg:
    """An input holding the real spec ``real`` as the test generator quantises it."""
    return _q(type, dims, spec_quantize(real, type, scale, zp), scale, zp)


def _cqo(type: T, dims: Sequence[int], real: Any, scale: float, zp: int) -> Arg:
    """An output expecting the real spec ``real`` as the test generator quantises it."""
    return _qo(type, dims, spec_quantize(real, type, scale, zp), scale, zp)


def _i(dims: Sequence[int], values: Any, **kw: Any) -> Arg:
    return i32(np.reshape(np.asarray(values), dims), **kw)


def _shift(values: Any) -> list[int]:
    """A V1_0 / V1_1 uint8 vector as its V1_3 ``*_quant8_signed`` copy stores it."""
    return [int(v) - 128 for v in np.asarray(values).reshape(-1)]


def _add(name: str, op: Op, inputs: Sequence[Arg], outputs: Sequence[Arg], **kw: Any) -> None:
    CASES.append(OpCase(name, op, inputs=tuple(inputs), outputs=tuple(outputs), **kw))


# The tables below reuse these loop variables.
_t: Any
_expected: Any
_dims: Any
_odims: Any
_y: Any
_s: Any
_z: Any
_x: Any


# -- MEAN -----------------------------------------------------------------------------------------

# V1_1/mean_quant8_1.mod.py and mean_quant8_2.mod.py ({4, 3, 2}, scale 0.8, zero point 5, stored
# 1..24) and V1_3/mean_quant8_signed.mod.py (the same, 128 lower). NNAPI's kernel truncates the
# integer mean: the signed copy's expected -118 / -116 / -114 are the uint8 10 / 12 / 14 shifted,
# one step from the truncated -117.5 -> -117 (NNAPI's one-step tolerance covers it).
_M24 = list(range(1, 25))
for _t, _stem, _x, _z, _expected in (
    (Q8, "mean_quant8", _M24, 5, ([12, 13], [10, 12, 14])),
    (Q8S, "mean_quant8_signed", _shift(_M24), -123, ([-116, -115], [-118, -116, -114])),
):
    _add(f"mean_nnapi_{_stem}_1", Op.MEAN,
         [_q(_t, (4, 3, 2), _x, 0.8, _z), _i((4,), [1, 0, -3, -3]), i32s(0)],
         [_qo(_t, (2,), _expected[0], 0.8, _z)])
    _add(f"mean_nnapi_{_stem}_2", Op.MEAN,
         [_q(_t, (4, 3, 2), _x, 0.8, _z), _i((2,), [0, 2]), i32s(1)],
         [_qo(_t, (1, 3, 1), _expected[1], 0.8, _z)])

# -- REDUCE_MAX / REDUCE_MIN ----------------------------------------------------------------------

# V1_2/reduce_{max,min}.mod.py, quant8 variation (input and output scale 0.5, zero point 127) and
# V1_3/reduce_{max,min}_quant8_signed.mod.py (0.5, -1): the four float examples of each.
_R24 = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2,
        1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2.0, 2.1, 2.2, 2.3, 2.4]
for _op, _expected in (
    (Op.REDUCE_MAX, ([-1, 4, 5], [2.3, 2.4], [2.0, 2.2, 2.4])),
    (Op.REDUCE_MIN, ([-2, 3, -6], [0.1, 0.2], [0.1, 0.3, 0.5])),
):
    for _t, _z, _suffix in ((Q8, 127, "quant8"), (Q8S, -1, "quant8_signed")):
        _stem = f"{_op.name.lower()}_nnapi_{_op.name.lower()}_{_suffix}"
        for _n, (_dims, _x, _axes, _keep, _odims, _y) in enumerate((
            ((3, 2), [-1, -2, 3, 4, 5, -6], [-1], False, (3,), _expected[0]),
            ((1,), [9.527], [0], True, (1,), [9.527]),
            ((4, 3, 2), _R24, [1, 0, -3, -3], False, (2,), _expected[1]),
            ((4, 3, 2), _R24, [0, 2], True, (1, 3, 1), _expected[2]),
        ), start=1):
            _add(f"{_stem}_{_n}", _op,
                 [_cq(_t, _dims, _x, 0.5, _z), _i((len(_axes),), _axes), bools(_keep)],
                 [_cqo(_t, _odims, _y, 0.5, _z)], tolerance=_EXACT)

# -- ARGMAX / ARGMIN ------------------------------------------------------------------------------

# V1_2/argmax_{1,2,3}.mod.py, argmin_{1,2,3}.mod.py: quant8 variation of input [[1, 2], [4, 3]]
# (scale 1, zero point 0); V1_3/argmax_quant8_signed.mod.py, argmin_quant8_signed.mod.py: the
# same three examples each (scale 1, zero point 0).
for _op, _examples in (
    (Op.ARGMAX, ((1, [1, 0]), (0, [1, 1]), (-1, [1, 0]))),
    (Op.ARGMIN, ((1, [0, 1]), (0, [0, 0]), (-1, [0, 1]))),
):
    for _n, (_axis, _expected) in enumerate(_examples, start=1):
        _name = _op.name.lower()
        for _t, _stem in ((Q8, f"{_name}_{_n}_quant8"), (Q8S, f"{_name}_quant8_signed_{_n}")):
            _add(f"{_name}_nnapi_{_stem}", _op,
                 [_cq(_t, (2, 2), [1.0, 2.0, 4.0, 3.0], 1.0, 0), i32s(_axis)],
                 [out(T.TENSOR_INT32, (2,), np.asarray(_expected))])

# -- GATHER, EMBEDDING_LOOKUP, TOPK_V2 ------------------------------------------------------------

# V1_2/gather.mod.py, quant8 variation (input and output 0.5, 127), and
# V1_3/gather_quant8_signed.mod.py (0.5, -1), which repeats those eight examples after its
# higher-rank one (V1_2/gather_higher_rank.mod.py's vectors).
_GATHER = (
    ((2, 2), [-2.0, 0.2, 0.7, 0.8], 0, [1, 0], (2, 2), [0.7, 0.8, -2.0, 0.2]),
    ((2, 2), [-2.0, 0.2, 0.7, 0.8], 0, [1], (1, 2), [0.7, 0.8]),
    ((3,), [1, 2, 3], 0, [1], (1,), [2]),
    ((3,), [1, 2, 3], 0, [1, 0], (2,), [2, 1]),
    ((1, 2, 2), [-2.0, 0.2, 0.7, 0.8], 0, [0, 0], (2, 2, 2),
     [-2.0, 0.2, 0.7, 0.8, -2.0, 0.2, 0.7, 0.8]),
    ((4, 1), [-2.0, 0.2, 0.7, 0.8], 0, [1, 3], (2, 1), [0.2, 0.8]),
    ((1, 2, 3), [1, 2, 3, 4, 5, 6], 1, [1, 0], (1, 2, 3), [4, 5, 6, 1, 2, 3]),
    ((1, 2, 3), [1, 2, 3, 4, 5, 6], -1, [2, 0], (1, 2, 2), [3, 1, 6, 4]),
)
for _t, _z, _suffix in ((Q8, 127, "quant8"), (Q8S, -1, "quant8_signed")):
    for _n, (_dims, _x, _axis, _idx, _odims, _y) in enumerate(_GATHER, start=1):
        _add(f"gather_nnapi_gather_{_suffix}_{_n}", Op.GATHER,
             [_cq(_t, _dims, _x, 0.5, _z), i32s(_axis), _i((len(_idx),), _idx)],
             [_cqo(_t, _odims, _y, 0.5, _z)], tolerance=_EXACT)
_add("gather_nnapi_gather_quant8_signed_higher_rank", Op.GATHER,
     [_cq(Q8S, (1, 3, 2), [1, 2, 3, 4, 5, 6], 0.5, -1), i32s(1),
      _i((3, 2), [2, 0, 1, 0, 0, 1])],
     [_cqo(Q8S, (1, 3, 2, 2), [5, 6, 1, 2, 3, 4, 1, 2, 1, 2, 3, 4], 0.5, -1)], tolerance=_EXACT)

# V1_3/embedding_lookup_quant8_signed.mod.py: 3-D values[i][j][k] = i + j / 10 + k / 100 (values
# and output 0.5, -1), lookups [1, 0, 2]. nnrt's own TENSOR_QUANT8_ASYMM twin (0.5, 127).
_EL3 = [i + j / 10 + k / 100 for i in range(3) for j in range(2) for k in range(4)]
_EL3_OUT = [_EL3[8 * r + c] for r in (1, 0, 2) for c in range(8)]
for _t, _z, _name in ((Q8S, -1, "embedding_lookup_nnapi_embedding_lookup_quant8_signed"),
                      (Q8, 127, "embedding_lookup_quant8")):
    _add(_name, Op.EMBEDDING_LOOKUP, [_i((3,), [1, 0, 2]), _cq(_t, (3, 2, 4), _EL3, 0.5, _z)],
         [_cqo(_t, (3, 2, 4), _EL3_OUT, 0.5, _z)], tolerance=_EXACT)

# V1_2/topk_v2.mod.py's quant8 example ({2, 3}, 2.0, 128) and V1_3/topk_v2_quant8_signed.mod.py
# ({2, 3}, 2.0, 0); k = 2.
for _t, _z, _stem, _x, _values in (
    (Q8, 128, "topk_v2_quant8", [1, 2, 3, 251, 250, 249], [3, 2, 251, 250]),
    (Q8S, 0, "topk_v2_quant8_signed", [-127, -126, -125, 123, 122, 121], [-125, -126, 123, 122]),
):
    _add(f"topk_v2_nnapi_{_stem}", Op.TOPK_V2, [_q(_t, (2, 3), _x, 2.0, _z), i32s(2)],
         [_qo(_t, (2, 2), _values, 2.0, _z), out(T.TENSOR_INT32, (2, 2), [[2, 1], [0, 1]])],
         tolerance=_EXACT)

# -- SLICE, STRIDED_SLICE -------------------------------------------------------------------------

# V1_2/slice.mod.py's quant8 example ({3, 2, 3, 1}, 2.0, 128; begin and size model inputs) and
# V1_3/slice_quant8_signed.mod.py (2.0, 0, stored values 128 lower).
_S18 = [1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6]
for _t, _z, _stem, _x, _y in (
    (Q8, 128, "slice_quant8", _S18, [3, 3, 3, 5, 5, 5]),
    (Q8S, 0, "slice_quant8_signed", _shift(_S18), _shift([3, 3, 3, 5, 5, 5])),
):
    _add(f"slice_nnapi_{_stem}", Op.SLICE,
         [_q(_t, (3, 2, 3, 1), _x, 2.0, _z), _i((4,), [1, 0, 0, 0]), _i((4,), [2, 1, 3, 1])],
         [_qo(_t, (2, 1, 3, 1), _y, 2.0, _z)], tolerance=_EXACT)

# V1_1/strided_slice_quant8_{1..9}.mod.py, strided_slice_qaunt8_{10,11}.mod.py (sic; scale 1,
# zero point 0) and V1_3/strided_slice_quant8_signed.mod.py (1, -128, values 128 lower), which
# repeat strided_slice_float_1 .. _11's vectors: (input dims, input, begins, ends, strides,
# begin_mask, end_mask, shrink_axis_mask, output dims, expected).
_SS6 = [1, 2, 3, 4, 5, 6]
_STRIDED = (
    ((4,), [1, 2, 3, 4], [1], [3], [1], 0, 0, 0, (2,), [2, 3]),
    ((4,), [1, 2, 3, 4], [-3], [3], [1], 0, 0, 0, (2,), [2, 3]),
    ((4,), [1, 2, 3, 4], [-5], [3], [1], 0, 0, 0, (3,), [1, 2, 3]),
    ((4,), [1, 2, 3, 4], [1], [-2], [1], 0, 0, 0, (1,), [2]),
    ((4,), [1, 2, 3, 4], [1], [3], [1], 1, 0, 0, (3,), [1, 2, 3]),
    ((4,), [1, 2, 3, 4], [1], [3], [1], 0, 1, 0, (3,), [2, 3, 4]),
    ((3,), [1, 2, 3], [-1], [-4], [-1], 0, 0, 0, (3,), [3, 2, 1]),
    ((2, 3), _SS6, [1, -1], [2, -4], [2, -1], 0, 0, 0, (1, 3), [6, 5, 4]),
    ((2, 3), _SS6, [1, 0], [2, 2], [1, 1], 1, 0, 0, (2, 2), [1, 2, 4, 5]),
    ((2, 3), _SS6, [1, 0], [2, 2], [1, 1], 0, 2, 0, (1, 3), [4, 5, 6]),
    ((2, 3), _SS6, [0, 0], [1, 3], [1, 1], 0, 0, 1, (3,), [1, 2, 3]),
)
for _n, (_dims, _x, _b, _e, _s, _bm, _em, _sm, _odims, _y) in enumerate(_STRIDED, start=1):
    _r = len(_dims)
    _params = [_i((_r,), _b), _i((_r,), _e), _i((_r,), _s), i32s(_bm), i32s(_em), i32s(_sm)]
    _stem = f"strided_slice_{'qaunt8' if _n >= 10 else 'quant8'}_{_n}"
    _add(f"strided_slice_nnapi_{_stem}", Op.STRIDED_SLICE,
         [_q(Q8, _dims, _x, 1.0, 0), *_params], [_qo(Q8, _odims, _y, 1.0, 0)], tolerance=_EXACT)
    _add(f"strided_slice_nnapi_strided_slice_quant8_signed_{_n}", Op.STRIDED_SLICE,
         [_q(Q8S, _dims, _shift(_x), 1.0, -128), *_params],
         [_qo(Q8S, _odims, _shift(_y), 1.0, -128)], tolerance=_EXACT)

# -- PAD, PAD_V2, MIRROR_PAD, REVERSE -------------------------------------------------------------

_PADS_1 = [0, 0, 0, 2, 1, 3, 0, 0]
_PAD_1_OUT = [0, 1, 2, 3, 0, 0, 0, 0, 4, 5, 6, 0, 0, 0, *[0] * 14]  # 0 marks padding
_ALL_DIMS_PADS = [1, 2, 3, 4, 3, 3, 2, 1]


def _padded_1(fill: int, values: Sequence[int]) -> list[int]:
    """pad_quant8's {1, 4, 7, 1} output: ``values`` (the six inputs) at their places, ``fill``
    elsewhere."""
    it = iter(values)
    return [next(it) if v else fill for v in _PAD_1_OUT]


def _all_dims(fill: int, values: Sequence[int]) -> np.ndarray[Any, Any]:
    """pad_all_dims' {4, 8, 8, 6} output: the {1, 1, 2, 3} input at offset (1, 3, 3, 2) of a
    block of ``fill`` (the spec writes it as numpy's constant pad)."""
    result = np.full((4, 8, 8, 6), fill, dtype=np.int64)
    result[1, 3, 3:5, 2:5] = np.reshape(values, (2, 3))
    return result


# V1_2/pad_quant8.mod.py (2.3, 0), pad_quant8_nonzero.mod.py (2.3, 9: pads with the zero point),
# pad_low_rank_quant8.mod.py ({3}, 2.3, 0) and V1_3/pad_quant8_signed.mod.py: its all-dims
# example (a converter variation, 2.3, -128), then the low-rank, plain and non-zero ones.
_x = [1, 2, 3, 4, 5, 6]
for _t, _z, _stem, _vals in (
    (Q8, 0, "pad_quant8", _x), (Q8, 9, "pad_quant8_nonzero", _x),
    (Q8S, -128, "pad_quant8_signed_3", _shift(_x)), (Q8S, -119, "pad_quant8_signed_4", _shift(_x)),
):
    _add(f"pad_nnapi_{_stem}", Op.PAD,
         [_q(_t, (1, 2, 3, 1), _vals, 2.3, _z), _i((4, 2), _PADS_1, role="const")],
         [_qo(_t, (1, 4, 7, 1), _padded_1(_z, _vals), 2.3, _z)], tolerance=_EXACT)
for _t, _z, _stem, _vals in ((Q8, 0, "pad_low_rank_quant8", [1, 2, 3]),
                             (Q8S, -128, "pad_quant8_signed_2", _shift([1, 2, 3]))):
    _add(f"pad_nnapi_{_stem}", Op.PAD, [_q(_t, (3,), _vals, 2.3, _z), _i((1, 2), [3, 1])],
         [_qo(_t, (7,), [_z, _z, _z, *_vals, _z], 2.3, _z)], tolerance=_EXACT)
_add("pad_nnapi_pad_quant8_signed_1", Op.PAD,
     [_cq(Q8S, (1, 1, 2, 3), _x, 2.3, -128), _i((4, 2), _ALL_DIMS_PADS, role="const")],
     [_qo(Q8S, (4, 8, 8, 6), _all_dims(-128, spec_quantize(_x, Q8S, 2.3, -128)), 2.3, -128)],
     tolerance=_EXACT)

# V1_2/pad_v2_1_quant8.mod.py, pad_v2_low_rank_quant8.mod.py, pad_v2_all_dims_quant8.mod.py
# (2.3, 4) and V1_3/pad_quant8_signed.mod.py's PAD_V2 examples (2.3, -124): the pad value is a
# stored quantised value.
for _t, _z, _stem, _vals, _pad in (
    (Q8, 4, "pad_v2_1_quant8", _x, 9),
    (Q8S, -124, "pad_quant8_signed_5", _shift(_x), 9),
):
    _add(f"pad_v2_nnapi_{_stem}", Op.PAD_V2,
         [_q(_t, (1, 2, 3, 1), _vals, 2.3, _z), _i((4, 2), _PADS_1, role="const"), i32s(_pad)],
         [_qo(_t, (1, 4, 7, 1), _padded_1(_pad, _vals), 2.3, _z)], tolerance=_EXACT)
for _t, _z, _stem, _vals, _pad in (
    (Q8, 4, "pad_v2_all_dims_quant8", _x, 3),
    (Q8S, -124, "pad_quant8_signed_6", _shift(_x), -125),
):
    _add(f"pad_v2_nnapi_{_stem}", Op.PAD_V2,
         [_q(_t, (1, 1, 2, 3), _vals, 2.3, _z), _i((4, 2), _ALL_DIMS_PADS, role="const"),
          i32s(_pad)],
         [_qo(_t, (4, 8, 8, 6), _all_dims(_pad, _vals), 2.3, _z)], tolerance=_EXACT)
for _t, _z, _stem, _vals in ((Q8, 4, "pad_v2_low_rank_quant8", [1, 2, 3]),
                             (Q8S, -124, "pad_quant8_signed_7", _shift([1, 2, 3]))):
    _add(f"pad_v2_nnapi_{_stem}", Op.PAD_V2,
         [_q(_t, (3,), _vals, 2.3, _z), _i((1, 2), [3, 1]), i32s(9)],
         [_qo(_t, (7,), [9, 9, 9, *_vals, 9], 2.3, _z)], tolerance=_EXACT)

# nnrt's own: MIRROR_PAD and REVERSE of stored values (NNAPI's mirror_pad summary example's
# SYMMETRIC 2-D padding; reversing axis 1), both quantised types.
_MIRROR_OUT = [2, 1, 1, 2, 3, 3, 2, 2, 1, 1, 2, 3, 3, 2, 5, 4, 4, 5, 6, 6, 5, 5, 4, 4, 5, 6, 6, 5]
for _t, _z, _suffix, _off in ((Q8, 3, "quant8", 200), (Q8S, -3, "quant8_signed", -100)):
    _add(f"mirror_pad_{_suffix}", Op.MIRROR_PAD,
         [_q(_t, (2, 3), [v + _off for v in _x], 0.5, _z), _i((2, 2), [1, 1, 2, 2], role="const"),
          i32s(1)],
         [_qo(_t, (4, 7), [v + _off for v in _MIRROR_OUT], 0.5, _z)], tolerance=_EXACT)
    _add(f"reverse_{_suffix}", Op.REVERSE,
         [_q(_t, (2, 3), [v + _off for v in _x], 0.5, _z), _i((1,), [1])],
         [_qo(_t, (2, 3), [v + _off for v in (3, 2, 1, 6, 5, 4)], 0.5, _z)], tolerance=_EXACT)

CASES.extend(nnapi_quant_data_image.CASES)
