"""Malformed-model rules of RESHAPE, SQUEEZE, EXPAND_DIMS, TRANSPOSE (nnrt/ops/reshape.py)."""

from __future__ import annotations

import numpy as np
import pytest
from single_op import OMIT
from single_op import build as _model

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op

F32 = T.TENSOR_FLOAT32
I32 = T.TENSOR_INT32


def test_reshape_rejects_wrong_input_count() -> None:
    model = _model(Op.RESHAPE, [(F32, (2, 3), None), (I32, (1,), [6]), (T.INT32, (), 0)],
                   [(F32, (6,))])
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(RESHAPE\): expected 2 inputs, got 3"):
        model.finish()


def test_reshape_rejects_two_inferred_dims_and_rank_7() -> None:
    model = _model(Op.RESHAPE, [(F32, (2, 3), None), (I32, (2,), [-1, -1])], [(F32, (0, 0))])
    with pytest.raises(nnrt.BadData, match=r"\(RESHAPE\), input 1 \(shape\): at most one "
                                           r"component of the shape may be -1"):
        model.finish()
    model = _model(Op.RESHAPE, [(F32, (1, 1, 1, 1, 1, 2, 3), None), (I32, (1,), [6])],
                   [(F32, (6,))])
    with pytest.raises(nnrt.BadData, match=r"\(RESHAPE\), input 0 \(input\): expected rank "
                                           r"between 1 and 6, got 7"):
        model.finish()
    model = _model(Op.RESHAPE, [(F32, (2, 3), None), (I32, (7,), [1, 1, 1, 1, 1, 2, 3])],
                   [(F32, (0,) * 7)])
    with pytest.raises(nnrt.BadData, match=r"\(RESHAPE\), input 1 \(shape\): expected a shape "
                                           r"of rank between 1 and 6, got rank 7"):
        model.finish()


def test_reshape_element_count_mismatch_static_and_at_execution() -> None:
    model = _model(Op.RESHAPE, [(F32, (2, 3), None), (I32, (2,), [4, 2])], [(F32, (4, 2))])
    with pytest.raises(nnrt.BadData, match=r"\(RESHAPE\), input 1 \(shape\): shape \(4, 2\) "
                                           r"has 8 elements, input 0 \(2, 3\) has 6"):
        model.finish()
    # A shape fed at execution can only be checked then.
    model = _model(Op.RESHAPE, [(F32, (2, 3), None), (I32, (2,), None)], [(F32, (0, 0))]).finish()
    x = np.zeros((2, 3), np.float32)
    assert nnrt.reference.run(model, [x, np.array([3, 2])])[0].shape == (3, 2)
    with pytest.raises(nnrt.BadData, match=r"\(RESHAPE\), input 1 \(shape\): shape \(4, -1\) "
                                           r"cannot hold the 6 elements"):
        nnrt.reference.run(model, [x, np.array([4, -1])])


def test_squeeze_rejects_non_unit_and_out_of_range_dims() -> None:
    model = _model(Op.SQUEEZE, [(F32, (1, 3), None), (I32, (1,), [1])], [(F32, (0,))])
    with pytest.raises(nnrt.BadData, match=r"\(SQUEEZE\), input 1 \(squeeze_dims\): cannot "
                                           r"squeeze dimension 1 of size 3"):
        model.finish()
    model = _model(Op.SQUEEZE, [(F32, (1, 3), None), (I32, (1,), [2])], [(F32, (0,))])
    with pytest.raises(nnrt.BadData, match=r"\(SQUEEZE\), input 1 \(squeeze_dims\): squeeze "
                                           r"dimension 2 is out of range for rank 2"):
        model.finish()


def test_squeeze_rejects_int32_input() -> None:
    model = _model(Op.SQUEEZE, [(I32, (1, 3), None), (I32, (1,), OMIT)], [(I32, (3,))])
    with pytest.raises(nnrt.BadData, match=r"\(SQUEEZE\), input 0 \(input\): expected "
                                           r"TENSOR_FLOAT16, .* got TENSOR_INT32"):
        model.finish()


def test_expand_dims_rejects_axis_out_of_range_and_wrong_output_type() -> None:
    model = _model(Op.EXPAND_DIMS, [(F32, (2, 3), None), (T.INT32, (), 3)], [(F32, (0, 0, 0))])
    with pytest.raises(nnrt.BadData, match=r"\(EXPAND_DIMS\), input 1 \(axis\): axis 3 is out "
                                           r"of range for rank 2 \(expected \[-3, 3\)\)"):
        model.finish()
    model = _model(Op.EXPAND_DIMS, [(F32, (2, 3), None), (T.INT32, (), 0)], [(I32, (1, 2, 3))])
    with pytest.raises(nnrt.BadData, match=r"\(EXPAND_DIMS\), output 0 \(output\): expected "
                                           r"TENSOR_FLOAT32 like input 0, got TENSOR_INT32"):
        model.finish()


def test_transpose_rejects_bad_permutations() -> None:
    model = _model(Op.TRANSPOSE, [(F32, (2, 3), None), (I32, (2,), [0, 0])], [(F32, (0, 0))])
    with pytest.raises(nnrt.BadData, match=r"\(TRANSPOSE\), input 1 \(perm\): \(0, 0\) is not "
                                           r"a permutation"):
        model.finish()
    model = _model(Op.TRANSPOSE, [(F32, (2, 3), None), (I32, (3,), [2, 1, 0])], [(F32, (0, 0))])
    with pytest.raises(nnrt.BadData, match=r"\(TRANSPOSE\), input 1 \(perm\): expected 2 "
                                           r"elements, got 3"):
        model.finish()


def test_transpose_quant_output_must_keep_scale() -> None:
    q8 = T.TENSOR_QUANT8_ASYMM
    model = _model(Op.TRANSPOSE, [(q8, (2, 3), None, 0.5, 10), (I32, (2,), OMIT)],
                   [(q8, (3, 2), 0.25, 10)])
    with pytest.raises(nnrt.BadData, match=r"\(TRANSPOSE\), output 0 \(output\): expected the "
                                           r"scale and zero point of input 0"):
        model.finish()


def test_quantised_reshape_keeps_the_stored_integers() -> None:
    q8 = T.TENSOR_QUANT8_ASYMM
    model = _model(Op.RESHAPE, [(q8, (2, 3), None, 0.5, 10), (I32, (1,), [-1])],
                   [(q8, (6,), 0.5, 10)]).finish()
    got = nnrt.reference.run(model, [np.array([[0, 1, 2], [253, 254, 255]], np.uint8)])[0]
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, [0, 1, 2, 253, 254, 255])


def test_reshape_of_a_zero_size_tensor() -> None:
    model = _model(Op.RESHAPE, [(F32, (0, 3, 0), None), (I32, (3,), [3, 2, 0])],
                   [(F32, (3, 2, 0))]).finish()
    assert nnrt.reference.run(model, [np.zeros((2, 3, 0), np.float32)])[0].shape == (3, 2, 0)
    model = _model(Op.RESHAPE, [(F32, (0, 3), None), (I32, (2,), [-1, 0])],
                   [(F32, (0, 0))]).finish()
    with pytest.raises(nnrt.BadData, match=r"\(RESHAPE\), input 1 \(shape\): shape \(-1, 0\) "
                                           "cannot infer its -1 component"):
        nnrt.reference.run(model, [np.zeros((0, 3), np.float32)])
