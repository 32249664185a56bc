"""UNIDIRECTIONAL_SEQUENCE_LSTM: an LSTM cell unrolled over the time axis of a sequence.

NNAPI signature (24 inputs, or 28 with layer normalisation; 1 or 3 outputs). Every tensor has
the input's type, TENSOR_FLOAT32 or TENSOR_FLOAT16 (both implemented); "optional" inputs may
be omitted (NO_VALUE) or given empty (how NNAPI's test models omit them):

* 0 input, rank 3: ``[max_time, batch, input_size]`` if time-major, else
  ``[batch, max_time, input_size]``;
* 1-4 input-to-{input (optional), forget, cell, output} weights ``[num_units, input_size]``;
* 5-8 recurrent-to-{input (optional), forget, cell, output} weights
  ``[num_units, output_size]``;
* 9-11 cell-to-{input, forget, output} peephole weights ``[num_units]`` (optional);
* 12-15 {input (optional), forget, cell, output} gate biases ``[num_units]``;
* 16 projection weights ``[output_size, num_units]`` and 17 projection bias ``[output_size]``
  (both optional);
* 18 output state in ``[batch, output_size]``, 19 cell state in ``[batch, num_units]``;
* 20 activation ``g`` (INT32: 0 none, 1 relu, 3 relu6, 4 tanh, 6 sigmoid), 21 cell clip and
  22 projection clip (FLOAT32, FLOAT16 for TENSOR_FLOAT16; 0 disables, never negative),
  23 time major (BOOL);
* 24-27 {input, forget, cell, output} layer-normalisation weights ``[num_units]`` (optional).

Outputs: 0 the output, ``[max_time, batch, output_size]`` (batch-major: batch first); 1 the
last output state ``[batch, output_size]`` and 2 the last cell state ``[batch, num_units]``,
both present or both absent (NNAPI 1.3). The cell, its optional-input groups and their
checks are :mod:`nnrt.ops.lstm_cell`'s; the kernel computes in float64.
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
    lstm_sequence,
    lstm_sizes,
)
from nnrt.ops.recurrent import (
    LSTM_ACTIVATIONS,
    Array,
    expect_given,
    expect_shape,
    time_major_view,
)

T = OperandType

INPUT = 0
INPUT_TO_INPUT, INPUT_TO_FORGET, INPUT_TO_CELL, INPUT_TO_OUTPUT = 1, 2, 3, 4
RECURRENT_TO_INPUT, RECURRENT_TO_FORGET, RECURRENT_TO_CELL, RECURRENT_TO_OUTPUT = 5, 6, 7, 8
CELL_TO_INPUT, CELL_TO_FORGET, CELL_TO_OUTPUT = 9, 10, 11
INPUT_BIAS, FORGET_BIAS, CELL_BIAS, OUTPUT_BIAS = 12, 13, 14, 15
PROJECTION_WEIGHTS, PROJECTION_BIAS = 16, 17
OUTPUT_STATE_IN, CELL_STATE_IN = 18, 19
ACTIVATION, CELL_CLIP, PROJECTION_CLIP, TIME_MAJOR = 20, 21, 22, 23
INPUT_NORM, FORGET_NORM, CELL_NORM, OUTPUT_NORM = 24, 25, 26, 27

SLOTS = LstmSlots(input_to=(1, 2, 3, 4), recurrent_to=(5, 6, 7, 8), cell_to=(9, 10, 11),
                  bias=(12, 13, 14, 15), projection=16, projection_bias=17,
                  norm=(24, 25, 26, 27))

_NAMES = (*CELL_INPUT_NAMES, "time_major", *LAYER_NORM_NAMES)


@register(OperationType.UNIDIRECTIONAL_SEQUENCE_LSTM, inputs=_NAMES,
          outputs=("output", "output_state_out", "cell_state_out"),
          kernel_types=FLOAT_TENSOR_TYPES)
class UnidirectionalSequenceLstm:
    """UNIDIRECTIONAL_SEQUENCE_LSTM with CIFG, peepholes, projection and layer normalisation."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """Counts, one float type throughout, ranks and scalar values."""
        ctx.expect_counts((24, 28), (1, 3))
        t = ctx.expect_type(INPUT, T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
        ctx.expect_rank(INPUT, 3)
        check_types(ctx, SLOTS, t)
        for slot in (OUTPUT_STATE_IN, CELL_STATE_IN):
            ctx.expect_type(slot, t)
            ctx.expect_rank(slot, 2)
        ctx.expect_scalar(ACTIVATION, T.INT32)
        ctx.expect_scalar(CELL_CLIP, scalar_type_for(t))
        ctx.expect_scalar(PROJECTION_CLIP, scalar_type_for(t))
        ctx.expect_scalar(TIME_MAJOR, T.BOOL)
        for j in range(ctx.n_outputs):
            ctx.expect_output_type(j, t)
        check_cell_scalars(ctx, ACTIVATION, CELL_CLIP, PROJECTION_CLIP)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """The optional groups and shapes; the output sequence's shape, then the two final
        states' shapes when asked for."""
        check_cell_scalars(ctx, ACTIVATION, CELL_CLIP, PROJECTION_CLIP)
        check_groups(ctx, SLOTS)
        sizes = lstm_sizes(ctx, SLOTS)
        ctx.expect_rank(INPUT, 3)
        expect_given(ctx, INPUT)
        shape = ctx.shape(INPUT)
        if shape[2] != sizes.input_size:
            ctx.fail(f"input size {shape[2]} does not match the weights' {sizes.input_size}",
                     input=INPUT)
        batch = shape[1] if ctx.scalar(TIME_MAJOR) else shape[0]
        expect_shape(ctx, OUTPUT_STATE_IN, (batch, sizes.output_size))
        expect_shape(ctx, CELL_STATE_IN, (batch, sizes.num_units))
        shapes: list[Shape] = [(*shape[:2], sizes.output_size)]
        if ctx.n_outputs == 3:
            shapes += [(batch, sizes.output_size), (batch, sizes.num_units)]
        return shapes

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Unrolls the cell over time in float64."""
        params = LstmParams(LSTM_ACTIVATIONS[int(ctx.scalar(ACTIVATION))],
                            float(ctx.scalar(CELL_CLIP)), float(ctx.scalar(PROJECTION_CLIP)))
        time_major = bool(ctx.scalar(TIME_MAJOR))
        xs = time_major_view(ctx.tensor(INPUT).astype(np.float64), time_major)
        out, h, c = lstm_sequence(load_weights(ctx, SLOTS), params, xs,
                                  ctx.tensor(OUTPUT_STATE_IN).astype(np.float64),
                                  ctx.tensor(CELL_STATE_IN).astype(np.float64))
        results = [time_major_view(out, time_major)]
        if ctx.n_outputs == 3:
            results += [h, c]
        return results
