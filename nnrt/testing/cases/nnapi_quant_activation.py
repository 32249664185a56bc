"""Quantised activation and normalisation cases: NNAPI's published vectors.

TENSOR_QUANT8_ASYMM and TENSOR_QUANT8_ASYMM_SIGNED variants of RELU, RELU1, RELU6, LOGISTIC,
TANH, HARD_SWISH, PRELU, SOFTMAX and L2_NORMALIZATION. Sources and conventions as in
:mod:`nnrt.testing.cases.nnapi_quant_elementwise` (whose argument helpers these use). Where a
spec lets the generator derive every rank and axis from 4-D data (``AddAllDimsAndAxis``), a
few of those derived cases are built the same way (:func:`_dims_and_axis`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nnrt.model.types import OperationType as Op
from nnrt.testing.cases.nnapi_quant_elementwise import (
    EXACT,
    S8,
    U8,
    from_real,
    out_from_real,
    q,
    q_out,
)
from nnrt.testing.spec import Arg, OpCase, f32s, i32s

CASES: list[OpCase] = []

Array = np.ndarray[Any, Any]
_SHAPE = (1, 2, 2, 1)


def add(name: str, op: Op, inputs: tuple[Arg, ...], outputs: tuple[Arg, ...],
        **kw: Any) -> None:
    """Append one case."""
    CASES.append(OpCase(name, op, inputs, outputs, **kw))


def _sigmoid(x: Array) -> Array:
    result: Array = 1.0 / (1.0 + np.exp(-x))
    return result


# -- RELU, RELU1, RELU6 -----------------------------------------------------------------------

# relu_quant8_1 / relu1_quant8_1 / relu6_quant8_1 .mod.py (V1_0), two examples each;
# relu_quant8_signed and relu1_quant8_signed (V1_3, examples 1 and 2: RELU1's are V1_0's with
# the zero point and values - 128). Own: that signed twin of RELU6, and RELU1 around a
# mid-range zero point (clamped on both sides).
for _op, _scale, _zp, _examples in (
        (Op.RELU, 1.0, 128, (([0, 1, 126, 127], [128] * 4),
                             ([128, 129, 254, 255], [128, 129, 254, 255]))),
        (Op.RELU1, 0.5, 0, (([0, 1, 2, 3], [0, 1, 2, 2]), ([4, 10, 100, 255], [2] * 4))),
        (Op.RELU6, 0.5, 0, (([0, 1, 11, 12], [0, 1, 11, 12]),
                            ([13, 14, 254, 255], [12] * 4)))):
    _stem = _op.name.lower()
    for _k, (_x, _y) in enumerate(_examples, 1):
        _suffix = "" if _k == 1 else "_2"
        add(f"{_stem}_nnapi_{_stem}_quant8_1{_suffix}", _op,
            (q(U8, _x, _scale, _zp, dims=_SHAPE),), (q_out(U8, _y, _scale, _zp, dims=_SHAPE),))
        if _op != Op.RELU:
            _signed = (f"{_stem}_nnapi_{_stem}_quant8_signed" if _op == Op.RELU1
                       else f"{_stem}_quant8_signed_twin")
            add(f"{_signed}{_suffix}", _op,
                (q(S8, np.subtract(_x, 128), _scale, _zp - 128, dims=_SHAPE),),
                (q_out(S8, np.subtract(_y, 128), _scale, _zp - 128, dims=_SHAPE),),
                tolerance=EXACT)
add("relu_nnapi_relu_quant8_signed", Op.RELU, (q(S8, [-128, -127, -2, -1], 1.0, 0, dims=_SHAPE),),
    (q_out(S8, [0, 0, 0, 0], 1.0, 0, dims=_SHAPE),))
add("relu_nnapi_relu_quant8_signed_2", Op.RELU, (q(S8, [0, 1, 126, 127], 1.0, 0, dims=_SHAPE),),
    (q_out(S8, [0, 1, 126, 127], 1.0, 0, dims=_SHAPE),))
add("relu1_quant8_mid_zero_point", Op.RELU1,
    (q(U8, [0, 123, 124, 128, 132, 133, 255], 0.25, 128),),
    (q_out(U8, [124, 124, 124, 128, 132, 132, 132], 0.25, 128),), tolerance=EXACT)

# -- LOGISTIC, TANH ---------------------------------------------------------------------------

# logistic_quant8_1 / logistic_quant8_2 .mod.py (V1_0) and logistic_quant8_signed (V1_3, its
# examples 1 and 2 are those two with the zero points - 128): input scale 0.5, output 1/256;
# example 2 sweeps every input value, expected as the spec's formula
# round(sigmoid(x * 0.5) * 256), 255 at most.
_LOGISTIC_SCALED = _sigmoid(np.arange(256) * .5) * 256
_LOGISTIC_SWEEP = np.where(_LOGISTIC_SCALED > 255, 255, np.round(_LOGISTIC_SCALED))
for _t, _shift, _stem in ((U8, 0, "logistic_quant8"), (S8, -128, "logistic_quant8_signed")):
    _first = f"{_stem}_1" if _t == U8 else _stem
    add(f"logistic_nnapi_{_first}", Op.LOGISTIC,
        (q(_t, np.add([0, 1, 2, 127], _shift), 0.5, _shift, dims=_SHAPE),),
        (q_out(_t, np.add([128, 159, 187, 255], _shift), 1 / 256, _shift, dims=_SHAPE),))
    add(f"logistic_nnapi_{_stem}_2", Op.LOGISTIC,
        (q(_t, np.arange(256) + _shift, 0.5, _shift, dims=(1, 16, 16, 1)),),
        (q_out(_t, np.add(_LOGISTIC_SWEEP, _shift), 1 / 256, _shift, dims=(1, 16, 16, 1)),))

# NNAPI's V1_2 TANH quant8 test (the stored copy holds that test alone): every input at scale
# 0.05, zero point 100, expected as its formula clamp(round(tanh(x) * 128) + 128);
# tanh_quant8_signed (V1_3) is the same with the zero points - 128.
_TANH_REAL = (np.arange(256) - 100) * 0.05
_TANH_SWEEP = [max(0, min(255, round(math.tanh(x) * 128) + 128)) for x in _TANH_REAL]
add("tanh_nnapi_tanh_quant8", Op.TANH, (q(U8, np.arange(256), 0.05, 100),),
    (q_out(U8, _TANH_SWEEP, 1 / 128, 128),))
add("tanh_nnapi_tanh_quant8_signed", Op.TANH, (q(S8, np.arange(256) - 128, 0.05, -28),),
    (q_out(S8, np.subtract(_TANH_SWEEP, 128), 1 / 128, 0),))

# Own: the whole input range of both signs, at scales whose inputs reach past the radius the
# fixed-point kernels represent (scale 0.1: |x| < 12.8; scale 1: saturated beyond |x| = 7).
for _scale in (0.1, 1.0):
    for _t, _zp in ((U8, 128), (S8, 0)):
        _codes = np.arange(256) + (0 if _t == U8 else -128)
        _real = (_codes - _zp) * _scale
        _suffix = f"{'quant8' if _t == U8 else 'quant8_signed'}_scale{_scale:g}"
        _low = 0 if _t == U8 else -128
        add(f"logistic_{_suffix}_sweep", Op.LOGISTIC, (q(_t, _codes, _scale, _zp),),
            (q_out(_t, np.clip(np.round(_sigmoid(_real) * 256) + _low, _low, _low + 255),
                   1 / 256, _low),))
        add(f"tanh_{_suffix}_sweep", Op.TANH, (q(_t, _codes, _scale, _zp),),
            (q_out(_t, np.clip(np.round(np.tanh(_real) * 128) + _low + 128, _low, _low + 255),
                   1 / 128, _low + 128),))

# -- HARD_SWISH -------------------------------------------------------------------------------

# hard_swish.mod.py (V1_3), "simple" with its four quantised variations (input at 0.078125;
# output at the same scale, or at 0.03125 where large outputs saturate).
_HS_IN = [
    4.53125, 3.90625, 3.046875, -8.59375, -1.328125, 1.328125, 0.0, -8.515625, -8.984375,
    -0.234375, 0.859375, 9.84375, -0.15625, -8.515625, 8.671875, 4.609375, 9.21875, -1.796875,
    1.171875, 9.375, -8.75, 2.421875, -8.125, -1.09375, -9.609375, -1.015625, -9.84375,
    2.578125, 4.921875, -5.078125, 5.0, -0.859375, 1.953125, -6.640625, -7.8125, 4.453125,
    -4.453125, -6.875, 0.78125, 0.859375]
_HS_OUT = [
    4.53125, 3.90625, 3.046875, 0.0, -0.3700765, 0.9580485, 0.0, 0.0, 0.0, -0.1080322,
    0.5527751, 9.84375, -0.074056, 0.0, 8.671875, 4.609375, 9.21875, -0.3603109, 0.8148193,
    9.375, 0.0, 2.1885173, 0.0, -0.3474935, 0.0, -0.3358968, 0.0, 2.3968506, 4.921875, 0.0,
    5.0, -0.3065999, 1.6123454, 0.0, 0.0, 4.453125, 0.0, 0.0, 0.4923503, 0.5527751]
for _variation, _t, _in_zp, _out_scale, _out_zp in (
        ("quant8", U8, 128, 0.078125, 128), ("quant8_signed", S8, 0, 0.078125, 0),
        ("quant8_overflow", U8, 128, 0.03125, 0),
        ("quant8_signed_overflow", S8, 0, 0.03125, -128)):
    add(f"hard_swish_nnapi_hard_swish_simple_{_variation}", Op.HARD_SWISH,
        (from_real(_t, _HS_IN, 0.078125, _in_zp),),
        (out_from_real(_t, _HS_OUT, _out_scale, _out_zp),))

# -- PRELU ------------------------------------------------------------------------------------

# prelu.mod.py (V1_2) and prelu_quant8_signed (V1_3): the float example (alpha [0, 1, 2]
# broadcast over {1, 2, 2, 3}) with four quantisations each: output scale above, equal to the
# input's, equal to input * alpha scale, and below both. The signed ones shift every zero
# point by -128 (the stored copy of the signed spec is cut before its last variation's output
# zero point; -8 is that pattern's).
_PRELU_X = np.reshape([0, 0, 0, 1, 1, 1, -1, -1, -1, -2, -2, -2], (1, 2, 2, 3)).astype(float)
_PRELU_Y = np.reshape([0, 0, 0, 1, 1, 1, 0, -1, -2, 0, -2, -4], (1, 2, 2, 3)).astype(float)
_PRELU_ALPHA = np.reshape([0.0, 1.0, 2.0], (1, 1, 3))
for _variation, _alpha_scale, _out_scale in (("gt", 0.25, 0.5), ("eq1", 0.25, 0.25),
                                             ("eq2", 0.5, 0.125), ("lt", 0.5, 0.1)):
    for _t, _shift, _stem in ((U8, 0, "prelu_quant8"), (S8, -128, "prelu_quant8_signed")):
        _name = (f"prelu_nnapi_prelu_quant8_{_variation}" if _t == U8
                 else f"prelu_nnapi_prelu_quant8_signed_{_variation}")
        add(_name, Op.PRELU,
            (from_real(_t, _PRELU_X, 0.25, 128 + _shift),
             from_real(_t, _PRELU_ALPHA, _alpha_scale, 50 + _shift)),
            (out_from_real(_t, _PRELU_Y, _out_scale, 120 + _shift),))

# -- SOFTMAX ----------------------------------------------------------------------------------

# softmax_quant8_2.mod.py (V1_0) and softmax_quant8_signed (V1_3: examples 1 and 2 are V1_0's
# softmax_quant8_1 and _2 with the zero points - 128): input scale 0.5, output 1/256.
add("softmax_nnapi_softmax_quant8_2", Op.SOFTMAX,
    (q(U8, [[1, 2, 3, 4, 5], [255, 254, 253, 252, 251]], 0.5, 0), f32s(1.0)),
    (q_out(U8, [[15, 24, 40, 67, 110], [110, 67, 40, 24, 15]], 1 / 256, 0),))
add("softmax_nnapi_softmax_quant8_signed", Op.SOFTMAX,
    (q(S8, [[-127, -126, -118, -108]], 0.5, -128), f32s(1e-5)),
    (q_out(S8, [[-64, -64, -64, -64]], 1 / 256, -128),))
add("softmax_nnapi_softmax_quant8_signed_2", Op.SOFTMAX,
    (q(S8, [[-127, -126, -125, -124, -123], [127, 126, 125, 124, 123]], 0.5, -128), f32s(1.0)),
    (q_out(S8, [[-113, -104, -88, -61, -18], [-18, -61, -88, -104, -113]], 1 / 256, -128),))


def _dims_and_axis(data4d: Array, rank: int, axis: int) -> Array:
    """The generator's rank-``rank`` version of 4-D spec data with its last axis at ``axis``."""
    drop = 4 - rank
    moved = np.moveaxis(data4d, -1, axis % rank + drop)
    return np.asarray(moved[(0,) * drop])


# softmax_quant8_signed (V1_3, "quant8_signed"): softmax_v1_2.mod.py's {2, 2, 2, 5} float
# examples (beta 1: rows shifted from [17, 16, 15, 14, 1]; beta 1e-6: nearly uniform) quantised
# at input scale 0.25, zero point 0, output 1/256 and -128; a few of the derived ranks and axes
# (None: the axis input left out). Own: the same data as TENSOR_QUANT8_ASYMM (zero points 128
# and 0).
_SM_X1 = np.reshape([17., 16., 15., 14., 1., -1., -2., -3., -4., -17.] * 4, (2, 2, 2, 5))
_SM_Y1 = np.reshape([0.643914213228014, 0.236882800924671, 0.087144312427294,
                     0.032058600957022, 7.246299848982885e-08] * 8, (2, 2, 2, 5))
_SM_X2 = np.reshape([1., 2., 3., 4., 5., -1., -2., -3., -4., -5.] * 4, (2, 2, 2, 5))
_SM_Y2 = np.full((2, 2, 2, 5), 0.2)
_SM_PAIRS = ((4, None), (1, None), (4, 0), (4, -3), (3, 1), (2, -1))
for _suffix, _sm_x, _sm_y, _beta in (("", _SM_X1, _SM_Y1, 1.0),
                                     ("_2", _SM_X2, _SM_Y2, 1e-6)):
    for _t, _zp, _out_zp in ((U8, 128, 0), (S8, 0, -128)):
        _prefix = ("softmax_nnapi_softmax_quant8_signed_v1_2" if _t == S8
                   else "softmax_quant8_v1_2_data")
        for _rank, _axis in _SM_PAIRS:
            _xs = _dims_and_axis(_sm_x, _rank, -1 if _axis is None else _axis)
            _ys = _dims_and_axis(_sm_y, _rank, -1 if _axis is None else _axis)
            _params = (f32s(_beta),) if _axis is None else (f32s(_beta), i32s(_axis))
            _tag = "noaxis" if _axis is None else f"axis{_axis}".replace("-", "m")
            add(f"{_prefix}{_suffix}_rank{_rank}_{_tag}",
                Op.SOFTMAX, (from_real(_t, _xs, 0.25, _zp), *_params),
                (out_from_real(_t, _ys, 1 / 256, _out_zp),))

# Own: inputs far below the maximum fall outside the kernel's exp range and give exactly 0; a
# single dominant input saturates to the top code.
add("softmax_quant8_underflow", Op.SOFTMAX, (q(U8, [[0, 50, 100, 255]], 1.0, 0), f32s(1.0)),
    (q_out(U8, [[0, 0, 0, 255]], 1 / 256, 0),))
add("softmax_quant8_signed_underflow", Op.SOFTMAX,
    (q(S8, [[-128, 0, 100, 127]], 1.0, 0), f32s(1.0)),
    (q_out(S8, [[-128, -128, -128, 127]], 1 / 256, -128),))

# -- L2_NORMALIZATION -------------------------------------------------------------------------

# l2_normalization_quant8_signed (V1_3): the {2, 2, 2, 3} float Pythagorean triples of
# l2_normalization_v1_2 / l2_normalization_axis (V1_2) quantised at input scale 0.1, zero point
# -96, output 1/128: dim4_axis0 literal, and a few more of the derived ranks and axes — the last
# axis is the one NNAPI runs TFLite's int8 kernel on. Own: the same data as
# TENSOR_QUANT8_ASYMM (zero points 32 and 128) at rank 4 without the axis input (V1_2's
# quant8 variation at the other ranks and axes is in nnapi_gaps).
add("l2_normalization_nnapi_l2_normalization_quant8_signed_dim4_axis0", Op.L2_NORMALIZATION,
    (q(S8, [-96, -66, -16, 24, -6, 24, 104, 64, -66, -96, -36, -96, 24, 54, -6, 54, -56, -56,
            -96, -6, 104, 64, 24, 24], 0.1, -96, dims=(3, 2, 2, 2)), i32s(0)),
    (q_out(S8, [0, 77, 102, 102, 46, 61, 102, 82, 77, 0, 77, 0, 61, 77, 46, 77, 102, 102, 0,
                77, 102, 82, 61, 61], 1 / 128, 0, dims=(3, 2, 2, 2)),))
_L2_X = np.reshape([0, 3, 4, 3, 0, 4, 8, 6, 0, 12, 0, 9, 9, 12, 20, 12, 15, 16, 20, 9, 12,
                    16, 15, 12], (2, 2, 2, 3)).astype(np.float64)
_L2_Y = np.reshape([0.00, 0.60, 0.80, 0.60, 0.00, 0.80, 0.80, 0.60, 0.00, 0.80, 0.00, 0.60,
                    0.36, 0.48, 0.80, 0.48, 0.60, 0.64, 0.80, 0.36, 0.48, 0.64, 0.60, 0.48],
                   (2, 2, 2, 3))
for _t, _zp, _out_zp in ((U8, 32, 128), (S8, -96, 0)):
    _prefix = ("l2_normalization_nnapi_l2_normalization_quant8_signed" if _t == S8
               else "l2_normalization_quant8_v1_2_data")
    _pairs = ((4, None), (4, -1), (4, 1), (3, 0), (2, None), (1, None)) if _t == S8 else (
        (4, None),)
    for _rank, _axis in _pairs:
        _xs = _dims_and_axis(_L2_X, _rank, -1 if _axis is None else _axis)
        _ys = _dims_and_axis(_L2_Y, _rank, -1 if _axis is None else _axis)
        _l2_params = () if _axis is None else (i32s(_axis),)
        _tag = "noaxis" if _axis is None else f"axis{_axis}".replace("-", "m")
        add(f"{_prefix}_rank{_rank}_{_tag}",
            Op.L2_NORMALIZATION, (from_real(_t, _xs, 0.1, _zp), *_l2_params),
            (out_from_real(_t, _ys, 1 / 128, _out_zp),))

# Own: an all-zero slice normalises to zeros; a lone non-zero input to +-1 (saturated at the
# top code 127/128).
add("l2_normalization_quant8_zero_and_unit", Op.L2_NORMALIZATION,
    (q(U8, [[7, 7, 7], [7, 9, 7], [7, 2, 7]], 0.5, 7),),
    (q_out(U8, [[128, 128, 128], [128, 255, 128], [128, 0, 128]], 1 / 128, 128),))
