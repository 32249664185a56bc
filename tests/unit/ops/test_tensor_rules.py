"""Malformed-model rules of CONCATENATION, SPLIT, PACK, TILE, FILL, RANK, REVERSE
(nnrt/ops/tensor.py and nnrt/ops/tensor_gen.py)."""

from __future__ import annotations

import numpy as np
import pytest
from single_op import build as _model

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op

F32 = T.TENSOR_FLOAT32
I32 = T.TENSOR_INT32


def test_concatenation_needs_a_tensor_and_an_axis() -> None:
    model = _model(Op.CONCATENATION, [(T.INT32, (), 0)], [(F32, (2,))])
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(CONCATENATION\): expected at least 2 "
                                           r"inputs"):
        model.finish()


def test_concatenation_rejects_mixed_types_and_negative_axis() -> None:
    model = _model(Op.CONCATENATION, [(F32, (2, 2), None), (T.TENSOR_FLOAT16, (2, 2), None),
                                      (T.INT32, (), 0)], [(F32, (4, 2))])
    with pytest.raises(nnrt.BadData, match=r"\(CONCATENATION\), input 1: expected "
                                           r"TENSOR_FLOAT32 like input 0, got TENSOR_FLOAT16"):
        model.finish()
    model = _model(Op.CONCATENATION, [(F32, (2, 2), None), (F32, (2, 2), None),
                                      (T.INT32, (), -1)], [(F32, (2, 4))])
    with pytest.raises(nnrt.BadData, match=r"\(CONCATENATION\), input 2: axis -1 is out of "
                                           r"range for rank 2 \(expected \[0, 2\)\)"):
        model.finish()


def test_concatenation_rejects_mismatched_dims() -> None:
    model = _model(Op.CONCATENATION, [(F32, (3, 3), None), (F32, (2, 3), None),
                                      (T.INT32, (), 1)], [(F32, (0, 0))])
    with pytest.raises(nnrt.BadData, match=r"\(CONCATENATION\), input 1: shape \(2, 3\) does "
                                           r"not match input 0 \(3, 3\) outside axis 1"):
        model.finish()


def test_split_rejects_wrong_count_and_uneven_split() -> None:
    model = _model(Op.SPLIT, [(F32, (2, 4), None), (T.INT32, (), 1), (T.INT32, (), 3)],
                   [(F32, (2, 2)), (F32, (2, 2))])
    with pytest.raises(nnrt.BadData, match=r"\(SPLIT\), input 2 \(num_splits\): num_splits is "
                                           r"3 but the operation has 2 outputs"):
        model.finish()
    model = _model(Op.SPLIT, [(F32, (2, 3), None), (T.INT32, (), -1), (T.INT32, (), 2)],
                   [(F32, (0, 0)), (F32, (0, 0))])
    with pytest.raises(nnrt.BadData, match=r"\(SPLIT\), input 2 \(num_splits\): dimension 1 of "
                                           r"size 3 cannot be split into 2 equal parts"):
        model.finish()
    model = _model(Op.SPLIT, [(F32, (2, 4), None), (T.INT32, (), 2), (T.INT32, (), 1)],
                   [(F32, (2, 4))])
    with pytest.raises(nnrt.BadData, match=r"\(SPLIT\), input 1 \(axis\): axis 2 is out of "
                                           r"range for rank 2"):
        model.finish()


def test_pack_rejects_mismatched_inputs_and_axis() -> None:
    model = _model(Op.PACK, [(T.INT32, (), 0), (F32, (2,), None), (F32, (3,), None)],
                   [(F32, (0, 0))])
    with pytest.raises(nnrt.BadData, match=r"\(PACK\), input 2: shape \(3,\) does not match "
                                           r"input 1 \(2,\)"):
        model.finish()
    model = _model(Op.PACK, [(T.INT32, (), -1), (F32, (2,), None)], [(F32, (0, 0))])
    with pytest.raises(nnrt.BadData, match=r"\(PACK\), input 0 \(axis\): axis -1 is out of "
                                           r"range for input rank 1 \(expected \[0, 1\]\)"):
        model.finish()
    model = _model(Op.PACK, [(T.INT32, (), 0), (I32, (2,), None)], [(F32, (1, 2))])
    with pytest.raises(nnrt.BadData, match=r"\(PACK\), input 1 \(input0\): expected "
                                           r"TENSOR_FLOAT32, got TENSOR_INT32"):
        model.finish()


def test_tile_rejects_bad_multiples() -> None:
    model = _model(Op.TILE, [(F32, (2, 2), None), (I32, (3,), [1, 2, 3])], [(F32, (0, 0))])
    with pytest.raises(nnrt.BadData, match=r"\(TILE\), input 1 \(multiples\): expected 2 "
                                           r"elements, got 3"):
        model.finish()
    model = _model(Op.TILE, [(F32, (2, 2), None), (I32, (2,), [1, 0])], [(F32, (0, 0))])
    with pytest.raises(nnrt.BadData, match=r"\(TILE\), input 1 \(multiples\): multiples must "
                                           r"be positive, got \(1, 0\)"):
        model.finish()


def test_fill_value_type_follows_output_type() -> None:
    model = _model(Op.FILL, [(I32, (2,), [2, 3]), (T.INT32, (), 1)], [(F32, (2, 3))])
    with pytest.raises(nnrt.BadData, match=r"\(FILL\), input 1 \(value\): expected FLOAT32, "
                                           r"got INT32"):
        model.finish()
    model = _model(Op.FILL, [(I32, (1,), [2]), (T.INT32, (), 1)], [(T.TENSOR_BOOL8, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(FILL\), output 0 \(output\): expected "
                                           r"TENSOR_FLOAT16, TENSOR_FLOAT32 or TENSOR_INT32"):
        model.finish()


def test_fill_dims_checked_at_execution() -> None:
    model = _model(Op.FILL, [(I32, (2,), None), (T.FLOAT32, (), 1.0)], [(F32, (0, 0))]).finish()
    assert nnrt.reference.run(model, [np.array([1, 2])])[0].shape == (1, 2)
    with pytest.raises(nnrt.BadData, match=r"\(FILL\), input 0 \(dims\): dims must be "
                                           r"non-negative, got \(2, -1\)"):
        nnrt.reference.run(model, [np.array([2, -1])])


def test_rank_rejects_non_int32_output_and_extra_input() -> None:
    model = _model(Op.RANK, [(F32, (2,), None)], [(T.FLOAT32, ())])
    with pytest.raises(nnrt.BadData, match=r"\(RANK\), output 0 \(output\): expected INT32, "
                                           r"got FLOAT32"):
        model.finish()
    model = _model(Op.RANK, [(F32, (2,), None), (T.INT32, (), 0)], [(T.INT32, ())])
    with pytest.raises(nnrt.BadData, match=r"\(RANK\): expected 1 inputs, got 2"):
        model.finish()


def test_reverse_rejects_bad_axis_tensor() -> None:
    model = _model(Op.REVERSE, [(F32, (2, 3), None), (I32, (2,), [0, 1])], [(F32, (2, 3))])
    with pytest.raises(nnrt.BadData, match=r"\(REVERSE\), input 1 \(axis\): expected 1 element, "
                                           r"got 2"):
        model.finish()
    model = _model(Op.REVERSE, [(F32, (2, 3), None), (I32, (1,), [2])], [(F32, (2, 3))])
    with pytest.raises(nnrt.BadData, match=r"\(REVERSE\), input 1 \(axis\): axis 2 is out of "
                                           r"range \(expected \[0, 2\)\)"):
        model.finish()


def test_quantised_split_keeps_the_stored_integers() -> None:
    q8 = T.TENSOR_QUANT8_ASYMM_SIGNED
    model = _model(Op.SPLIT, [(q8, (2, 4), None, 0.5, -3), (T.INT32, (), 1), (T.INT32, (), 2)],
                   [(q8, (2, 2), 0.5, -3), (q8, (2, 2), 0.5, -3)]).finish()
    x = np.array([[-128, -1, 0, 127], [5, 6, 7, 8]], np.int8)
    left, right = nnrt.reference.run(model, [x])
    assert left.dtype == np.int8 and right.dtype == np.int8
    np.testing.assert_array_equal(left, [[-128, -1], [5, 6]])
    np.testing.assert_array_equal(right, [[0, 127], [7, 8]])


def test_quantised_concatenation_requantises_other_scales() -> None:
    # input 1 (scale 0.5, zero point 10) into the output's (scale 1, zero point 0): real values
    # 0.5 * (q - 10) = -5, -0.5, 0.5, 120.5 -> round half away from zero -> -5, -1, 1, 121,
    # saturated to [0, 255] -> 0, 0, 1, 121; input 0 already has the output's quantisation.
    q8 = T.TENSOR_QUANT8_ASYMM
    model = _model(Op.CONCATENATION, [(q8, (1, 2), None, 1.0, 0), (q8, (1, 4), None, 0.5, 10),
                                      (T.INT32, (), 1)], [(q8, (1, 6), 1.0, 0)]).finish()
    got = nnrt.reference.run(model, [np.array([[3, 255]], np.uint8),
                                     np.array([[0, 9, 11, 251]], np.uint8)])[0]
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, [[3, 255, 0, 0, 1, 121]])
