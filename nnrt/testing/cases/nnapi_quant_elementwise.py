"""Quantised element-wise cases: NNAPI's published vectors, and the quantised-case helpers.

TENSOR_QUANT8_ASYMM and TENSOR_QUANT8_ASYMM_SIGNED variants of ADD, SUB, MUL, MAXIMUM, MINIMUM,
the comparisons, SELECT, QUANTIZE, DEQUANTIZE and CAST (the activations and normalisations are
in :mod:`nnrt.testing.cases.nnapi_quant_activation`, built with the helpers here). Each case names its spec file
(``runtime/test/specs/<version>/<stem>.mod.py`` of AOSP's NeuralNetworks module; the V1_3
``*_quant8_signed`` ones as generated into ``generated/spec_V1_3/<stem>.example.cpp``); names are
``<op>_nnapi_<spec stem>[_<example>]``. Three kinds of data:

* literal quantised vectors (the V1_0 ``*_quant8`` specs, the V1_3 signed examples);
* a spec's float vectors with a ``DataTypeConverter`` quantised variation: inputs and expected
  outputs are the float values quantised with :func:`nnrt.testing.spec.spec_quantize`, exactly
  what NNAPI's test generator feeds and expects (the float vectors are shared with
  :mod:`nnrt.testing.cases.nnapi_elementwise`);
* a spec's one-line generator formula (``round(sigmoid(x * .5) * 256)`` over all 256 inputs),
  kept as the formula.

Quantised outputs are compared within one quantisation step, NNAPI's generated-test tolerance.
Cases named ``<op>_quant8[_signed]_<rule>`` (no ``nnapi``) are nnrt's own, for the edge rules
the specs do not isolate — half-way rounding (away from zero), saturation, fused activation
clamps in the quantised domain, broadcasting between differently quantised inputs — with
expected values worked out by hand (scales are powers of two, so every step but the last
rounding is exact) and compared exactly.
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
    b8,
    f32,
    i32,
    i32s,
    out,
    quant,
    spec_quantize,
)

CASES: list[OpCase] = []

U8, S8 = T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED
#: Exact comparison for nnrt's own hand-computed cases.
EXACT = (0.0, 0.0)


def q(type_: T, values: Any, scale: float, zero_point: int,
      dims: Sequence[int] | None = None) -> Arg:
    """A quantised input holding the integers ``values``."""
    return quant(values, type_, scale, zero_point, dims=dims)


def q_out(type_: T, values: Any, scale: float, zero_point: int,
          dims: Sequence[int] | None = None) -> Arg:
    """A quantised output expecting the integers ``values``."""
    arr = np.asarray(values)
    shape = tuple(dims) if dims is not None else arr.shape
    return out(type_, shape, arr.reshape(shape), scale=scale, zero_point=zero_point)


def from_real(type_: T, real: Any, scale: float, zero_point: int) -> Arg:
    """A quantised input made from a spec's float values, as the test generator does."""
    return q(type_, spec_quantize(real, type_, scale, zero_point), scale, zero_point)


def out_from_real(type_: T, real: Any, scale: float, zero_point: int) -> Arg:
    """A quantised output expecting a spec's float values quantised by the generator."""
    return q_out(type_, spec_quantize(real, type_, scale, zero_point), scale, zero_point)


def add(name: str, op: Op, inputs: Sequence[Arg], outputs: Sequence[Arg], **kw: Any) -> None:
    """Append one case."""
    CASES.append(OpCase(name, op, tuple(inputs), tuple(outputs), **kw))


def _arr(values: Any, dims: Sequence[int]) -> np.ndarray[Any, Any]:
    return np.asarray(values, np.float64).reshape(tuple(dims))


# -- ADD --------------------------------------------------------------------------------------

# add_quant8.mod.py (V1_0) and add_quant8_signed (V1_3, examples 1 and 2 = V1_0's
# add_quant8 and add_broadcast_quant8): input 1 at scale 2, input 2 and the output at scale 1.
add("add_nnapi_add_quant8", Op.ADD, (q(U8, [1, 2], 2.0, 0), q(U8, [3, 4], 1.0, 0), i32s(0)),
    (q_out(U8, [5, 8], 1.0, 0),))
add("add_nnapi_add_quant8_signed", Op.ADD,
    (q(S8, [1, 2], 2.0, 0), q(S8, [3, 4], 1.0, 0), i32s(0)), (q_out(S8, [5, 8], 1.0, 0),))
add("add_nnapi_add_quant8_signed_2", Op.ADD,
    (q(S8, [[1, 2]], 2.0, 0), q(S8, [[1, 2], [3, 4]], 1.0, 0), i32s(0)),
    (q_out(S8, [[3, 6], [5, 8]], 1.0, 0),))

# Own: {2, 1} (scale 0.5) + {3} (scale 0.25) into scale 0.5, broadcasting between different
# scales and zero points. Reals [1, 10] + [0.25, -2.25, 20]; sums / 0.5 = [[2.5, -2.5, 42],
# [20.5, 15.5, 60]] round half away from zero to [[3, -3, 42], [21, 16, 60]], plus the zero
# point 5; RELU1 clamps to [5 - 2, 5 + 2].
_ADD_ZP = {U8: (10, 20, 5), S8: (-118, -108, -123)}
_ADD_EXPECTED = {0: [[8, 2, 47], [26, 21, 65]], 2: [[7, 3, 7], [7, 7, 7]]}
for _t, (_za, _zb, _zo) in _ADD_ZP.items():
    _suffix = "quant8" if _t == U8 else "quant8_signed"
    for _act, _act_name in ((0, "none"), (2, "relu1")):
        add(f"add_{_suffix}_broadcast_scales_{_act_name}", Op.ADD,
            (q(_t, np.add([[2], [20]], _za), 0.5, _za),
             q(_t, np.add([1, -9, 80], _zb), 0.25, _zb), i32s(_act)),
            (q_out(_t, np.add(_ADD_EXPECTED[_act], _zo - 5), 0.5, _zo),), tolerance=EXACT)

# -- SUB --------------------------------------------------------------------------------------

# sub_quant8_signed (V1_3, example 1): every pair of the inputs [0..5, 250..255] (offset by the
# zero point -128) at scale 1: a - b, saturated at 0.
_SUB_VALUES = np.array([0, 1, 2, 3, 4, 5, 250, 251, 252, 253, 254, 255])
_SUB_A, _SUB_B = np.repeat(_SUB_VALUES, 12), np.tile(_SUB_VALUES, 12)
_SUB_OUT = np.maximum(_SUB_A - _SUB_B, 0)
add("sub_nnapi_sub_quant8_signed", Op.SUB,
    (q(S8, _SUB_A - 128, 1.0, -128), q(S8, _SUB_B - 128, 1.0, -128), i32s(0)),
    (q_out(S8, _SUB_OUT - 128, 1.0, -128),))
# Own: its TENSOR_QUANT8_ASYMM twin (zero point 0).
add("sub_quant8_all_pairs", Op.SUB, (q(U8, _SUB_A, 1.0, 0), q(U8, _SUB_B, 1.0, 0), i32s(0)),
    (q_out(U8, _SUB_OUT, 1.0, 0),), tolerance=EXACT)

# Own: the ADD broadcast above as a difference: reals [[0.75, 3.25, -19], [9.75, 12.25, -10]],
# / 0.5 = [[1.5, 6.5, -38], [19.5, 24.5, -20]] -> [[2, 7, -38], [20, 25, -20]] + 5, saturated
# at the type's minimum; RELU clamps at the zero point.
_SUB_EXPECTED = {0: [[7, 12, -33], [25, 30, -15]], 1: [[7, 12, 5], [25, 30, 5]]}
for _t, (_za, _zb, _zo) in _ADD_ZP.items():
    _suffix = "quant8" if _t == U8 else "quant8_signed"
    low = 0 if _t == U8 else -128
    for _act, _act_name in ((0, "none"), (1, "relu")):
        add(f"sub_{_suffix}_broadcast_scales_{_act_name}", Op.SUB,
            (q(_t, np.add([[2], [20]], _za), 0.5, _za),
             q(_t, np.add([1, -9, 80], _zb), 0.25, _zb), i32s(_act)),
            (q_out(_t, np.maximum(np.add(_SUB_EXPECTED[_act], _zo - 5), low), 0.5, _zo),),
            tolerance=EXACT)

# -- MUL --------------------------------------------------------------------------------------

# mul_broadcast_quant8.mod.py (V1_0) and mul_quant8_signed (V1_3: its examples 1 and 2 are
# V1_0's mul_broadcast_quant8 and mul_quant8 with the zero point -128): scale 1 inputs, scale 2
# output.
add("mul_nnapi_mul_broadcast_quant8", Op.MUL,
    (q(U8, [[2, 4]], 1.0, 0), q(U8, [[1, 2], [4, 8]], 1.0, 0), i32s(0)),
    (q_out(U8, [[1, 4], [4, 16]], 2.0, 0),))
add("mul_nnapi_mul_quant8_signed", Op.MUL,
    (q(S8, [[-126, -124]], 1.0, -128), q(S8, [[-127, -126], [-124, -120]], 1.0, -128),
     i32s(0)), (q_out(S8, [[-127, -124], [-124, -112]], 2.0, -128),))
add("mul_nnapi_mul_quant8_signed_2", Op.MUL,
    (q(S8, [-127, -126], 1.0, -128), q(S8, [-126, -124], 1.0, -128), i32s(0)),
    (q_out(S8, [-127, -124], 2.0, -128),))

# Own: the same broadcast operands multiplied into scale 1: products [[0.25, -2.25, 20],
# [2.5, -22.5, 200]] round half away to [[0, -2, 20], [3, -23, 200]] plus the zero point,
# saturating; RELU6 clamps to [zero point, zero point + 6].
_MUL_EXPECTED = {0: [[0, -2, 20], [3, -23, 200]], 3: [[0, 0, 6], [3, 0, 6]]}
for _t, (_za, _zb, _zo) in ((U8, (10, 20, 100)), (S8, (-118, -108, -28))):
    _suffix = "quant8" if _t == U8 else "quant8_signed"
    high = 255 if _t == U8 else 127
    for _act, _act_name in ((0, "none"), (3, "relu6")):
        add(f"mul_{_suffix}_broadcast_scales_{_act_name}", Op.MUL,
            (q(_t, np.add([[2], [20]], _za), 0.5, _za),
             q(_t, np.add([1, -9, 80], _zb), 0.25, _zb), i32s(_act)),
            (q_out(_t, np.minimum(np.add(_MUL_EXPECTED[_act], _zo), high), 1.0, _zo),),
            tolerance=EXACT)

# -- MAXIMUM, MINIMUM -------------------------------------------------------------------------

# maximum.mod.py / minimum.mod.py (V1_2): the float "simple" and "broadcast" examples with the
# quant8 variation input0 (0.5, 127), input1 (1.0, 100), output (2.0, 80); and "overflow",
# literal: scale 1 inputs requantised to scale 0.5 saturate. maximum_quant8_signed (V1_3) is
# the same with every zero point - 128 (its "simple" example expects [-48, -48, -48, -42, -49,
# -49]); minimum_quant8_signed mirrors it as the V1_2 pair does.
_MM_A = [1.0, 0.0, -1.0, 11.0, -2.0, -1.44]
_MM_B = [-1.0, 0.0, 1.0, 12.0, -3.0, -1.43]
_MM_BA = [1.0, 0.0, -1.0, -2.0, -1.44, 11.0]
_MM = {Op.MAXIMUM: ([1.0, 0.0, 1.0, 12.0, -2.0, -1.43], [1.0, 2.0, 0.5, 2.0, 0.5, 11.0],
                    [128, 255]),
       Op.MINIMUM: ([-1.0, 0.0, -1.0, 11.0, -3.0, -1.44], [0.5, 0.0, -1.0, -2.0, -1.44, 2.0],
                    [0, 128])}
_MM_VARIATIONS = ((U8, "", (127, 100, 80)), (S8, "_quant8_signed", (-1, -28, -48)))
for _op, (_simple, _broadcast, _overflow) in _MM.items():
    _stem = _op.name.lower()
    for _t, _spec, (_z0, _z1, _zo) in _MM_VARIATIONS:
        _suffix = "quant8" if _t == U8 else "quant8_signed"
        _prefix = f"{_stem}_nnapi_{_stem}{_spec}_"
        add(f"{_prefix}simple_{_suffix}", _op,
            (from_real(_t, _arr(_MM_A, (3, 1, 2)), 0.5, _z0),
             from_real(_t, _arr(_MM_B, (3, 1, 2)), 1.0, _z1)),
            (out_from_real(_t, _arr(_simple, (3, 1, 2)), 2.0, _zo),))
        add(f"{_prefix}broadcast_{_suffix}", _op,
            (from_real(_t, _arr(_MM_BA, (3, 1, 2)), 0.5, _z0),
             from_real(_t, [0.5, 2.0], 1.0, _z1)),
            (out_from_real(_t, _arr(_broadcast, (3, 1, 2)), 2.0, _zo),))
    add(f"{_stem}_nnapi_{_stem}_overflow", _op,
        (q(U8, [60, 128], 1.0, 128), q(U8, [128, 200], 1.0, 128)),
        (q_out(U8, _overflow, 0.5, 128),))

# -- comparisons ------------------------------------------------------------------------------

# equal / not_equal / greater / greater_equal / less / less_equal .mod.py (V1_2) and their
# *_quant8_signed (V1_3) twins share four quantised examples: inputs quantised differently
# (scale, zero point), and two whose requantisation to the other input's parameters would
# overflow — NNAPI compares the real values. LESS_EQUAL's (V1_2) and GREATER's (V1_3) literal
# outputs are transcribed; for the other operations the outputs are that comparison of the
# same real values (1, 2, 3 against 2; -51.08 against -59.89).
_CMP_INPUTS = {
    "quantized_different_scale": (([129, 130, 131], 1.0, 128), ([129], 2.0, 128)),
    "quantized_different_zero_point": (([129, 130, 131], 1.0, 128), ([131], 1.0, 129)),
    "quantized_overflow_second_input_if_requantized": (([0], 1.64771, 31),
                                                       ([200], 1.49725, 240)),
    "quantized_overflow_first_input_if_requantized": (([200], 1.49725, 240),
                                                      ([0], 1.64771, 31)),
}
_CMP_FUNCS = {Op.EQUAL: np.equal, Op.NOT_EQUAL: np.not_equal, Op.GREATER: np.greater,
              Op.GREATER_EQUAL: np.greater_equal, Op.LESS: np.less, Op.LESS_EQUAL: np.less_equal}
_CMP_LITERAL = {  # (op, type) -> outputs per example, transcribed
    (Op.LESS_EQUAL, U8): [[True, True, False], [True, True, False], [False], [True]],
    (Op.GREATER, S8): [[False, False, True], [False, False, True], [True], [False]],
}


def _real(values: Sequence[int], scale: float, zero_point: int) -> np.ndarray[Any, Any]:
    return (np.asarray(values, np.float64) - zero_point) * scale


for _op, _func in _CMP_FUNCS.items():
    _stem = _op.name.lower()
    for _t in (U8, S8):
        _shift = 0 if _t == U8 else -128
        _spec = _stem if _t == U8 else f"{_stem}_quant8_signed"
        for _k, (_example, (_in0, _in1)) in enumerate(_CMP_INPUTS.items()):
            _literal = _CMP_LITERAL.get((_op, _t))
            _expected = (_literal[_k] if _literal is not None
                         else _func(_real(*_in0), _real(*_in1)))
            add(f"{_stem}_nnapi_{_spec}_{_example}", _op,
                (q(_t, np.add(_in0[0], _shift), _in0[1], _in0[2] + _shift),
                 q(_t, np.add(_in1[0], _shift), _in1[1], _in1[2] + _shift)),
                (out(T.TENSOR_BOOL8, (len(_expected),), _expected),))

# -- SELECT -----------------------------------------------------------------------------------

# select_v1_2.mod.py (V1_2): the float examples with the quant8 variation input1 (1.5, 129),
# input2 (0.5, 127), output (1.0, 128): both value inputs are requantised to the output's.
# select_quant8_signed (V1_3) is the same with the zero points - 128.
for _suffix, _sel_dims, _cond, _a, _b, _sel_out in (
        ("one_dim", (3,), [True, False, True], [1, 2, 3], [4, 5, 6], [1, 5, 3]),
        ("two_dim", (2, 2), [False, True, False, True], [1, 2, 3, 4], [5, 6, 7, 8],
         [5, 2, 7, 4]),
        ("five_dim", (2, 1, 2, 1, 2), [True, False] * 4, list(range(1, 9)),
         list(range(9, 17)), [1, 10, 3, 12, 5, 14, 7, 16])):
    for _t, _shift in ((U8, 0), (S8, -128)):
        _name = (f"select_nnapi_select_v1_2_{_suffix}_quant8" if _t == U8
                 else f"select_nnapi_select_quant8_signed_{_suffix}")
        add(_name, Op.SELECT,
            (b8(np.reshape(_cond, _sel_dims)),
             from_real(_t, _arr(_a, _sel_dims), 1.5, 129 + _shift),
             from_real(_t, _arr(_b, _sel_dims), 0.5, 127 + _shift)),
            (out_from_real(_t, _arr(_sel_out, _sel_dims), 1.0, 128 + _shift),))

# -- QUANTIZE, DEQUANTIZE, CAST ---------------------------------------------------------------

# quantize_quant8_signed (V1_3, example 1): 300 values of linspace(-10, 10) into scale 1, zero
# point -128: clamp(round(x / scale) + zero point) as the generator quantises them.
_LINSPACE = np.linspace(-10, 10, 300)
add("quantize_nnapi_quantize_quant8_signed", Op.QUANTIZE, (f32(_LINSPACE),),
    (q_out(S8, [max(-128, min(127, round(v) - 128)) for v in _LINSPACE], 1.0, -128),),
    skip=("float16",))
# Own: halves round away from zero (C's round), not to even; saturation at both ends.
add("quantize_quant8_signed_ties", Op.QUANTIZE,
    (f32([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -300.0, 300.0]),),
    (q_out(S8, [-3, -2, -1, 1, 2, 3, -128, 127], 1.0, 0),), tolerance=EXACT)
add("quantize_quant8_ties", Op.QUANTIZE, (f32([-0.5, 0.5, 1.5, 2.5, 300.0]),),
    (q_out(U8, [9, 11, 12, 13, 255], 1.0, 10),), tolerance=EXACT)

# dequantize_quant8_signed (V1_3): examples 1 and "1d_quant8_asymm".
add("dequantize_nnapi_dequantize_quant8_signed", Op.DEQUANTIZE,
    (q(S8, [-128, -96, 0, 127], 1.0, -128, dims=(1, 2, 2, 1)),),
    (out(T.TENSOR_FLOAT32, (1, 2, 2, 1), _arr([0.0, 32.0, 128.0, 255.0], (1, 2, 2, 1))),))
add("dequantize_nnapi_dequantize_quant8_signed_1d_quant8_asymm", Op.DEQUANTIZE,
    (q(S8, [-128, -127, -126, -125, -124, 123, 124, 125, 126, 127], 0.5, -1),),
    (out(T.TENSOR_FLOAT32, (10,), [-63.5, -63, -62.5, -62, -61.5, 62, 62.5, 63, 63.5, 64]),))

# cast.mod.py (V1_2): TENSOR_QUANT8_ASYMM (scale 4, zero point 100, ignored) to and from
# TENSOR_FLOAT32 / TENSOR_INT32 / itself, on [1..6]; the TENSOR_FLOAT16 pairs are the float16
# variants of the float32 ones.
_CAST_DATA = [[1, 2, 3], [4, 5, 6]]
for _src_name, _src in (("float32", f32(_CAST_DATA)), ("int32", i32(_CAST_DATA)),
                        ("quant8", q(U8, _CAST_DATA, 4.0, 100))):
    add(f"cast_nnapi_cast_{_src_name}_to_quant8", Op.CAST, (_src,),
        (q_out(U8, _CAST_DATA, 4.0, 100),))
for _dst_name, _dst in (("float32", T.TENSOR_FLOAT32), ("int32", T.TENSOR_INT32)):
    add(f"cast_nnapi_cast_quant8_to_{_dst_name}", Op.CAST, (q(U8, _CAST_DATA, 4.0, 100),),
        (out(_dst, (2, 3), _CAST_DATA),))
# Own: to TENSOR_QUANT8_ASYMM clamps to [0, 255] then truncates toward zero (NNAPI's Cast);
# the other quantised types cast to themselves only, copying the values.
add("cast_float32_to_quant8_clamps", Op.CAST,
    (f32([-300.0, -1.5, -0.5, 0.7, 1.9, 254.9, 255.5, 1000.0]),),
    (q_out(U8, [0, 0, 0, 0, 1, 254, 255, 255], 1.0, 0),))
add("cast_int32_to_quant8_clamps", Op.CAST, (i32([-5, 0, 255, 256, 100000]),),
    (q_out(U8, [0, 0, 255, 255, 255], 1.0, 0),))
for _t, _values, _scale, _zp in ((S8, [-128, -1, 0, 127], 0.5, -3),
                                 (T.TENSOR_QUANT8_SYMM, [-127, 0, 5, 127], 0.25, 0),
                                 (T.TENSOR_QUANT16_ASYMM, [0, 1, 40000, 65535], 0.125, 7),
                                 (T.TENSOR_QUANT16_SYMM, [-32768, -1, 0, 32767], 2.0, 0)):
    add(f"cast_{_t.name.lower()}_identity", Op.CAST, (q(_t, _values, _scale, _zp),),
        (q_out(_t, _values, _scale, _zp),))
