"""Malformed-model rules and signed-zero results of the unary ops (nnrt/ops/unary.py)."""

from __future__ import annotations

import numpy as np
import pytest
from single_op import build as _model

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op

F32 = T.TENSOR_FLOAT32


def test_abs_rejects_a_second_input() -> None:
    model = _model(Op.ABS, [(F32, (2,), None), (F32, (2,), None)], [(F32, (2,))])
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(ABS\): expected 1 inputs, got 2"):
        model.finish()


@pytest.mark.parametrize("op", [Op.EXP, Op.LOG, Op.SQRT, Op.SIN, Op.FLOOR, Op.RSQRT],
                         ids=lambda op: op.name)
def test_float_only_ops_reject_int32(op: Op) -> None:
    i32 = T.TENSOR_INT32
    model = _model(op, [(i32, (2,), None)], [(i32, (2,))])
    with pytest.raises(nnrt.BadData, match=rf"\({op.name}\), input 0 \(input\): expected "
                                           r"TENSOR_FLOAT32(,| or) TENSOR_FLOAT16.*got "
                                           "TENSOR_INT32"):
        model.finish()


def test_quant8_is_rejected_except_for_rsqrt() -> None:
    q = T.TENSOR_QUANT8_ASYMM
    model = _model(Op.SQRT, [(q, (2,), None, 0.5, 0)], [(q, (2,), 0.5, 0)])
    with pytest.raises(nnrt.BadData, match=r"\(SQRT\), input 0 \(input\): expected .*got "
                                           "TENSOR_QUANT8_ASYMM"):
        model.finish()


def test_output_type_must_match_and_floor_rank_is_at_most_6() -> None:
    model = _model(Op.LOG, [(F32, (2,), None)], [(T.TENSOR_FLOAT16, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(LOG\), output 0 \(output\): expected "
                                           "TENSOR_FLOAT32 like input 0, got TENSOR_FLOAT16"):
        model.finish()
    dims = (1, 2, 1, 2, 1, 1, 1)
    model = _model(Op.FLOOR, [(F32, dims, None)], [(F32, dims)])
    with pytest.raises(nnrt.BadData, match=r"\(FLOOR\), input 0 \(input\): expected rank "
                                           "between 0 and 6, got 7"):
        model.finish()
    _model(Op.SIN, [(F32, dims, None)], [(F32, dims)]).finish()  # no upper limit for SIN


def test_sqrt_rejects_a_rank_0_value_at_execution() -> None:
    model = _model(Op.SQRT, [(F32, (), None)], [(F32, ())]).finish()
    with pytest.raises(nnrt.BadData, match=r"\(SQRT\), input 0 \(input\): expected rank of at "
                                           "least 1, got 0"):
        nnrt.reference.run(model, [np.float32(4.0)])


@pytest.mark.parametrize("type_", [T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED],
                         ids=lambda t: t.name)
def test_quantised_rsqrt_validates_but_is_unsupported(type_: T) -> None:
    model = _model(Op.RSQRT, [(type_, (3,), None, 0.5, 0)], [(type_, (3,), 0.125, 0)]).finish()
    with pytest.raises(nnrt.Unsupported, match=rf"operation 0 \(RSQRT\): the {type_.name} "
                                               "variant"):
        nnrt.reference.run(model, [np.zeros(3, np.uint8 if type_.name.endswith("ASYMM")
                                            else np.int8)])


@pytest.mark.parametrize("type_", [T.TENSOR_FLOAT32, T.TENSOR_FLOAT16], ids=lambda t: t.name)
def test_signed_zero_results(type_: T) -> None:
    """Zero results keep their sign (infinities and NaN are conformance cases in unary.py; the
    conformance comparison cannot tell -0 from +0)."""
    dtype = np.float32 if type_ == F32 else np.float16
    cases = [
        (Op.SQRT, [-0.0, 0.0], [-0.0, 0.0]),
        (Op.NEG, [0.0, -0.0], [-0.0, 0.0]),
        (Op.ABS, [-0.0], [0.0]),
        (Op.FLOOR, [-0.0, -0.25], [-0.0, -1.0]),
        (Op.EXP, [-np.inf], [0.0]),
    ]
    for op, values, expected in cases:
        n = len(values)
        model = _model(op, [(type_, (n,), None)], [(type_, (n,))]).finish()
        (got,) = nnrt.reference.run(model, [np.array(values, dtype)])
        assert got.dtype == dtype
        want = np.array(expected, dtype)
        np.testing.assert_array_equal(got, want, err_msg=op.name)
        assert np.array_equal(np.signbit(got), np.signbit(want)), op.name
