"""BIDIRECTIONAL_SEQUENCE_RNN: two RNN cells over a sequence, one forwards, one backwards.

NNAPI signature (15 inputs; 2 outputs, 1 when merged, and since NNAPI 1.3 two more final
states). Every tensor has the input's type, TENSOR_FLOAT32 or TENSOR_FLOAT16 (both
implemented; the kernel computes in float64); the optional ones may be omitted or given empty:

* 0 input ``[max_time, batch, input_size]`` if time-major, else ``[batch, max_time, ...]``;
* 1 forward weights ``[fw_num_units, input_size]``, 2 forward recurrent weights
  ``[fw_num_units, fw_num_units]``, 3 forward bias ``[fw_num_units]``, 4 forward hidden state
  ``[batch, fw_num_units]``; 5-8 the backward ones;
* 9 auxiliary input (optional), the input's layout with ``aux_input_size`` features; 10 and
  11 forward and backward auxiliary weights ``[num_units, aux_input_size]`` (optional, both
  or neither);
* 12 activation (INT32: 0 none, 1 relu, 2 relu1, 3 relu6, 4 tanh, 6 sigmoid), 13 time major
  (BOOL), 14 merge outputs (BOOL).

Outputs: 0 the forward output sequence ``[max_time, batch, fw_num_units]`` (batch-major:
batch first), with merge outputs both directions concatenated on the last axis; 1 the
backward output sequence unless merged (each step's backward output at that step's position);
then optionally (NNAPI 1.3) the forward and backward hidden states after the last step each
direction processed. The cell is :mod:`nnrt.ops.rnn`'s, the linking modes of the auxiliary
input :mod:`nnrt.ops.recurrent`'s.
"""

from __future__ import annotations

import numpy as np

from nnrt.model.operand import FLOAT_TENSOR_TYPES
from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register
from nnrt.ops.recurrent import (
    RNN_ACTIVATIONS,
    Array,
    Linking,
    bidirectional_outputs,
    bidirectional_shapes,
    check_activation,
    expect_given,
    expect_shape,
    expected_counts,
    given,
    linking,
    maybe_given,
    time_major_view,
)
from nnrt.ops.rnn import RnnSlots, check_rnn_types, expect_input_size, rnn_sequence, rnn_sizes

T = OperandType

INPUT = 0
FW, BW = RnnSlots(1, 2, 3, 4), RnnSlots(5, 6, 7, 8)
AUX_INPUT, FW_AUX_WEIGHTS, BW_AUX_WEIGHTS = 9, 10, 11
ACTIVATION, TIME_MAJOR, MERGE_OUTPUTS = 12, 13, 14

_NAMES = ("input", "fw_weights", "fw_recurrent_weights", "fw_bias", "fw_hidden_state",
          "bw_weights", "bw_recurrent_weights", "bw_bias", "bw_hidden_state", "aux_input",
          "fw_aux_weights", "bw_aux_weights", "activation", "time_major", "merge_outputs")


def _check_scalars(ctx: OperationContext) -> None:
    check_activation(ctx, ACTIVATION, RNN_ACTIVATIONS)
    merge = ctx.constant(MERGE_OUTPUTS)
    if ctx.n_outputs not in expected_counts(merge, 2):
        counts = " or ".join(str(n) for n in expected_counts(merge, 2))
        ctx.fail(f"expected {counts} outputs with merge_outputs {merge}, got "
                 f"{ctx.n_outputs}")


@register(OperationType.BIDIRECTIONAL_SEQUENCE_RNN, inputs=_NAMES,
          outputs=("fw_output", "bw_output", "fw_hidden_state_out", "bw_hidden_state_out"),
          kernel_types=FLOAT_TENSOR_TYPES)
class BidirectionalSequenceRnn:
    """BIDIRECTIONAL_SEQUENCE_RNN with the auxiliary input's linking modes."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """Counts, one float type throughout, ranks and scalar values."""
        ctx.expect_counts(15, (1, 2, 3, 4))
        t = ctx.expect_type(INPUT, T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
        ctx.expect_rank(INPUT, 3)
        check_rnn_types(ctx, FW, t)
        check_rnn_types(ctx, BW, t)
        for slot, rank in ((AUX_INPUT, 3), (FW_AUX_WEIGHTS, 2), (BW_AUX_WEIGHTS, 2)):
            ctx.expect_optional_type(slot, t)
            if maybe_given(ctx, slot):
                ctx.expect_rank(slot, rank)
        ctx.expect_scalar(ACTIVATION, T.INT32)
        ctx.expect_scalar(TIME_MAJOR, T.BOOL)
        ctx.expect_scalar(MERGE_OUTPUTS, T.BOOL)
        _check_scalars(ctx)
        for j in range(ctx.n_outputs):
            ctx.expect_output_type(j, t)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """The linking mode and shapes; the outputs' shapes."""
        _check_scalars(ctx)
        mode = _linking(ctx)
        ctx.expect_rank(INPUT, 3)
        expect_given(ctx, INPUT)
        shape = ctx.shape(INPUT)
        batch = shape[1] if ctx.scalar(TIME_MAJOR) else shape[0]
        fw_units, fw_input = rnn_sizes(ctx, FW, batch)
        bw_units, bw_input = rnn_sizes(ctx, BW, batch)
        expect_input_size(ctx, fw_input, shape[2], INPUT)
        if mode is Linking.NONE:
            expect_input_size(ctx, bw_input, shape[2], INPUT)
        else:
            ctx.expect_rank(AUX_INPUT, 3)
            aux = ctx.shape(AUX_INPUT)
            if aux[:2] != shape[:2]:
                ctx.fail(f"expected leading dims {shape[:2]} like the input's, got {aux[:2]}",
                         input=AUX_INPUT)
            if mode is Linking.PARALLEL:
                expect_input_size(ctx, bw_input, aux[2], AUX_INPUT)
            else:
                expect_input_size(ctx, bw_input, shape[2], INPUT)
                expect_shape(ctx, FW_AUX_WEIGHTS, (fw_units, aux[2]))
                expect_shape(ctx, BW_AUX_WEIGHTS, (bw_units, aux[2]))
        return bidirectional_shapes((shape[0], shape[1]), fw_units, bw_units,
                                    bool(ctx.scalar(MERGE_OUTPUTS)),
                                    [(batch, fw_units), (batch, bw_units)], ctx.n_outputs)

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Both directions in float64."""
        act = RNN_ACTIVATIONS[int(ctx.scalar(ACTIVATION))]
        time_major = bool(ctx.scalar(TIME_MAJOR))
        mode = _linking(ctx)
        xs = time_major_view(ctx.tensor(INPUT).astype(np.float64), time_major)
        aux = (time_major_view(ctx.tensor(AUX_INPUT).astype(np.float64), time_major)
               if mode is not Linking.NONE else xs)
        cross = mode is Linking.CROSS
        fw, fw_h = rnn_sequence(ctx, FW, act, xs, (aux, FW_AUX_WEIGHTS) if cross else None)
        bw, bw_h = rnn_sequence(ctx, BW, act, aux if mode is Linking.PARALLEL else xs,
                                (aux, BW_AUX_WEIGHTS) if cross else None, reverse=True)
        return bidirectional_outputs(fw, bw, bool(ctx.scalar(MERGE_OUTPUTS)), time_major,
                                     [fw_h, bw_h], ctx.n_outputs)


def _linking(ctx: OperationContext) -> Linking:
    """The linking mode; cross-linking needs both directions' auxiliary weights."""
    mode = linking(ctx, AUX_INPUT, (FW_AUX_WEIGHTS,), (BW_AUX_WEIGHTS,))
    if mode is Linking.CROSS:
        for slot in (FW_AUX_WEIGHTS, BW_AUX_WEIGHTS):
            if not given(ctx, slot):
                ctx.fail("both directions' auxiliary weights must be given, or neither",
                         input=slot)
    return mode
