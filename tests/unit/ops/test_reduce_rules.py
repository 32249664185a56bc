"""Malformed-model rules of MEAN, REDUCE_*, ARGMAX and ARGMIN (nnrt/ops/reduce.py)."""

from __future__ import annotations

import numpy as np
import pytest
from single_op import build as _model

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op

F32 = T.TENSOR_FLOAT32
I32 = T.TENSOR_INT32
Q8 = T.TENSOR_QUANT8_ASYMM


# -- MEAN -----------------------------------------------------------------------------------------

def test_mean_rejects_missing_keep_dims() -> None:
    model = _model(Op.MEAN, [(F32, (2, 3), None), (I32, (1,), [1])], [(F32, (2,))])
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(MEAN\): expected 3 inputs, got 2"):
        model.finish()


def test_mean_keep_dims_must_be_int32_not_bool() -> None:
    model = _model(Op.MEAN, [(F32, (2, 3), None), (I32, (1,), [1]), (T.BOOL, (), True)],
                   [(F32, (2, 1))])
    with pytest.raises(nnrt.BadData, match=r"\(MEAN\), input 2 \(keep_dims\): expected INT32, "
                                           "got BOOL"):
        model.finish()


def test_mean_rejects_rank_7_and_out_of_range_axis() -> None:
    model = _model(Op.MEAN, [(F32, (1, 1, 1, 1, 1, 1, 2), None), (I32, (1,), [0]),
                             (T.INT32, (), 0)],
                   [(F32, (1, 1, 1, 1, 1, 2))])
    with pytest.raises(nnrt.BadData, match=r"\(MEAN\), input 0 \(input\): expected rank between "
                                           "1 and 6, got 7"):
        model.finish()
    model = _model(Op.MEAN, [(F32, (2, 3), None), (I32, (2,), [0, -3]), (T.INT32, (), 0)],
                   [(F32, (1,))])
    with pytest.raises(nnrt.BadData, match=r"\(MEAN\), input 1 \(axes\): axes\[1\] = -3 is out "
                                           r"of range for rank 2 \(expected \[-2, 2\)\)"):
        model.finish()


def test_mean_quantised_output_keeps_scale_and_zero_point() -> None:
    model = _model(Op.MEAN, [(Q8, (2, 3), None, 0.5, 3), (I32, (1,), [1]), (T.INT32, (), 0)],
                   [(Q8, (2,), 0.25, 3)])
    with pytest.raises(nnrt.BadData, match=r"\(MEAN\), output 0 \(output\): expected the scale "
                                           "and zero point of input 0"):
        model.finish()


# -- REDUCE_* -------------------------------------------------------------------------------------

def test_reduce_sum_rejects_quantised_input_and_int32_keep_dims() -> None:
    model = _model(Op.REDUCE_SUM, [(Q8, (2, 3), None, 0.5, 0), (I32, (1,), [1]),
                                   (T.BOOL, (), False)], [(Q8, (2,), 0.5, 0)])
    with pytest.raises(nnrt.BadData, match=r"\(REDUCE_SUM\), input 0 \(input\): expected "
                                           "TENSOR_FLOAT32 or TENSOR_FLOAT16, got "
                                           "TENSOR_QUANT8_ASYMM"):
        model.finish()
    model = _model(Op.REDUCE_SUM, [(F32, (2, 3), None), (I32, (1,), [1]), (T.INT32, (), 0)],
                   [(F32, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(REDUCE_SUM\), input 2 \(keep_dims\): expected "
                                           "BOOL, got INT32"):
        model.finish()


def test_reduce_any_needs_bool8_and_prod_needs_1d_axes() -> None:
    model = _model(Op.REDUCE_ANY, [(F32, (2, 3), None), (I32, (1,), [1]), (T.BOOL, (), False)],
                   [(F32, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(REDUCE_ANY\), input 0 \(input\): expected "
                                           "TENSOR_BOOL8, got TENSOR_FLOAT32"):
        model.finish()
    model = _model(Op.REDUCE_PROD, [(F32, (2, 3), None), (I32, (1, 1), [[1]]),
                                    (T.BOOL, (), False)], [(F32, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(REDUCE_PROD\), input 1 \(axes\): expected rank 1, "
                                           "got 2"):
        model.finish()


def test_reduce_max_checks_runtime_axes() -> None:
    model = _model(Op.REDUCE_MAX, [(F32, (2, 3), None), (I32, (1,), None), (T.BOOL, (), False)],
                   [(F32, (0,))]).finish()
    x = np.ones((2, 3), np.float32)
    assert nnrt.reference.run(model, [x, np.array([-1], np.int32)])[0].shape == (2,)
    with pytest.raises(nnrt.BadData, match=r"\(REDUCE_MAX\), input 1 \(axes\): axes\[0\] = 2 is "
                                           "out of range for rank 2"):
        nnrt.reference.run(model, [x, np.array([2], np.int32)])


def test_reduce_all_axes_without_keep_dims_declares_shape_1() -> None:
    model = _model(Op.REDUCE_MIN, [(F32, (2, 3), None), (I32, (2,), [0, 1]), (T.BOOL, (), False)],
                   [(F32, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(REDUCE_MIN\), output 0 \(output\): declared dims "
                                           r"\(2\) contradict the shape \(1\)"):
        model.finish()


# -- ARGMAX / ARGMIN ------------------------------------------------------------------------------

def test_argmax_rejects_float_output_and_out_of_range_axis() -> None:
    model = _model(Op.ARGMAX, [(F32, (2, 3), None), (T.INT32, (), 1)], [(F32, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(ARGMAX\), output 0 \(output\): expected "
                                           "TENSOR_INT32, got TENSOR_FLOAT32"):
        model.finish()
    model = _model(Op.ARGMAX, [(F32, (2, 3), None), (T.INT32, (), -3)], [(I32, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(ARGMAX\), input 1 \(axis\): axis -3 is out of "
                                           "range for rank 2"):
        model.finish()


def test_argmin_rejects_extra_input_and_bool_input() -> None:
    model = _model(Op.ARGMIN, [(F32, (2, 3), None), (T.INT32, (), 1), (T.INT32, (), 0)],
                   [(I32, (2,))])
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(ARGMIN\): expected 2 inputs, got 3"):
        model.finish()
    model = _model(Op.ARGMIN, [(T.TENSOR_BOOL8, (2, 3), None), (T.INT32, (), 1)], [(I32, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(ARGMIN\), input 0 \(input\): expected .*, got "
                                           "TENSOR_BOOL8"):
        model.finish()


def test_argmin_checks_runtime_axis() -> None:
    model = _model(Op.ARGMIN, [(F32, (2, 3), None), (T.INT32, (), None)], [(I32, (0,))]).finish()
    x = np.array([[3, 1, 2], [0, 5, -1]], np.float32)
    out = nnrt.reference.run(model, [x, np.int32(-1)])[0]
    assert out.tolist() == [1, 2]
    with pytest.raises(nnrt.BadData, match=r"\(ARGMIN\), input 1 \(axis\): axis 2 is out of "
                                           "range"):
        nnrt.reference.run(model, [x, np.int32(2)])


# -- quantised variants: valid, not implemented -------------------------------------------------

def test_quantised_reductions_compare_the_stored_integers() -> None:
    q8s = T.TENSOR_QUANT8_ASYMM_SIGNED
    model = _model(Op.REDUCE_MAX, [(Q8, (2, 3), None, 0.5, 3), (I32, (1,), [1]),
                                   (T.BOOL, (), True)], [(Q8, (2, 1), 0.5, 3)]).finish()
    got = nnrt.reference.run(model, [np.array([[0, 255, 3], [9, 8, 7]], np.uint8)])[0]
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, [[255], [9]])
    model = _model(Op.ARGMAX, [(q8s, (2, 3), None, 0.5, -3), (T.INT32, (), 0)],
                   [(I32, (3,))]).finish()
    got = nnrt.reference.run(model, [np.array([[-128, 5, 127], [-127, 5, -1]], np.int8)])[0]
    np.testing.assert_array_equal(got, [1, 0, 0])


def test_quantised_mean_truncates_toward_zero() -> None:
    # NNAPI's integer mean: sums -3 and 5 of two stored values -> -1.5 and 2.5 -> -1 and 2.
    q8s = T.TENSOR_QUANT8_ASYMM_SIGNED
    model = _model(Op.MEAN, [(q8s, (2, 2), None, 0.5, -3), (I32, (1,), [1]), (T.INT32, (), 0)],
                   [(q8s, (2,), 0.5, -3)]).finish()
    got = nnrt.reference.run(model, [np.array([[-2, -1], [2, 3]], np.int8)])[0]
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, [-1, 2])


@pytest.mark.parametrize(("op", "expected"), [
    (Op.REDUCE_MAX, -np.inf), (Op.REDUCE_MIN, np.inf), (Op.REDUCE_SUM, 0.0),
    (Op.REDUCE_PROD, 1.0)])
def test_float_reductions_of_an_empty_set_give_the_identity(op: Op, expected: float) -> None:
    model = _model(op, [(F32, (0, 0), None), (I32, (1,), [0]), (T.BOOL, (), False)],
                   [(F32, (0,))]).finish()
    got = nnrt.reference.run(model, [np.zeros((0, 3), np.float32)])[0]
    np.testing.assert_array_equal(got, np.full(3, expected, np.float32))


def test_empty_reductions_of_quantised_and_mean() -> None:
    q8s = T.TENSOR_QUANT8_ASYMM_SIGNED
    for op, expected in ((Op.REDUCE_MAX, -128), (Op.REDUCE_MIN, 127)):
        model = _model(op, [(q8s, (0, 0), None, 0.5, 3), (I32, (1,), [1]), (T.BOOL, (), True)],
                       [(q8s, (0, 0), 0.5, 3)]).finish()
        got = nnrt.reference.run(model, [np.zeros((2, 0), np.int8)])[0]
        np.testing.assert_array_equal(got, np.full((2, 1), expected, np.int8))
    model = _model(Op.MEAN, [(F32, (0, 0), None), (I32, (1,), [1]), (T.INT32, (), 0)],
                   [(F32, (0,))]).finish()
    assert np.isnan(nnrt.reference.run(model, [np.zeros((2, 0), np.float32)])[0]).all()
    model = _model(Op.MEAN, [(q8s, (0, 0), None, 0.5, 3), (I32, (1,), [1]), (T.INT32, (), 0)],
                   [(q8s, (0,), 0.5, 3)]).finish()
    with pytest.raises(nnrt.BadData, match=r"\(MEAN\), input 0 \(input\): the mean of an "
                                           r"empty set .* has no TENSOR_QUANT8_ASYMM_SIGNED"):
        nnrt.reference.run(model, [np.zeros((2, 0), np.int8)])
    # ... but an empty output is just empty.
    assert nnrt.reference.run(model, [np.zeros((0, 0), np.int8)])[0].shape == (0,)


def test_arg_of_an_empty_axis_is_bad_data() -> None:
    model = _model(Op.ARGMIN, [(F32, (0, 0), None), (T.INT32, (), 1)], [(I32, (0,))]).finish()
    with pytest.raises(nnrt.BadData, match=r"\(ARGMIN\), input 0 \(input\): axis 1 of shape "
                                           r"\(2, 0\) has no element"):
        nnrt.reference.run(model, [np.zeros((2, 0), np.float32)])
    got = nnrt.reference.run(model, [np.zeros((0, 3), np.float32)])[0]
    assert got.shape == (0,) and got.dtype == np.int32
