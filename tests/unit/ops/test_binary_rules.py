"""Malformed-model rules of MAXIMUM, MINIMUM and POW (nnrt/ops/binary.py); their infinite
results are conformance cases in nnrt/testing/cases/binary.py."""

from __future__ import annotations

import numpy as np
import pytest
from single_op import build as _model

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op

F32 = T.TENSOR_FLOAT32


def test_maximum_rejects_a_third_input() -> None:
    model = _model(Op.MAXIMUM, [(F32, (2,), None), (F32, (2,), None), (T.INT32, (), 0)],
                   [(F32, (2,))])
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(MAXIMUM\): expected 2 inputs, got 3"):
        model.finish()


def test_minimum_rejects_mixed_input_types() -> None:
    model = _model(Op.MINIMUM, [(F32, (2,), None), (T.TENSOR_INT32, (2,), None)], [(F32, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(MINIMUM\), input 1 \(input2\): expected "
                                           r"TENSOR_FLOAT32 like input 0, got TENSOR_INT32"):
        model.finish()


def test_maximum_rejects_wrong_output_type_and_bad_broadcast() -> None:
    model = _model(Op.MAXIMUM, [(F32, (2,), None), (F32, (2,), None)],
                   [(T.TENSOR_FLOAT16, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(MAXIMUM\), output 0 \(output\): expected "
                                           "TENSOR_FLOAT32"):
        model.finish()
    model = _model(Op.MAXIMUM, [(F32, (2, 3), None), (F32, (4,), None)], [(F32, (0, 0))])
    with pytest.raises(nnrt.BadData, match=r"\(MAXIMUM\), input 1 \(input2\): shapes .* cannot "
                                           "be broadcast"):
        model.finish()


def test_minimum_rejects_a_rank_0_value_at_execution() -> None:
    model = _model(Op.MINIMUM, [(F32, (), None), (F32, (2,), None)], [(F32, ())]).finish()
    with pytest.raises(nnrt.BadData, match=r"\(MINIMUM\), input 0 \(input1\): expected rank of "
                                           "at least 1, got 0"):
        nnrt.reference.run(model, [np.float32(1.0), np.ones(2, np.float32)])


def test_pow_rejects_int32_and_rank_7() -> None:
    i32 = T.TENSOR_INT32
    model = _model(Op.POW, [(i32, (2,), None), (i32, (2,), None)], [(i32, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(POW\), input 0 \(base\): expected TENSOR_FLOAT32 "
                                           "or TENSOR_FLOAT16, got TENSOR_INT32"):
        model.finish()
    dims = (1, 1, 1, 1, 1, 1, 2)
    model = _model(Op.POW, [(F32, dims, None), (F32, (1,), None)], [(F32, dims)])
    with pytest.raises(nnrt.BadData, match=r"\(POW\), input 0 \(base\): expected rank between 0 "
                                           "and 6, got 7"):
        model.finish()


def test_quantised_maximum_requantises_each_input() -> None:
    q = T.TENSOR_QUANT8_ASYMM
    model = _model(Op.MAXIMUM, [(q, (2,), None, 0.5, 3), (q, (2,), None, 0.25, 0)],
                   [(q, (2,), 1.0, 1)]).finish()
    # reals [1.5, -1.5] and [0.25, 2.5]: max [1.5, 2.5] -> round half away [2, 3] + 1
    (result,) = nnrt.reference.run(model, [np.array([6, 0], np.uint8),
                                           np.array([1, 10], np.uint8)])
    np.testing.assert_array_equal(result, np.array([3, 4], np.uint8))


def test_quantised_div_is_rejected() -> None:
    q = T.TENSOR_QUANT8_ASYMM
    model = _model(Op.DIV, [(q, (2,), None, 0.5, 3), (q, (2,), None, 0.5, 3), (T.INT32, (), 0)],
                   [(q, (2,), 0.5, 3)])
    with pytest.raises(nnrt.BadData, match=r"\(DIV\), input 0 \(input1\): DIV does not take "
                                           "TENSOR_QUANT8_ASYMM"):
        model.finish()


def test_quantised_mul_output_scale_must_exceed_the_input_product() -> None:
    q, qs = T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED
    # TENSOR_QUANT8_ASYMM: NNAPI's validation rule.
    model = _model(Op.MUL, [(q, (2,), None, 0.5, 0), (q, (2,), None, 0.5, 0), (T.INT32, (), 0)],
                   [(q, (2,), 0.25, 0)])
    with pytest.raises(nnrt.BadData, match=r"\(MUL\), output 0 \(output\): output scale 0.25 "
                                           r"must exceed the product of the input scales"):
        model.finish()
    # TENSOR_QUANT8_ASYMM_SIGNED: valid, but NNAPI's kernel fails at execution.
    model = _model(Op.MUL, [(qs, (2,), None, 0.5, 0), (qs, (2,), None, 0.5, 0),
                            (T.INT32, (), 0)], [(qs, (2,), 0.25, 0)]).finish()
    with pytest.raises(nnrt.BadData, match=r"\(MUL\), output 0 \(output\): the output multiplier "
                                           r"1 is not in \(0, 1\)"):
        nnrt.reference.run(model, [np.zeros(2, np.int8), np.zeros(2, np.int8)])


def test_quantised_add_output_scale_too_small_fails_at_execution() -> None:
    q = T.TENSOR_QUANT8_ASYMM
    model = _model(Op.SUB, [(q, (2,), None, 1.0, 0), (q, (2,), None, 1.0, 0), (T.INT32, (), 0)],
                   [(q, (2,), 1e-7, 0)]).finish()
    with pytest.raises(nnrt.BadData, match=r"\(SUB\), output 0 \(output\): the output multiplier"):
        nnrt.reference.run(model, [np.zeros(2, np.uint8), np.zeros(2, np.uint8)])

