"""Malformed-model rules of CONV_2D, DEPTHWISE_CONV_2D and GROUPED_CONV_2D (nnrt/ops/conv.py)."""

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
Q8 = T.TENSOR_QUANT8_ASYMM
PER_CHANNEL = T.TENSOR_QUANT8_SYMM_PER_CHANNEL


def _model(op: Op, tensors: Sequence[tuple[Any, ...]], params: Sequence[Any],
           out: tuple[Any, ...], *, channel_quant: tuple[int, Sequence[float]] | None = None,
           param_inputs: Sequence[int] = ()) -> nnrt.Model:
    """One operation on ``tensors`` (type, dims[, scale, zero point]; model inputs) then
    ``params`` (int → INT32, bool → BOOL constants; slots in ``param_inputs`` become inputs)."""
    inputs = [(type_, dims, None if k == 0 else np.ones(dims, dtype_of(type_)), *quant)
              for k, (type_, dims, *quant) in enumerate(tensors)]
    for value in params:
        type_, dims, value = scalar(value)
        inputs.append((type_, dims, None if len(inputs) in param_inputs else value))
    return build(op, inputs, [out], channel_quant=channel_quant)


_FLOAT = [(F32, (1, 4, 4, 2)), (F32, (3, 3, 3, 2)), (F32, (3,))]
_EXPLICIT = [1, 1, 1, 1, 1, 1, 0]  # pads l, r, t, b, strides w, h, activation
_IMPLICIT = [1, 1, 1, 0]  # SAME, strides w, h, activation


def test_conv_2d_valid_signatures_finish() -> None:
    for params, dims in ((_EXPLICIT, (1, 4, 4, 3)), ([*_EXPLICIT, False, 2, 2], (1, 2, 2, 3)),
                         (_IMPLICIT, (1, 4, 4, 3)), ([*_IMPLICIT, False, 1, 1], (1, 4, 4, 3))):
        _model(Op.CONV_2D, _FLOAT, params, (F32, dims)).finish()


def test_conv_2d_rejects_a_single_dilation_factor() -> None:
    model = _model(Op.CONV_2D, _FLOAT, [*_IMPLICIT, False, 2], (F32, (0, 0, 0, 0)))
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(CONV_2D\): got 9 inputs: dilation "
                                           r"needs both .*expected 7, 8, 10, 11 or 13"):
        model.finish()


def test_conv_2d_rejects_filter_rank_and_bad_codes() -> None:
    model = _model(Op.CONV_2D, [_FLOAT[0], (F32, (3, 18)), _FLOAT[2]], _EXPLICIT,
                   (F32, (0, 0, 0, 0)))
    with pytest.raises(nnrt.BadData, match=r"\(CONV_2D\), input 1 \(filter\): expected rank 4, "
                                           "got 2"):
        model.finish()
    model = _model(Op.CONV_2D, _FLOAT, [*_EXPLICIT[:-1], 7], (F32, (0, 0, 0, 0)))
    with pytest.raises(nnrt.BadData, match=r"input 9 \(activation\): invalid fused activation "
                                           "code 7"):
        model.finish()
    # Implicit padding: slot 3 is the padding code and is named so.
    model = _model(Op.CONV_2D, _FLOAT, [3, 1, 1, 0], (F32, (0, 0, 0, 0)))
    with pytest.raises(nnrt.BadData, match=r"input 3 \(padding\): invalid padding code 3"):
        model.finish()


def test_conv_2d_names_inputs_of_the_ten_input_implicit_signature() -> None:
    # 10 inputs with a BOOL at slot 7: implicit padding, layout and dilation (not explicit).
    model = _model(Op.CONV_2D, _FLOAT, [*_IMPLICIT, True, 0, 1], (F32, (0, 0, 0, 0)))
    with pytest.raises(nnrt.BadData, match=r"input 8 \(dilation_width\): dilation factor must "
                                           "be at least 1, got 0"):
        model.finish()
    model = _model(Op.CONV_2D, _FLOAT, [*_EXPLICIT[:-1], -1], (F32, (0, 0, 0, 0)))
    with pytest.raises(nnrt.BadData, match=r"input 9 \(activation\): invalid fused"):
        model.finish()


def test_conv_2d_rejects_channel_mismatch_and_oversized_padding() -> None:
    model = _model(Op.CONV_2D, [(F32, (1, 4, 4, 3)), *_FLOAT[1:]], _EXPLICIT,
                   (F32, (0, 0, 0, 0)))
    with pytest.raises(nnrt.BadData, match=r"input 1 \(filter\): filter depth_in 2 does not "
                                           "match the input's 3 channels"):
        model.finish()
    model = _model(Op.CONV_2D, _FLOAT, [1, 1, 3, 1, 1, 1, 0], (F32, (0, 0, 0, 0)))
    with pytest.raises(nnrt.BadData, match=r"input 5 \(padding_top\): padding \(3, 1\) must be "
                                           "smaller than the effective filter size 3"):
        model.finish()
    model = _model(Op.CONV_2D, _FLOAT, _EXPLICIT, (T.TENSOR_FLOAT16, (0, 0, 0, 0)))
    with pytest.raises(nnrt.BadData, match=r"output 0 \(output\): expected TENSOR_FLOAT32"):
        model.finish()


def test_conv_2d_checks_a_stride_given_at_execution() -> None:
    model = _model(Op.CONV_2D, _FLOAT, _EXPLICIT, (F32, (0, 0, 0, 0)), param_inputs=(7,))
    model.finish()
    x = np.ones((1, 4, 4, 2), np.float32)
    with pytest.raises(nnrt.BadData, match=r"input 7 \(stride_width\): stride must be at least "
                                           "1, got 0"):
        nnrt.reference.run(model, [x, np.int32(0)])


def test_depthwise_conv_2d_rejects_multiplier_mismatch_and_filter_shape() -> None:
    tensors = [(F32, (1, 3, 3, 2)), (F32, (1, 2, 2, 4)), (F32, (4,))]
    model = _model(Op.DEPTHWISE_CONV_2D, tensors, [2, 1, 1, 1, 0], (F32, (0, 0, 0, 0)))
    with pytest.raises(nnrt.BadData, match=r"\(DEPTHWISE_CONV_2D\), input 1 \(filter\): filter "
                                           r"depth_out 4 must equal input channels 2 \* "
                                           "depth_multiplier 1"):
        model.finish()
    tensors[1] = (F32, (2, 2, 2, 2))
    model = _model(Op.DEPTHWISE_CONV_2D, tensors, [2, 1, 1, 1, 0], (F32, (0, 0, 0, 0)))
    with pytest.raises(nnrt.BadData, match=r"input 1 \(filter\): filter dimension 0 must be 1"):
        model.finish()


def test_depthwise_conv_2d_rejects_bad_layout_type_and_multiplier() -> None:
    tensors = [(F32, (1, 3, 3, 2)), (F32, (1, 2, 2, 2)), (F32, (2,))]
    model = _model(Op.DEPTHWISE_CONV_2D, tensors, [2, 1, 1, 1, 0, 0], (F32, (0, 0, 0, 0)))
    with pytest.raises(nnrt.BadData, match=r"input 8 \(layout\): expected BOOL, got INT32"):
        model.finish()
    model = _model(Op.DEPTHWISE_CONV_2D, tensors, [0, 0, 0, 0, 1, 1, 0, 0], (F32, (0, 0, 0, 0)))
    with pytest.raises(nnrt.BadData, match=r"input 9 \(depth_multiplier\): depth multiplier "
                                           "must be at least 1, got 0"):
        model.finish()


def test_depthwise_conv_2d_per_channel_filter_must_use_dimension_3() -> None:
    tensors = [(Q8, (1, 3, 3, 2), 0.5, 128), (PER_CHANNEL, (1, 2, 2, 2)), (T.TENSOR_INT32, (2,))]
    model = _model(Op.DEPTHWISE_CONV_2D, tensors, [2, 1, 1, 1, 0], (Q8, (0, 0, 0, 0), 1.0, 0),
                   channel_quant=(0, [0.5]))
    with pytest.raises(nnrt.BadData, match=r"input 1 \(filter\): per-channel quantisation must "
                                           "be along dimension 3, got 0"):
        model.finish()
    model = _model(Op.DEPTHWISE_CONV_2D, tensors, [2, 1, 1, 1, 0], (Q8, (0, 0, 0, 0), 1.0, 0),
                   channel_quant=(3, [0.5, 0.25]))
    model.finish()
    # Input 130 (2 above the zero point), filter 1 and bias 1: each accumulator is 4 * 2 + 1 = 9,
    # rescaled per channel by 0.5 * 0.5 = 0.25 and 0.5 * 0.25 = 0.125 with gemmlowp's rounding:
    # 9 * 2**30 / 2**31 = 4.5 rounds up to 5, then 5 / 2 -> 3 and 5 / 4 -> 1.
    (y,) = nnrt.reference.run(model, [np.full((1, 3, 3, 2), 130, np.uint8)])
    assert y.dtype == np.uint8
    np.testing.assert_array_equal(y, np.tile([3, 1], (1, 2, 2, 1)))


def test_grouped_conv_2d_rejects_count_groups_and_divisibility() -> None:
    tensors = [(F32, (1, 3, 3, 4)), (F32, (3, 2, 2, 2)), (F32, (3,))]
    model = _model(Op.GROUPED_CONV_2D, tensors, [2, 1, 1, 2, 0], (F32, (0, 0, 0, 0)))
    with pytest.raises(nnrt.BadData, match=r"\(GROUPED_CONV_2D\): expected 9 or 12 inputs, got "
                                           "8"):
        model.finish()
    model = _model(Op.GROUPED_CONV_2D, tensors, [2, 1, 1, 2, 0, False], (F32, (0, 0, 0, 0)))
    with pytest.raises(nnrt.BadData, match=r"input 1 \(filter\): filter depth_out 3 is not "
                                           "divisible by num_groups 2"):
        model.finish()
    model = _model(Op.GROUPED_CONV_2D, tensors, [2, 1, 1, 0, 0, False], (F32, (0, 0, 0, 0)))
    with pytest.raises(nnrt.BadData, match=r"input 6 \(num_groups\): num groups must be at "
                                           "least 1, got 0"):
        model.finish()


def test_quantised_conv_validates_scales_and_runs() -> None:
    tensors = [(Q8, (1, 3, 3, 2), 0.5, 128), (Q8, (2, 2, 2, 2), 0.25, 128),
               (T.TENSOR_INT32, (2,), 0.125)]
    model = _model(Op.CONV_2D, tensors, [2, 1, 1, 0], (Q8, (1, 2, 2, 2), 1.0, 0))
    model.finish()
    # (0 - 128) * (1 - 128) over 8 taps, plus 1, times 0.125: far above 255, saturated.
    (y,) = nnrt.reference.run(model, [np.zeros((1, 3, 3, 2), np.uint8)])
    np.testing.assert_array_equal(y, np.full((1, 2, 2, 2), 255, np.uint8))
    tensors[2] = (T.TENSOR_INT32, (2,), 0.5)
    model = _model(Op.CONV_2D, tensors, [2, 1, 1, 0], (Q8, (1, 2, 2, 2), 1.0, 0))
    with pytest.raises(nnrt.BadData, match=r"input 2 \(bias\): bias scale must equal "
                                           "input_scale \\* filter_scale = 0.125, got 0.5"):
        model.finish()
    tensors[1] = (PER_CHANNEL, (2, 2, 2, 2))
    model = _model(Op.CONV_2D, tensors, [2, 1, 1, 0], (Q8, (1, 2, 2, 2), 1.0, 0),
                   channel_quant=(0, [0.25, 0.5]))
    with pytest.raises(nnrt.BadData, match=r"input 2 \(bias\): with a per-channel filter the "
                                           "bias scale must be 0"):
        model.finish()
    tensors[1] = (T.TENSOR_QUANT8_ASYMM_SIGNED, (2, 2, 2, 2), 0.25, 0)
    model = _model(Op.CONV_2D, tensors, [2, 1, 1, 0], (Q8, (1, 2, 2, 2), 1.0, 0))
    with pytest.raises(nnrt.BadData, match=r"input 1 \(filter\): expected TENSOR_QUANT8_ASYMM "
                                           "or TENSOR_QUANT8_SYMM_PER_CHANNEL"):
        model.finish()
