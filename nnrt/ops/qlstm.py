"""QUANTIZED_LSTM: one step of an int8 LSTM cell with int16 gates and cell state (NNAPI 1.3).

NNAPI signature (32 inputs, 3 outputs); "optional" inputs may be omitted (NO_VALUE):

* 0 input: TENSOR_QUANT8_ASYMM_SIGNED ``[batches, input_size]``;
* 1-4 input-to-{input (optional), forget, cell, output} weights: TENSOR_QUANT8_SYMM
  ``[num_units, input_size]``;
* 5-8 recurrent-to-{input (optional), forget, cell, output} weights: TENSOR_QUANT8_SYMM
  ``[num_units, output_size]``;
* 9-11 cell-to-{input, forget, output} peephole weights: TENSOR_QUANT16_SYMM ``[num_units]``
  (optional);
* 12-15 {input (optional), forget, cell, output} gate biases: TENSOR_INT32 ``[num_units]``;
* 16 projection weights TENSOR_QUANT8_SYMM ``[output_size, num_units]`` and 17 projection bias
  TENSOR_INT32 ``[output_size]`` (optional);
* 18 output state in: TENSOR_QUANT8_ASYMM_SIGNED ``[batches, output_size]``;
* 19 cell state in: TENSOR_QUANT16_SYMM ``[batches, num_units]``, zero point 0, its scale a
  power of two from 2**-15 to 2**-9;
* 20-23 {input, forget, cell, output} layer-normalisation weights: TENSOR_QUANT16_SYMM
  ``[num_units]`` (optional);
* 24 cell clip and 25 projection clip (FLOAT32, 0 disables), 26-29 the {input, forget, cell,
  output} intermediate scales (FLOAT32: the scale of each gate's matmul result), 30 the hidden
  state zero point (INT32, in [-128, 127]) and 31 its scale (FLOAT32).

Outputs: 0 output state out and 2 output, TENSOR_QUANT8_ASYMM_SIGNED ``[batches,
output_size]`` (the same values); 1 cell state out, TENSOR_QUANT16_SYMM ``[batches,
num_units]``. Optional inputs come in groups: the input gate's weights and bias (all absent:
CIFG), the peepholes (all, the input one absent with CIFG), the layer-normalisation weights
(all, the input one absent with CIFG).

The kernel is NNAPI's integer pipeline, bit for bit (:mod:`nnrt.ops.integer_lstm`,
:mod:`nnrt.ops.fixed_point`). Per gate: input and recurrent matmuls, each rescaled to int16 by
``weight_scale * data_scale / intermediate_scale`` (float32) and accumulated with saturation;
the peephole term; layer normalisation with the gate bias; logistic (forget, input, output) or
tanh (cell) of the ``Q3.12`` result. CIFG takes ``i = 1 - f``. Then ``c' = f * c + i * g`` (with
the cell clip), ``h = o * tanh(c')`` rescaled by ``2**-30 / hidden_scale`` to int8, and the
projection (rescaled by ``proj_scale * hidden_scale / output_state_scale``, with its clip) or
``h`` itself is the output. NNAPI's kernel does these particular things, which nnrt follows:
gate biases enter only through layer normalisation (without it they are unused); the hidden
state's zero point is subtracted (and the projection adds ``zero_point * rowsum`` back); the
projection clip is quantised with the projection weights' scale; the layer-normalisation
variance floor is ``min(1, int(10000 * ln_scale))``. Where NNAPI's kernel reads undefined
memory, nnrt computes what the operation means: the forget and input peepholes read the
previous cell state (NNAPI reads the not yet written output buffer), over ``num_units``
weights, and an omitted projection bias counts as zeros. An effective scale of 2**31 or more
(which would shift every product out of int32) is ``BadData``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.model.types import OperandType, OperationType
from nnrt.ops import fixed_point as fp
from nnrt.ops import integer_lstm as il
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register
from nnrt.ops.qlstm_rules import (
    CELL_CLIP,
    CELL_STATE_IN,
    CELL_TO,
    GATE_BIAS,
    HIDDEN_SCALE,
    HIDDEN_ZERO_POINT,
    INPUT,
    INPUT_TO,
    INTERMEDIATE_SCALE,
    LAYER_NORM,
    NAMES,
    OUTPUT_STATE_IN,
    PROJECTION_BIAS,
    PROJECTION_CLIP,
    PROJECTION_WEIGHTS,
    RECURRENT_TO,
    cell_shift,
    output_shapes,
    validate,
)
from nnrt.ops.quant import quantize_multiplier

T = OperandType
Array = np.ndarray[Any, Any]
F32 = np.float32

#: Gate order of the per-gate input tuples: input, forget, cell, output.
_I, _F, _C, _O = range(4)


class _Step:
    """The operands of one execution, read once, with NNAPI's derived scales."""

    def __init__(self, ctx: ExecutionContext) -> None:
        self.ctx = ctx
        self.x = ctx.tensor(INPUT).astype(np.int64)
        self.h = ctx.tensor(OUTPUT_STATE_IN).astype(np.int64)
        self.c = ctx.tensor(CELL_STATE_IN).astype(np.int64)
        self.input_quant = ctx.operand(INPUT)
        self.state_quant = ctx.operand(OUTPUT_STATE_IN)
        self.shift = cell_shift(ctx)

    def tensor(self, slot: int) -> Array | None:
        """Input ``slot`` as int64, or None when omitted."""
        value = self.ctx.input(slot)
        return None if value is None else value.astype(np.int64)

    def required(self, slot: int) -> Array:
        """Input ``slot`` as int64 (validation guarantees its presence)."""
        return self.ctx.tensor(slot).astype(np.int64)

    def scale(self, slot: int) -> F32:
        """The float32 scale of input ``slot``."""
        return F32(self.ctx.operand(slot).scale)

    def multiplier(self, real: Any, what: str) -> tuple[int, int]:
        """The quantised multiplier of ``real`` rounded to float32 (NNAPI's ``float``)."""
        value = float(F32(real))
        if not 0 <= value < 2.0**31:  # larger ones overflow every int32 product
            self.ctx.fail(f"the effective scale of {what} is {value:g}: the scales give no "
                          "multiplier in [0, 2**31)")
        return quantize_multiplier(value)

    def gate(self, k: int, cell: Array, activation: str) -> Array:
        """Pre-activation, peephole, layer norm and activation of gate ``k``."""
        ctx = self.ctx
        inter = F32(ctx.scalar(INTERMEDIATE_SCALE[k]))
        w_x, w_h = self.required(INPUT_TO[k]), self.required(RECURRENT_TO[k])
        zero = np.zeros((self.x.shape[0], w_x.shape[0]), np.int64)
        gate = il.matmul_accumulate(
            self.x, w_x, il.zero_point_times_rowsum(-self.input_quant.zero_point, w_x),
            self.multiplier(self.scale(INPUT_TO[k]) * F32(self.input_quant.scale) / inter,
                            NAMES[INPUT_TO[k]]),
            zero, 0, 16)
        gate = il.matmul_accumulate(
            self.h, w_h, il.zero_point_times_rowsum(-self.state_quant.zero_point, w_h),
            self.multiplier(self.scale(RECURRENT_TO[k]) * F32(self.state_quant.scale) / inter,
                            NAMES[RECURRENT_TO[k]]),
            gate, 0, 16)
        peephole = self.tensor(CELL_TO[k]) if k in CELL_TO else None
        if peephole is not None:
            real = 2.0**self.shift * float(self.scale(CELL_TO[k])) / float(inter)
            gate = il.peephole_accumulate(peephole, cell,
                                          self.multiplier(real, NAMES[CELL_TO[k]]), gate)
        norm = self.tensor(LAYER_NORM[k])
        if norm is not None:
            bias = self.required(GATE_BIAS[k])
            ln_scale = self.scale(LAYER_NORM[k])
            limit = min(1, int(F32(10000) * ln_scale))
            gate = il.apply_layer_norm(gate, norm, bias,
                                       self.multiplier(ln_scale, NAMES[LAYER_NORM[k]]), limit)
        if activation == "tanh":
            return fp.tanh(gate, 3, 16)
        return fp.logistic(gate, 3, 16)

    def cell_clip(self) -> int:
        clip = F32(self.ctx.scalar(CELL_CLIP))
        if clip <= 0:
            return 0
        return int(np.clip(clip / self.scale(CELL_STATE_IN), -32768, 32767))

    def projection_clip(self) -> int:
        clip = F32(self.ctx.scalar(PROJECTION_CLIP))
        if clip <= 0:
            return 0
        return int(np.clip(clip / self.scale(PROJECTION_WEIGHTS), -128, 127))


@register(OperationType.QUANTIZED_LSTM, inputs=NAMES,
          outputs=("output_state_out", "cell_state_out", "output"),
          kernel_types={T.TENSOR_QUANT8_ASYMM_SIGNED})
class QuantizedLstm:
    """QUANTIZED_LSTM: one integer LSTM step (CIFG, peephole, layer norm, projection)."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's static rules (:mod:`nnrt.ops.qlstm_rules`)."""
        validate(ctx)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Every operand's shape against the input's, the weights' and the states'."""
        return output_shapes(ctx)

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """One step of NNAPI's integer LSTM (see the module docstring)."""
        step = _Step(ctx)
        forget = step.gate(_F, step.c, "logistic")
        cell_gate = step.gate(_C, step.c, "tanh")
        if ctx.is_omitted(INPUT_TO[_I]):
            input_gate = 32767 - forget
        else:
            input_gate = step.gate(_I, step.c, "logistic")
        cell = il.saturating_add(il.cwise_mul_shift(forget, step.c, 15),
                                 il.cwise_mul_shift(input_gate, cell_gate, 30 + step.shift))
        clip = step.cell_clip()
        if clip > 0:
            cell = np.clip(cell, -clip, clip)
        output_gate = step.gate(_O, cell, "logistic")
        hidden_scale = F32(ctx.scalar(HIDDEN_SCALE))
        hidden_multiplier = step.multiplier(2.0**-15 / float(hidden_scale) * 2.0**-15,
                                            "the hidden state")
        hidden_zero_point = int(ctx.scalar(HIDDEN_ZERO_POINT))
        hidden = il.cwise_mul_rescaled(output_gate, fp.tanh(cell, 15 + step.shift, 16),
                                       hidden_multiplier, hidden_zero_point)
        weights = step.tensor(PROJECTION_WEIGHTS)
        if weights is None:
            output = hidden
        else:
            bias = step.tensor(PROJECTION_BIAS)
            real = step.scale(PROJECTION_WEIGHTS) * hidden_scale / F32(step.state_quant.scale)
            output = il.matmul_accumulate(
                hidden, weights, il.zero_point_times_rowsum(hidden_zero_point, weights, bias),
                step.multiplier(real, "the projection"),
                np.zeros((hidden.shape[0], weights.shape[0]), np.int64),
                step.state_quant.zero_point, 8)
            clip = step.projection_clip()
            if clip > 0:
                output = np.clip(output, -clip, clip)
        output = output.astype(np.int8)
        return [output, cell.astype(np.int16), output.copy()]


