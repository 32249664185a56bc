"""NNAPI spec vectors for operation-and-type variants the other case files left without any.

Found by :func:`nnrt.testing.coverage.vector_coverage` (the variants NNAPI 1.3 defines that had
no case from NNAPI's published vectors). Each case is one example of an AOSP spec file, named in
a comment: ``runtime/test/specs/<version>/<stem>.mod.py`` (the V1_0 / V1_1 ones as copied into
Samsung's ONE repository, ``tests/nnapi/specs``; V1_1's ``div.mod.py`` is ``div_.mod.py``
there) or, for V1_3 specs only at hand as the generator's output,
``generated/spec_V1_3/<stem>.example.cpp``. Case names are ``<op>_nnapi_<stem>[_<example>]``.

Only vectors are transcribed. A spec's one-line generator formula is kept as the formula. A
spec's ``"int32"`` variation converts its float values the way the generator does (rounded half
to even, :func:`~nnrt.testing.spec.spec_quantize` with TENSOR_INT32), and its quantised
``DataTypeConverter`` variations quantise inputs and expected outputs with ``spec_quantize`` —
both checked against the generated files where noted.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nnrt.model.builder import ModelBuilder
from nnrt.model.model import Model
from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.cases.control import subgraph
from nnrt.testing.cases.nnapi_elementwise_norm import RANK_AXES, dims_and_axis
from nnrt.testing.spec import (
    Arg,
    OpCase,
    b8,
    bools,
    f16,
    f32,
    f32s,
    i32,
    i32s,
    out,
    quant,
    spec_quantize,
)

CASES: list[OpCase] = []

U8, S8 = T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED
F32, F16, I32 = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32
Array = np.ndarray[Any, Any]


def _add(name: str, op: Op, inputs: tuple[Arg, ...], outputs: tuple[Arg, ...],
         **kw: Any) -> None:
    CASES.append(OpCase(name, op, inputs, outputs, **kw))


def _int32(values: Any) -> Array:
    """A spec's float values as its ``"int32"`` variation feeds them."""
    return np.asarray(spec_quantize(values, I32, 0.0))


def _q(type_: T, real: Any, scale: float, zero_point: int) -> Arg:
    """A quantised input holding a spec's real values quantised by the generator."""
    return quant(spec_quantize(real, type_, scale, zero_point), type_, scale, zero_point)


def _q_out(type_: T, real: Any, scale: float, zero_point: int) -> Arg:
    """A quantised output expecting a spec's real values quantised by the generator."""
    values = spec_quantize(real, type_, scale, zero_point)
    return out(type_, np.shape(values), values, scale=scale, zero_point=zero_point)


def _q_lit(type_: T, values: Any, scale: float, zero_point: int, dims: tuple[int, ...],
           *, output: bool = False) -> Arg:
    """Literal quantised values (V1_0 specs and the V1_3 generated files)."""
    data = np.reshape(values, dims)
    if output:
        return out(type_, dims, data, scale=scale, zero_point=zero_point)
    return quant(data, type_, scale, zero_point)


# -- ADD, SUB, MUL, DIV -----------------------------------------------------------------------

# add.mod.py (V1_0, via ONE).
_add("add_nnapi_add", Op.ADD, (f32([1.0, 2.0]), f32([3.0, 4.0]), i32s(0)),
     (out(F32, (2,), [4.0, 6.0]),))
# mul_relu.mod.py (V1_0, via ONE): RELU clamps the two negative products.
_add("mul_nnapi_mul_relu", Op.MUL,
     (f32(np.reshape([2, -4, 8, -16], (1, 2, 2, 1))),
      f32(np.reshape([32, -16, -8, 4], (1, 2, 2, 1))), i32s(1)),
     (out(F32, (1, 2, 2, 1), np.reshape([64, 64, 0, 0], (1, 2, 2, 1))),))
# div.mod.py (V1_1, via ONE as div_.mod.py).
_add("div_nnapi_div", Op.DIV,
     (f32(np.reshape([2.0, -4.0, 8.0, -16.0], (1, 2, 2, 1))),
      f32(np.reshape([2.0, -2.0, -4.0, 4.0], (1, 2, 2, 1))), i32s(0)),
     (out(F32, (1, 2, 2, 1), np.reshape([1.0, 2.0, -2.0, -4.0], (1, 2, 2, 1))),))

# add_int32 / mul_int32 / sub_int32 (V1_3, generated files).
_add("add_nnapi_add_int32", Op.ADD, (i32([[1, 2]]), i32([[3, 4]]), i32s(0)),
     (out(I32, (1, 2), [[4, 6]]),))
_INT_A = np.reshape([2, -4, 8, -16], (1, 2, 2))
_add("mul_nnapi_mul_int32", Op.MUL,
     (i32(_INT_A), i32(np.reshape([32, -16, -8, 4], (1, 2, 2))), i32s(0)),
     (out(I32, (1, 2, 2), np.reshape([64, 64, -64, -64], (1, 2, 2))),))
_add("sub_nnapi_sub_int32", Op.SUB,
     (i32(_INT_A), i32(np.reshape([2, -2, -4, 4], (1, 2, 2))), i32s(0)),
     (out(I32, (1, 2, 2), np.reshape([0, -2, 12, -20], (1, 2, 2))),))

# sub_v1_2.mod.py (V1_2), its "quant8" model: {2, 4, 16, 2} at scale 0.5, zero point 0; input 0
# is 0..255, input 1 the same values shuffled with Python's random.seed(0) (the literal list
# below is the generated file's), output max(0, a - b).
_SHUFFLED = [
    1, 88, 132, 233, 162, 39, 185, 237, 238, 159, 164, 76, 59, 144, 97, 94, 214, 196, 213, 221,
    65, 116, 49, 222, 224, 63, 51, 118, 157, 106, 53, 45, 191, 58, 253, 71, 148, 254, 131, 40,
    43, 57, 13, 128, 178, 30, 46, 226, 183, 67, 243, 44, 6, 192, 172, 29, 32, 210, 82, 170, 142,
    19, 231, 127, 161, 146, 168, 195, 105, 69, 249, 246, 26, 151, 215, 190, 92, 245, 86, 4, 112,
    109, 11, 50, 99, 96, 176, 117, 95, 244, 198, 177, 87, 169, 68, 153, 229, 5, 110, 89, 218,
    137, 12, 7, 104, 54, 119, 21, 101, 155, 28, 211, 123, 34, 93, 2, 166, 230, 108, 42, 209, 75,
    187, 14, 78, 41, 251, 240, 189, 115, 135, 252, 236, 60, 202, 70, 134, 100, 174, 9, 38, 33,
    22, 17, 121, 201, 8, 239, 182, 47, 167, 179, 147, 173, 98, 152, 216, 203, 73, 150, 165, 223,
    206, 138, 188, 199, 31, 74, 205, 242, 27, 125, 248, 81, 20, 255, 114, 139, 36, 61, 56, 145,
    48, 16, 225, 83, 219, 62, 85, 126, 208, 0, 160, 171, 181, 102, 184, 23, 3, 140, 15, 250,
    133, 113, 241, 141, 52, 163, 156, 80, 111, 90, 220, 143, 120, 84, 175, 217, 18, 186, 25, 79,
    37, 154, 207, 180, 136, 64, 204, 158, 24, 193, 234, 72, 35, 129, 55, 232, 228, 149, 91, 122,
    77, 212, 200, 235, 103, 124, 130, 247, 66, 10, 107, 227, 194, 197]
_SUB_DIMS = (2, 4, 16, 2)
_add("sub_nnapi_sub_v1_2_quant8", Op.SUB,
     (_q_lit(U8, range(256), 0.5, 0, _SUB_DIMS), _q_lit(U8, _SHUFFLED, 0.5, 0, _SUB_DIMS),
      i32s(0)),
     (_q_lit(U8, [max(0, a - b) for a, b in zip(range(256), _SHUFFLED, strict=True)], 0.5, 0,
             _SUB_DIMS, output=True),))

# -- MAXIMUM, unary math ----------------------------------------------------------------------

# maximum.mod.py (V1_2): the "int32" variation of its "simple" and "broadcast" examples.
for _suffix, (_a, _b, _dims_b, _max) in {
        "simple": ([1.0, 0.0, -1.0, 11.0, -2.0, -1.44], [-1.0, 0.0, 1.0, 12.0, -3.0, -1.43],
                   (3, 1, 2), [1.0, 0.0, 1.0, 12.0, -2.0, -1.43]),
        "broadcast": ([1.0, 0.0, -1.0, -2.0, -1.44, 11.0], [0.5, 2.0], (2,),
                      [1.0, 2.0, 0.5, 2.0, 0.5, 11.0])}.items():
    _add(f"maximum_nnapi_maximum_{_suffix}_int32", Op.MAXIMUM,
         (i32(np.reshape(_int32(_a), (3, 1, 2))), i32(np.reshape(_int32(_b), _dims_b))),
         (out(I32, (3, 1, 2), np.reshape(_int32(_max), (3, 1, 2))),))

# abs_int32 (V1_3, generated file): -60..58 and -16777217, rank 5.
_ABS_IN = np.reshape([*range(-60, 59), -16777217], (1, 2, 3, 4, 5))
_add("abs_nnapi_abs_int32", Op.ABS, (i32(_ABS_IN),), (out(I32, _ABS_IN.shape, np.abs(_ABS_IN)),))
# neg.mod.py (V1_2): its "int32" variation of (i - 60) / 10 (checked against the generated
# file: -4.5 becomes -4, -3.5 becomes -4).
_SIGNED = [(i - 60) / 10 for i in range(120)]
_add("neg_nnapi_neg_int32", Op.NEG, (i32(np.reshape(_int32(_SIGNED), (1, 2, 3, 4, 5))),),
     (out(I32, (1, 2, 3, 4, 5), np.reshape(_int32([-x for x in _SIGNED]), (1, 2, 3, 4, 5))),))
# exp.mod.py and sin.mod.py (V1_2, generated files): (i - 60) / 10 at rank 5 with the relaxed
# and float16 variations; float16 inputs keep the float64 expectations (within float16's
# tolerance, as NNAPI's test compares them).
for _name, _fn in (("exp", math.exp), ("sin", math.sin)):
    _add(f"{_name}_nnapi_{_name}", Op.EXP if _name == "exp" else Op.SIN,
         (f32(np.reshape(_SIGNED, (1, 2, 3, 4, 5))),),
         (out(F32, (1, 2, 3, 4, 5), np.reshape([_fn(x) for x in _SIGNED], (1, 2, 3, 4, 5))),))

# -- RELU1, RELU6 -----------------------------------------------------------------------------

# relu1_float_1.mod.py and relu1_float_2.mod.py (V1_0, via ONE); the latter's formula.
_add("relu1_nnapi_relu1_float_1", Op.RELU1, (f32(np.reshape([-10.0, -0.5, 0.5, 10.0],
                                                             (1, 2, 2, 1))),),
     (out(F32, (1, 2, 2, 1), np.reshape([-1.0, -0.5, 0.5, 1.0], (1, 2, 2, 1))),))
_R1_DIMS = (2, 30, 24, 2)
_R1_IN = [x * (x % 2 - 0.5) * 0.002 for x in range(math.prod(_R1_DIMS))]
_add("relu1_nnapi_relu1_float_2", Op.RELU1, (f32(np.reshape(_R1_IN, _R1_DIMS)),),
     (out(F32, _R1_DIMS, np.reshape([min(max(x, -1.0), 1.0) for x in _R1_IN], _R1_DIMS)),))

# relu6_quant8_signed (V1_3, generated file): examples 1 and 2, scale 0.5, zero point -128.
for _suffix, _r6_in, _r6_out in (("", [-128, -127, -117, -116], [-128, -127, -117, -116]),
                                 ("_2", [-115, -114, 126, 127], [-116] * 4)):
    _add(f"relu6_nnapi_relu6_quant8_signed{_suffix}", Op.RELU6,
         (_q_lit(S8, _r6_in, 0.5, -128, (1, 2, 2, 1)),),
         (_q_lit(S8, _r6_out, 0.5, -128, (1, 2, 2, 1), output=True),))

# -- L2_NORMALIZATION -------------------------------------------------------------------------

# l2_normalization_v1_2.mod.py and l2_normalization_axis.mod.py (V1_2): the quant8 variation
# of their float examples (input scale 0.1, zero point 32; output 1/128, 128), at the ranks and
# axes the float cases use (nnapi_elementwise_norm), and the axis spec's literal "corner_case".
_L2_X = np.reshape([0, 3, 4, 3, 0, 4, 8, 6, 0, 12, 0, 9, 9, 12, 20, 12, 15, 16, 20, 9, 12,
                    16, 15, 12], (2, 2, 2, 3)).astype(np.float64)
_L2_Y = np.reshape([0.00, 0.60, 0.80, 0.60, 0.00, 0.80, 0.80, 0.60, 0.00, 0.80, 0.00, 0.60,
                    0.36, 0.48, 0.80, 0.48, 0.60, 0.64, 0.80, 0.36, 0.48, 0.64, 0.60, 0.48],
                   (2, 2, 2, 3))
for _stem, _pairs in (("v1_2", [(1, None), (2, None), (3, None)]), ("axis", RANK_AXES)):
    for _rank, _axis in _pairs:
        _xs = dims_and_axis(_L2_X, _rank, -1 if _axis is None else _axis)
        _ys = dims_and_axis(_L2_Y, _rank, -1 if _axis is None else _axis)
        _tag = "noaxis" if _axis is None else f"axis{_axis}".replace("-", "m")
        _add(f"l2_normalization_nnapi_l2_normalization_{_stem}_quant8_rank{_rank}_{_tag}",
             Op.L2_NORMALIZATION,
             (_q(U8, _xs, 0.1, 32), *(() if _axis is None else (i32s(_axis),))),
             (_q_out(U8, _ys, 1 / 128, 128),))
_add("l2_normalization_nnapi_l2_normalization_axis_corner_case", Op.L2_NORMALIZATION,
     (_q_lit(U8, [245, 247, 246], 0.904414, 246, (3, 1)), i32s(-1)),
     (_q_lit(U8, [0, 255, 128], 0.0078125, 128, (3, 1), output=True),))

# -- CAST, QUANTIZE ---------------------------------------------------------------------------

# cast.mod.py (V1_2): the float16 <-> float32 pairs of its every-pair product, on [1..6].
_CAST = [[1, 2, 3], [4, 5, 6]]
_add("cast_nnapi_cast_float16_to_float32", Op.CAST, (f16(_CAST),), (out(F32, (2, 3), _CAST),))
_add("cast_nnapi_cast_float32_to_float16", Op.CAST, (f32(_CAST),), (out(F16, (2, 3), _CAST),))
# cast_identity (V1_3, generated file): the types that only cast to themselves (its quant8
# variants at scale 4, zero point 100; the symmetric ones at zero point 0). The file holds no
# TENSOR_QUANT8_ASYMM_SIGNED example.
_add("cast_nnapi_cast_identity_bool8", Op.CAST,
     (b8([[True, False, True], [False, False, True]]),),
     (out(T.TENSOR_BOOL8, (2, 3), [[True, False, True], [False, False, True]]),))
for _suffix, _t, _zp in (("quant8_symm", T.TENSOR_QUANT8_SYMM, 0),
                         ("quant16_asymm", T.TENSOR_QUANT16_ASYMM, 100),
                         ("quant16_symm", T.TENSOR_QUANT16_SYMM, 0)):
    _add(f"cast_nnapi_cast_identity_{_suffix}", Op.CAST, (_q_lit(_t, _CAST, 4.0, _zp, (2, 3)),),
         (_q_lit(_t, _CAST, 4.0, _zp, (2, 3), output=True),))

# quantize.mod.py (V1_2): its TENSOR_FLOAT16 inputs, 300 values of linspace(-10, 10) rounded
# to float16, against the expectations the generator quantises from the float64 values (a
# float16 input may land one step away: NNAPI's tolerance). quantize_quant8_signed (V1_3,
# generated file) repeats the loop into TENSOR_QUANT8_ASYMM_SIGNED: examples 4 (float32,
# scale 10, zero point -8), 5 (float16, 1, -128) and 8 (float16, 10, -8).
_LINSPACE = np.linspace(-10, 10, 300)
for _scale, _zero in ((1.0, 0), (1.0, 1), (0.01, 120), (10.0, 120)):
    _add(f"quantize_nnapi_quantize_float16_scale{_scale:g}_zero{_zero}", Op.QUANTIZE,
         (f16(_LINSPACE),), (_q_out(U8, _LINSPACE, _scale, _zero),))
for _example, _make, _scale, _zero in ((4, f32, 10.0, -8), (5, f16, 1.0, -128),
                                       (8, f16, 10.0, -8)):
    _add(f"quantize_nnapi_quantize_quant8_signed_{_example}", Op.QUANTIZE, (_make(_LINSPACE),),
         (_q_out(S8, _LINSPACE, _scale, _zero),), skip=("float16",))

# -- EXPAND_DIMS, SPLIT, REDUCE_ANY, RANK, FILL -----------------------------------------------

# expand_dims.mod.py (V1_2): the "int32" variation, [1.2, -3.4, 5.6, 7.8] -> [1, -3, 6, 8].
_ED = np.reshape(_int32([1.2, -3.4, 5.6, 7.8]), (2, 2))
for _axis in (0, 1, 2, -1):
    _add(f"expand_dims_nnapi_expand_dims_int32_axis{_axis}".replace("-", "m"), Op.EXPAND_DIMS,
         (i32(_ED), i32s(_axis)), (out(I32, np.expand_dims(_ED, _axis).shape,
                                       np.expand_dims(_ED, _axis)),))

# split_int32_1.mod.py (V1_2, generated file): [1..6] into three along axis 0.
_add("split_nnapi_split_int32_1", Op.SPLIT, (i32([1, 2, 3, 4, 5, 6]), i32s(0), i32s(3)),
     (out(I32, (2,), [1, 2]), out(I32, (2,), [3, 4]), out(I32, (2,), [5, 6])))

# reduce_any.mod.py (V1_2, via ONE): three examples (from TF Lite's reduce_test.cc).
_ANY_X = np.reshape([False, False, False, False, False, False,
                     False, True, False, False, False, True], (2, 3, 2))
for _suffix, _x, _axes, _keep, _y in (
        ("", b8([False]), [0], True, np.array([False])),
        ("_2", b8(_ANY_X), [1, 0, -3, -3], False, np.array([False, True])),
        ("_3", b8(_ANY_X), [0, 2], True, np.reshape([True, False, True], (1, 3, 1)))):
    _add(f"reduce_any_nnapi_reduce_any{_suffix}", Op.REDUCE_ANY,
         (_x, i32(_axes), bools(_keep)), (out(T.TENSOR_BOOL8, _y.shape, _y),))

# rank.mod.py (V1_3): two examples with the int32, float16, quant8 (0.1, 128) and quant8_signed
# (0.1, 0) variations (the float16 one is nnrt's automatic variant).
for _suffix, _data in (("1d", [5, 7, 10]), ("1d_2", [[1, 2, 3], [4, 5, 6]])):
    _rank_out = (out(T.INT32, (), np.ndim(_data)),)
    _add(f"rank_nnapi_rank_{_suffix}", Op.RANK, (f32(_data),), _rank_out)
    _add(f"rank_nnapi_rank_{_suffix}_int32", Op.RANK, (i32(_data),), _rank_out)
    _add(f"rank_nnapi_rank_{_suffix}_quant8", Op.RANK, (_q(U8, _data, 0.1, 128),), _rank_out)
    _add(f"rank_nnapi_rank_{_suffix}_quant8_signed", Op.RANK, (_q(S8, _data, 0.1, 0),),
         _rank_out)

# fill.mod.py (V1_3, generated file): 3.0 into shapes {5}, {2, 3, 4} and {1, 2, 3, 4, 5}, as
# FLOAT32 (its float16 variation is nnrt's automatic one) and as INT32.
for _suffix, _shape in (("1d", [5]), ("3d", [2, 3, 4]), ("5d", [1, 2, 3, 4, 5])):
    _add(f"fill_nnapi_fill_{_suffix}", Op.FILL, (i32(_shape), f32s(3.0)),
         (out(F32, tuple(_shape), np.full(_shape, 3.0)),))
    _add(f"fill_nnapi_fill_{_suffix}_int32", Op.FILL, (i32(_shape), i32s(3)),
         (out(I32, tuple(_shape), np.full(_shape, 3)),))

# -- IF, WHILE --------------------------------------------------------------------------------


def _branch(op: Op) -> Model:
    """if_simple's branch: ``y (+ or -) [100.0]`` on a TENSOR_FLOAT32 {3, 4}."""
    b = ModelBuilder()
    y = b.input("y", (3, 4))
    b.output(b.operation(op, y, b.constant(np.array([100.0], np.float32)), 0)[0])
    return b.build()


# if_simple.mod.py (V1_3): z = if (x) then y + 100 else y - 100, and "same_branch_model" with
# the ADD model on both sides. The spec has no float16 variation.
_IF_Y = np.reshape(np.arange(1.0, 13.0), (3, 4))
_ADD_100, _SUB_100 = _branch(Op.ADD), _branch(Op.SUB)
for _stem, _else in (("if_simple", _SUB_100), ("if_simple_same_branch_model", _ADD_100)):
    for _cond in (True, False):
        _z = _IF_Y + 100.0 if _cond or _else is _ADD_100 else _IF_Y - 100.0
        _add(f"if_nnapi_{_stem}_{str(_cond).lower()}", Op.IF,
             (b8([_cond]), subgraph(_ADD_100), subgraph(_else), f32(_IF_Y)),
             (out(F32, (3, 4), _z),), skip=("float16",))


def _fib_model(body: bool) -> Model:
    """while_fib's condition ``i < n`` or body ``fib @ [[0, 1], [1, 1]], i + 1`` over inputs
    (fib {1, 2}, i {1}, n {1})."""
    b = ModelBuilder()
    fib = b.input("fib", (1, 2))
    i, n = b.input("i", (1,), "int32"), b.input("n", (1,), "int32")
    if not body:
        b.output(b.operation(Op.LESS, i, n, output_types=[T.TENSOR_BOOL8])[0])
        return b.build()
    matrix = b.constant(np.array([[0, 1], [1, 1]], np.float32))
    bias = b.constant(np.zeros((2,), np.float32))
    fib_out = b.operation(Op.FULLY_CONNECTED, fib, matrix, bias, 0)[0]
    b.output(fib_out, b.operation(Op.ADD, i, b.constant(np.array([1], np.int32)), 0)[0])
    return b.build()


# while_fib.mod.py (V1_3): [fib(n), fib(n + 1)] from fib = [1, 1], i = 1 (constants), n = 1..5.
# The spec's zero bias is declared {2, 1}; FULLY_CONNECTED takes a rank-1 bias, written so here.
_COND, _BODY = _fib_model(body=False), _fib_model(body=True)
for _n, _fib in ((1, [1, 1]), (2, [1, 2]), (3, [2, 3]), (4, [3, 5]), (5, [5, 8])):
    _add(f"while_nnapi_while_fib_{_n}", Op.WHILE,
         (subgraph(_COND), subgraph(_BODY), f32([[1.0, 1.0]], role="const"),
          i32([1], role="const"), i32([_n])),
         (out(F32, (1, 2), [_fib]),), skip=("float16",))

# -- TRANSPOSE_CONV_2D ------------------------------------------------------------------------

# transpose_conv2d_quant8_signed (V1_3, generated file; CodeLinaro's mirror of AOSP's
# NeuralNetworks module): its first example, 25 single pixels of real 1.0 (scale 0.5, zero
# point -128) through 16 1x1 filters of 1.0, zero bias, implicit SAME padding and stride 32 into
# {25, 32, 32, 16}: each batch's pixel (0, 0) is 1.0 (-126) in every channel, everything else
# 0 (-128) — as the generated file lists it.
_TC_OUT = np.full((25, 32, 32, 16), -128)
_TC_OUT[:, 0, 0, :] = -126
_add("transpose_conv_2d_nnapi_transpose_conv2d_quant8_signed", Op.TRANSPOSE_CONV_2D,
     (_q_lit(S8, [-126] * 25, 0.5, -128, (25, 1, 1, 1)),
      _q_lit(S8, [-126] * 16, 0.5, -128, (16, 1, 1, 1)), i32([0] * 16, scale=0.25),
      i32([25, 32, 32, 16]), i32s(1), i32s(32), i32s(32), i32s(0), bools(False)),
     (_q_lit(S8, _TC_OUT, 0.5, -128, (25, 32, 32, 16), output=True),))
