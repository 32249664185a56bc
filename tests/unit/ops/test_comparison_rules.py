"""Malformed-model rules of the comparisons, logical ops and SELECT (nnrt/ops/comparison.py)."""

from __future__ import annotations

import numpy as np
import pytest
from single_op import build as _model

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op

F32, B8 = T.TENSOR_FLOAT32, T.TENSOR_BOOL8


def test_comparison_output_must_be_bool8() -> None:
    model = _model(Op.LESS, [(F32, (2,), None), (F32, (2,), None)], [(F32, (2,))])
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(LESS\), output 0 \(output\): "
                                           "expected TENSOR_BOOL8, got TENSOR_FLOAT32"):
        model.finish()


def test_comparison_inputs_must_share_a_type_and_broadcast() -> None:
    model = _model(Op.EQUAL, [(T.TENSOR_INT32, (2,), None), (F32, (2,), None)], [(B8, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(EQUAL\), input 1 \(input2\): expected "
                                           "TENSOR_INT32 like input 0, got TENSOR_FLOAT32"):
        model.finish()
    model = _model(Op.GREATER_EQUAL, [(F32, (3, 2), None), (F32, (3,), None)], [(B8, (0, 0))])
    with pytest.raises(nnrt.BadData, match=r"\(GREATER_EQUAL\), input 1 \(input2\): shapes "
                                           r"\(3, 2\) and \(3,\) .*cannot be broadcast"):
        model.finish()


def test_comparison_rejects_unsupported_types_and_counts() -> None:
    q16 = T.TENSOR_QUANT16_SYMM
    model = _model(Op.NOT_EQUAL, [(q16, (2,), None, 0.5), (q16, (2,), None, 0.5)], [(B8, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(NOT_EQUAL\), input 0 \(input1\): expected .*got "
                                           "TENSOR_QUANT16_SYMM"):
        model.finish()
    model = _model(Op.GREATER, [(F32, (2,), None)], [(B8, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(GREATER\): expected 2 inputs, got 1"):
        model.finish()


def test_logical_ops_take_bool8_only() -> None:
    model = _model(Op.LOGICAL_AND, [(B8, (2,), None), (F32, (2,), None)], [(B8, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(LOGICAL_AND\), input 1 \(input2\): expected "
                                           "TENSOR_BOOL8, got TENSOR_FLOAT32"):
        model.finish()
    model = _model(Op.LOGICAL_NOT, [(B8, (2,), None), (B8, (2,), None)], [(B8, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(LOGICAL_NOT\): expected 1 inputs, got 2"):
        model.finish()
    model = _model(Op.LOGICAL_OR, [(B8, (), None), (B8, (2,), None)], [(B8, ())]).finish()
    with pytest.raises(nnrt.BadData, match=r"\(LOGICAL_OR\), input 0 \(input1\): expected rank "
                                           "of at least 1, got 0"):
        nnrt.reference.run(model, [np.bool_(True), np.ones(2, bool)])


def test_select_types() -> None:
    model = _model(Op.SELECT, [(F32, (2,), None), (F32, (2,), None), (F32, (2,), None)],
                   [(F32, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(SELECT\), input 0 \(condition\): expected "
                                           "TENSOR_BOOL8, got TENSOR_FLOAT32"):
        model.finish()
    model = _model(Op.SELECT, [(B8, (2,), None), (B8, (2,), None), (B8, (2,), None)],
                   [(B8, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(SELECT\), input 1 \(input1\): expected .*got "
                                           "TENSOR_BOOL8"):
        model.finish()


def test_select_does_not_broadcast() -> None:
    model = _model(Op.SELECT, [(B8, (2, 3), None), (F32, (2, 3), None), (F32, (3, 2), None)],
                   [(F32, (2, 3))])
    with pytest.raises(nnrt.BadData, match=r"\(SELECT\), input 2 \(input2\): shape \(3, 2\) "
                                           r"differs from the condition's shape \(2, 3\)"):
        model.finish()
    model = _model(Op.SELECT, [(B8, (2, 3), None), (F32, (3,), None), (F32, (2, 3), None)],
                   [(F32, (2, 3))])
    with pytest.raises(nnrt.BadData, match=r"\(SELECT\), input 1 \(input1\): rank 1 differs "
                                           "from the condition's rank 2"):
        model.finish()
    # Unknown dims: caught at execution instead.
    model = _model(Op.SELECT, [(B8, (0, 3), None), (F32, (0, 3), None), (F32, (0, 3), None)],
                   [(F32, (0, 3))]).finish()
    with pytest.raises(nnrt.BadData, match=r"\(SELECT\), input 1 \(input1\): shape \(1, 3\) "
                                           "differs"):
        nnrt.reference.run(model, [np.ones((2, 3), bool), np.ones((1, 3), np.float32),
                                   np.ones((2, 3), np.float32)])


def test_quantised_comparisons_and_select_use_real_values() -> None:
    qs, q = T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_ASYMM
    # Different scales and zero points on the two inputs: reals [-1.5, 1] vs [-1.75, 1].
    model = _model(Op.LESS, [(qs, (2,), None, 0.5, -3), (qs, (2,), None, 0.25, 7)],
                   [(B8, (2,))]).finish()
    (result,) = nnrt.reference.run(model, [np.array([-6, -1], np.int8),
                                           np.array([0, 11], np.int8)])
    np.testing.assert_array_equal(result, [False, False])
    # SELECT requantises the chosen values to the output's scale and zero point.
    model = _model(Op.SELECT, [(B8, (2,), None), (q, (2,), None, 0.5, 1),
                               (q, (2,), None, 0.25, 0)], [(q, (2,), 1.0, 2)]).finish()
    (result,) = nnrt.reference.run(model, [np.array([True, False]), np.array([6, 0], np.uint8),
                                           np.array([0, 10], np.uint8)])
    # both chosen reals are 2.5: 2.5 / 1.0 + 2 = 4.5 rounds half away from zero to 5
    np.testing.assert_array_equal(result, np.array([5, 5], np.uint8))
