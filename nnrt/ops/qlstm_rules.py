"""QUANTIZED_LSTM's operands and NNAPI's rules for them (the kernel is :mod:`nnrt.ops.qlstm`).

Slot numbers, names, the static checks of ``validate`` (types, the all-or-none groups of
optional inputs, the cell state's power-of-two scale) and the shape checks of ``prepare``.
"""

from __future__ import annotations

import math

import numpy as np

from nnrt.model.types import OperandType
from nnrt.ops._framework.context import OperationContext
from nnrt.ops._framework.registry import Shape

__all__ = [
    "CELL_CLIP",
    "CELL_STATE_IN",
    "CELL_TO",
    "GATE_BIAS",
    "HIDDEN_SCALE",
    "HIDDEN_ZERO_POINT",
    "INPUT",
    "INPUT_TO",
    "INTERMEDIATE_SCALE",
    "LAYER_NORM",
    "NAMES",
    "OUTPUT_STATE_IN",
    "PROJECTION_BIAS",
    "PROJECTION_CLIP",
    "PROJECTION_WEIGHTS",
    "RECURRENT_TO",
    "cell_shift",
    "output_shapes",
    "validate",
]

T = OperandType

INPUT = 0
#: Per gate, in the order input, forget, cell, output.
INPUT_TO = (1, 2, 3, 4)
RECURRENT_TO = (5, 6, 7, 8)
GATE_BIAS = (12, 13, 14, 15)
LAYER_NORM = (20, 21, 22, 23)
INTERMEDIATE_SCALE = (26, 27, 28, 29)
#: Peephole weights of the input, forget and output gates (the cell gate has none).
CELL_TO = {0: 9, 1: 10, 3: 11}
PROJECTION_WEIGHTS, PROJECTION_BIAS = 16, 17
OUTPUT_STATE_IN, CELL_STATE_IN = 18, 19
CELL_CLIP, PROJECTION_CLIP = 24, 25
HIDDEN_ZERO_POINT, HIDDEN_SCALE = 30, 31

NAMES = (
    "input", "input_to_input_weights", "input_to_forget_weights", "input_to_cell_weights",
    "input_to_output_weights", "recurrent_to_input_weights", "recurrent_to_forget_weights",
    "recurrent_to_cell_weights", "recurrent_to_output_weights", "cell_to_input_weights",
    "cell_to_forget_weights", "cell_to_output_weights", "input_gate_bias", "forget_gate_bias",
    "cell_gate_bias", "output_gate_bias", "projection_weights", "projection_bias",
    "output_state_in", "cell_state_in", "input_layer_norm_weights",
    "forget_layer_norm_weights", "cell_layer_norm_weights", "output_layer_norm_weights",
    "cell_clip", "projection_clip", "input_intermediate_scale", "forget_intermediate_scale",
    "cell_intermediate_scale", "output_intermediate_scale", "hidden_state_zero_point",
    "hidden_state_scale",
)

_TYPES: dict[int, OperandType] = {
    INPUT: T.TENSOR_QUANT8_ASYMM_SIGNED,
    **dict.fromkeys((*INPUT_TO, *RECURRENT_TO, PROJECTION_WEIGHTS), T.TENSOR_QUANT8_SYMM),
    **dict.fromkeys((*CELL_TO.values(), CELL_STATE_IN, *LAYER_NORM), T.TENSOR_QUANT16_SYMM),
    **dict.fromkeys((*GATE_BIAS, PROJECTION_BIAS), T.TENSOR_INT32),
    OUTPUT_STATE_IN: T.TENSOR_QUANT8_ASYMM_SIGNED,
    **dict.fromkeys((CELL_CLIP, PROJECTION_CLIP, *INTERMEDIATE_SCALE, HIDDEN_SCALE), T.FLOAT32),
    HIDDEN_ZERO_POINT: T.INT32,
}
_REQUIRED = (INPUT, *INPUT_TO[1:], *RECURRENT_TO[1:], *GATE_BIAS[1:], OUTPUT_STATE_IN,
             CELL_STATE_IN, CELL_CLIP, PROJECTION_CLIP, *INTERMEDIATE_SCALE, HIDDEN_ZERO_POINT,
             HIDDEN_SCALE)
_OUTPUT_TYPES = (T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT16_SYMM,
                 T.TENSOR_QUANT8_ASYMM_SIGNED)
#: The cell state's scale is 2**shift with shift in this range (NNAPI: log2 within 1e-3).
_CELL_SHIFTS = (-15, -9)


def validate(ctx: OperationContext) -> None:
    """Types, required inputs, optional groups, ranks and the cell state's quantisation."""
    ctx.expect_counts(32, 3)
    for slot, type_ in _TYPES.items():
        if slot in _REQUIRED:
            ctx.expect_type(slot, type_)
        else:
            ctx.expect_optional_type(slot, type_)
    for j, type_ in enumerate(_OUTPUT_TYPES):
        ctx.expect_output_type(j, type_)
    _validate_groups(ctx)
    for slot, type_ in _TYPES.items():
        if not ctx.is_omitted(slot) and type_ != T.FLOAT32 and type_ != T.INT32:
            ctx.expect_rank(slot, 1 if slot in (*CELL_TO.values(), *GATE_BIAS,
                                                PROJECTION_BIAS, *LAYER_NORM) else 2)
    cell_shift(ctx)
    _check_scalars(ctx)


def _validate_groups(ctx: OperationContext) -> None:
    """NNAPI's all-or-none rules for CIFG, peepholes and layer normalisation."""
    cifg = ctx.is_omitted(INPUT_TO[0])
    for slot in (RECURRENT_TO[0], GATE_BIAS[0]):
        if ctx.is_omitted(slot) != cifg:
            ctx.fail("must be given exactly when input_to_input_weights is (omitting both "
                     "selects CIFG)", input=slot)
    peepholes = [not ctx.is_omitted(s) for s in CELL_TO.values()]
    if any(peepholes) and not ((peepholes[0] or cifg) and all(peepholes[1:])):
        ctx.fail("the peephole weights must be given all together (the input gate's may be "
                 "omitted with CIFG) or not at all", input=CELL_TO[1])
    norms = [not ctx.is_omitted(s) for s in LAYER_NORM]
    if cifg and norms[0]:
        ctx.fail("must be omitted with CIFG (no input gate)", input=LAYER_NORM[0])
    expected = norms[1:] if cifg else norms
    if any(expected) and not all(expected):
        ctx.fail("the layer-normalisation weights must be given all together (without the "
                 "input gate's under CIFG) or not at all", input=LAYER_NORM[1])


def cell_shift(ctx: OperationContext) -> int:
    """``log2`` of the cell state's scale; it must be a power of two in [2**-15, 2**-9]."""
    operand = ctx.operand(CELL_STATE_IN)
    if operand.zero_point != 0:
        ctx.fail(f"expected zero point 0, got {operand.zero_point}", input=CELL_STATE_IN)
    with np.errstate(all="ignore"):  # a scale beyond float32 becomes inf, then fails below
        log2 = float(np.log(np.float32(operand.scale)) * (np.float32(1) / np.log(np.float32(2))))
    low, high = _CELL_SHIFTS
    shift = round(log2) if math.isfinite(log2) else high + 1
    if abs(log2 - shift) >= 1e-3 or not low <= shift <= high:
        ctx.fail(f"the cell state's scale must be a power of two from 2**{low} to 2**{high}, "
                 f"got {operand.scale:g}", input=CELL_STATE_IN)
    return int(shift)


def _check_scalars(ctx: OperationContext) -> None:
    """Known scalar values: positive scales of the gates used, an int8 hidden zero point."""
    cifg = ctx.is_omitted(INPUT_TO[0])
    for k, slot in enumerate(INTERMEDIATE_SCALE):
        value = ctx.constant(slot)
        if value is not None and not (k == 0 and cifg) and not (
                math.isfinite(value) and value > 0):
            ctx.fail(f"expected a positive scale, got {value}", input=slot)
    value = ctx.constant(HIDDEN_SCALE)
    if value is not None and not (math.isfinite(value) and value > 0):
        ctx.fail(f"expected a positive scale, got {value}", input=HIDDEN_SCALE)
    zero_point = ctx.constant(HIDDEN_ZERO_POINT)
    if zero_point is not None and not -128 <= zero_point <= 127:
        ctx.fail(f"expected an int8 zero point in [-128, 127], got {zero_point}",
                 input=HIDDEN_ZERO_POINT)
    for slot in (CELL_CLIP, PROJECTION_CLIP):
        value = ctx.constant(slot)
        if value is not None and not (math.isfinite(value) and value >= 0):
            ctx.fail(f"expected a finite clip >= 0 (0 disables it), got {value}", input=slot)


def output_shapes(ctx: OperationContext) -> list[Shape]:
    """Check every tensor's shape; the outputs are the output state's and cell state's."""
    batches, input_size = _shape(ctx, INPUT, 2)
    num_units, output_size = _shape(ctx, RECURRENT_TO[3], 2)
    if num_units < 1:
        ctx.fail("expected at least one unit", input=RECURRENT_TO[3])
    expected: dict[int, Shape] = {
        **dict.fromkeys(INPUT_TO, (num_units, input_size)),
        **dict.fromkeys(RECURRENT_TO, (num_units, output_size)),
        **dict.fromkeys((*CELL_TO.values(), *GATE_BIAS, *LAYER_NORM), (num_units,)),
        PROJECTION_WEIGHTS: (output_size, num_units),
        PROJECTION_BIAS: (output_size,),
        OUTPUT_STATE_IN: (batches, output_size),
        CELL_STATE_IN: (batches, num_units),
    }
    for slot, shape in expected.items():
        if not ctx.is_omitted(slot) and ctx.shape(slot) != shape:
            ctx.fail(f"expected shape {shape}, got {ctx.shape(slot)}", input=slot)
    if ctx.is_omitted(PROJECTION_WEIGHTS) and output_size != num_units:
        ctx.fail(f"without projection weights the output size ({output_size}) must equal the "
                 f"number of units ({num_units})", input=RECURRENT_TO[3])
    _check_scalars(ctx)
    return [(batches, output_size), (batches, num_units), (batches, output_size)]


def _shape(ctx: OperationContext, slot: int, rank: int) -> Shape:
    shape = ctx.shape(slot)
    if len(shape) != rank:
        ctx.fail(f"expected rank {rank}, got {len(shape)}", input=slot)
    return shape
