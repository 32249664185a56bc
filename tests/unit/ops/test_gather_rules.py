"""Malformed-model rules of GATHER, EMBEDDING_LOOKUP and TOPK_V2 (nnrt/ops/gather.py)."""

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


# -- GATHER ---------------------------------------------------------------------------------------

def test_gather_rejects_float_indices_and_bad_axis() -> None:
    model = _model(Op.GATHER, [(F32, (3, 4), None), (T.INT32, (), 0), (F32, (2,), None)],
                   [(F32, (2, 4))])
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(GATHER\), input 2 \(indices\): "
                                           "expected TENSOR_INT32, got TENSOR_FLOAT32"):
        model.finish()
    model = _model(Op.GATHER, [(F32, (3, 4), None), (T.INT32, (), 2), (I32, (2,), None)],
                   [(F32, (2, 4))])
    with pytest.raises(nnrt.BadData, match=r"\(GATHER\), input 1 \(axis\): axis 2 is out of "
                                           "range for rank 2"):
        model.finish()


def test_gather_rejects_constant_out_of_range_index() -> None:
    model = _model(Op.GATHER, [(F32, (3, 4), None), (T.INT32, (), -1), (I32, (2,), [1, 4])],
                   [(F32, (3, 2))])
    with pytest.raises(nnrt.BadData, match=r"\(GATHER\), input 2 \(indices\): index 4 at "
                                           r"position 1 is out of range for axis 1 of size 4"):
        model.finish()


def test_gather_never_wraps_negative_indices_at_runtime() -> None:
    model = _model(Op.GATHER, [(F32, (3, 4), None), (T.INT32, (), 0), (I32, (2,), None)],
                   [(F32, (2, 4))]).finish()
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert nnrt.reference.run(model, [x, np.array([2, 0], np.int32)])[0][0, 0] == 8.0
    with pytest.raises(nnrt.BadData, match=r"\(GATHER\), input 2 \(indices\): index -1 at "
                                           "position 0 is out of range"):
        nnrt.reference.run(model, [x, np.array([-1, 0], np.int32)])


def test_gather_quantised_output_keeps_scale() -> None:
    model = _model(Op.GATHER, [(Q8, (3, 4), None, 0.5, 1), (T.INT32, (), 0), (I32, (2,), None)],
                   [(Q8, (2, 4), 0.5, 2)])
    with pytest.raises(nnrt.BadData, match=r"\(GATHER\), output 0 \(output\): expected the scale "
                                           "and zero point of input 0"):
        model.finish()


# -- EMBEDDING_LOOKUP -----------------------------------------------------------------------------

def test_embedding_lookup_ranks() -> None:
    model = _model(Op.EMBEDDING_LOOKUP, [(I32, (2, 1), None), (F32, (3, 2), None)],
                   [(F32, (2, 2))])
    with pytest.raises(nnrt.BadData, match=r"\(EMBEDDING_LOOKUP\), input 0 \(lookups\): "
                                           "expected rank 1, got 2"):
        model.finish()
    model = _model(Op.EMBEDDING_LOOKUP, [(I32, (2,), None), (F32, (3,), None)], [(F32, (2,))])
    with pytest.raises(nnrt.BadData, match=r"\(EMBEDDING_LOOKUP\), input 1 \(values\): "
                                           "expected rank at least 2, got 1"):
        model.finish()


def test_embedding_lookup_output_type_follows_values() -> None:
    model = _model(Op.EMBEDDING_LOOKUP, [(I32, (2,), None), (F32, (3, 2), None)],
                   [(I32, (2, 2))])
    with pytest.raises(nnrt.BadData, match=r"\(EMBEDDING_LOOKUP\), output 0 \(output\): "
                                           "expected TENSOR_FLOAT32 like input 1"):
        model.finish()


def test_embedding_lookup_out_of_range_lookup_at_runtime() -> None:
    model = _model(Op.EMBEDDING_LOOKUP, [(I32, (2,), None), (F32, (3, 2), None)],
                   [(F32, (2, 2))]).finish()
    values = np.arange(6, dtype=np.float32).reshape(3, 2)
    with pytest.raises(nnrt.BadData, match=r"\(EMBEDDING_LOOKUP\), input 0 \(lookups\): index 3 "
                                           "at position 1 is out of range for the first "
                                           "dimension of values of size 3"):
        nnrt.reference.run(model, [np.array([0, 3], np.int32), values])


# -- TOPK_V2 --------------------------------------------------------------------------------------

def test_topk_needs_two_outputs_and_int32_indices() -> None:
    model = _model(Op.TOPK_V2, [(F32, (2, 5), None), (T.INT32, (), 2)], [(F32, (2, 2))])
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(TOPK_V2\): expected 2 outputs, got 1"):
        model.finish()
    model = _model(Op.TOPK_V2, [(F32, (2, 5), None), (T.INT32, (), 2)],
                   [(F32, (2, 2)), (F32, (2, 2))])
    with pytest.raises(nnrt.BadData, match=r"\(TOPK_V2\), output 1 \(indices\): expected "
                                           "TENSOR_INT32, got TENSOR_FLOAT32"):
        model.finish()


def test_topk_k_range() -> None:
    model = _model(Op.TOPK_V2, [(F32, (2, 5), None), (T.INT32, (), 0)],
                   [(F32, (2, 0)), (I32, (2, 0))])
    with pytest.raises(nnrt.BadData, match=r"\(TOPK_V2\), input 1 \(k\): k = 0 is out of range"):
        model.finish()
    model = _model(Op.TOPK_V2, [(F32, (2, 5), None), (T.INT32, (), 6)],
                   [(F32, (2, 6)), (I32, (2, 6))])
    with pytest.raises(nnrt.BadData, match=r"\(TOPK_V2\), input 1 \(k\): k = 6 is out of range: "
                                           r"expected \[1, 5\]"):
        model.finish()
    model = _model(Op.TOPK_V2, [(F32, (2, 0), None), (T.INT32, (), None)],
                   [(F32, (0, 0)), (I32, (0, 0))]).finish()
    with pytest.raises(nnrt.BadData, match=r"\(TOPK_V2\), input 1 \(k\): k = 4 is out of range"):
        nnrt.reference.run(model, [np.zeros((2, 3), np.float32), np.int32(4)])


# -- quantised variants: valid, not implemented -------------------------------------------------

def test_quantised_gathers_keep_the_stored_integers() -> None:
    model = _model(Op.GATHER, [(Q8, (3, 4), None, 0.5, 1), (T.INT32, (), 0), (I32, (2,), None)],
                   [(Q8, (2, 4), 0.5, 1)]).finish()
    x = np.arange(12, dtype=np.uint8).reshape(3, 4) + 240
    got = nnrt.reference.run(model, [x, np.array([2, 0], np.int32)])[0]
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, [[248, 249, 250, 251], [240, 241, 242, 243]])
    q8s = T.TENSOR_QUANT8_ASYMM_SIGNED
    model = _model(Op.EMBEDDING_LOOKUP, [(I32, (2,), None), (q8s, (3, 2), None, 0.25, -1)],
                   [(q8s, (2, 2), 0.25, -1)]).finish()
    values = np.array([[-128, -127], [0, 1], [126, 127]], np.int8)
    got = nnrt.reference.run(model, [np.array([2, 0], np.int32), values])[0]
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, [[126, 127], [-128, -127]])
