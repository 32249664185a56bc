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


def test_quantised_maximum_validates_but_is_unsupported() -> None:
    q = T.TENSOR_QUANT8_ASYMM
    model = _model(Op.MAXIMUM, [(q, (2,), None, 0.5, 3), (q, (2,), None, 0.25, 0)],
                   [(q, (2,), 1.0, 1)]).finish()
    with pytest.raises(nnrt.Unsupported, match=r"operation 0 \(MAXIMUM\): the "
                                               "TENSOR_QUANT8_ASYMM variant"):
        nnrt.reference.run(model, [np.zeros(2, np.uint8), np.zeros(2, np.uint8)])
