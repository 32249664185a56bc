"""Conformance cases transcribed from NNAPI's published test specs (literal expected values).

Data movement, reductions and indexing: MEAN, REDUCE_*, ARGMAX / ARGMIN, GATHER,
EMBEDDING_LOOKUP, TOPK_V2, SLICE, STRIDED_SLICE, PAD, PAD_V2, MIRROR_PAD. The input values,
parameters and expected outputs are the test vectors of AOSP's
``packages/modules/NeuralNetworks/runtime/test/specs/<version>/<stem>.mod.py`` files (named in
each comment and in each case name, ``<op>_nnapi_<stem>[_<n>]`` for the n-th example of a file);
only float32 / int32 / bool8 examples are transcribed here (the quantised ones are in
``nnapi_quant_data``). The spec's own "relaxed" / "float16" variations are covered by nnrt's
automatic variants.

Resizing and the tensor / space-layout operations are in ``nnapi_data_image`` (appended below).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.cases import nnapi_data_image
from nnrt.testing.spec import Arg, OpCase, b8, bools, f32, f32s, i32, i32s, out

CASES: list[OpCase] = []


def _f(dims: Sequence[int], values: Any) -> Arg:
    """A TENSOR_FLOAT32 input of ``dims`` holding the flat spec ``values``."""
    return f32(values, dims=dims)


def _i(dims: Sequence[int], values: Any, **kw: Any) -> Arg:
    """A TENSOR_INT32 input of ``dims`` holding the flat spec ``values``."""
    return i32(values, dims=dims, **kw)


def _o(type: T, dims: Sequence[int], values: Any) -> Arg:
    """An output of ``dims`` whose expected value is the flat spec ``values``."""
    return out(type, dims, np.reshape(np.asarray(values), dims))


def _add(name: str, op: Op, inputs: Sequence[Arg], outputs: Sequence[Arg], **kw: Any) -> None:
    CASES.append(OpCase(name, op, inputs=tuple(inputs), outputs=tuple(outputs), **kw))


# The tables below reuse these loop variables with different element types.
_x: Any
_x4: Any
_dims: Any
_odims: Any
_expected: Any
_make: Any


# -- MEAN and REDUCE_* ----------------------------------------------------------------------------

_R24 = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2,
        1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2.0, 2.1, 2.2, 2.3, 2.4]
_N24 = list(range(1, 25))
_R3x2 = [-1, -2, 3, 4, 5, -6]

# V1_1/mean_float_2.mod.py (keepDims = 1), V1_1/mean_float_1_relaxed.mod.py (duplicate and
# negative axes), V1_1/mean_relaxed.mod.py (input {1, 2, 2, 1}, axis 2; also mean_float16.mod.py).
_add("mean_nnapi_mean_float_2", Op.MEAN, [_f((4, 3, 2), _N24), _i((2,), [0, 2]), i32s(1)],
     [_o(T.TENSOR_FLOAT32, (1, 3, 1), [10.5, 12.5, 14.5])])
_add("mean_nnapi_mean_float_1_relaxed", Op.MEAN,
     [_f((4, 3, 2), _N24), _i((4,), [1, 0, -3, -3]), i32s(0)],
     [_o(T.TENSOR_FLOAT32, (2,), [12.0, 13.0])])
_add("mean_nnapi_mean_relaxed", Op.MEAN,
     [_f((1, 2, 2, 1), [1.0, 2.0, 3.0, 4.0]), _i((1,), [2]), i32s(0)],
     [_o(T.TENSOR_FLOAT32, (1, 2, 1), [1.5, 3.5])])

# V1_2/reduce_{sum,prod,max,min}.mod.py: four examples each (the last three adapted from
# TensorFlow Lite's reduce_test.cc).
_PROD24 = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 1.00, 1.10, 1.20,
           1.30, 1.40, 1.50, 1.60, 1.70, 1.80, 1.90, 2.00, 2.10, 2.20, 2.30, 2.40]
for _op, _x4, _expected in (
    (Op.REDUCE_SUM, _R24, ([-3, 7, -1], [14.4, 15.6], [8.4, 10.0, 11.6])),
    (Op.REDUCE_PROD, _PROD24,
     ([2, 12, -30], [3.16234143225e+4, 1.9619905536e+4], [7.74592e+2, 1.197504e+3, 6.6889152e+2])),
    (Op.REDUCE_MAX, _R24, ([-1, 4, 5], [2.3, 2.4], [2.0, 2.2, 2.4])),
    (Op.REDUCE_MIN, _R24, ([-2, 3, -6], [0.1, 0.2], [0.1, 0.3, 0.5])),
):
    _stem = _op.name.lower()
    _add(f"{_stem}_nnapi_{_stem}_1", _op, [_f((3, 2), _R3x2), _i((1,), [-1]), bools(False)],
         [_o(T.TENSOR_FLOAT32, (3,), _expected[0])])
    _add(f"{_stem}_nnapi_{_stem}_2", _op, [_f((1,), [9.527]), _i((1,), [0]), bools(True)],
         [_o(T.TENSOR_FLOAT32, (1,), [9.527])])
    _add(f"{_stem}_nnapi_{_stem}_3", _op,
         [_f((4, 3, 2), _x4), _i((4,), [1, 0, -3, -3]), bools(False)],
         [_o(T.TENSOR_FLOAT32, (2,), _expected[1])])
    _add(f"{_stem}_nnapi_{_stem}_4", _op, [_f((4, 3, 2), _x4), _i((2,), [0, 2]), bools(True)],
         [_o(T.TENSOR_FLOAT32, (1, 3, 1), _expected[2])])

# V1_2/reduce_all.mod.py: three TENSOR_BOOL8 examples.
_add("reduce_all_nnapi_reduce_all_1", Op.REDUCE_ALL, [b8([False]), _i((1,), [0]), bools(True)],
     [_o(T.TENSOR_BOOL8, (1,), [False])])
_add("reduce_all_nnapi_reduce_all_2", Op.REDUCE_ALL,
     [b8([True, True, True, True, True, False, True, True, True, True, True, True],
         dims=(2, 3, 2)), _i((4,), [1, 0, -3, -3]), bools(False)],
     [_o(T.TENSOR_BOOL8, (2,), [True, False])])
_add("reduce_all_nnapi_reduce_all_3", Op.REDUCE_ALL,
     [b8([True, True, True, True, True, True, True, True, False, True, True, True],
         dims=(2, 3, 2)), _i((2,), [0, 2]), bools(True)],
     [_o(T.TENSOR_BOOL8, (1, 3, 1), [True, False, True])])

# -- ARGMAX / ARGMIN ------------------------------------------------------------------------------

# V1_2/argmax_1.mod.py (axis 1), argmax_2_float_relaxed.mod.py (axis 0), argmax_3.mod.py
# (axis -1), argmin_1_float_relaxed.mod.py (axis 1), argmin_2.mod.py (axis 0): input
# [[1, 2], [4, 3]]. Files with an "int32" variation also give a TENSOR_INT32 case.
_AM = [1.0, 2.0, 4.0, 3.0]
for _op, _stem, _axis, _expected, _int32 in (
    (Op.ARGMAX, "argmax_1", 1, [1, 0], True),
    (Op.ARGMAX, "argmax_2_float_relaxed", 0, [1, 1], False),
    (Op.ARGMAX, "argmax_3", -1, [1, 0], True),
    (Op.ARGMIN, "argmin_1_float_relaxed", 1, [0, 1], False),
    (Op.ARGMIN, "argmin_2", 0, [0, 0], True),
):
    _name = f"{_op.name.lower()}_nnapi_{_stem}"
    _add(_name, _op, [_f((2, 2), _AM), i32s(_axis)], [_o(T.TENSOR_INT32, (2,), _expected)])
    if _int32:
        _add(f"{_name}_int32", _op, [_i((2, 2), _AM), i32s(_axis)],
             [_o(T.TENSOR_INT32, (2,), _expected)])

# -- GATHER, EMBEDDING_LOOKUP, TOPK_V2 ------------------------------------------------------------

# V1_2/gather.mod.py: eight examples (with an "int32" variation; the integral ones are also
# transcribed as TENSOR_INT32).
for _n, (_dims, _x, _axis, _idx, _odims, _expected) in enumerate((
    ((2, 2), [-2.0, 0.2, 0.7, 0.8], 0, [1, 0], (2, 2), [0.7, 0.8, -2.0, 0.2]),
    ((2, 2), [-2.0, 0.2, 0.7, 0.8], 0, [1], (1, 2), [0.7, 0.8]),
    ((3,), [1, 2, 3], 0, [1], (1,), [2]),
    ((3,), [1, 2, 3], 0, [1, 0], (2,), [2, 1]),
    ((1, 2, 2), [-2.0, 0.2, 0.7, 0.8], 0, [0, 0], (2, 2, 2),
     [-2.0, 0.2, 0.7, 0.8, -2.0, 0.2, 0.7, 0.8]),
    ((4, 1), [-2.0, 0.2, 0.7, 0.8], 0, [1, 3], (2, 1), [0.2, 0.8]),
    ((1, 2, 3), [1, 2, 3, 4, 5, 6], 1, [1, 0], (1, 2, 3), [4, 5, 6, 1, 2, 3]),
    ((1, 2, 3), [1, 2, 3, 4, 5, 6], -1, [2, 0], (1, 2, 2), [3, 1, 6, 4]),
), start=1):
    _idx_arg = _i((len(_idx),), _idx)
    _add(f"gather_nnapi_gather_{_n}", Op.GATHER, [_f(_dims, _x), i32s(_axis), _idx_arg],
         [_o(T.TENSOR_FLOAT32, _odims, _expected)])
    if all(float(v).is_integer() for v in _x):
        _add(f"gather_nnapi_gather_{_n}_int32", Op.GATHER, [_i(_dims, _x), i32s(_axis), _idx_arg],
             [_o(T.TENSOR_INT32, _odims, _expected)])

# V1_2/gather_higher_rank.mod.py: 2-D indices (a model input) into axis 1.
_GHR_OUT = [5, 6, 1, 2, 3, 4, 1, 2, 1, 2, 3, 4]
_add("gather_nnapi_gather_higher_rank", Op.GATHER,
     [_f((1, 3, 2), [1, 2, 3, 4, 5, 6]), i32s(1), _i((3, 2), [2, 0, 1, 0, 0, 1])],
     [_o(T.TENSOR_FLOAT32, (1, 3, 2, 2), _GHR_OUT)])
_add("gather_nnapi_gather_higher_rank_int32", Op.GATHER,
     [_i((1, 3, 2), [1, 2, 3, 4, 5, 6]), i32s(1), _i((3, 2), [2, 0, 1, 0, 0, 1])],
     [_o(T.TENSOR_INT32, (1, 3, 2, 2), _GHR_OUT)])

# V1_0/embedding_lookup.mod.py (values[i][j] = i + j / 10) and V1_1/embedding_lookup_relaxed.mod.py
# (3-D values[i][j][k] = i + j / 10 + k / 100); lookups [1, 0, 2].
_EL2 = [i + j / 10 for i in range(3) for j in range(2)]
_EL3 = [i + j / 10 + k / 100 for i in range(3) for j in range(2) for k in range(4)]
_add("embedding_lookup_nnapi_embedding_lookup", Op.EMBEDDING_LOOKUP,
     [_i((3,), [1, 0, 2]), _f((3, 2), _EL2)],
     [_o(T.TENSOR_FLOAT32, (3, 2), [1.0, 1.1, 0.0, 0.1, 2.0, 2.1])])
_add("embedding_lookup_nnapi_embedding_lookup_relaxed", Op.EMBEDDING_LOOKUP,
     [_i((3,), [1, 0, 2]), _f((3, 2, 4), _EL3)],
     [_o(T.TENSOR_FLOAT32, (3, 2, 4),
         [1.00, 1.01, 1.02, 1.03, 1.10, 1.11, 1.12, 1.13,
          0.00, 0.01, 0.02, 0.03, 0.10, 0.11, 0.12, 0.13,
          2.00, 2.01, 2.02, 2.03, 2.10, 2.11, 2.12, 2.13])])

# V1_2/topk_v2.mod.py: the float32 and int32 examples (k = 2).
for _n, (_make, _type, _dims, _x, _odims, _values, _indices) in enumerate((
    (_f, T.TENSOR_FLOAT32, (2, 2), [-2.0, 0.2, 0.8, 0.1], (2, 2), [0.2, -2.0, 0.8, 0.1],
     [1, 0, 0, 1]),
    (_f, T.TENSOR_FLOAT32, (2, 3), [-2.0, -3.0, 0.2, 0.8, 0.1, -0.1], (2, 2),
     [0.2, -2.0, 0.8, 0.1], [2, 0, 0, 1]),
    (_f, T.TENSOR_FLOAT32, (2, 4), [-2.0, -3.0, -4.0, 0.2, 0.8, 0.1, -0.1, -0.8], (2, 2),
     [0.2, -2.0, 0.8, 0.1], [3, 0, 0, 1]),
    (_f, T.TENSOR_FLOAT32, (8,), [-2.0, -3.0, -4.0, 0.2, 0.8, 0.1, -0.1, -0.8], (2,),
     [0.8, 0.2], [4, 3]),
    (_i, T.TENSOR_INT32, (2, 3), [1, 2, 3, 10251, 10250, 10249], (2, 2),
     [3, 2, 10251, 10250], [2, 1, 0, 1]),
), start=1):
    _add(f"topk_v2_nnapi_topk_v2_{_n}", Op.TOPK_V2, [_make(_dims, _x), i32s(2)],
         [_o(_type, _odims, _values), _o(T.TENSOR_INT32, _odims, _indices)])

# -- SLICE, STRIDED_SLICE -------------------------------------------------------------------------

# V1_2/slice.mod.py: the float32 and int32 examples (begin and size are model inputs).
_S18 = [1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6]
for _n, (_make, _type, _dims, _x, _begin, _size, _odims, _expected) in enumerate((
    (_f, T.TENSOR_FLOAT32, (4,), [1, 2, 3, 4], [1], [2], (2,), [2, 3]),
    (_f, T.TENSOR_FLOAT32, (2, 3), [1, 2, 3, 4, 5, 6], [1, 0], [1, 2], (1, 2), [4, 5]),
    (_f, T.TENSOR_FLOAT32, (2, 3, 2), list(range(1, 13)), [0, 0, 0], [2, 3, 2], (2, 3, 2),
     list(range(1, 13))),
    (_f, T.TENSOR_FLOAT32, (4, 1, 1, 1), [1, 2, 3, 4], [1, 0, 0, 0], [3, 1, 1, 1],
     (3, 1, 1, 1), [2, 3, 4]),
    (_i, T.TENSOR_INT32, (3, 2, 3, 1), _S18, [1, 0, 0, 0], [1, 1, 3, 1], (1, 1, 3, 1),
     [3, 3, 3]),
    (_i, T.TENSOR_INT32, (3, 2, 3, 1), _S18, [1, 0, 0, 0], [2, 1, 3, 1], (2, 1, 3, 1),
     [3, 3, 3, 5, 5, 5]),
    (_i, T.TENSOR_INT32, (3, 2, 3, 1), _S18, [1, 0, 0, 0], [2, 1, -1, 1], (2, 1, 3, 1),
     [3, 3, 3, 5, 5, 5]),
), start=1):
    _add(f"slice_nnapi_slice_{_n}", Op.SLICE,
         [_make(_dims, _x), _i((len(_begin),), _begin), _i((len(_size),), _size)],
         [_o(_type, _odims, _expected)])

# V1_1/strided_slice*.mod.py (begins / ends / strides are constant parameters there):
# (stem, input dims, input, begins, ends, strides, begin_mask, end_mask, shrink_mask, out dims,
# expected). "strided_slice_float16" is V1_2/strided_slice_float16.mod.py. strided_slice_float_
# {1,2,4,7,10,11} are transcribed from the same vectors in V1_3/strided_slice_quant8_signed.mod.py
# (scale 1, zero point -128: real = q + 128, exact), which repeats float_1 .. float_11 in order.
_SS6 = [1, 2, 3, 4, 5, 6]
for _stem, _dims, _x, _b, _e, _s, _bm, _em, _sm, _odims, _expected in (
    ("strided_slice_float16", (2, 3), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [0, 0], [2, 3], [2, 2], 0, 0, 0,
     (1, 2), [1.0, 3.0]),
    ("strided_slice_float_1", (4,), [1, 2, 3, 4], [1], [3], [1], 0, 0, 0, (2,), [2, 3]),
    ("strided_slice_float_2", (4,), [1, 2, 3, 4], [-3], [3], [1], 0, 0, 0, (2,), [2, 3]),
    ("strided_slice_float_3", (4,), [1, 2, 3, 4], [-5], [3], [1], 0, 0, 0, (3,), [1, 2, 3]),
    ("strided_slice_float_4", (4,), [1, 2, 3, 4], [1], [-2], [1], 0, 0, 0, (1,), [2]),
    ("strided_slice_float_5", (4,), [1, 2, 3, 4], [1], [3], [1], 1, 0, 0, (3,), [1, 2, 3]),
    ("strided_slice_float_6", (4,), [1, 2, 3, 4], [1], [3], [1], 0, 1, 0, (3,), [2, 3, 4]),
    ("strided_slice_float_7", (3,), [1, 2, 3], [-1], [-4], [-1], 0, 0, 0, (3,), [3, 2, 1]),
    ("strided_slice_float_8", (2, 3), _SS6, [1, -1], [2, -4], [2, -1], 0, 0, 0, (1, 3),
     [6, 5, 4]),
    ("strided_slice_float_9", (2, 3), _SS6, [1, 0], [2, 2], [1, 1], 1, 0, 0, (2, 2),
     [1, 2, 4, 5]),
    ("strided_slice_float_10", (2, 3), _SS6, [1, 0], [2, 2], [1, 1], 0, 2, 0, (1, 3), [4, 5, 6]),
    ("strided_slice_float_11", (2, 3), _SS6, [0, 0], [1, 3], [1, 1], 0, 0, 1, (3,), [1, 2, 3]),
):
    _r = len(_dims)
    _add(f"strided_slice_nnapi_{_stem}", Op.STRIDED_SLICE,
         [_f(_dims, _x), _i((_r,), _b), _i((_r,), _e), _i((_r,), _s), i32s(_bm), i32s(_em),
          i32s(_sm)],
         [_o(T.TENSOR_FLOAT32, _odims, _expected)])

# -- PAD, PAD_V2, MIRROR_PAD ----------------------------------------------------------------------

# V1_1/pad.mod.py, V1_1/pad_float_1.mod.py, V1_2/pad_low_rank.mod.py, V1_2/pad_all_dims.mod.py
# (its expected output is numpy's constant pad; built here by placing the input in a zero block).
_add("pad_nnapi_pad", Op.PAD,
     [_f((1, 2, 2, 1), [1.0, 2.0, 3.0, 4.0]), _i((4, 2), [0, 0, 1, 1, 1, 1, 0, 0], role="const")],
     [_o(T.TENSOR_FLOAT32, (1, 4, 4, 1),
         [0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0, 0, 0, 0])])
_PAD_F1_OUT = [0, 1, 2, 3, 0, 0, 0, 0, 4, 5, 6, 0, 0, 0,
               0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
_add("pad_nnapi_pad_float_1", Op.PAD,
     [_f((1, 2, 3, 1), [1, 2, 3, 4, 5, 6]), _i((4, 2), [0, 0, 0, 2, 1, 3, 0, 0], role="const")],
     [_o(T.TENSOR_FLOAT32, (1, 4, 7, 1), _PAD_F1_OUT)])
_add("pad_nnapi_pad_low_rank", Op.PAD,
     [_f((3,), [1.0, 2.0, 3.0]), _i((1, 2), [3, 1], role="const")],
     [_o(T.TENSOR_FLOAT32, (7,), [0, 0, 0, 1, 2, 3, 0])])

_ALL_DIMS_PADS = [1, 2, 3, 4, 3, 3, 2, 1]


def _all_dims(fill: float) -> np.ndarray[Any, Any]:
    """pad_all_dims' expected output: the {1, 1, 2, 3} input at offset (1, 3, 3, 2) of a
    {4, 8, 8, 6} block of ``fill``."""
    result = np.full((4, 8, 8, 6), fill, dtype=np.float64)
    result[1, 3, 3:5, 2:5] = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    return result


_add("pad_nnapi_pad_all_dims", Op.PAD,
     [_f((1, 1, 2, 3), [1, 2, 3, 4, 5, 6]), _i((4, 2), _ALL_DIMS_PADS, role="const")],
     [_o(T.TENSOR_FLOAT32, (4, 8, 8, 6), _all_dims(0.0))])

# V1_2/pad_v2_1_float.mod.py, V1_2/pad_v2_low_rank.mod.py, V1_2/pad_v2_all_dims.mod.py.
_add("pad_v2_nnapi_pad_v2_1_float", Op.PAD_V2,
     [_f((1, 2, 3, 1), [1, 2, 3, 4, 5, 6]), _i((4, 2), [0, 0, 0, 2, 1, 3, 0, 0], role="const"),
      f32s(9.3)],
     [_o(T.TENSOR_FLOAT32, (1, 4, 7, 1),
         [9.3, 1.0, 2.0, 3.0, 9.3, 9.3, 9.3, 9.3, 4.0, 5.0, 6.0, 9.3, 9.3, 9.3,
          *([9.3] * 14)])])
_add("pad_v2_nnapi_pad_v2_low_rank", Op.PAD_V2,
     [_f((3,), [1.0, 2.0, 3.0]), _i((1, 2), [3, 1], role="const"), f32s(9.9)],
     [_o(T.TENSOR_FLOAT32, (7,), [9.9, 9.9, 9.9, 1.0, 2.0, 3.0, 9.9])])
_add("pad_v2_nnapi_pad_v2_all_dims", Op.PAD_V2,
     [_f((1, 1, 2, 3), [1, 2, 3, 4, 5, 6]), _i((4, 2), _ALL_DIMS_PADS, role="const"), f32s(3.9)],
     [_o(T.TENSOR_FLOAT32, (4, 8, 8, 6), _all_dims(3.9))])

# AIDL_V2/mirror_pad.mod.py: "summary" (SYMMETRIC, 2-D), "mode_reflect", "mode_symmetric"
# (with an "int32" variation, transcribed as the *_int32 cases).
for _name, _dims, _x, _pads, _mode, _odims, _expected in (
    ("summary", (2, 3), [1, 2, 3, 4, 5, 6], [1, 1, 2, 2], 1, (4, 7),
     [2, 1, 1, 2, 3, 3, 2, 2, 1, 1, 2, 3, 3, 2, 5, 4, 4, 5, 6, 6, 5, 5, 4, 4, 5, 6, 6, 5]),
    ("mode_reflect", (3,), [1, 2, 3], [0, 2], 0, (5,), [1, 2, 3, 2, 1]),
    ("mode_symmetric", (3,), [1, 2, 3], [0, 2], 1, (5,), [1, 2, 3, 3, 2]),
):
    _pads_arg = _i((len(_dims), 2), _pads, role="const")
    _add(f"mirror_pad_nnapi_mirror_pad_{_name}", Op.MIRROR_PAD,
         [_f(_dims, _x), _pads_arg, i32s(_mode)], [_o(T.TENSOR_FLOAT32, _odims, _expected)])
    _add(f"mirror_pad_nnapi_mirror_pad_{_name}_int32", Op.MIRROR_PAD,
         [_i(_dims, _x), _pads_arg, i32s(_mode)], [_o(T.TENSOR_INT32, _odims, _expected)])

CASES.extend(nnapi_data_image.CASES)
