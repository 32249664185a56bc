"""QUANTIZED_16BIT_LSTM: one step of an 8-bit LSTM cell with a 16-bit cell state (NNAPI 1.2).

NNAPI signature (15 inputs, 2 outputs):

* 0 input: TENSOR_QUANT8_ASYMM ``[batches, input_size]``, scale 1/128, zero point 128
  (the range ``[-1, 127/128]``);
* 1-4 input-to-{input, forget, cell, output} weights: TENSOR_QUANT8_ASYMM
  ``[output_size, input_size]``;
* 5-8 recurrent-to-{input, forget, cell, output} weights: TENSOR_QUANT8_ASYMM
  ``[output_size, output_size]``; all eight weights share one scale and zero point;
* 9-12 {input, forget, cell, output} gate biases: TENSOR_INT32 ``[output_size]``, scale
  ``weights_scale / 128``, zero point 0;
* 13 previous cell state: TENSOR_QUANT16_SYMM ``[batches, output_size]``, scale 2**-11,
  zero point 0 (the range ``[-16, 16)``);
* 14 previous output: TENSOR_QUANT8_ASYMM ``[batches, output_size]``, scale 1/128, zero point
  128.

Outputs: 0 the cell state (out), like input 13; 1 the output, like input 14 (both with those
scales and zero points).

The arithmetic is NNAPI's (TFLite's legacy 8-bit LSTM cell), exact integer all the way:

1. per gate, the int32 accumulator ``bias + sum_k (d[k] - 128) * (m[k] - w_zero)`` is rescaled
   by the quantised multiplier of ``4096 * bias_scale`` (double) to int16 ``Q3.12`` and
   saturated. NNAPI's kernel concatenates the data as ``d = [input | prev_output]`` but each
   gate's weights as ``m = [recurrent row | input row]`` and pairs them column by column, so
   the first ``input_size`` recurrent weights multiply the input (NNAPI's conformance vectors
   are computed this way; the documented formula pairs input weights with the input). nnrt
   reproduces the kernel;
2. the gates in gemmlowp fixed point (:mod:`nnrt.ops.fixed_point`): ``i, f, o = logistic``,
   ``g = tanh`` of those ``Q3.12`` values, giving ``Q0.15``;
3. ``c' = saturating_add(rescale_to_Q4.11(i * g), f * c)`` (the cell state is ``Q4.11``);
4. ``h' = o * tanh(rescale_to_Q3.12(c'))``, rounded-divided by 2**8, clamped to
   ``[-128, 127]`` and offset by 128.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.model.types import OperandType, OperationType
from nnrt.ops import fixed_point as fp
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register
from nnrt.ops.quant import (
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    rounding_divide_by_pot,
)

T = OperandType
Array = np.ndarray[Any, Any]

INPUT = 0
INPUT_WEIGHTS = (1, 2, 3, 4)  # input-to-{input, forget, cell, output}
RECURRENT_WEIGHTS = (5, 6, 7, 8)
BIASES = (9, 10, 11, 12)
PREV_CELL_STATE, PREV_OUTPUT = 13, 14
CELL_STATE_OUT, OUTPUT = 0, 1

_NAMES = ("input", "input_to_input_weights", "input_to_forget_weights",
          "input_to_cell_weights", "input_to_output_weights", "recurrent_to_input_weights",
          "recurrent_to_forget_weights", "recurrent_to_cell_weights",
          "recurrent_to_output_weights", "input_gate_bias", "forget_gate_bias", "cell_gate_bias",
          "output_gate_bias", "prev_cell_state", "prev_output")
_ACTIVATION_QUANT = (1.0 / 128.0, 128)
_STATE_QUANT = (2.0**-11, 0)
_STATE_INTEGER_BITS = 4
_GATE_INTEGER_BITS = 3  # the gates' inputs are Q3.12


def _expect_quant(ctx: OperationContext, slot: int, scale: float, zero_point: int, *,
                  output: bool = False, rule: str = "") -> None:
    operand = ctx.output_operand(slot) if output else ctx.operand(slot)
    with np.errstate(over="ignore"):  # NNAPI compares float32 scales
        same = np.float32(operand.scale) == np.float32(scale)
    if not same or operand.zero_point != zero_point:
        where = {"output": slot} if output else {"input": slot}
        ctx.fail(f"expected scale {scale:g} and zero point {zero_point}{rule}, got scale "
                 f"{operand.scale:g} and zero point {operand.zero_point}", **where)


def _validate_quantization(ctx: OperationContext) -> None:
    """The fixed scales and zero points NNAPI requires of every operand."""
    for slot in (INPUT, PREV_OUTPUT):
        _expect_quant(ctx, slot, *_ACTIVATION_QUANT)
    _expect_quant(ctx, PREV_CELL_STATE, *_STATE_QUANT)
    _expect_quant(ctx, CELL_STATE_OUT, *_STATE_QUANT, output=True)
    _expect_quant(ctx, OUTPUT, *_ACTIVATION_QUANT, output=True)
    weights = ctx.operand(INPUT_WEIGHTS[0])
    for slot in (*INPUT_WEIGHTS, *RECURRENT_WEIGHTS)[1:]:
        _expect_quant(ctx, slot, weights.scale, weights.zero_point,
                      rule=" (all weights share input 1's quantisation)")
    with np.errstate(over="ignore"):
        bias_scale = float(np.float32(weights.scale) / np.float32(128))
    for slot in BIASES:
        _expect_quant(ctx, slot, bias_scale, 0, rule=" (the weights' scale / 128)")


@register(OperationType.QUANTIZED_16BIT_LSTM, inputs=_NAMES,
          outputs=("cell_state_out", "output"), kernel_types={T.TENSOR_QUANT8_ASYMM})
class Quantized16BitLstm:
    """QUANTIZED_16BIT_LSTM: an LSTM step in 8-bit activations and a Q4.11 cell state."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """Operand types, ranks and NNAPI's fixed quantisation parameters."""
        ctx.expect_counts(15, 2)
        for slot in (INPUT, *INPUT_WEIGHTS, *RECURRENT_WEIGHTS, PREV_OUTPUT):
            ctx.expect_type(slot, T.TENSOR_QUANT8_ASYMM)
        for slot in BIASES:
            ctx.expect_type(slot, T.TENSOR_INT32)
            ctx.expect_rank(slot, 1)
        ctx.expect_type(PREV_CELL_STATE, T.TENSOR_QUANT16_SYMM)
        ctx.expect_output_type(CELL_STATE_OUT, T.TENSOR_QUANT16_SYMM)
        ctx.expect_output_type(OUTPUT, T.TENSOR_QUANT8_ASYMM)
        for slot in (INPUT, *INPUT_WEIGHTS, *RECURRENT_WEIGHTS, PREV_CELL_STATE, PREV_OUTPUT):
            ctx.expect_rank(slot, 2)
        _validate_quantization(ctx)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Both outputs are ``[batches, output_size]``; every other shape must agree."""
        batches, input_size = ctx.shape(INPUT)
        prev_output = ctx.shape(PREV_OUTPUT)
        output_size = prev_output[1]
        expected: dict[int, Shape] = {slot: (output_size, input_size) for slot in INPUT_WEIGHTS}
        expected |= {slot: (output_size, output_size) for slot in RECURRENT_WEIGHTS}
        expected |= {slot: (output_size,) for slot in BIASES}
        expected |= {PREV_CELL_STATE: (batches, output_size),
                     PREV_OUTPUT: (batches, output_size)}
        for slot, shape in expected.items():
            if ctx.shape(slot) != shape:
                ctx.fail(f"expected shape {shape}, got {ctx.shape(slot)}", input=slot)
        return [(batches, output_size), (batches, output_size)]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """One cell step in NNAPI's integer arithmetic (see the module docstring)."""
        weights = ctx.operand(INPUT_WEIGHTS[0])
        multiplier, shift = quantize_multiplier(4096.0 * float(np.float32(
            ctx.operand(BIASES[0]).scale)))
        # NNAPI's kernel concatenates the data as [input | prev_output] but the weights of each
        # gate as [recurrent | input] columns, and multiplies them column by column
        data = np.concatenate([ctx.tensor(INPUT), ctx.tensor(PREV_OUTPUT)], axis=1)
        data = data.astype(np.int64) - 128
        gates = []
        for w_slot, r_slot, b_slot in zip(INPUT_WEIGHTS, RECURRENT_WEIGHTS, BIASES, strict=True):
            w = np.concatenate([ctx.tensor(r_slot), ctx.tensor(w_slot)], axis=1)
            w = w.astype(np.int64) - weights.zero_point
            acc = fp.wrap(ctx.tensor(b_slot).astype(np.int64) + data @ w.T, 32)
            scaled = multiply_by_quantized_multiplier(acc, multiplier, shift)
            gates.append(np.clip(scaled, -32768, 32767))
        input_gate, forget_gate, cell_gate, output_gate = gates
        i = fp.logistic(input_gate, _GATE_INTEGER_BITS, 16)
        f = fp.logistic(forget_gate, _GATE_INTEGER_BITS, 16)
        g = fp.tanh(cell_gate, _GATE_INTEGER_BITS, 16)
        o = fp.logistic(output_gate, _GATE_INTEGER_BITS, 16)
        c = ctx.tensor(PREV_CELL_STATE).astype(np.int64)
        new_state = np.clip(
            fp.rescale(fp.mul(i, g, 16), 0, _STATE_INTEGER_BITS, 16) + fp.mul(f, c, 16),
            -32768, 32767)
        squashed = fp.tanh(fp.rescale(new_state, _STATE_INTEGER_BITS, 3, 16), 3, 16)
        activation = rounding_divide_by_pot(fp.mul(o, squashed, 16), 8)
        output = np.clip(activation, -128, 127) + 128
        return [new_state.astype(np.int16), output.astype(np.uint8)]
