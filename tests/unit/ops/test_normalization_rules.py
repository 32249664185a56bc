"""Malformed-model rules of L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION and
INSTANCE_NORMALIZATION (nnrt/ops/normalization.py)."""

from __future__ import annotations

import numpy as np
import pytest
from single_op import Spec
from single_op import build as _model

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op

F32, Q8 = T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM


def _lrn(radius: Spec, bias: Spec, axis: Spec | None = None) -> nnrt.Model:
    inputs = [(F32, (1, 2), None), radius, bias, (T.FLOAT32, (), 1.0), (T.FLOAT32, (), 0.5)]
    if axis is not None:
        inputs.append(axis)
    return _model(Op.LOCAL_RESPONSE_NORMALIZATION, inputs, [(F32, (1, 2))])


def test_l2_normalization_rank_and_axis() -> None:
    model = _model(Op.L2_NORMALIZATION, [(F32, (1, 1, 1, 1, 2), None)],
                   [(F32, (1, 1, 1, 1, 2))])
    with pytest.raises(nnrt.BadData, match=r"\(L2_NORMALIZATION\), input 0 \(input\): "
                                           r"expected rank between 1 and 4, got 5"):
        model.finish()
    model = _model(Op.L2_NORMALIZATION, [(F32, (2, 3), None), (T.INT32, (), -3)],
                   [(F32, (2, 3))])
    with pytest.raises(nnrt.BadData, match=r"\(L2_NORMALIZATION\), input 1 \(axis\): axis -3 "
                                           "is out of range"):
        model.finish()


def test_l2_normalization_quantised_output_params() -> None:
    model = _model(Op.L2_NORMALIZATION, [(Q8, (2,), None, 0.5, 0)], [(Q8, (2,), 1 / 128, 0)])
    with pytest.raises(nnrt.BadData, match=r"\(L2_NORMALIZATION\), output 0 \(output\): .*"
                                           "zero point 128"):
        model.finish()
    # [3, 4] / 5 = [0.6, 0.8] in steps of 1/128 around 128: [205 (76.8), 230 (102.4)]
    model = _model(Op.L2_NORMALIZATION, [(Q8, (2,), None, 0.5, 0)],
                   [(Q8, (2,), 1 / 128, 128)]).finish()
    (result,) = nnrt.reference.run(model, [np.array([6, 8], np.uint8)])
    np.testing.assert_array_equal(result, np.array([205, 230], np.uint8))


def test_lrn_radius_and_types() -> None:
    with pytest.raises(nnrt.BadData, match=r"\(LOCAL_RESPONSE_NORMALIZATION\), input 1 "
                                           r"\(radius\): radius must be non-negative, got -1"):
        _lrn((T.INT32, (), -1), (T.FLOAT32, (), 1.0)).finish()
    # A zero bias is accepted: NNAPI's CPU implementation and CTS run it (see normalization.py).
    _lrn((T.INT32, (), 1), (T.FLOAT32, (), 0.0)).finish()
    with pytest.raises(nnrt.BadData, match=r"\(LOCAL_RESPONSE_NORMALIZATION\), input 2 "
                                           r"\(bias\): expected FLOAT32, got FLOAT16"):
        _lrn((T.INT32, (), 1), (T.FLOAT16, (), 1.0)).finish()
    with pytest.raises(nnrt.BadData, match=r"\(LOCAL_RESPONSE_NORMALIZATION\), input 5 "
                                           r"\(axis\): axis 2 is out of range"):
        _lrn((T.INT32, (), 1), (T.FLOAT32, (), 1.0), (T.INT32, (), 2)).finish()


def test_lrn_radius_fed_at_run_time_is_checked_there() -> None:
    model = _lrn((T.INT32, (), None), (T.FLOAT32, (), 1.0)).finish()
    with pytest.raises(nnrt.BadData, match=r"\(LOCAL_RESPONSE_NORMALIZATION\), input 1 "
                                           r"\(radius\): radius must be non-negative"):
        nnrt.reference.run(model, [np.ones((1, 2), np.float32), np.int32(-2)])


def test_instance_normalization_rank_layout_and_scalars() -> None:
    scalars = [(T.FLOAT32, (), 1.0), (T.FLOAT32, (), 0.0), (T.FLOAT32, (), 1e-3)]
    model = _model(Op.INSTANCE_NORMALIZATION,
                   [(F32, (1, 2, 2), None), *scalars, (T.BOOL, (), False)], [(F32, (1, 2, 2))])
    with pytest.raises(nnrt.BadData, match=r"\(INSTANCE_NORMALIZATION\), input 0 \(input\): "
                                           "expected rank 4, got 3"):
        model.finish()
    model = _model(Op.INSTANCE_NORMALIZATION,
                   [(F32, (1, 2, 2, 1), None), *scalars, (T.INT32, (), 0)],
                   [(F32, (1, 2, 2, 1))])
    with pytest.raises(nnrt.BadData, match=r"\(INSTANCE_NORMALIZATION\), input 4 \(layout\): "
                                           "expected BOOL, got INT32"):
        model.finish()
    model = _model(Op.INSTANCE_NORMALIZATION,
                   [(F32, (1, 2, 2, 1), None), *scalars[:2], (T.FLOAT16, (), 1e-3),
                    (T.BOOL, (), False)], [(F32, (1, 2, 2, 1))])
    with pytest.raises(nnrt.BadData, match=r"\(INSTANCE_NORMALIZATION\), input 3 \(epsilon\): "
                                           "expected FLOAT32, got FLOAT16"):
        model.finish()
