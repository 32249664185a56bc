"""Malformed-model rules of PAD, PAD_V2, MIRROR_PAD (nnrt/ops/pad.py)."""

from __future__ import annotations

import numpy as np
import pytest
from single_op import build as _model

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op

F32 = T.TENSOR_FLOAT32
I32 = T.TENSOR_INT32


def test_pad_rejects_wrong_paddings_shape_and_values() -> None:
    model = _model(Op.PAD, [(F32, (2, 2), None), (I32, (3, 2), [[0, 0]] * 3)], [(F32, (0, 0))])
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(PAD\), input 1 \(paddings\): "
                                           r"expected 2 rows \(the input rank\), got 3"):
        model.finish()
    model = _model(Op.PAD, [(F32, (2, 2), None), (I32, (2, 2), [[0, -1], [0, 0]])],
                   [(F32, (0, 0))])
    with pytest.raises(nnrt.BadData, match=r"\(PAD\), input 1 \(paddings\): paddings must be "
                                           r"non-negative"):
        model.finish()


def test_pad_rejects_rank_7_and_quant_scale_change() -> None:
    model = _model(Op.PAD, [(F32, (1, 1, 1, 1, 1, 1, 2), None), (I32, (7, 2), None)],
                   [(F32, (0,) * 7)])
    with pytest.raises(nnrt.BadData, match=r"\(PAD\), input 0 \(input\): expected rank between "
                                           r"1 and 6, got 7"):
        model.finish()
    q8 = T.TENSOR_QUANT8_ASYMM
    model = _model(Op.PAD, [(q8, (2,), None, 0.5, 3), (I32, (1, 2), [[1, 1]])],
                   [(q8, (4,), 0.5, 4)])
    with pytest.raises(nnrt.BadData, match=r"\(PAD\), output 0 \(output\): expected the scale "
                                           r"and zero point of input 0"):
        model.finish()


def test_pad_paddings_checked_at_execution() -> None:
    model = _model(Op.PAD, [(F32, (2,), None), (I32, (1, 2), None)], [(F32, (0,))]).finish()
    x = np.array([1.0, 2.0], np.float32)
    np.testing.assert_array_equal(nnrt.reference.run(model, [x, [[1, 0]]])[0], [0.0, 1.0, 2.0])
    with pytest.raises(nnrt.BadData, match=r"\(PAD\), input 1 \(paddings\): paddings must be "
                                           r"non-negative"):
        nnrt.reference.run(model, [x, [[-1, 0]]])


def test_pad_v2_value_type_follows_input_type() -> None:
    f16 = T.TENSOR_FLOAT16
    model = _model(Op.PAD_V2, [(f16, (2,), None), (I32, (1, 2), [[1, 1]]),
                               (T.FLOAT32, (), 1.0)], [(f16, (4,))])
    with pytest.raises(nnrt.BadData, match=r"\(PAD_V2\), input 2 \(pad_value\): expected "
                                           r"FLOAT16, got FLOAT32"):
        model.finish()
    model = _model(Op.PAD_V2, [(F32, (2,), None), (I32, (1, 2), [[1, 1]])], [(F32, (4,))])
    with pytest.raises(nnrt.BadData, match=r"\(PAD_V2\): expected 3 inputs, got 2"):
        model.finish()


def test_mirror_pad_rejects_bad_mode_and_oversized_paddings() -> None:
    model = _model(Op.MIRROR_PAD, [(F32, (2, 3), None), (I32, (2, 2), [[0, 0], [1, 1]]),
                                   (T.INT32, (), 2)], [(F32, (2, 5))])
    with pytest.raises(nnrt.BadData, match=r"\(MIRROR_PAD\), input 2 \(mode\): invalid mode 2"):
        model.finish()
    model = _model(Op.MIRROR_PAD, [(F32, (2, 3), None), (I32, (2, 2), [[2, 0], [0, 0]]),
                                   (T.INT32, (), 0)], [(F32, (0, 0))])
    with pytest.raises(nnrt.BadData, match=r"\(MIRROR_PAD\), input 1 \(paddings\): REFLECT "
                                           r"paddings of dimension 0 \(size 2\) must be at most 1"):
        model.finish()


def test_mirror_pad_symmetric_limit_checked_at_execution() -> None:
    model = _model(Op.MIRROR_PAD, [(F32, (2,), None), (I32, (1, 2), None), (T.INT32, (), 1)],
                   [(F32, (0,))]).finish()
    x = np.array([1.0, 2.0], np.float32)
    np.testing.assert_array_equal(nnrt.reference.run(model, [x, [[2, 0]]])[0], [2, 1, 1, 2])
    with pytest.raises(nnrt.BadData, match=r"\(MIRROR_PAD\), input 1 \(paddings\): SYMMETRIC "
                                           r"paddings of dimension 0 \(size 2\) must be at most 2"):
        nnrt.reference.run(model, [x, [[3, 0]]])


def test_quantised_pads_use_stored_values() -> None:
    q8 = T.TENSOR_QUANT8_ASYMM
    model = _model(Op.PAD_V2, [(q8, (2,), None, 0.5, 3), (I32, (1, 2), [[1, 1]]),
                               (T.INT32, (), 7)], [(q8, (4,), 0.5, 3)]).finish()
    got = nnrt.reference.run(model, [np.array([0, 255], np.uint8)])[0]
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, [7, 0, 255, 7])
    # PAD pads with real 0, i.e. the zero point.
    model = _model(Op.PAD, [(q8, (2,), None, 0.5, 3), (I32, (1, 2), [[1, 2]])],
                   [(q8, (5,), 0.5, 3)]).finish()
    got = nnrt.reference.run(model, [np.array([0, 255], np.uint8)])[0]
    np.testing.assert_array_equal(got, [3, 0, 255, 3, 3])


def test_quantised_pad_v2_value_must_fit_the_type() -> None:
    q8s = T.TENSOR_QUANT8_ASYMM_SIGNED
    model = _model(Op.PAD_V2, [(q8s, (2,), None, 0.5, 3), (I32, (1, 2), [[1, 1]]),
                               (T.INT32, (), 128)], [(q8s, (4,), 0.5, 3)])
    with pytest.raises(nnrt.BadData, match=r"\(PAD_V2\), input 2 \(pad_value\): pad value 128 "
                                           r"is out of the range of TENSOR_QUANT8_ASYMM_SIGNED "
                                           r"\(\[-128, 127\]\)"):
        model.finish()
