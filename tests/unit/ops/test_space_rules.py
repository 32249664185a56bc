"""Malformed DEPTH_TO_SPACE / SPACE_TO_DEPTH / BATCH_TO_SPACE_ND / SPACE_TO_BATCH_ND /
CHANNEL_SHUFFLE models are rejected, naming the operation and operand."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import single_op
from single_op import IN

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op


def build(op: Op, inputs: list[tuple[Any, ...]], outputs: list[tuple[Any, ...]]) -> nnrt.Model:
    """A one-operation model. Inputs are (type, dims, value[, scale, zero_point]); value IN makes
    a model input, None an omitted operand. Outputs are add_operand arguments."""
    return single_op.build(op, inputs, outputs, model_input=IN)


def where(op: Op, slot: str = "") -> str:
    return rf"operation 0 \({op.name}\)" + (f", {slot}" if slot else "")


def x(*dims: int) -> tuple[Any, ...]:
    return (T.TENSOR_FLOAT32, dims, IN)


def i32(value: Any) -> tuple[Any, ...]:
    return (T.INT32, (), value)


def ints(value: Any, dims: tuple[int, ...] | None = None) -> tuple[Any, ...]:
    arr = np.asarray(value, np.int32)
    return (T.TENSOR_INT32, arr.shape if dims is None else dims, value)


def f32_out(*dims: int) -> list[tuple[Any, ...]]:
    return [(T.TENSOR_FLOAT32, dims)]


# --- DEPTH_TO_SPACE / SPACE_TO_DEPTH -----------------------------------------------------------

def test_depth_to_space_block_size_rules() -> None:
    op = Op.DEPTH_TO_SPACE
    with pytest.raises(nnrt.BadData, match=where(op, r"input 1 \(block_size\)") +
                       ": block size must be at least 1, got 0"):
        build(op, [x(1, 1, 1, 8), i32(0)], f32_out(1, 2, 2, 2)).finish()
    with pytest.raises(nnrt.BadData, match=where(op, r"input 0 \(input\)") +
                       r": depth 6 is not divisible by block_size² = 4"):
        build(op, [x(1, 1, 1, 6), i32(2)], f32_out(1, 2, 2, 1)).finish()
    with pytest.raises(nnrt.BadData, match=where(op, r"input 1 \(block_size\)") +
                       ": expected INT32, got TENSOR_INT32"):
        build(op, [x(1, 1, 1, 8), ints([2])], f32_out(1, 2, 2, 2)).finish()


def test_space_to_depth_counts_layout_and_divisibility() -> None:
    op = Op.SPACE_TO_DEPTH
    with pytest.raises(nnrt.BadData, match=where(op) + ": expected 2 or 3 inputs, got 4"):
        build(op, [x(1, 2, 2, 1), i32(2), (T.BOOL, (), False), (T.BOOL, (), False)],
              f32_out(1, 1, 1, 4)).finish()
    with pytest.raises(nnrt.BadData, match=where(op, r"input 2 \(layout\)") +
                       ": expected BOOL, got INT32"):
        build(op, [x(1, 2, 2, 1), i32(2), i32(0)], f32_out(1, 1, 1, 4)).finish()
    with pytest.raises(nnrt.BadData, match=where(op, r"input 0 \(input\)") +
                       ": height 3 and width 2 must be divisible by block_size 2"):
        build(op, [x(1, 3, 2, 1), i32(2)], f32_out(1, 1, 1, 4)).finish()
    with pytest.raises(nnrt.BadData, match=where(op, r"input 0 \(input\)") +
                       ": expected rank 4, got 3"):
        build(op, [x(2, 2, 1), i32(2)], f32_out(1, 1, 4)).finish()


# --- BATCH_TO_SPACE_ND / SPACE_TO_BATCH_ND -----------------------------------------------------

def test_batch_to_space_block_shape_rules() -> None:
    op = Op.BATCH_TO_SPACE_ND
    with pytest.raises(nnrt.BadData, match=where(op, r"input 1 \(block_shape\)") +
                       ": expected rank 1, got 2"):
        build(op, [x(4, 1, 1, 1), ints([[2, 2]])], f32_out(1, 2, 2, 1)).finish()
    with pytest.raises(nnrt.BadData, match=where(op, r"input 1 \(block_shape\)") +
                       r": expected shape \[2\], got \[3\]"):
        build(op, [x(4, 1, 1, 1), ints([2, 2, 1])], f32_out(1, 2, 2, 1)).finish()
    with pytest.raises(nnrt.BadData, match=where(op, r"input 1 \(block_shape\)") +
                       r": block sizes must be at least 1, got \[2, 0\]"):
        build(op, [x(4, 1, 1, 1), ints([2, 0])], f32_out(1, 2, 2, 1)).finish()
    with pytest.raises(nnrt.BadData, match=where(op, r"input 0 \(input\)") +
                       ": batch 6 is not divisible by the block size product 4"):
        build(op, [x(6, 1, 1, 1), ints([2, 2])], f32_out(1, 2, 2, 1)).finish()


def test_space_to_batch_paddings_rules() -> None:
    op = Op.SPACE_TO_BATCH_ND
    with pytest.raises(nnrt.BadData, match=where(op, r"input 2 \(paddings\)") +
                       r": paddings must be non-negative, got \[\[0, -1\], \[0, 0\]\]"):
        build(op, [x(1, 2, 2, 1), ints([2, 2]), ints([[0, -1], [0, 0]])],
              f32_out(4, 1, 1, 1)).finish()
    with pytest.raises(nnrt.BadData, match=where(op, r"input 2 \(paddings\)") +
                       r": expected shape \[2, 2\], got \[2, 3\]"):
        build(op, [x(1, 2, 2, 1), ints([2, 2]), ints([[0, 0, 0], [0, 0, 0]])],
              f32_out(4, 1, 1, 1)).finish()
    with pytest.raises(nnrt.BadData, match=where(op, r"input 2 \(paddings\)") +
                       ": expected TENSOR_INT32, got TENSOR_FLOAT32"):
        build(op, [x(1, 2, 2, 1), ints([2, 2]), (T.TENSOR_FLOAT32, (2, 2), np.zeros((2, 2)))],
              f32_out(4, 1, 1, 1)).finish()


def test_space_to_batch_divisibility_is_checked_at_execution() -> None:
    op = Op.SPACE_TO_BATCH_ND
    model = build(op, [x(1, 2, 2, 1), (T.TENSOR_INT32, (2,), IN), ints([[0, 1], [0, 0]])],
                  [(T.TENSOR_FLOAT32, (0, 0, 0, 1))]).finish()
    data = np.arange(4, dtype=np.float32).reshape(1, 2, 2, 1)
    assert nnrt.reference.run(model, [data, np.array([3, 1], np.int32)])[0].shape == (3, 1, 2, 1)
    with pytest.raises(nnrt.BadData, match=where(op, r"input 2 \(paddings\)") +
                       r": padded height 3 and width 2 must be divisible by the block shape "
                       r"\[2, 2\]"):
        nnrt.reference.run(model, [data, np.array([2, 2], np.int32)])


# --- CHANNEL_SHUFFLE ---------------------------------------------------------------------------

def test_channel_shuffle_rules() -> None:
    op = Op.CHANNEL_SHUFFLE
    with pytest.raises(nnrt.BadData, match=where(op, r"input 2 \(axis\)") +
                       r": axis 2 is out of range for rank 2 \(expected \[-2, 2\)\)"):
        build(op, [x(2, 6), i32(3), i32(2)], f32_out(2, 6)).finish()
    with pytest.raises(nnrt.BadData, match=where(op, r"input 1 \(num_groups\)") +
                       ": axis 1 size 6 is not divisible by num_groups 4"):
        build(op, [x(2, 6), i32(4), i32(-1)], f32_out(2, 6)).finish()
    with pytest.raises(nnrt.BadData, match=where(op, r"input 1 \(num_groups\)") +
                       ": num_groups must be positive, got 0"):
        build(op, [x(2, 6), i32(0), i32(1)], f32_out(2, 6)).finish()
    with pytest.raises(nnrt.BadData, match=where(op, r"input 0 \(input\)") +
                       ": expected rank between 1 and 4, got 5"):
        build(op, [x(1, 1, 1, 2, 6), i32(2), i32(-1)], f32_out(1, 1, 1, 2, 6)).finish()


def test_quantised_variants_move_the_stored_integers() -> None:
    quant = (T.TENSOR_QUANT8_ASYMM_SIGNED, (1, 2, 2, 1), IN, 0.5, -3)
    model = build(Op.SPACE_TO_DEPTH, [quant, i32(2)],
                  [(T.TENSOR_QUANT8_ASYMM_SIGNED, (1, 1, 1, 4), 0.5, -3)]).finish()
    x = np.array([-128, -1, 0, 127], np.int8).reshape(1, 2, 2, 1)
    got = nnrt.reference.run(model, [x])[0]
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got.reshape(-1), [-128, -1, 0, 127])
    with pytest.raises(nnrt.BadData, match=where(Op.CHANNEL_SHUFFLE, r"output 0 \(output\)") +
                       ": expected the scale and zero point of input 0"):
        build(Op.CHANNEL_SHUFFLE, [quant, i32(1), i32(3)],
              [(T.TENSOR_QUANT8_ASYMM_SIGNED, (1, 2, 2, 1), 0.5, 0)]).finish()
