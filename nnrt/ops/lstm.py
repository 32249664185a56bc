"""LSTM: one step of an LSTM cell (NNAPI 1.0; layer normalisation since 1.2).

NNAPI signature (23 inputs, or 27 with layer normalisation; 4 outputs). Every tensor has the
input's type, TENSOR_FLOAT32 or TENSOR_FLOAT16 (both implemented); "optional" inputs may be
omitted (NO_VALUE) or given empty (how NNAPI's test models omit them):

* 0 input ``[batch, input_size]``;
* 1-4 input-to-{input (optional), forget, cell, output} weights ``[num_units, input_size]``;
* 5-8 recurrent-to-{input (optional), forget, cell, output} weights
  ``[num_units, output_size]``;
* 9-11 cell-to-{input, forget, output} peephole weights ``[num_units]`` (optional);
* 12-15 {input (optional), forget, cell, output} gate biases ``[num_units]``;
* 16 projection weights ``[output_size, num_units]`` and 17 projection bias ``[output_size]``
  (both optional);
* 18 output state in ``[batch, output_size]``, 19 cell state in ``[batch, num_units]``;
* 20 activation ``g`` (INT32: 0 none, 1 relu, 3 relu6, 4 tanh, 6 sigmoid), 21 cell clip and
  22 projection clip (FLOAT32, FLOAT16 for TENSOR_FLOAT16; 0 disables, never negative);
* 23-26 {input, forget, cell, output} layer-normalisation weights ``[num_units]`` (optional).

Outputs: 0 the scratch buffer ``[batch, num_units * 4]`` (``* 3`` under CIFG); 1 the output
state ``[batch, output_size]``; 2 the cell state ``[batch, num_units]``; 3 the output
``[batch, output_size]`` (equal to output 1). NNAPI leaves the scratch buffer's contents
unspecified (its tests ignore them); nnrt writes the step's gate activations there in the
memory layout of NNAPI's CPU executor: blocks of ``batch * num_units`` values for the input
gate (absent under CIFG), ``g`` of the cell candidate, the forget gate and the output gate.
The cell is :mod:`nnrt.ops.lstm_cell`'s; the kernel computes in float64.
"""

from __future__ import annotations

import numpy as np

from nnrt.model.operand import FLOAT_TENSOR_TYPES
from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register
from nnrt.ops.activation import scalar_type_for
from nnrt.ops.lstm_cell import (
    CELL_INPUT_NAMES,
    LAYER_NORM_NAMES,
    LstmParams,
    LstmSlots,
    check_cell_scalars,
    check_groups,
    check_types,
    load_weights,
    lstm_sizes,
    lstm_step,
)
from nnrt.ops.recurrent import (
    LSTM_ACTIVATIONS,
    Array,
    expect_given,
    expect_shape,
)

T = OperandType

INPUT = 0
OUTPUT_STATE_IN, CELL_STATE_IN = 18, 19
ACTIVATION, CELL_CLIP, PROJECTION_CLIP = 20, 21, 22
SLOTS = LstmSlots(input_to=(1, 2, 3, 4), recurrent_to=(5, 6, 7, 8), cell_to=(9, 10, 11),
                  bias=(12, 13, 14, 15), projection=16, projection_bias=17,
                  norm=(23, 24, 25, 26))

_NAMES = (*CELL_INPUT_NAMES, *LAYER_NORM_NAMES)


@register(OperationType.LSTM, inputs=_NAMES,
          outputs=("scratch_buffer", "output_state_out", "cell_state_out", "output"),
          kernel_types=FLOAT_TENSOR_TYPES)
class Lstm:
    """LSTM with CIFG, peepholes, projection, clipping and layer normalisation."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """Counts, one float type throughout, ranks and scalar values."""
        ctx.expect_counts((23, 27), 4)
        t = ctx.expect_type(INPUT, T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
        ctx.expect_rank(INPUT, 2)
        check_types(ctx, SLOTS, t)
        for slot in (OUTPUT_STATE_IN, CELL_STATE_IN):
            ctx.expect_type(slot, t)
            ctx.expect_rank(slot, 2)
        ctx.expect_scalar(ACTIVATION, T.INT32)
        ctx.expect_scalar(CELL_CLIP, scalar_type_for(t))
        ctx.expect_scalar(PROJECTION_CLIP, scalar_type_for(t))
        for j in range(4):
            ctx.expect_output_type(j, t)
        check_cell_scalars(ctx, ACTIVATION, CELL_CLIP, PROJECTION_CLIP)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """The optional groups and shapes; the four outputs' shapes."""
        check_cell_scalars(ctx, ACTIVATION, CELL_CLIP, PROJECTION_CLIP)
        cifg = check_groups(ctx, SLOTS)
        sizes = lstm_sizes(ctx, SLOTS)
        ctx.expect_rank(INPUT, 2)
        expect_given(ctx, INPUT)
        batch, input_size = ctx.shape(INPUT)
        if input_size != sizes.input_size:
            ctx.fail(f"input size {input_size} does not match the weights' "
                     f"{sizes.input_size}", input=INPUT)
        expect_shape(ctx, OUTPUT_STATE_IN, (batch, sizes.output_size))
        expect_shape(ctx, CELL_STATE_IN, (batch, sizes.num_units))
        gates = 3 if cifg else 4
        return [(batch, sizes.num_units * gates), (batch, sizes.output_size),
                (batch, sizes.num_units), (batch, sizes.output_size)]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """One step in float64."""
        params = LstmParams(LSTM_ACTIVATIONS[int(ctx.scalar(ACTIVATION))],
                            float(ctx.scalar(CELL_CLIP)), float(ctx.scalar(PROJECTION_CLIP)))
        h, c, gates = lstm_step(load_weights(ctx, SLOTS), params,
                                ctx.tensor(INPUT).astype(np.float64),
                                ctx.tensor(OUTPUT_STATE_IN).astype(np.float64),
                                ctx.tensor(CELL_STATE_IN).astype(np.float64))
        blocks = [g.ravel() for g in gates if g is not None]
        scratch = np.concatenate(blocks).reshape(h.shape[0], -1)
        return [scratch, h, c, h]
