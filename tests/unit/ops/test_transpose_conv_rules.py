"""Malformed-model rules of TRANSPOSE_CONV_2D (nnrt/ops/transpose_conv.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from single_op import build, scalar

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op
from nnrt.model.operand import dtype_of

F32 = T.TENSOR_FLOAT32
Q8S = T.TENSOR_QUANT8_ASYMM_SIGNED
PER_CHANNEL = T.TENSOR_QUANT8_SYMM_PER_CHANNEL


def _model(tensors: Sequence[tuple[Any, ...]], params: Sequence[Any], out: tuple[Any, ...], *,
           channel_quant: tuple[int, Sequence[float]] | None = None) -> nnrt.Model:
    """TRANSPOSE_CONV_2D on ``tensors`` (type, dims, value or None for a model input[, scale,
    zero point]) then ``params`` (int → INT32, bool → BOOL constants)."""
    inputs = [(type_, dims, None if value is None else np.asarray(value, dtype_of(type_)), *quant)
              for type_, dims, value, *quant in tensors]
    inputs += [scalar(value) for value in params]
    return build(Op.TRANSPOSE_CONV_2D, inputs, [out], channel_quant=channel_quant)


_FLOAT = [(F32, (1, 2, 2, 2), None), (F32, (3, 2, 2, 2), np.ones((3, 2, 2, 2))),
          (F32, (3,), np.zeros(3))]
_EXPLICIT = [0, 0, 0, 0, 2, 2, 0, False]  # pads l, r, t, b, strides w, h, activation, layout
_ANY = (F32, (0, 0, 0, 0))


def test_transpose_conv_2d_valid_signatures_finish_with_inferred_shapes() -> None:
    model = _model(_FLOAT, _EXPLICIT, _ANY).finish()
    assert model.inferred_dims[model.outputs[0]] == (1, 4, 4, 3)
    implicit = [*_FLOAT, (T.TENSOR_INT32, (4,), [1, 3, 3, 3])]
    model = _model(implicit, [1, 2, 2, 0, False], _ANY).finish()
    assert model.inferred_dims[model.outputs[0]] == (1, 3, 3, 3)
    # Right / bottom padding may be negative: the output grows past the last tap.
    model = _model(_FLOAT, [0, -1, 0, -2, 2, 2, 0, False], _ANY).finish()
    assert model.inferred_dims[model.outputs[0]] == (1, 6, 5, 3)


def test_transpose_conv_2d_rejects_input_count_and_layout_type() -> None:
    model = _model(_FLOAT, _EXPLICIT[:-1], _ANY)
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(TRANSPOSE_CONV_2D\): expected 9 or "
                                           "11 inputs, got 10"):
        model.finish()
    model = _model(_FLOAT, [*_EXPLICIT[:-1], 1], _ANY)
    with pytest.raises(nnrt.BadData, match=r"input 10 \(layout\): expected BOOL, got INT32"):
        model.finish()


def test_transpose_conv_2d_rejects_bad_output_shape_and_padding_code() -> None:
    model = _model([*_FLOAT, (T.TENSOR_INT32, (3,), None)], [1, 2, 2, 0, False], _ANY)
    with pytest.raises(nnrt.BadData, match=r"\(TRANSPOSE_CONV_2D\), input 3 \(output_shape\): "
                                           "expected 4 elements"):
        model.finish()
    model = _model([*_FLOAT, (T.TENSOR_FLOAT32, (4,), None)], [1, 2, 2, 0, False], _ANY)
    with pytest.raises(nnrt.BadData, match=r"input 3 \(output_shape\): expected TENSOR_INT32"):
        model.finish()
    model = _model([*_FLOAT, (T.TENSOR_INT32, (4,), None)], [0, 2, 2, 0, False], _ANY)
    with pytest.raises(nnrt.BadData, match=r"input 4 \(padding\): invalid padding code 0"):
        model.finish()


def test_transpose_conv_2d_rejects_negative_head_padding_and_bias_mismatch() -> None:
    model = _model(_FLOAT, [-1, 0, 0, 0, 2, 2, 0, False], _ANY)
    with pytest.raises(nnrt.BadData, match=r"input 3 \(padding_left\): padding must be at least "
                                           "0, got -1"):
        model.finish()
    tensors = [*_FLOAT[:2], (F32, (2,), np.zeros(2))]
    model = _model(tensors, _EXPLICIT, _ANY)
    with pytest.raises(nnrt.BadData, match=r"input 2 \(bias\): bias has 2 elements, expected 3"):
        model.finish()
    model = _model(_FLOAT, [0, 6, 0, 0, 2, 2, 0, False], _ANY)
    with pytest.raises(nnrt.BadData, match=r"input 0 \(input\): the padding leaves an empty "
                                           "output"):
        model.finish()


def test_quantised_transpose_conv_validates_and_runs() -> None:
    tensors = [(Q8S, (1, 2, 2, 2), None, 0.5, 0),
               (PER_CHANNEL, (3, 2, 2, 2), np.ones((3, 2, 2, 2))),
               (T.TENSOR_INT32, (3,), np.zeros(3))]
    model = _model(tensors, _EXPLICIT, (Q8S, (0, 0, 0, 0), 1.0, 0),
                   channel_quant=(0, [0.5, 0.25, 0.125]))
    model.finish()
    # Stride 2 with a 2x2 filter: every output pixel receives one input pixel, 2 channels of
    # 8 (4 per unit real): 16, times 0.5 * 0.5, 0.5 * 0.25 and 0.5 * 0.125 = 4, 2 and 1.
    (y,) = nnrt.reference.run(model, [np.full((1, 2, 2, 2), 8, np.int8)])
    np.testing.assert_array_equal(y, np.tile(np.int8([4, 2, 1]), (1, 4, 4, 1)))
    model = _model(tensors, _EXPLICIT, (Q8S, (0, 0, 0, 0), 1.0, 0),
                   channel_quant=(3, [0.5, 0.25]))
    with pytest.raises(nnrt.BadData, match=r"input 1 \(filter\): per-channel quantisation must "
                                           "be along dimension 0, got 3"):
        model.finish()
