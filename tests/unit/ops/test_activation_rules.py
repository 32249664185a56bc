"""Malformed-model rules of RELU*, LOGISTIC, TANH, HARD_SWISH, ELU and PRELU
(nnrt/ops/activation.py)."""

from __future__ import annotations

import numpy as np
import pytest
from single_op import build as _model

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op

F32, Q8 = T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM


def test_relu_rejects_a_second_input() -> None:
    model = _model(Op.RELU, [(F32, (2,), None), (F32, (2,), None)], [(F32, (2,))])
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(RELU\): expected 1 inputs, got 2"):
        model.finish()


def test_relu6_rejects_rank_7_and_int32() -> None:
    model = _model(Op.RELU6, [(F32, (1, 1, 1, 1, 1, 1, 2), None)], [(F32, (1, 1, 1, 1, 1, 1, 2))])
    with pytest.raises(nnrt.BadData, match=r"\(RELU6\), input 0 \(input\): expected rank "
                                           r"between 1 and 6, got 7"):
        model.finish()
    model = _model(Op.TANH, [(T.TENSOR_INT32, (2,), None)], [(T.TENSOR_INT32, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(TANH\), input 0 \(input\): expected .*got "
                                           "TENSOR_INT32"):
        model.finish()


def test_relu1_output_type_and_quantisation_must_match_input() -> None:
    model = _model(Op.RELU1, [(F32, (2,), None)], [(T.TENSOR_FLOAT16, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(RELU1\), output 0 \(output\): expected "
                                           "TENSOR_FLOAT32"):
        model.finish()
    model = _model(Op.RELU, [(Q8, (2,), None, 0.5, 10)], [(Q8, (2,), 0.5, 11)])
    with pytest.raises(nnrt.BadData, match=r"\(RELU\), output 0 \(output\): expected the "
                                           "scale and zero point of input 0"):
        model.finish()


def test_logistic_and_tanh_need_fixed_output_quantisation() -> None:
    model = _model(Op.LOGISTIC, [(Q8, (2,), None, 0.1, 0)], [(Q8, (2,), 1 / 128, 0)])
    with pytest.raises(nnrt.BadData, match=r"\(LOGISTIC\), output 0 \(output\): "
                                           r"TENSOR_QUANT8_ASYMM output needs scale 0.00390625"):
        model.finish()
    signed = T.TENSOR_QUANT8_ASYMM_SIGNED
    model = _model(Op.TANH, [(signed, (2,), None, 0.1, 0)], [(signed, (2,), 1 / 128, 64)])
    with pytest.raises(nnrt.BadData, match=r"\(TANH\), output 0 \(output\): .*zero point 0"):
        model.finish()
    # The documented parameters are accepted.
    _model(Op.TANH, [(signed, (2,), None, 0.1, 0)], [(signed, (2,), 1 / 128, 0)]).finish()


def test_hard_swish_accepts_any_rank_but_not_bool() -> None:
    _model(Op.HARD_SWISH, [(F32, (1, 1, 1, 1, 2), None)], [(F32, (1, 1, 1, 1, 2))]).finish()
    model = _model(Op.HARD_SWISH, [(T.TENSOR_BOOL8, (2,), None)], [(T.TENSOR_BOOL8, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(HARD_SWISH\), input 0 \(input\)"):
        model.finish()


def test_elu_alpha_must_match_the_tensor_type() -> None:
    model = _model(Op.ELU, [(F32, (2,), None), (T.FLOAT16, (), 1.0)], [(F32, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(ELU\), input 1 \(alpha\): expected FLOAT32, "
                                           "got FLOAT16"):
        model.finish()
    model = _model(Op.ELU, [(Q8, (2,), None, 0.5, 0), (T.FLOAT32, (), 1.0)], [(Q8, (2,), 0.5, 0)])
    with pytest.raises(nnrt.BadData, match=r"\(ELU\), input 0 \(input\): expected "
                                           "TENSOR_FLOAT32 or TENSOR_FLOAT16"):
        model.finish()


def test_prelu_alpha_type_and_broadcast() -> None:
    model = _model(Op.PRELU, [(F32, (2, 3), None), (T.TENSOR_FLOAT16, (3,), None)],
                   [(F32, (2, 3))])
    with pytest.raises(nnrt.BadData, match=r"\(PRELU\), input 1 \(alpha\): expected "
                                           "TENSOR_FLOAT32 like input 0"):
        model.finish()
    model = _model(Op.PRELU, [(F32, (2, 3), None), (F32, (2,), None)], [(F32, (2, 3))])
    with pytest.raises(nnrt.BadData, match=r"\(PRELU\), input 1 \(alpha\): shapes .* cannot "
                                           "be broadcast"):
        model.finish()


def test_quantised_relu_clamps_at_the_zero_point() -> None:
    model = _model(Op.RELU, [(Q8, (2,), None, 0.5, 10)], [(Q8, (2,), 0.5, 10)]).finish()
    (result,) = nnrt.reference.run(model, [np.array([1, 20], np.uint8)])
    np.testing.assert_array_equal(result, np.array([10, 20], np.uint8))


def test_quantised_fixed_point_kernels_refuse_unrepresentable_scales() -> None:
    # LOGISTIC's input multiplier scale * 2**27 must exceed 1 (NNAPI's kernel fails otherwise).
    model = _model(Op.LOGISTIC, [(Q8, (2,), None, 2.0**-28, 0)], [(Q8, (2,), 1 / 256, 0)])
    with pytest.raises(nnrt.BadData, match=r"\(LOGISTIC\), input 0 \(input\): input scale .* too "
                                           "small"):
        nnrt.reference.run(model.finish(), [np.array([1, 2], np.uint8)])
    # HARD_SWISH's output multiplier (input scale / 128 / output scale) must stay below 1.
    model = _model(Op.HARD_SWISH, [(Q8, (2,), None, 1.0, 0)], [(Q8, (2,), 2.0**-9, 0)])
    with pytest.raises(nnrt.BadData, match=r"\(HARD_SWISH\), output 0 \(output\): output scale"):
        nnrt.reference.run(model.finish(), [np.array([1, 2], np.uint8)])
