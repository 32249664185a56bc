"""BIDIRECTIONAL_SEQUENCE_LSTM: two LSTM cells over a sequence, one forwards, one backwards.

NNAPI signature (61 inputs; 2 outputs, 1 when merged, and since NNAPI 1.3 four more final
states). Every tensor has the input's type, TENSOR_FLOAT32 or TENSOR_FLOAT16 (both
implemented); "optional" inputs may be omitted (NO_VALUE) or given empty:

* 0 input ``[max_time, batch, input_size]`` if time-major, else ``[batch, max_time, ...]``;
* 1-17 the forward cell's tensors and 18-34 the backward cell's, each in
  UNIDIRECTIONAL_SEQUENCE_LSTM's order of its inputs 1-17 (input-to-gate, recurrent-to-gate,
  peephole weights, gate biases, projection weights and bias);
* 35 forward output state ``[batch, fw_output_size]``, 36 forward cell state
  ``[batch, fw_num_units]``, 37 and 38 the backward ones;
* 39 auxiliary input (optional), the input's layout with ``aux_input_size`` features;
* 40-43 forward and 44-47 backward auxiliary-input-to-{input, forget, cell, output} weights
  ``[num_units, aux_input_size]`` (optional; the input gate's absent under CIFG);
* 48 activation (INT32: 0 none, 1 relu, 3 relu6, 4 tanh, 6 sigmoid), 49 cell clip and 50
  projection clip (FLOAT32, FLOAT16 for TENSOR_FLOAT16; 0 disables, never negative), 51 merge
  outputs (BOOL), 52 time major (BOOL);
* 53-56 forward and 57-60 backward {input, forget, cell, output} layer-normalisation weights
  ``[num_units]`` (optional).

Outputs: 0 the forward output sequence ``[max_time, batch, fw_output_size]`` (batch-major:
batch first), with merge outputs the two directions concatenated on the last axis; 1 the
backward output sequence unless merged (each step's backward output stays at that step's
position); then optionally (NNAPI 1.3) the forward output and cell states and the backward
output and cell states after the last step each direction processed. The linking modes of the
auxiliary input are :mod:`nnrt.ops.recurrent`'s, the cell :mod:`nnrt.ops.lstm_cell`'s; the
kernel computes in float64.
"""

from __future__ import annotations

import numpy as np

from nnrt.model.operand import FLOAT_TENSOR_TYPES
from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register
from nnrt.ops.activation import scalar_type_for
from nnrt.ops.lstm_cell import (
    LstmParams,
    LstmSlots,
    check_aux_weights,
    check_groups,
    check_types,
    load_weights,
    lstm_sequence,
    lstm_sizes,
)
from nnrt.ops.recurrent import (
    LSTM_ACTIVATIONS,
    Array,
    Linking,
    bidirectional_outputs,
    bidirectional_shapes,
    check_activation,
    check_clip,
    expect_given,
    expect_shape,
    expected_counts,
    linking,
    maybe_given,
    time_major_view,
)

T = OperandType

INPUT = 0
FW = LstmSlots(input_to=(1, 2, 3, 4), recurrent_to=(5, 6, 7, 8), cell_to=(9, 10, 11),
               bias=(12, 13, 14, 15), projection=16, projection_bias=17,
               norm=(53, 54, 55, 56), aux_to=(40, 41, 42, 43))
BW = LstmSlots(input_to=(18, 19, 20, 21), recurrent_to=(22, 23, 24, 25), cell_to=(26, 27, 28),
               bias=(29, 30, 31, 32), projection=33, projection_bias=34,
               norm=(57, 58, 59, 60), aux_to=(44, 45, 46, 47))
FW_OUTPUT_STATE, FW_CELL_STATE, BW_OUTPUT_STATE, BW_CELL_STATE = 35, 36, 37, 38
AUX_INPUT = 39
ACTIVATION, CELL_CLIP, PROJECTION_CLIP, MERGE_OUTPUTS, TIME_MAJOR = 48, 49, 50, 51, 52

_CELL = ("input_to_input_weights", "input_to_forget_weights", "input_to_cell_weights",
         "input_to_output_weights", "recurrent_to_input_weights", "recurrent_to_forget_weights",
         "recurrent_to_cell_weights", "recurrent_to_output_weights", "cell_to_input_weights",
         "cell_to_forget_weights", "cell_to_output_weights", "input_gate_bias",
         "forget_gate_bias", "cell_bias", "output_gate_bias", "projection_weights",
         "projection_bias")
_AUX = ("aux_input_to_input_weights", "aux_input_to_forget_weights",
        "aux_input_to_cell_weights", "aux_input_to_output_weights")
_NORM = ("input_layer_norm_weights", "forget_layer_norm_weights", "cell_layer_norm_weights",
         "output_layer_norm_weights")
_NAMES = ("input", *(f"fw_{n}" for n in _CELL), *(f"bw_{n}" for n in _CELL),
          "fw_output_state", "fw_cell_state", "bw_output_state", "bw_cell_state", "aux_input",
          *(f"fw_{n}" for n in _AUX), *(f"bw_{n}" for n in _AUX), "activation", "cell_clip",
          "proj_clip", "merge_outputs", "time_major", *(f"fw_{n}" for n in _NORM),
          *(f"bw_{n}" for n in _NORM))
_STATES = (FW_OUTPUT_STATE, FW_CELL_STATE, BW_OUTPUT_STATE, BW_CELL_STATE)


def _check_scalars(ctx: OperationContext) -> None:
    check_activation(ctx, ACTIVATION, LSTM_ACTIVATIONS)
    check_clip(ctx, CELL_CLIP)
    check_clip(ctx, PROJECTION_CLIP)
    merge = ctx.constant(MERGE_OUTPUTS)
    if ctx.n_outputs not in expected_counts(merge, 4):
        counts = " or ".join(str(n) for n in expected_counts(merge, 4))
        ctx.fail(f"expected {counts} outputs with merge_outputs {merge}, got "
                 f"{ctx.n_outputs}")


@register(OperationType.BIDIRECTIONAL_SEQUENCE_LSTM, inputs=_NAMES,
          outputs=("fw_output", "bw_output", "fw_output_state_out", "fw_cell_state_out",
                   "bw_output_state_out", "bw_cell_state_out"),
          kernel_types=FLOAT_TENSOR_TYPES)
class BidirectionalSequenceLstm:
    """BIDIRECTIONAL_SEQUENCE_LSTM with every optional input and both linking modes."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """Counts, one float type throughout, ranks and scalar values."""
        ctx.expect_counts(61, (1, 2, 5, 6))
        t = ctx.expect_type(INPUT, T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
        ctx.expect_rank(INPUT, 3)
        check_types(ctx, FW, t)
        check_types(ctx, BW, t)
        for slot in _STATES:
            ctx.expect_type(slot, t)
            ctx.expect_rank(slot, 2)
        ctx.expect_optional_type(AUX_INPUT, t)
        if maybe_given(ctx, AUX_INPUT):
            ctx.expect_rank(AUX_INPUT, 3)
        ctx.expect_scalar(ACTIVATION, T.INT32)
        ctx.expect_scalar(CELL_CLIP, scalar_type_for(t))
        ctx.expect_scalar(PROJECTION_CLIP, scalar_type_for(t))
        ctx.expect_scalar(MERGE_OUTPUTS, T.BOOL)
        ctx.expect_scalar(TIME_MAJOR, T.BOOL)
        for j in range(ctx.n_outputs):
            ctx.expect_output_type(j, t)
        _check_scalars(ctx)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """The optional groups, linking mode and shapes; the outputs' shapes."""
        _check_scalars(ctx)
        fw_cifg, bw_cifg = check_groups(ctx, FW), check_groups(ctx, BW)
        mode = linking(ctx, AUX_INPUT, FW.aux_to or (), BW.aux_to or ())
        if mode is Linking.CROSS:
            check_aux_weights(ctx, FW, fw_cifg)
            check_aux_weights(ctx, BW, bw_cifg)
        ctx.expect_rank(INPUT, 3)
        expect_given(ctx, INPUT)
        shape = ctx.shape(INPUT)
        aux_size = _aux_size(ctx, shape) if mode is not Linking.NONE else None
        fw = lstm_sizes(ctx, FW, aux_size if mode is Linking.CROSS else None)
        bw = lstm_sizes(ctx, BW, aux_size if mode is Linking.CROSS else None)
        _expect_input_size(ctx, FW, fw.input_size, shape[2], "input")
        if mode is Linking.PARALLEL:
            _expect_input_size(ctx, BW, bw.input_size, aux_size, "auxiliary input")
        else:
            _expect_input_size(ctx, BW, bw.input_size, shape[2], "input")
        batch = shape[1] if ctx.scalar(TIME_MAJOR) else shape[0]
        states = [(batch, fw.output_size), (batch, fw.num_units), (batch, bw.output_size),
                  (batch, bw.num_units)]
        for slot, state in zip(_STATES, states, strict=True):
            expect_shape(ctx, slot, state)
        return bidirectional_shapes((shape[0], shape[1]), fw.output_size, bw.output_size,
                                    bool(ctx.scalar(MERGE_OUTPUTS)), states, ctx.n_outputs)

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Both directions in float64."""
        params = LstmParams(LSTM_ACTIVATIONS[int(ctx.scalar(ACTIVATION))],
                            float(ctx.scalar(CELL_CLIP)), float(ctx.scalar(PROJECTION_CLIP)))
        time_major = bool(ctx.scalar(TIME_MAJOR))
        mode = linking(ctx, AUX_INPUT, FW.aux_to or (), BW.aux_to or ())
        xs = time_major_view(ctx.tensor(INPUT).astype(np.float64), time_major)
        aux = (time_major_view(ctx.tensor(AUX_INPUT).astype(np.float64), time_major)
               if mode is not Linking.NONE else None)
        cross = aux if mode is Linking.CROSS else None
        fw, fw_h, fw_c = lstm_sequence(load_weights(ctx, FW), params, xs,
                                       _state(ctx, FW_OUTPUT_STATE), _state(ctx, FW_CELL_STATE),
                                       cross)
        bw_xs = aux if mode is Linking.PARALLEL and aux is not None else xs
        bw, bw_h, bw_c = lstm_sequence(load_weights(ctx, BW), params, bw_xs,
                                       _state(ctx, BW_OUTPUT_STATE), _state(ctx, BW_CELL_STATE),
                                       cross, reverse=True)
        return bidirectional_outputs(fw, bw, bool(ctx.scalar(MERGE_OUTPUTS)), time_major,
                                     [fw_h, fw_c, bw_h, bw_c], ctx.n_outputs)


def _state(ctx: ExecutionContext, slot: int) -> Array:
    return ctx.tensor(slot).astype(np.float64)


def _aux_size(ctx: OperationContext, shape: Shape) -> int:
    """The auxiliary input's feature count, its leading dims checked against the input's."""
    ctx.expect_rank(AUX_INPUT, 3)
    aux = ctx.shape(AUX_INPUT)
    if aux[:2] != shape[:2]:
        ctx.fail(f"expected leading dims {shape[:2]} like the input's, got {aux[:2]}",
                 input=AUX_INPUT)
    return aux[2]


def _expect_input_size(ctx: OperationContext, s: LstmSlots, weights: int, actual: int | None,
                       what: str) -> None:
    """Fail unless the direction's input-to-forget weights take the features it reads."""
    if weights != actual:
        ctx.fail(f"the weights take {weights} features, the {what} has {actual}",
                 input=s.input_to[1])
