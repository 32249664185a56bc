"""Zero-size tensors: inputs with an extent of 0 at execution (NNAPI 1.3 allows them; its
detection pipeline makes them).

An operand declaration cannot say "0" (a declared dim of 0 means unknown), so these tensors are
model inputs whose dims become known at execution; they cannot be constants (no ``consts``
variant). NNAPI's ``zero_sized`` spec examples feed the operation under test from
BOX_WITH_NMS_LIMIT and ROI_ALIGN; the cases named ``<op>_nnapi_<stem>_zero_sized[...]`` feed the
same zero-size tensor ({0, 2, 2, 1}) directly: V1_2/transpose_v1_2.mod.py, V1_2/slice.mod.py
(quant8 0.1, 128), V1_3/slice_quant8_signed.mod.py and V1_3/concat_quant8_signed.mod.py
(0.1, 0). The other cases are nnrt's own, one per operation: empty outputs, reductions over an
empty set (ONNX's rules: the reduction's identity, -inf / +inf or the type's lowest / highest
value for REDUCE_MAX / REDUCE_MIN, NaN for a float MEAN) and paddings of an empty tensor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import Arg, OpCase, b8, bools, f32, f32s, i32, i32s, out, q8, q8s

CASES: list[OpCase] = []

F32, I32 = T.TENSOR_FLOAT32, T.TENSOR_INT32
Q8, Q8S = T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED
_FEATURE_MAP = (0, 2, 2, 1)


def _empty(dims: Sequence[int]) -> np.ndarray[Any, Any]:
    return np.zeros(dims)


def _o(type: T, dims: Sequence[int], values: Any = None, scale: float = 0.0, zp: int = 0) -> Arg:
    """An output of ``dims`` expecting ``values`` (nothing, for a zero-size output)."""
    expected = _empty(dims) if values is None else np.reshape(np.asarray(values), dims)
    return out(type, dims, expected, scale=scale, zero_point=zp)


def _add(name: str, op: Op, inputs: Sequence[Arg], outputs: Sequence[Arg]) -> None:
    CASES.append(OpCase(name, op, inputs=tuple(inputs), outputs=tuple(outputs),
                        skip=("consts",), tolerance=(0.0, 0.0)))


# -- NNAPI's zero_sized examples ------------------------------------------------------------------

_add("transpose_nnapi_transpose_v1_2_zero_sized", Op.TRANSPOSE,
     [f32(_empty(_FEATURE_MAP)), i32([0, 3, 1, 2])], [_o(F32, (0, 1, 2, 2))])
_add("transpose_nnapi_transpose_v1_2_zero_sized_quant8", Op.TRANSPOSE,
     [q8(_empty(_FEATURE_MAP), 0.1, 128), i32([0, 3, 1, 2])],
     [_o(Q8, (0, 1, 2, 2), scale=0.1, zp=128)])
for _name, _x, _type, _scale, _zp in (
    ("slice_zero_sized", f32(_empty(_FEATURE_MAP)), F32, 0.0, 0),
    ("slice_zero_sized_quant8", q8(_empty(_FEATURE_MAP), 0.1, 128), Q8, 0.1, 128),
    ("slice_quant8_signed_zero_sized", q8s(_empty(_FEATURE_MAP), 0.1, 0), Q8S, 0.1, 0),
):
    _add(f"slice_nnapi_{_name}", Op.SLICE, [_x, i32([0, 1, 1, 0]), i32([-1, 1, -1, 1])],
         [_o(_type, (0, 1, 1, 1), scale=_scale, zp=_zp)])
# The zero-size dimension is not the axis / is the axis (the other input then fills the output,
# requantised from scale 0.2 to 0.1).
_add("concatenation_nnapi_concat_quant8_signed_zero_sized", Op.CONCATENATION,
     [q8s(_empty(_FEATURE_MAP), 0.1, 0), q8s(_empty(_FEATURE_MAP), 0.1, 0), i32s(3)],
     [_o(Q8S, (0, 2, 2, 2), scale=0.1, zp=0)])
_add("concatenation_nnapi_concat_quant8_signed_zero_sized_axis", Op.CONCATENATION,
     [q8s(_empty(_FEATURE_MAP), 0.1, 0), q8s(np.reshape([5, 10, 15, 20], (1, 2, 2, 1)), 0.2, 0),
      i32s(0)],
     [_o(Q8S, (1, 2, 2, 1), [10, 20, 30, 40], 0.1, 0)])
_add("concatenation_zero_sized_axis", Op.CONCATENATION,
     [f32(_empty(_FEATURE_MAP)), f32(np.reshape([1.0, 2.0, 3.0, 4.0], (1, 2, 2, 1))), i32s(0)],
     [_o(F32, (1, 2, 2, 1), [1.0, 2.0, 3.0, 4.0])])

# -- reductions over an empty set -----------------------------------------------------------------

# (op, input, axes, keep_dims operand, output type, output dims, expected): ONNX's
# reduce_*_empty_set shapes ({2, 0, 4} reduced over axis 1).
_E = _empty((2, 0, 4))
for _op, _x, _keep, _type, _expected in (
    (Op.REDUCE_MAX, f32(_E), bools(True), F32, -np.inf),
    (Op.REDUCE_MIN, f32(_E), bools(True), F32, np.inf),
    (Op.REDUCE_SUM, f32(_E), bools(True), F32, 0.0),
    (Op.REDUCE_PROD, f32(_E), bools(True), F32, 1.0),
    (Op.MEAN, f32(_E), i32s(1), F32, np.nan),
    (Op.REDUCE_ANY, b8(np.zeros((2, 0, 4), bool)), bools(True), T.TENSOR_BOOL8, False),
    (Op.REDUCE_ALL, b8(np.zeros((2, 0, 4), bool)), bools(True), T.TENSOR_BOOL8, True),
):
    _add(f"{_op.name.lower()}_empty_set", _op, [_x, i32([1]), _keep],
         [_o(_type, (2, 1, 4), np.full((2, 1, 4), _expected))])
for _op, _type, _x, _expected in (
    (Op.REDUCE_MAX, Q8, q8(_E, 0.5, 7), 0), (Op.REDUCE_MAX, Q8S, q8s(_E, 0.5, 7), -128),
    (Op.REDUCE_MIN, Q8, q8(_E, 0.5, 7), 255), (Op.REDUCE_MIN, Q8S, q8s(_E, 0.5, 7), 127),
):
    _add(f"{_op.name.lower()}_empty_set_{_type.name.lower()}", _op, [_x, i32([1]), bools(False)],
         [_o(_type, (2, 4), np.full((2, 4), _expected), 0.5, 7)])
# An empty output needs no value: a quantised MEAN and an ARGMAX over non-empty axes of an empty
# tensor.
_add("mean_zero_size_quant8", Op.MEAN, [q8(_empty((0, 3)), 0.5, 7), i32([1]), i32s(0)],
     [_o(Q8, (0,), scale=0.5, zp=7)])
_add("argmax_zero_size", Op.ARGMAX, [f32(_empty((0, 3))), i32s(1)], [_o(I32, (0,))])
_add("argmin_zero_size_quant8", Op.ARGMIN, [q8(_empty((3, 0, 2)), 0.5, 7), i32s(2)],
     [_o(I32, (3, 0))])

# -- shapes, joins, indexing and layouts of empty tensors -----------------------------------------

_X02 = f32(_empty((0, 2)))
for _name, _op, _inputs, _outputs in (
    ("reshape", Op.RESHAPE, [f32(_empty((2, 0, 3))), i32([3, 0, 2])], [_o(F32, (3, 0, 2))]),
    ("squeeze", Op.SQUEEZE, [f32(_empty((1, 0, 3))), i32([0])], [_o(F32, (0, 3))]),
    ("expand_dims", Op.EXPAND_DIMS, [_X02, i32s(0)], [_o(F32, (1, 0, 2))]),
    ("split", Op.SPLIT, [f32(_empty((0, 4))), i32s(1), i32s(2)],
     [_o(F32, (0, 2)), _o(F32, (0, 2))]),
    ("pack", Op.PACK, [i32s(0), _X02, _X02], [_o(F32, (2, 0, 2))]),
    ("tile", Op.TILE, [_X02, i32([3, 2])], [_o(F32, (0, 4))]),
    ("gather", Op.GATHER, [f32(np.ones((3, 2))), i32s(0), i32(np.zeros(0))], [_o(F32, (0, 2))]),
    ("embedding_lookup", Op.EMBEDDING_LOOKUP, [i32(np.zeros(0)), f32(np.ones((3, 2)))],
     [_o(F32, (0, 2))]),
    ("topk_v2", Op.TOPK_V2, [f32(_empty((0, 3))), i32s(2)], [_o(F32, (0, 2)), _o(I32, (0, 2))]),
    ("strided_slice", Op.STRIDED_SLICE,
     [f32(_empty((0, 3))), i32([0, 0]), i32([1, 3]), i32([1, 1]), i32s(0), i32s(0), i32s(0)],
     [_o(F32, (0, 3))]),
    ("mirror_pad", Op.MIRROR_PAD, [_X02, i32([[0, 0], [1, 1]]), i32s(0)], [_o(F32, (0, 4))]),
    ("reverse", Op.REVERSE, [_X02, i32([0])], [_o(F32, (0, 2))]),
    ("rank", Op.RANK, [_X02], [out(T.INT32, (), np.int32(2))]),
    ("fill", Op.FILL, [i32([2, 0]), f32s(1.5)], [_o(F32, (2, 0))]),
    ("depth_to_space", Op.DEPTH_TO_SPACE, [f32(_empty((0, 1, 1, 4))), i32s(2)],
     [_o(F32, (0, 2, 2, 1))]),
    ("space_to_depth", Op.SPACE_TO_DEPTH, [f32(_empty(_FEATURE_MAP)), i32s(2)],
     [_o(F32, (0, 1, 1, 4))]),
    ("batch_to_space_nd", Op.BATCH_TO_SPACE_ND, [f32(_empty((0, 1, 1, 1))), i32([2, 2])],
     [_o(F32, (0, 2, 2, 1))]),
    ("space_to_batch_nd", Op.SPACE_TO_BATCH_ND,
     [f32(_empty(_FEATURE_MAP)), i32([2, 2]), i32([[0, 0], [0, 0]])], [_o(F32, (0, 1, 1, 1))]),
    ("channel_shuffle", Op.CHANNEL_SHUFFLE, [f32(_empty((0, 6))), i32s(3), i32s(1)],
     [_o(F32, (0, 6))]),
):
    _add(f"{_name}_zero_size", _op, _inputs, _outputs)

# Padding an empty tensor gives padding only: real 0 (the zero point) for PAD, the value for
# PAD_V2.
_add("pad_zero_size_quant8", Op.PAD, [q8(_empty((0, 2)), 0.5, 5), i32([[1, 1], [0, 1]])],
     [_o(Q8, (2, 3), np.full((2, 3), 5), 0.5, 5)])
_add("pad_v2_zero_size", Op.PAD_V2, [_X02, i32([[1, 0], [0, 0]]), f32s(2.5)],
     [_o(F32, (1, 2), [2.5, 2.5])])
