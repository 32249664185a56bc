"""Conformance cases transcribed from NNAPI's published test specs (literal expected values).

Element-wise arithmetic, unary math, comparisons, logical ops, SELECT, activations and type
conversions. Each case names its spec file: ``runtime/test/specs/<version>/<stem>.mod.py`` of
AOSP ``packages/modules/NeuralNetworks`` (formerly ``frameworks/ml/nn``). Files marked "nnfw"
are NNAPI-format specs of Samsung's ONE runtime (``tests/nnapi/specs``), used where the AOSP
file was not available; files marked "via ONE" are AOSP specs as copied into that repository.
The softmax / normalisation vectors live in :mod:`nnrt.testing.cases.nnapi_elementwise_norm`.

Only the test vectors are transcribed. Where a spec generates its data with a one-line formula
(``(i - 60) / 10 for i in range(120)``), the formula is kept; its expected values then follow
the spec's own formula. The spec's float16 / relaxed variations are nnrt's automatic variants;
its int32 variations are written out as explicit TENSOR_INT32 cases.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.cases.nnapi_elementwise_norm import CASES as _NORM_CASES
from nnrt.testing.spec import Arg, OpCase, b8, f16, f32, i32, i32s, out, tensor

CASES: list[OpCase] = []


def _add(name: str, op: Op, inputs: tuple[Arg, ...], outputs: tuple[Arg, ...],
         **kw: Any) -> None:
    CASES.append(OpCase(name, op, inputs, outputs, **kw))


def _arr(values: Any, dims: tuple[int, ...]) -> np.ndarray[Any, Any]:
    return np.asarray(values, dtype=np.float64).reshape(dims)


# -- ADD, SUB, MUL, DIV -----------------------------------------------------------------------

# add_v1_2.mod.py (V1_2), TENSOR_FLOAT16 only: 2e-23 and 1e-4 vanish next to 1 in float16.
_add("add_nnapi_add_v1_2", Op.ADD,
     (f16([1.0009765625, 1.0, 2.5]), f16([2e-23, 0.0001, 3.5]), i32s(0)),
     (out(T.TENSOR_FLOAT16, (3,), [1.0009765625, 1.0, 6.0]),))
_add("add_nnapi_add_v1_2_broadcast", Op.ADD,
     (f16([[1, 2]]), f16([[1, 2], [3, 4]]), i32s(0)),
     (out(T.TENSOR_FLOAT16, (2, 2), [[2, 4], [4, 6]]),))

# mul_v1_2.mod.py (V1_2), TENSOR_FLOAT16.
_add("mul_nnapi_mul_v1_2", Op.MUL,
     (f16([1.0009765625, 1.0, 2.5]), f16([2, 0.0001, 3.5]), i32s(0)),
     (out(T.TENSOR_FLOAT16, (3,), [2.001953125, 0.0001000165, 8.75]),))
_add("mul_nnapi_mul_v1_2_broadcast", Op.MUL,
     (f16([[1, 2]]), f16([[1, 2], [3, 4]]), i32s(0)),
     (out(T.TENSOR_FLOAT16, (2, 2), [[1, 4], [3, 8]]),))

# div_v1_2.mod.py (V1_2), TENSOR_FLOAT16.
_add("div_nnapi_div_v1_2", Op.DIV,
     (f16([2.001953125, 0.0001000165, 8.75]), f16([2, 0.0001, 3.5]), i32s(0)),
     (out(T.TENSOR_FLOAT16, (3,), [1.0009765625, 1.0, 2.5]),))
_add("div_nnapi_div_v1_2_broadcast", Op.DIV,
     (f16([[1, 4], [3, 8]]), f16([[1, 2]]), i32s(0)),
     (out(T.TENSOR_FLOAT16, (2, 2), [[1, 2], [3, 4]]),))

# div_int32.mod.py (V1_3): integer DIV rounds toward -infinity; {2, 2, 4, 6} of every
# dividend -6..9 against divisors -3, -2, -1, 1, 2, 3.
_DIV_QUOTIENTS = [
    [2, 3, 6, -6, -3, -2], [1, 2, 5, -5, -3, -2], [1, 2, 4, -4, -2, -2], [1, 1, 3, -3, -2, -1],
    [0, 1, 2, -2, -1, -1], [0, 0, 1, -1, -1, -1], [0, 0, 0, 0, 0, 0], [-1, -1, -1, 1, 0, 0],
    [-1, -1, -2, 2, 1, 0], [-1, -2, -3, 3, 1, 1], [-2, -2, -4, 4, 2, 1], [-2, -3, -5, 5, 2, 1],
    [-2, -3, -6, 6, 3, 2], [-3, -4, -7, 7, 3, 2], [-3, -4, -8, 8, 4, 2], [-3, -5, -9, 9, 4, 3],
]
_add("div_nnapi_div_int32", Op.DIV,
     (i32(np.repeat(np.arange(-6, 10), 6).reshape(2, 2, 4, 6)),
      i32(np.tile([-3, -2, -1, 1, 2, 3], 16).reshape(2, 2, 4, 6)), i32s(0)),
     (out(T.TENSOR_INT32, (2, 2, 4, 6), np.reshape(_DIV_QUOTIENTS, (2, 2, 4, 6))),))

# sub_v1_2_broadcast.mod.py (V1_2) with AddAllActivations: {1, 2} - {2, 2}.
_SUB_RAW = [[9.9, 19.8], [9.7, 19.6]]
for _act, _name, _sub_out in ((0, "none", _SUB_RAW), (1, "relu", _SUB_RAW),
                               (2, "relu1", [[1.0, 1.0], [1.0, 1.0]]),
                               (3, "relu6", [[6.0, 6.0], [6.0, 6.0]])):
    _add(f"sub_nnapi_sub_v1_2_broadcast_{_name}", Op.SUB,
         (f32([[10, 20]]), f32([[0.1, 0.2], [0.3, 0.4]]), i32s(_act)),
         (out(T.TENSOR_FLOAT32, (2, 2), _sub_out),))

# -- MAXIMUM, MINIMUM, POW --------------------------------------------------------------------

_MM_A = [1.0, 0.0, -1.0, 11.0, -2.0, -1.44]
_MM_B = [-1.0, 0.0, 1.0, 12.0, -3.0, -1.43]
_MM_BROADCAST_A = [1.0, 0.0, -1.0, -2.0, -1.44, 11.0]
# maximum.mod.py and minimum.mod.py (V1_2).
for _op, _simple, _broadcast in (
        (Op.MAXIMUM, [1.0, 0.0, 1.0, 12.0, -2.0, -1.43], [1.0, 2.0, 0.5, 2.0, 0.5, 11.0]),
        (Op.MINIMUM, [-1.0, 0.0, -1.0, 11.0, -3.0, -1.44], [0.5, 0.0, -1.0, -2.0, -1.44, 2.0])):
    _stem = _op.name.lower()
    _add(f"{_stem}_nnapi_{_stem}_simple", _op,
         (f32(_arr(_MM_A, (3, 1, 2))), f32(_arr(_MM_B, (3, 1, 2)))),
         (out(T.TENSOR_FLOAT32, (3, 1, 2), _arr(_simple, (3, 1, 2))),))
    _add(f"{_stem}_nnapi_{_stem}_broadcast", _op,
         (f32(_arr(_MM_BROADCAST_A, (3, 1, 2))), f32([0.5, 2.0])),
         (out(T.TENSOR_FLOAT32, (3, 1, 2), _arr(_broadcast, (3, 1, 2))),))
# minimum_int32.mod.py (via ONE, V1_2).
_add("minimum_nnapi_minimum_int32", Op.MINIMUM,
     (i32(np.reshape([129, 12, 15, 130, -77, 33], (3, 1, 2))),
      i32(np.reshape([44, 127, -25, 5, 39, 27], (3, 1, 2)))),
     (out(T.TENSOR_INT32, (3, 1, 2), np.reshape([44, 12, -25, 5, -77, 27], (3, 1, 2))),))

# pow.mod.py (V1_2): base {2, 1} = [2, 3] against three exponent shapes.
for _suffix, _exp, _pow_dims, _pow_out in (
        ("1", f32([2.0]), (2, 1), [[4.0], [9.0]]),
        ("2", f32([[2.0, 3.0]]), (2, 2), [[4.0, 8.0], [9.0, 27.0]]),
        ("3", f32(_arr([0.0, 0.5, 1.0, 2.0, 3.0, 4.0], (3, 1, 2))), (3, 2, 2),
         _arr([1.0, 2 ** 0.5, 1.0, 3 ** 0.5, 2.0, 4.0, 3.0, 9.0, 8.0, 16.0, 27.0, 81.0],
              (3, 2, 2)))):
    _add(f"pow_nnapi_pow_{_suffix}", Op.POW, (f32([[2.0], [3.0]]), _exp),
         (out(T.TENSOR_FLOAT32, _pow_dims, _pow_out),))

# -- unary math -------------------------------------------------------------------------------

# abs.mod.py and neg.mod.py (V1_2; neg via ONE): {1, 2, 3, 4, 5} of (i - 60) / 10.
_SIGNED = _arr([(i - 60) / 10 for i in range(120)], (1, 2, 3, 4, 5))
_add("abs_nnapi_abs", Op.ABS, (f32(_SIGNED),),
     (out(T.TENSOR_FLOAT32, _SIGNED.shape, np.abs(_SIGNED)),))
_add("neg_nnapi_neg", Op.NEG, (f32(_SIGNED),),
     (out(T.TENSOR_FLOAT32, _SIGNED.shape, -_SIGNED),))
# rsqrt.mod.py (V1_2, via ONE): {1, 2, 3, 4, 5} of (i + 1) / 10.
_POSITIVE = [(i + 1) / 10 for i in range(120)]
_add("rsqrt_nnapi_rsqrt", Op.RSQRT, (f32(_arr(_POSITIVE, (1, 2, 3, 4, 5))),),
     (out(T.TENSOR_FLOAT32, (1, 2, 3, 4, 5),
          _arr([1.0 / math.sqrt(v) for v in _POSITIVE], (1, 2, 3, 4, 5))),))

# floor.mod.py (V1_0).
_add("floor_nnapi_floor", Op.FLOOR,
     (f32(_arr([-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 10.2], (1, 2, 2, 2))),),
     (out(T.TENSOR_FLOAT32, (1, 2, 2, 2),
          _arr([-2.0, -1.0, -1.0, 0.0, 0.0, 1.0, 1.0, 10.0], (1, 2, 2, 2))),))

# exp_2D_float_nnfw.mod.py. exp(19.12) overflows float16, so no float16 variant.
_EXP_IN = [3.123456789123456789, 4.123456789123456789, 5.123456789123456789,
           6.123456789123456789, 7.123456789123456789, 8.123456789123456789,
           9.123456789123456789, 1.123456789123456789, 2.123456789123456789,
           18.123456789123456789, 19.123456789123456789, 11.123456789123456789]
_EXP_OUT = [2.2724796e+01, 6.1772419e+01, 1.6791484e+02, 4.5643985e+02, 1.2407322e+03,
            3.3726597e+03, 9.1678398e+03, 3.0754671e+00, 8.3599854e+00, 7.4287776e+07,
            2.0193510e+08, 6.7741680e+04]
_add("exp_nnapi_exp_2d_float_nnfw", Op.EXP, (f32(_arr(_EXP_IN, (3, 4))),),
     (out(T.TENSOR_FLOAT32, (3, 4), _arr(_EXP_OUT, (3, 4))),), skip=("float16",))

# log_4D_float_nnfw.mod.py.
_add("log_nnapi_log_4d_float_nnfw", Op.LOG,
     (f32(_arr([12.0, 36.0, 2.0, 90, 1.0, 0.012, 0.001, 5], (2, 1, 2, 2))),),
     (out(T.TENSOR_FLOAT32, (2, 1, 2, 2),
          _arr([2.4849066497880004, 3.58351893845611, 0.6931471805599453, 4.499809670330265,
                0.0, -4.422848629194137, -6.907755278982137, 1.6094379124341003],
               (2, 1, 2, 2))),))

# sin_4D_float_nnfw.mod.py. 36.1 is not a float16 value (36.09375), and sin moves by 5e-3
# between the two, so no float16 variant.
_add("sin_nnapi_sin_4d_float_nnfw", Op.SIN,
     (f32(_arr([12.0, 36.1, 2.0, 90, 1.0, 0.012, 0.001, 5], (2, 1, 2, 2))),),
     (out(T.TENSOR_FLOAT32, (2, 1, 2, 2),
          _arr([-0.536572918, -0.999599143, 0.909297427, 0.893996664, 0.841470985,
                0.011999712, 0.001, -0.958924275], (2, 1, 2, 2))),), skip=("float16",))

# sqrt_4D_float_nnfw.mod.py (nnfw).
_add("sqrt_nnapi_sqrt_4d_float_nnfw", Op.SQRT,
     (f32(_arr([36, 90, 43, 36, 2, 22, 19, 10, 9, 80, 40, 90, 15, 56, 18, 12], (2, 2, 2, 2))),),
     (out(T.TENSOR_FLOAT32, (2, 2, 2, 2),
          _arr([6.0, 9.48683298, 6.55743852, 6.0, 1.41421356, 4.69041576, 4.35889894,
                3.16227766, 3.0, 8.94427191, 6.32455532, 9.48683298, 3.87298335, 7.48331477,
                4.24264069, 3.46410162], (2, 2, 2, 2))),))

# -- comparisons ------------------------------------------------------------------------------

# equal / not_equal / greater / greater_equal / less / less_equal .mod.py (V1_2): "simple"
# [5, 7, 10] vs [10, 7, 5] and "broadcast" {2, 1} [5, 10] vs {2} [10, 5], with the spec's
# int32 variation written out.
_COMPARE: dict[Op, tuple[list[bool], list[bool]]] = {
    Op.EQUAL: ([False, True, False], [False, True, True, False]),
    Op.NOT_EQUAL: ([True, False, True], [True, False, False, True]),
    Op.GREATER: ([False, False, True], [False, False, False, True]),
    Op.GREATER_EQUAL: ([False, True, True], [False, True, True, True]),
    Op.LESS: ([True, False, False], [True, False, False, False]),
    Op.LESS_EQUAL: ([True, True, False], [True, True, True, False]),
}
for _op, (_simple_b, _broadcast_b) in _COMPARE.items():
    _stem = _op.name.lower()
    for _kind, _make in (("", f32), ("_int32", i32)):
        _add(f"{_stem}_nnapi_{_stem}_simple{_kind}", _op,
             (_make([5, 7, 10]), _make([10, 7, 5])), (out(T.TENSOR_BOOL8, (3,), _simple_b),))
        _add(f"{_stem}_nnapi_{_stem}_broadcast{_kind}", _op,
             (_make([[5], [10]]), _make([10, 5])),
             (out(T.TENSOR_BOOL8, (2, 2), np.reshape(_broadcast_b, (2, 2))),))

# -- LOGICAL_AND, LOGICAL_OR, LOGICAL_NOT, SELECT ---------------------------------------------

# logical_and.mod.py (V1_2, via ONE).
_add("logical_and_nnapi_logical_and_simple", Op.LOGICAL_AND,
     (b8(np.reshape([True, False, False, True], (1, 1, 1, 4))),
      b8(np.reshape([True, False, True, False], (1, 1, 1, 4)))),
     (out(T.TENSOR_BOOL8, (1, 1, 1, 4), np.reshape([True, False, False, False], (1, 1, 1, 4))),))
_add("logical_and_nnapi_logical_and_broadcast", Op.LOGICAL_AND,
     (b8(np.reshape([True, False, False, True], (1, 1, 1, 4))), b8([[True]])),
     (out(T.TENSOR_BOOL8, (1, 1, 1, 4), np.reshape([True, False, False, True], (1, 1, 1, 4))),))
# logical_or_4D_nnfw.mod.py.
_add("logical_or_nnapi_logical_or_4d_nnfw", Op.LOGICAL_OR,
     (b8(np.reshape([False, False, True, True, False, True, False, True], (2, 1, 2, 2))),
      b8(np.reshape([False, True, False, True, False, False, True, True], (2, 1, 2, 2)))),
     (out(T.TENSOR_BOOL8, (2, 1, 2, 2),
          np.reshape([False, True, True, True, False, True, True, True], (2, 1, 2, 2))),))
# logical_not.mod.py (V1_2, via ONE): rank 5.
_add("logical_not_nnapi_logical_not", Op.LOGICAL_NOT,
     (b8(np.reshape([True, False, False, True], (1, 1, 4, 1, 1))),),
     (out(T.TENSOR_BOOL8, (1, 1, 4, 1, 1),
          np.reshape([False, True, True, False], (1, 1, 4, 1, 1))),))

# select_v1_2.mod.py (V1_2), with the int32 variation written out.
for _suffix, _sel_dims, _cond, _a, _b, _sel_out in (
        ("one_dim", (3,), [True, False, True], [1, 2, 3], [4, 5, 6], [1, 5, 3]),
        ("two_dim", (2, 2), [False, True, False, True], [1, 2, 3, 4], [5, 6, 7, 8],
         [5, 2, 7, 4]),
        ("five_dim", (2, 1, 2, 1, 2), [True, False] * 4, list(range(1, 9)),
         list(range(9, 17)), [1, 10, 3, 12, 5, 14, 7, 16])):
    for _kind, _make, _type in (("", f32, T.TENSOR_FLOAT32), ("_int32", i32, T.TENSOR_INT32)):
        _add(f"select_nnapi_select_v1_2_{_suffix}{_kind}", Op.SELECT,
             (b8(np.reshape(_cond, _sel_dims)), _make(np.reshape(_a, _sel_dims)),
              _make(np.reshape(_b, _sel_dims))),
             (out(_type, _sel_dims, np.reshape(_sel_out, _sel_dims)),))

# -- activations ------------------------------------------------------------------------------

_RELU_IN = _arr([-10.0, -0.5, 0.5, 10.0], (1, 2, 2, 1))
# relu_float_1 (V1_0/V1_1), relu6_float_1 (V1_0) and relu1_v1_2.mod.py (V1_2, float16 TEST 1).
_add("relu_nnapi_relu_float_1", Op.RELU, (f32(_RELU_IN),),
     (out(T.TENSOR_FLOAT32, (1, 2, 2, 1), _arr([0.0, 0.0, 0.5, 10.0], (1, 2, 2, 1))),))
_add("relu6_nnapi_relu6_float_1", Op.RELU6, (f32(_RELU_IN),),
     (out(T.TENSOR_FLOAT32, (1, 2, 2, 1), _arr([0.0, 0.0, 0.5, 6.0], (1, 2, 2, 1))),))
_add("relu1_nnapi_relu1_v1_2", Op.RELU1, (f16(_RELU_IN),),
     (out(T.TENSOR_FLOAT16, (1, 2, 2, 1), _arr([-1.0, -0.5, 0.5, 1.0], (1, 2, 2, 1))),))

# logistic_v1_2.mod.py (V1_2, float16 TEST 1; the same vector is V1_0's float32 example).
_LOGISTIC_IN = _arr([1.0, 2.0, 4.0, 8.0], (1, 2, 2, 1))
_LOGISTIC_OUT = _arr([0.73105859756469727, 0.88079702854156494, 0.9820137619972229,
                      0.99966466426849365], (1, 2, 2, 1))
_add("logistic_nnapi_logistic_v1_2", Op.LOGISTIC, (f16(_LOGISTIC_IN),),
     (out(T.TENSOR_FLOAT16, (1, 2, 2, 1), _LOGISTIC_OUT),))
_add("logistic_nnapi_logistic_float_1", Op.LOGISTIC, (f32(_LOGISTIC_IN),),
     (out(T.TENSOR_FLOAT32, (1, 2, 2, 1), _LOGISTIC_OUT),))

# tanh.mod.py (V1_0) and tanh_v1_2.mod.py (V1_2, float16 TEST 1).
_TANH_IN = _arr([-1, 0, 1, 10], (1, 2, 2, 1))
_TANH_OUT = _arr([-0.761594156, 0, 0.761594156, 0.999999996], (1, 2, 2, 1))
_add("tanh_nnapi_tanh", Op.TANH, (f32(_TANH_IN),),
     (out(T.TENSOR_FLOAT32, (1, 2, 2, 1), _TANH_OUT),))
_add("tanh_nnapi_tanh_v1_2", Op.TANH, (f16(_TANH_IN),),
     (out(T.TENSOR_FLOAT16, (1, 2, 2, 1), _TANH_OUT),))

# hard_swish.mod.py (V1_3), "simple".
_add("hard_swish_nnapi_hard_swish_simple", Op.HARD_SWISH,
     (f32([4.53125, 3.90625, 3.046875, -8.59375, -1.328125, 1.328125, 0.0, -8.515625,
           -8.984375, -0.234375, 0.859375, 9.84375, -0.15625, -8.515625, 8.671875, 4.609375,
           9.21875, -1.796875, 1.171875, 9.375, -8.75, 2.421875, -8.125, -1.09375, -9.609375,
           -1.015625, -9.84375, 2.578125, 4.921875, -5.078125, 5.0, -0.859375, 1.953125,
           -6.640625, -7.8125, 4.453125, -4.453125, -6.875, 0.78125, 0.859375]),),
     (out(T.TENSOR_FLOAT32, (40,),
          [4.53125, 3.90625, 3.046875, 0.0, -0.3700765, 0.9580485, 0.0, 0.0, 0.0, -0.1080322,
           0.5527751, 9.84375, -0.074056, 0.0, 8.671875, 4.609375, 9.21875, -0.3603109,
           0.8148193, 9.375, 0.0, 2.1885173, 0.0, -0.3474935, 0.0, -0.3358968, 0.0, 2.3968506,
           4.921875, 0.0, 5.0, -0.3065999, 1.6123454, 0.0, 0.0, 4.453125, 0.0, 0.0, 0.4923503,
           0.5527751]),))

# elu.mod.py (V1_3).
_add("elu_nnapi_elu_alpha_one", Op.ELU,
     (f32([0, -6, 2, -4, 3, -2, 10, -0.1]), Arg(T.FLOAT32, (), 1.0)),
     (out(T.TENSOR_FLOAT32, (8,),
          [0.0, -0.997521, 2.0, -0.981684, 3.0, -0.864665, 10.0, -0.0951626]),))
_add("elu_nnapi_elu_alpha01", Op.ELU,
     (f32([[-0.2, -0.1], [0.0, 0.1]]), Arg(T.FLOAT32, (), 0.1)),
     (out(T.TENSOR_FLOAT32, (2, 2), [[-0.018127, -0.009516], [0, 0.1]]),))
_add("elu_nnapi_elu_alpha10", Op.ELU,
     (f32(_arr([-10, -5, 0, 5], (2, 1, 1, 1, 2))), Arg(T.FLOAT32, (), 10.0)),
     (out(T.TENSOR_FLOAT32, (2, 1, 1, 1, 2), _arr([-9.999546, -9.932620, 0, 5],
                                                  (2, 1, 1, 1, 2))),))

# prelu.mod.py (V1_2): alpha {1, 1, 3} = [0, 1, 2] broadcast over {1, 2, 2, 3}.
_add("prelu_nnapi_prelu", Op.PRELU,
     (f32(_arr([0, 0, 0, 1, 1, 1, -1, -1, -1, -2, -2, -2], (1, 2, 2, 3))),
      f32(_arr([0, 1, 2], (1, 1, 3)))),
     (out(T.TENSOR_FLOAT32, (1, 2, 2, 3),
          _arr([0, 0, 0, 1, 1, 1, 0, -1, -2, 0, -2, -4], (1, 2, 2, 3))),))

# -- CAST, QUANTIZE, DEQUANTIZE ---------------------------------------------------------------

# cast.mod.py (V1_2): every pair of TENSOR_FLOAT32 / TENSOR_INT32 (the float16 variant gives
# the TENSOR_FLOAT16 ones; float16 <-> float32 is in nnapi_gaps, the TENSOR_QUANT8_ASYMM pairs
# in nnapi_quant_elementwise).
for _src_name, _src in (("float32", f32), ("int32", i32)):
    for _dst_name, _dst in (("float32", T.TENSOR_FLOAT32), ("int32", T.TENSOR_INT32)):
        _add(f"cast_nnapi_cast_{_src_name}_to_{_dst_name}", Op.CAST,
             (_src([[1, 2, 3], [4, 5, 6]]),), (out(_dst, (2, 3), [[1, 2, 3], [4, 5, 6]]),))

# quantize.mod.py (V1_2): 300 values of linspace(-10, 10) into TENSOR_QUANT8_ASYMM at four
# (scale, zero point) pairs; expected = clamp(round(x / scale) + zero point) as the spec's
# generator quantises its float expectations (no value lands on a rounding tie). No float16
# variant: float16 inputs may land one step away; the spec's TENSOR_FLOAT16 examples, compared
# within NNAPI's one step, are in nnapi_gaps.
_LINSPACE = np.linspace(-10, 10, 300)
for _scale, _zero in ((1.0, 0), (1.0, 1), (0.01, 120), (10.0, 120)):
    _quantized = [max(0, min(255, round(v / _scale) + _zero)) for v in _LINSPACE]
    _add(f"quantize_nnapi_quantize_scale{_scale:g}_zero{_zero}", Op.QUANTIZE,
         (f32(_LINSPACE),),
         (out(T.TENSOR_QUANT8_ASYMM, (300,), _quantized, scale=_scale, zero_point=_zero),),
         skip=("float16",))

# dequantize_v1_2.mod.py (V1_2).
_Q_DATA = [0, 1, 2, 3, 4, 251, 252, 253, 254, 255]
_Q_OUT = [-63.5, -63, -62.5, -62, -61.5, 62, 62.5, 63, 63.5, 64]
_S_DATA = [-128, -127, -126, -125, 124, 125, 126, 127]
_S_OUT = [-64, -63.5, -63, -62.5, 62, 62.5, 63, 63.5]
for _suffix, _in, _dq_out in (
        ("1d_quant8_asymm", tensor(_Q_DATA, T.TENSOR_QUANT8_ASYMM, scale=0.5, zero_point=127),
         _Q_OUT),
        ("2d_quant8_asymm", tensor(np.reshape(_Q_DATA, (2, 5)), T.TENSOR_QUANT8_ASYMM,
                                   scale=0.5, zero_point=127), np.reshape(_Q_OUT, (2, 5))),
        ("3d_quant8_symm", tensor(np.reshape(_S_DATA, (2, 2, 2)), T.TENSOR_QUANT8_SYMM,
                                  scale=0.5), np.reshape(_S_OUT, (2, 2, 2))),
        ("4d_quant8_symm", tensor(np.reshape(_S_DATA, (2, 1, 2, 2)), T.TENSOR_QUANT8_SYMM,
                                  scale=0.5), np.reshape(_S_OUT, (2, 1, 2, 2)))):
    _add(f"dequantize_nnapi_dequantize_v1_2_{_suffix}", Op.DEQUANTIZE, (_in,),
         (out(T.TENSOR_FLOAT32, _in.dims, _dq_out),))

_PC_DATA = np.reshape(list(range(-128, -116)) + list(range(116, 128)), (2, 3, 4))
for _suffix, _dim, _scales, _pc_out in (
        ("3d_per_channel_first_dim", 0, (2.0, 0.5),
         list(range(-256, -233, 2)) + [58 + 0.5 * k for k in range(12)]),
        ("3d_per_channel_second_dim", 1, (2.0, 1.0, 0.5),
         [-256, -254, -252, -250, -124, -123, -122, -121, -60, -59.5, -59, -58.5,
          232, 234, 236, 238, 120, 121, 122, 123, 62, 62.5, 63, 63.5])):
    _pc = replace(tensor(_PC_DATA, T.TENSOR_QUANT8_SYMM_PER_CHANNEL),
                  channel_quant=(_dim, _scales))
    _add(f"dequantize_nnapi_dequantize_v1_2_{_suffix}", Op.DEQUANTIZE, (_pc,),
         (out(T.TENSOR_FLOAT32, (2, 3, 4), np.reshape(_pc_out, (2, 3, 4))),))

# dequantize_v1_2.mod.py (V1_2), TENSOR_QUANT8_ASYMM to TENSOR_FLOAT16.
_add("dequantize_nnapi_dequantize_v1_2_float16", Op.DEQUANTIZE,
     (tensor(np.reshape([0, 32, 128, 255], (1, 2, 2, 1)), T.TENSOR_QUANT8_ASYMM, scale=1.0),),
     (out(T.TENSOR_FLOAT16, (1, 2, 2, 1), _arr([0.0, 32.0, 128.0, 255.0], (1, 2, 2, 1))),))

CASES.extend(_NORM_CASES)
