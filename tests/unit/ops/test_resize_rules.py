"""Malformed RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR models are rejected, naming the operand."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import single_op
from single_op import IN

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op

BILINEAR = r"operation 0 \(RESIZE_BILINEAR\)"
NEAREST = r"operation 0 \(RESIZE_NEAREST_NEIGHBOR\)"


def build(op: Op, inputs: list[tuple[Any, ...]], outputs: list[tuple[Any, ...]]) -> nnrt.Model:
    """A one-operation model. Inputs are (type, dims, value[, scale, zero_point]); value IN makes
    a model input, None an omitted operand. Outputs are add_operand arguments."""
    return single_op.build(op, inputs, outputs, model_input=IN)


def image(dims: tuple[int, ...] = (1, 2, 2, 1)) -> tuple[Any, ...]:
    return (T.TENSOR_FLOAT32, dims, IN)


def size(value: Any, t: T = T.INT32) -> tuple[Any, ...]:
    return (t, (), value)


def flag(value: bool | None) -> tuple[Any, ...]:
    return (T.BOOL, (), value)


OUT = [(T.TENSOR_FLOAT32, (1, 3, 3, 1))]


def test_valid_model_runs() -> None:
    model = build(Op.RESIZE_BILINEAR, [image(), size(3), size(3), flag(False)], OUT).finish()
    (result,) = nnrt.reference.run(model, [np.array([1, 2, 3, 4], np.float32).reshape(1, 2, 2, 1)])
    assert result.shape == (1, 3, 3, 1)


def test_nearest_neighbor_needs_the_layout_input() -> None:
    with pytest.raises(nnrt.BadData, match=NEAREST + r": expected 4, 5 or 6 inputs, got 3"):
        build(Op.RESIZE_NEAREST_NEIGHBOR, [image(), size(3), size(3)], OUT).finish()
    with pytest.raises(nnrt.BadData, match=BILINEAR + r": expected 3, 4, 5 or 6 inputs, got 7"):
        build(Op.RESIZE_BILINEAR, [image(), size(3), size(3), *[flag(False)] * 4], OUT).finish()


def test_size_and_scale_types() -> None:
    # Width and height must share one scalar type.
    with pytest.raises(nnrt.BadData, match=BILINEAR + r", input 1 \(width\): expected INT32, "
                       r"got FLOAT32"):
        build(Op.RESIZE_BILINEAR, [image(), size(1.5, T.FLOAT32), size(3)], OUT).finish()
    # A TENSOR_FLOAT32 input takes FLOAT32 scales, not FLOAT16.
    with pytest.raises(nnrt.BadData, match=BILINEAR + r", input 2 \(height\): expected INT32 or "
                       r"FLOAT32, got FLOAT16"):
        build(Op.RESIZE_BILINEAR,
              [image(), size(1.5, T.FLOAT16), size(1.5, T.FLOAT16)], OUT).finish()


def test_rank_and_flag_types() -> None:
    with pytest.raises(nnrt.BadData, match=NEAREST + r", input 0 \(input\): expected rank 4, "
                       r"got 3"):
        build(Op.RESIZE_NEAREST_NEIGHBOR, [image((2, 2, 1)), size(3), size(3), flag(False)],
              [(T.TENSOR_FLOAT32, (3, 3, 1))]).finish()
    with pytest.raises(nnrt.BadData, match=NEAREST + r", input 4 \(align_corners\): expected "
                       r"BOOL, got INT32"):
        build(Op.RESIZE_NEAREST_NEIGHBOR,
              [image(), size(3), size(3), flag(False), size(1)], OUT).finish()


def test_align_corners_and_half_pixel_centers_exclude_each_other() -> None:
    with pytest.raises(nnrt.BadData, match=BILINEAR + r", input 5 \(half_pixel_centers\): "
                       r"half_pixel_centers requires align_corners to be false"):
        build(Op.RESIZE_BILINEAR,
              [image(), size(3), size(3), flag(False), flag(True), flag(True)], OUT).finish()


def test_non_positive_sizes() -> None:
    with pytest.raises(nnrt.BadData, match=BILINEAR + r", input 1 \(width\): output size must be "
                       r"positive, got 0"):
        build(Op.RESIZE_BILINEAR, [image(), size(0), size(3)], OUT).finish()
    # floor(2 * 0.25) = 0: found from the shapes at finish().
    with pytest.raises(nnrt.BadData, match=BILINEAR + r", input 2 \(height\): output height and "
                       r"width must be positive, got 0 x 4"):
        build(Op.RESIZE_BILINEAR,
              [image(), size(2.0, T.FLOAT32), size(0.25, T.FLOAT32)], OUT).finish()


def test_declared_output_shape_must_match() -> None:
    with pytest.raises(nnrt.BadData, match=BILINEAR + r", output 0 \(output\): declared dims"):
        build(Op.RESIZE_BILINEAR, [image(), size(4), size(3)], OUT).finish()


def test_size_given_at_execution_is_checked_then() -> None:
    model = build(Op.RESIZE_NEAREST_NEIGHBOR, [image(), size(IN), size(3), flag(False)],
                  [(T.TENSOR_FLOAT32, (1, 3, 0, 1))]).finish()
    x = np.ones((1, 2, 2, 1), np.float32)
    assert nnrt.reference.run(model, [x, np.int32(5)])[0].shape == (1, 3, 5, 1)
    with pytest.raises(nnrt.BadData, match=NEAREST + r", input 1 \(width\): output height and "
                       r"width must be positive, got 3 x -1"):
        nnrt.reference.run(model, [x, np.int32(-1)])


def test_quantised_bilinear_truncates_like_nnapi() -> None:
    quant_in = (T.TENSOR_QUANT8_ASYMM_SIGNED, (1, 2, 2, 1), IN, 0.5, 0)
    model = build(Op.RESIZE_BILINEAR, [quant_in, size(1.5, T.FLOAT32), size(1.5, T.FLOAT32)],
                  [(T.TENSOR_QUANT8_ASYMM_SIGNED, (1, 3, 3, 1), 0.5, 0)]).finish()
    # Source rows 0, 2/3 and 4/3 (clamped to 1) of [[-10, -10], [11, 11]]: -10, then
    # -10 / 3 + 22 / 3 = 4.0000005 in float32, truncated to 4, then 11.
    x = np.int8([-10, -10, 11, 11]).reshape(1, 2, 2, 1)
    (y,) = nnrt.reference.run(model, [x])
    np.testing.assert_array_equal(y[0, :, 0, 0], [-10, 4, 11])
    # Columns of [10, -10]: 10, 10 / 3 - 20 / 3 = -3.33 truncated toward zero to -3, -10.
    x = np.int8([10, -10, 10, -10]).reshape(1, 2, 2, 1)
    (y,) = nnrt.reference.run(model, [x])
    np.testing.assert_array_equal(y[0, 0, :, 0], [10, -3, -10])
    # The output must keep the input's scale and zero point.
    with pytest.raises(nnrt.BadData, match=BILINEAR + r", output 0 \(output\): expected the "
                       r"scale and zero point of input 0"):
        build(Op.RESIZE_BILINEAR, [quant_in, size(3), size(3)],
              [(T.TENSOR_QUANT8_ASYMM_SIGNED, (1, 3, 3, 1), 0.25, 0)]).finish()
