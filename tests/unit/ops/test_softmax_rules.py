"""Malformed-model rules of SOFTMAX and LOG_SOFTMAX (nnrt/ops/softmax.py)."""

from __future__ import annotations

import numpy as np
import pytest
from single_op import build as _model

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op

F32, Q8 = T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM


def test_softmax_rank_and_beta_type() -> None:
    model = _model(Op.SOFTMAX, [(F32, (1, 1, 1, 1, 1, 1, 2), None), (T.FLOAT32, (), 1.0)],
                   [(F32, (1, 1, 1, 1, 1, 1, 2))])
    with pytest.raises(nnrt.BadData, match=r"\(SOFTMAX\), input 0 \(input\): expected rank "
                                           r"between 1 and 6, got 7"):
        model.finish()
    model = _model(Op.SOFTMAX, [(F32, (2, 2), None), (T.FLOAT16, (), 1.0)], [(F32, (2, 2))])
    with pytest.raises(nnrt.BadData, match=r"\(SOFTMAX\), input 1 \(beta\): expected FLOAT32, "
                                           "got FLOAT16"):
        model.finish()


def test_softmax_axis_out_of_range_and_non_positive_beta() -> None:
    model = _model(Op.SOFTMAX, [(F32, (2, 2), None), (T.FLOAT32, (), 1.0), (T.INT32, (), 2)],
                   [(F32, (2, 2))])
    with pytest.raises(nnrt.BadData, match=r"\(SOFTMAX\), input 2 \(axis\): axis 2 is out of "
                                           "range for rank 2"):
        model.finish()
    model = _model(Op.SOFTMAX, [(F32, (2, 2), None), (T.FLOAT32, (), 0.0)], [(F32, (2, 2))])
    with pytest.raises(nnrt.BadData, match=r"\(SOFTMAX\), input 1 \(beta\): beta must be "
                                           "positive"):
        model.finish()


def test_softmax_beta_fed_at_run_time_is_checked_there() -> None:
    model = _model(Op.SOFTMAX, [(F32, (2,), None), (T.FLOAT32, (), None)], [(F32, (2,))])
    model.finish()
    with pytest.raises(nnrt.BadData, match=r"\(SOFTMAX\), input 1 \(beta\): beta must be "
                                           "positive, got -1.0"):
        nnrt.reference.run(model, [np.zeros(2, np.float32), np.float32(-1.0)])


def test_softmax_quantised_output_needs_fixed_params() -> None:
    model = _model(Op.SOFTMAX, [(Q8, (2, 2), None, 0.5, 0), (T.FLOAT32, (), 1.0)],
                   [(Q8, (2, 2), 1 / 256, 128)])
    with pytest.raises(nnrt.BadData, match=r"\(SOFTMAX\), output 0 \(output\): "
                                           "TENSOR_QUANT8_ASYMM output needs scale"):
        model.finish()


def test_log_softmax_needs_three_inputs_and_float_data() -> None:
    model = _model(Op.LOG_SOFTMAX, [(F32, (2,), None), (T.FLOAT32, (), 1.0)], [(F32, (2,))])
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(LOG_SOFTMAX\): expected 3 inputs, "
                                           "got 2"):
        model.finish()
    model = _model(Op.LOG_SOFTMAX, [(Q8, (2,), None, 0.5, 0), (T.FLOAT32, (), 1.0),
                                    (T.INT32, (), 0)], [(Q8, (2,), 0.5, 0)])
    with pytest.raises(nnrt.BadData, match=r"\(LOG_SOFTMAX\), input 0 \(input\): expected "
                                           "TENSOR_FLOAT32 or TENSOR_FLOAT16"):
        model.finish()
    model = _model(Op.LOG_SOFTMAX, [(F32, (2, 3), None), (T.FLOAT32, (), 1.0),
                                    (T.INT32, (), -3)], [(F32, (2, 3))])
    with pytest.raises(nnrt.BadData, match=r"\(LOG_SOFTMAX\), input 2 \(axis\): axis -3"):
        model.finish()


def test_quantised_softmax_computes_in_steps_of_1_256() -> None:
    model = _model(Op.SOFTMAX, [(Q8, (2,), None, 0.5, 0), (T.FLOAT32, (), 1.0)],
                   [(Q8, (2,), 1 / 256, 0)]).finish()
    (result,) = nnrt.reference.run(model, [np.array([1, 3], np.uint8)])
    real = np.exp([0.5, 1.5]) / np.exp([0.5, 1.5]).sum() * 256  # [68.8, 187.2]
    assert result.dtype == np.uint8
    np.testing.assert_allclose(result, real, atol=1)


def test_quantised_softmax_refuses_a_beta_too_small_for_its_multiplier() -> None:
    model = _model(Op.SOFTMAX, [(Q8, (2,), None, 0.5, 0), (T.FLOAT32, (), 1e-9)],
                   [(Q8, (2,), 1 / 256, 0)]).finish()
    with pytest.raises(nnrt.BadData, match=r"\(SOFTMAX\), input 1 \(beta\): beta \* input scale"):
        nnrt.reference.run(model, [np.array([1, 3], np.uint8)])
