"""Malformed-model rules of SLICE and STRIDED_SLICE (nnrt/ops/slicing.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from single_op import Spec
from single_op import build as _model

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op

F32 = T.TENSOR_FLOAT32
I32 = T.TENSOR_INT32
Q8 = T.TENSOR_QUANT8_ASYMM


def _strided(x: Spec, begin: Any, end: Any, strides: Any, *, masks: tuple[int, int, int],
             out_dims: tuple[int, ...]) -> nnrt.Model:
    n = len(x[1])
    return _model(Op.STRIDED_SLICE, [x, (I32, (n,), begin), (I32, (n,), end),
                                     (I32, (n,), strides), *((T.INT32, (), m) for m in masks)],
                  [(x[0], out_dims, *x[3:])])


# -- SLICE ----------------------------------------------------------------------------------------

def test_slice_begin_length_must_match_rank() -> None:
    model = _model(Op.SLICE, [(F32, (3, 4), None), (I32, (3,), None), (I32, (2,), None)],
                   [(F32, (0, 0))])
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(SLICE\), input 1 \(begin\): expected "
                                           r"2 elements \(the rank of input 0\), got 3"):
        model.finish()


def test_slice_rejects_float_size() -> None:
    model = _model(Op.SLICE, [(F32, (3, 4), None), (I32, (2,), None), (F32, (2,), None)],
                   [(F32, (0, 0))])
    with pytest.raises(nnrt.BadData, match=r"\(SLICE\), input 2 \(size\): expected TENSOR_INT32, "
                                           "got TENSOR_FLOAT32"):
        model.finish()


def test_slice_constant_size_past_the_end() -> None:
    model = _model(Op.SLICE, [(F32, (3, 4), None), (I32, (2,), [1, 2]), (I32, (2,), [2, 3])],
                   [(F32, (2, 3))])
    with pytest.raises(nnrt.BadData, match=r"\(SLICE\), input 2 \(size\): size\[1\] = 3 does not "
                                           "fit dimension 1 of size 4 from begin 2"):
        model.finish()


def test_slice_runtime_negative_begin() -> None:
    model = _model(Op.SLICE, [(F32, (3, 4), None), (I32, (2,), None), (I32, (2,), [1, -1])],
                   [(F32, (0, 0))]).finish()
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert nnrt.reference.run(model, [x, np.array([2, 1], np.int32)])[0].tolist() == [[9, 10, 11]]
    with pytest.raises(nnrt.BadData, match=r"\(SLICE\), input 1 \(begin\): begin\[0\] = -1 is "
                                           "out of range for dimension 0 of size 3"):
        nnrt.reference.run(model, [x, np.array([-1, 0], np.int32)])


# -- STRIDED_SLICE --------------------------------------------------------------------------------

def test_strided_slice_counts_rank_and_type() -> None:
    model = _model(Op.STRIDED_SLICE, [(F32, (4,), None), (I32, (1,), [0]), (I32, (1,), [2]),
                                      (I32, (1,), [1]), (T.INT32, (), 0), (T.INT32, (), 0)],
                   [(F32, (2,))])
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(STRIDED_SLICE\): expected 7 inputs, "
                                           "got 6"):
        model.finish()
    with pytest.raises(nnrt.BadData, match=r"\(STRIDED_SLICE\), input 0 \(input\): expected rank "
                                           "between 1 and 6, got 7"):
        _strided((F32, (1, 1, 1, 1, 1, 1, 2), None), [0] * 7, [1] * 7, [1] * 7, masks=(0, 0, 0),
                 out_dims=(1,) * 7).finish()
    # NNAPI defines no TENSOR_INT32 variant of STRIDED_SLICE (unlike SLICE).
    with pytest.raises(nnrt.BadData, match=r"\(STRIDED_SLICE\), input 0 \(input\): expected .*, "
                                           "got TENSOR_INT32"):
        _strided((I32, (4,), None), [0], [2], [1], masks=(0, 0, 0), out_dims=(2,)).finish()


def test_strided_slice_rejects_zero_stride() -> None:
    with pytest.raises(nnrt.BadData, match=r"\(STRIDED_SLICE\), input 3 \(strides\): "
                                           r"strides\[1\] is 0"):
        _strided((F32, (2, 3), None), [0, 0], [2, 3], [1, 0], masks=(0, 0, 0),
                 out_dims=(2, 3)).finish()


def test_strided_slice_shrink_needs_one_element_and_positive_stride() -> None:
    with pytest.raises(nnrt.BadData, match=r"\(STRIDED_SLICE\), input 6 \(shrink_axis_mask\): "
                                           "dimension 0 is shrunk .* has 2 elements, expected 1"):
        _strided((F32, (4, 3), None), [0, 0], [2, 3], [1, 1], masks=(0, 0, 1),
                 out_dims=(3,)).finish()
    with pytest.raises(nnrt.BadData, match=r"\(STRIDED_SLICE\), input 3 \(strides\): dimension 1 "
                                           r"is shrunk \(shrink_axis_mask\) but strides\[1\] = -1"):
        _strided((F32, (4, 3), None), [0, 2], [4, 1], [1, -1], masks=(0, 0, 2),
                 out_dims=(4,)).finish()


def test_strided_slice_runtime_strides() -> None:
    model = _model(Op.STRIDED_SLICE, [(F32, (5,), None), (I32, (1,), [4]), (I32, (1,), [0]),
                                      (I32, (1,), None), (T.INT32, (), 0), (T.INT32, (), 0),
                                      (T.INT32, (), 0)], [(F32, (0,))]).finish()
    x = np.arange(5, dtype=np.float32)
    assert nnrt.reference.run(model, [x, np.array([-2], np.int32)])[0].tolist() == [4, 2]
    with pytest.raises(nnrt.BadData, match=r"\(STRIDED_SLICE\), input 3 \(strides\): "
                                           r"strides\[0\] is 0"):
        nnrt.reference.run(model, [x, np.array([0], np.int32)])


# -- quantised variants: valid, not implemented -------------------------------------------------

def test_quantised_slices_keep_the_stored_integers() -> None:
    model = _strided((Q8, (2, 3), None, 0.5, 7), [0, 0], [2, 3], [1, 2], masks=(0, 0, 0),
                     out_dims=(2, 2)).finish()
    got = nnrt.reference.run(model, [np.array([[0, 1, 2], [253, 254, 255]], np.uint8)])[0]
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, [[0, 2], [253, 255]])
    q8s = T.TENSOR_QUANT8_ASYMM_SIGNED
    model = _model(Op.SLICE, [(q8s, (3,), None, 0.5, 0), (I32, (1,), [1]), (I32, (1,), [-1])],
                   [(q8s, (2,), 0.5, 0)]).finish()
    got = nnrt.reference.run(model, [np.array([-128, 0, 127], np.int8)])[0]
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, [0, 127])
    model = _model(Op.SLICE, [(q8s, (3,), None, 0.5, 0), (I32, (1,), [1]), (I32, (1,), [-1])],
                   [(q8s, (2,), 0.25, 0)])
    with pytest.raises(nnrt.BadData, match=r"\(SLICE\), output 0 \(output\): expected the scale "
                                           "and zero point of input 0"):
        model.finish()
