"""HASHTABLE_LOOKUP (nnrt/ops/lookup.py): malformed models, unsorted keys, misses."""

from __future__ import annotations

import numpy as np
import pytest
from single_op import build as _model

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op

I32 = T.TENSOR_INT32
Q8 = T.TENSOR_QUANT8_ASYMM
HITS = (Q8, (2,), 1.0, 0)


def _lookup(values: tuple[object, ...], output: tuple[object, ...],
            hits: tuple[object, ...] = HITS, keys: object = None) -> nnrt.Model:
    return _model(Op.HASHTABLE_LOOKUP, [(I32, (2,), None), (I32, (3,), keys), values],
                  [output, hits])


def test_rejects_value_types_nnapi_does_not_define() -> None:
    model = _lookup((T.TENSOR_FLOAT16, (3, 2), None), (T.TENSOR_FLOAT16, (2, 2)))
    with pytest.raises(nnrt.BadData, match=r"\(HASHTABLE_LOOKUP\), input 2 \(values\): expected "
                                           "TENSOR_FLOAT32, TENSOR_INT32 or TENSOR_QUANT8_ASYMM"):
        model.finish()


def test_rejects_hits_without_unit_scale_and_output_with_other_quantisation() -> None:
    model = _lookup((T.TENSOR_FLOAT32, (3, 2), None), (T.TENSOR_FLOAT32, (2, 2)),
                    (Q8, (2,), 0.5, 0))
    with pytest.raises(nnrt.BadData, match=r"output 1 \(hits\): hits must have scale 1.0 and "
                                           "zero point 0"):
        model.finish()
    model = _lookup((Q8, (3, 2), None, 0.5, 3), (Q8, (2, 2), 0.5, 0))
    with pytest.raises(nnrt.BadData, match=r"output 0 \(output\): expected the scale and zero "
                                           "point of input 2"):
        model.finish()


def test_rejects_keys_not_matching_the_rows_or_unsorted() -> None:
    model = _model(Op.HASHTABLE_LOOKUP, [(I32, (2,), None), (I32, (4,), None),
                                         (T.TENSOR_FLOAT32, (3, 2), None)],
                   [(T.TENSOR_FLOAT32, (2, 2)), HITS])
    with pytest.raises(nnrt.BadData, match=r"input 1 \(keys\): expected 3 keys, one per row of "
                                           "values, got 4"):
        model.finish()
    model = _lookup((T.TENSOR_FLOAT32, (3, 2), None), (T.TENSOR_FLOAT32, (2, 2)),
                    keys=[1, 5, 3])
    with pytest.raises(nnrt.BadData, match=r"input 1 \(keys\): keys must be sorted in ascending "
                                           "order: key 3 at position 2 follows 5"):
        model.finish()
    model = _lookup((T.TENSOR_FLOAT32, (3, 2), None), (T.TENSOR_FLOAT32, (2, 2))).finish()
    values = np.zeros((3, 2), np.float32)
    with pytest.raises(nnrt.BadData, match="keys must be sorted"):
        nnrt.reference.run(model, [np.array([1, 2], np.int32), np.array([3, 2, 1], np.int32),
                                   values])


def test_a_miss_writes_zero_bytes_not_the_zero_point() -> None:
    model = _lookup((Q8, (3, 2), None, 0.5, 7), (Q8, (2, 2), 0.5, 7), keys=[1, 2, 2]).finish()
    values = np.array([[10, 11], [20, 21], [30, 31]], np.uint8)
    output, hits = nnrt.reference.run(model, [np.array([9, 2], np.int32), values])
    np.testing.assert_array_equal(output, [[0, 0], [20, 21]])  # equal keys: the first row
    np.testing.assert_array_equal(hits, [0, 1])
    assert output.dtype == np.uint8 and hits.dtype == np.uint8


def test_extreme_keys_are_compared_exactly() -> None:
    model = _lookup((I32, (3,), None), (I32, (2,))).finish()
    keys = np.array([-(2**31), 0, 2**31 - 1], np.int32)
    output, hits = nnrt.reference.run(model, [np.array([2**31 - 1, -(2**31)], np.int32), keys,
                                              np.array([5, 6, 7], np.int32)])
    np.testing.assert_array_equal(output, [7, 5])
    np.testing.assert_array_equal(hits, [1, 1])
