"""Malformed-model rules of CAST, QUANTIZE and DEQUANTIZE (nnrt/ops/conversion.py)."""

from __future__ import annotations

import numpy as np
import pytest
from single_op import build as _model

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op

F32, Q8 = T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM


def test_cast_identity_only_types() -> None:
    model = _model(Op.CAST, [(T.TENSOR_BOOL8, (2,), None)], [(T.TENSOR_INT32, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(CAST\), output 0 \(output\): expected "
                                           "TENSOR_BOOL8, got TENSOR_INT32"):
        model.finish()
    signed = T.TENSOR_QUANT8_ASYMM_SIGNED
    model = _model(Op.CAST, [(signed, (2,), None, 0.5, 0)], [(F32, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(CAST\), output 0 \(output\): expected "
                                           "TENSOR_QUANT8_ASYMM_SIGNED, got TENSOR_FLOAT32"):
        model.finish()
    # The feature-level-3 group converts freely.
    _model(Op.CAST, [(T.TENSOR_INT32, (2,), None)], [(T.TENSOR_FLOAT16, (2,))]).finish()


def test_cast_shape_must_match() -> None:
    model = _model(Op.CAST, [(F32, (2, 3), None)], [(T.TENSOR_INT32, (3, 2))])
    with pytest.raises(nnrt.BadData, match=r"\(CAST\), output 0 \(output\): declared dims"):
        model.finish()


def test_cast_to_quant8_clamps_and_truncates_ignoring_the_scale() -> None:
    model = _model(Op.CAST, [(F32, (4,), None)], [(Q8, (4,), 0.5, 7)]).finish()
    (result,) = nnrt.reference.run(model, [np.array([-3.0, 1.9, 254.99, 999.0], np.float32)])
    np.testing.assert_array_equal(result, np.array([0, 1, 254, 255], np.uint8))
    model = _model(Op.CAST, [(Q8, (2,), None, 0.5, 7)], [(F32, (2,))]).finish()
    (result,) = nnrt.reference.run(model, [np.array([1, 200], np.uint8)])
    np.testing.assert_array_equal(result, np.array([1.0, 200.0], np.float32))

def test_quantize_types() -> None:
    model = _model(Op.QUANTIZE, [(F32, (2,), None)], [(F32, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(QUANTIZE\), output 0 \(output\): expected "
                                           "TENSOR_QUANT8_ASYMM or TENSOR_QUANT8_ASYMM_SIGNED"):
        model.finish()
    model = _model(Op.QUANTIZE, [(T.TENSOR_INT32, (2,), None)], [(Q8, (2,), 0.5, 0)])
    with pytest.raises(nnrt.BadData, match=r"\(QUANTIZE\), input 0 \(input\): expected "
                                           "TENSOR_FLOAT32 or TENSOR_FLOAT16, got TENSOR_INT32"):
        model.finish()


def test_dequantize_types_and_rank() -> None:
    model = _model(Op.DEQUANTIZE, [(Q8, (1, 1, 1, 1, 2), None, 0.5, 0)],
                   [(F32, (1, 1, 1, 1, 2))])
    with pytest.raises(nnrt.BadData, match=r"\(DEQUANTIZE\), input 0 \(input\): expected rank "
                                           r"between 1 and 4, got 5"):
        model.finish()
    model = _model(Op.DEQUANTIZE, [(Q8, (2,), None, 0.5, 0)], [(T.TENSOR_INT32, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(DEQUANTIZE\), output 0 \(output\): expected "
                                           "TENSOR_FLOAT32 or TENSOR_FLOAT16"):
        model.finish()
    model = _model(Op.DEQUANTIZE, [(T.TENSOR_QUANT16_SYMM, (2,), None, 0.5, 0)], [(F32, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(DEQUANTIZE\), input 0 \(input\): expected .*got "
                                           "TENSOR_QUANT16_SYMM"):
        model.finish()
