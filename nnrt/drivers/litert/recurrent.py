"""Writing UNIDIRECTIONAL_SEQUENCE_LSTM as TFLite's builtin of that name.

NNAPI's operand list was designed from TFLite's: inputs 0-19 are the same tensors in the same
order (input; input-to-gate and recurrent-to-gate weights, input gate first, omitted for CIFG;
peepholes; gate biases; projection weights and bias; output and cell state), NNAPI's
layer-normalisation weights 24-27 are TFLite's inputs 20-23, and NNAPI's scalars 20-23
(activation, cell clip, projection clip, time major) are the builtin's options. Omitted
inputs are TFLite's optional ones (-1). TFLite's step is NNAPI's: peepholes on the old cell
state for the input and forget gates and on the new one for the output gate, ``i = 1 - f``
under CIFG, layer normalisation (epsilon 1e-8) before the bias, clipping when a clip is
positive. Only the activation differs: TFLite applies tanh, relu and relu6 as NNAPI does, not
"none" or sigmoid (refused in :mod:`.support`).

TFLite's states are variable tensors updated in place, not outputs: each state input is
copied into a variable tensor by a RESHAPE before the operator (so the partition's input is
not overwritten and every run starts from the given state). The graph does not record that
the operator writes them, so a later read could be ordered before it (XNNPACK's partitions
are): NNAPI's final-state outputs 1 and 2 are copies made by a SELECT_V2 whose condition is a
constant true (it takes the whole variable tensor) and whose other input is one element of the
operator's output (so it runs only once the operator has).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from ai_edge_litert import schema_py_generated as fb

from nnrt.drivers.litert.writer import Writer
from nnrt.model.types import OperationType
from nnrt.ops import sequence_lstm as lstm
from nnrt.ops._framework.context import OperationContext

__all__ = ["BUILTINS", "WRITERS"]

Op = OperationType
#: NNAPI input slots in TFLite's input order (the state slots are written separately).
_TENSOR_SLOTS = (*range(lstm.INPUT, lstm.PROJECTION_BIAS + 1), lstm.OUTPUT_STATE_IN,
                 lstm.CELL_STATE_IN, *range(lstm.INPUT_NORM, lstm.OUTPUT_NORM + 1))


def write_lstm(writer: Writer, ctx: OperationContext) -> None:
    """UNIDIRECTIONAL_SEQUENCE_LSTM, its states through variable tensors."""
    op = ctx.operation
    variables = {slot: _state_in(writer, ctx, slot)
                 for slot in (lstm.OUTPUT_STATE_IN, lstm.CELL_STATE_IN)}
    inputs = [variables[slot] if slot in variables
              else -1 if ctx.is_omitted(slot) else writer.tensor(op.inputs[slot])
              for slot in _TENSOR_SLOTS]
    options = fb.UnidirectionalSequenceLSTMOptionsT()
    options.fusedActivationFunction = int(ctx.scalar(lstm.ACTIVATION))
    options.cellClip = float(ctx.scalar(lstm.CELL_CLIP))
    options.projClip = float(ctx.scalar(lstm.PROJECTION_CLIP))
    options.timeMajor = bool(ctx.scalar(lstm.TIME_MAJOR))
    options.asymmetricQuantizeInputs = False
    options.diagonalRecurrentTensors = False
    output = writer.tensor(op.outputs[0])
    writer.operator(fb.BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM, inputs, [output],
                    fb.BuiltinOptions.UnidirectionalSequenceLSTMOptions, options)
    if ctx.n_outputs == 3:
        after = _element_of(writer, ctx.index, output)
        for slot, j in ((lstm.OUTPUT_STATE_IN, 1), (lstm.CELL_STATE_IN, 2)):
            _state_out(writer, ctx.index, variables[slot], after, op.outputs[j])


def _state_in(writer: Writer, ctx: OperationContext, slot: int) -> int:
    """A variable tensor holding state input ``slot``, copied in by a RESHAPE."""
    source = ctx.operation.inputs[slot]
    dims = writer.model.inferred_dims[source]
    variable = writer.state(f"state_{ctx.index}_{slot}", dims)
    shape = writer.constant(f"state_shape_{ctx.index}_{slot}", np.asarray(dims, np.int32))
    options = fb.ReshapeOptionsT()
    options.newShape = np.asarray(dims, np.int32)
    writer.operator(fb.BuiltinOperator.RESHAPE, [writer.tensor(source), shape], [variable],
                    fb.BuiltinOptions.ReshapeOptions, options)
    return variable


def _element_of(writer: Writer, index: int, output: int) -> int:
    """A [1, 1] tensor holding the first element of the operator's output: what orders the
    state copies after the operator."""
    begin = writer.constant(f"first_begin_{index}", np.zeros(3, np.int32))
    size = writer.constant(f"first_size_{index}", np.ones(3, np.int32))
    first = writer.add_tensor(f"first_{index}", (1, 1, 1))
    writer.operator(fb.BuiltinOperator.SLICE, [output, begin, size], [first],
                    fb.BuiltinOptions.SliceOptions, fb.SliceOptionsT())
    shape = writer.constant(f"first_shape_{index}", np.ones(2, np.int32))
    element = writer.add_tensor(f"element_{index}", (1, 1))
    options = fb.ReshapeOptionsT()
    options.newShape = np.ones(2, np.int32)
    writer.operator(fb.BuiltinOperator.RESHAPE, [first, shape], [element],
                    fb.BuiltinOptions.ReshapeOptions, options)
    return element


def _state_out(writer: Writer, index: int, variable: int, after: int, operand: int) -> None:
    """Output operand ``operand``: the final state in ``variable``, copied once the operator
    has run (``after`` is computed from its output)."""
    keep = writer.constant(f"keep_{index}_{operand}", np.ones((1, 1), np.bool_))
    writer.operator(fb.BuiltinOperator.SELECT_V2, [keep, variable, after],
                    [writer.tensor(operand)], fb.BuiltinOptions.SelectV2Options,
                    fb.SelectV2OptionsT())


WRITERS: dict[OperationType, Callable[[Writer, OperationContext], None]] = {
    Op.UNIDIRECTIONAL_SEQUENCE_LSTM: write_lstm,
}
#: Every builtin these writers write.
BUILTINS = frozenset({fb.BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM,
                      fb.BuiltinOperator.RESHAPE, fb.BuiltinOperator.SLICE,
                      fb.BuiltinOperator.SELECT_V2})
