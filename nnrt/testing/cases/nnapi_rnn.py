"""Conformance cases transcribed from NNAPI's published RNN and SVDF test specs.

RNN, UNIDIRECTIONAL_SEQUENCE_RNN, BIDIRECTIONAL_SEQUENCE_RNN and SVDF. The vectors are those of
AOSP's ``runtime/test/specs/<version>/<stem>.mod.py`` files (in :mod:`.nnapi_rnn_data`, each
named there and in the case name, ``<op>_nnapi_<stem>[_<example>]``); the specs' float16 files
(``rnn_float16``, ``svdf_float16``, ...) repeat the float32 vectors, and their "relaxed" /
"float16" variations are nnrt's automatic variants.

The sequence specs derive their examples from one 16-step, 2-batch vector set by transposition
(time-major), concatenation (merged outputs), reversal and splitting (auxiliary inputs); those
transformations are applied here to the same vectors. The V1_3 examples not stored in the
mirrors used (parallel linking, final-state outputs) are derived the same way: the final hidden
states are the sequences' last (forward) and first (backward) outputs. An optional input the
spec declares with zero dims and feeds no data is a zero-size model input, one declared with
real dims an omitted operand. SVDF's state output, which three specs ignore, is checked against
an independent float64 computation of NNAPI's state update.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.cases import nnapi_rnn_data as d
from nnrt.testing.spec import Arg, OpCase, bools, f32, i32s, omitted, out

CASES: list[OpCase] = []
F32 = T.TENSOR_FLOAT32
RELU = 1
BATCHES, MAX_TIME, INPUT_SIZE, UNITS = 2, 16, 8, 16


def _f(values: Sequence[Any] | Any, *dims: int) -> Arg:
    return f32(np.asarray(values, np.float32).reshape(dims))


def _a(values: Sequence[Any], *dims: int) -> Any:
    return np.asarray(values, np.float64).reshape(dims)


def _zero_size(*dims: int) -> Arg:
    """An optional input NNAPI's spec declares with zero dims and feeds no data."""
    return f32(np.zeros(dims, np.float32), role="input")


def _case(op: Op, name: str, inputs: Sequence[Arg], outputs: Sequence[Any]) -> None:
    prefix = op.name.lower()
    CASES.append(OpCase(f"{prefix}_nnapi_{name}", op, tuple(inputs),
                        tuple(out(F32, np.shape(o), np.asarray(o)) for o in outputs)))


_WEIGHTS = _a(d.RNN_WEIGHTS, UNITS, INPUT_SIZE)
_RECURRENT = 0.1 * np.eye(UNITS)
_BIAS = _a(d.RNN_BIAS, UNITS)
_ZERO_STATE = np.zeros((BATCHES, UNITS))


def _cell(weights: Any = _WEIGHTS) -> list[Arg]:
    """Weights, recurrent weights, bias and a zero hidden state."""
    return [_f(weights, *np.shape(weights)), _f(_RECURRENT, UNITS, UNITS), _f(_BIAS, UNITS),
            _f(_ZERO_STATE, BATCHES, UNITS)]


# -- RNN ------------------------------------------------------------------------------------

# rnn.mod.py (V1_0): the first step, the same input for both batches.
_out0 = np.tile(_a(d.RNN_OUTPUT_STEP0, 1, UNITS), (BATCHES, 1))
_case(Op.RNN, "rnn", [_f(np.tile(d.RNN_INPUT_STEP0, BATCHES), BATCHES, INPUT_SIZE), *_cell(),
                      i32s(RELU)], [_out0, _out0])
# rnn_state.mod.py (V1_0): the second step from the first one's state.
_case(Op.RNN, "rnn_state", [
    _f(np.tile(d.RNN_STATE_INPUT, BATCHES), BATCHES, INPUT_SIZE), *_cell()[:3],
    _f(np.tile(d.RNN_STATE_HIDDEN_IN, BATCHES), BATCHES, UNITS), i32s(RELU)],
    [np.tile(_a(d.RNN_STATE_HIDDEN_OUT, 1, UNITS), (BATCHES, 1)),
     np.tile(_a(d.RNN_STATE_OUTPUT, 1, UNITS), (BATCHES, 1))])

# -- UNIDIRECTIONAL_SEQUENCE_RNN --------------------------------------------------------------

# The sequence specs' batch-major data: both batches the same 16 steps.
_X = np.tile(_a(d.RNN_SEQ_INPUT, 1, MAX_TIME, INPUT_SIZE), (BATCHES, 1, 1))
_FW = np.tile(_a(d.RNN_SEQ_OUTPUT, 1, MAX_TIME, UNITS), (BATCHES, 1, 1))
_BW = np.tile(_a(d.RNN_SEQ_BW_OUTPUT, 1, MAX_TIME, UNITS), (BATCHES, 1, 1))


def _tm(x: Any) -> Any:
    """Batch-major to time-major."""
    return np.transpose(x, (1, 0, 2))


# unidirectional_sequence_rnn.mod.py (V1_2): "blackbox" batch-major and time-major; V1_3's
# "blackbox_state_output" adds the final hidden state.
_case(Op.UNIDIRECTIONAL_SEQUENCE_RNN, "unidirectional_sequence_rnn_blackbox",
      [_f(_X, *_X.shape), *_cell(), i32s(RELU), i32s(0)], [_FW])
_case(Op.UNIDIRECTIONAL_SEQUENCE_RNN, "unidirectional_sequence_rnn_blackbox_time_major",
      [_f(_tm(_X), MAX_TIME, BATCHES, INPUT_SIZE), *_cell(), i32s(RELU), i32s(1)], [_tm(_FW)])
_case(Op.UNIDIRECTIONAL_SEQUENCE_RNN, "unidirectional_sequence_rnn_blackbox_state_output",
      [_f(_X, *_X.shape), *_cell(), i32s(RELU), i32s(0)], [_FW, _FW[:, -1]])

# -- BIDIRECTIONAL_SEQUENCE_RNN ---------------------------------------------------------------


def _bidirectional(name: str, x: Any, cells: tuple[Any, Any], aux: tuple[Any, Any, Any] | None,
                   flags: tuple[bool, bool], outputs: Sequence[Any]) -> None:
    """A case from the input, each direction's weights, the auxiliary input and weights
    (``None`` for an omitted one; all None: the spec's zero-size model inputs) and
    ``(time_major, merge_outputs)``."""
    if aux is None:
        aux_args = [_zero_size(0)] * 3
    else:
        aux_args = [omitted(F32) if a is None else _f(a, *np.shape(a)) for a in aux]
    _case(Op.BIDIRECTIONAL_SEQUENCE_RNN, name,
          [_f(x, *np.shape(x)), *_cell(cells[0]), *_cell(cells[1]), *aux_args, i32s(RELU),
           bools(flags[0]), bools(flags[1])], outputs)


_BOTH = (_WEIGHTS, _WEIGHTS)
# bidirectional_sequence_rnn.mod.py (V1_2), its six examples.
_bidirectional("bidirectional_sequence_rnn_blackbox", _X, _BOTH, None, (False, False),
               [_FW, _BW])
_bidirectional("bidirectional_sequence_rnn_blackbox_time_major", _tm(_X), _BOTH, None,
               (True, False), [_tm(_FW), _tm(_BW)])
_bidirectional("bidirectional_sequence_rnn_blackbox_time_major_merge_outputs", _tm(_X), _BOTH,
               None, (True, True), [np.concatenate([_tm(_FW), _tm(_BW)], axis=2)])
_bidirectional("bidirectional_sequence_rnn_blackbox_reversed_inputs", _X[:, ::-1], _BOTH, None,
               (False, False), [_BW[:, ::-1], _FW[:, ::-1]])
_ZERO_W = np.zeros_like(_WEIGHTS)
_bidirectional("bidirectional_sequence_rnn_blackbox_aux_input", np.zeros_like(_X),
               (_ZERO_W, _ZERO_W), (_X, _WEIGHTS, _WEIGHTS), (False, False), [_FW, _BW])
_XL, _XR = np.split(_X, 2, axis=2)
_WL, _WR = np.split(_WEIGHTS, 2, axis=1)
_bidirectional("bidirectional_sequence_rnn_blackbox_regular_and_aux_input", _XL, (_WL, _WL),
               (_XR, _WR, _WR), (False, False), [_FW, _BW])
# bidirectional_sequence_rnn_1_3 (V1_3) "parallel_linking": no auxiliary weights, the
# backward cell reads the auxiliary input (here the input's copy); and
# bidirectional_sequence_rnn_state_output (V1_3): the final hidden states as well.
_bidirectional("bidirectional_sequence_rnn_1_3_parallel_linking", _X, _BOTH, (_X, None, None),
               (False, False), [_FW, _BW])
_bidirectional("bidirectional_sequence_rnn_state_output_blackbox", _X, _BOTH, None,
               (False, False), [_FW, _BW, _FW[:, -1], _BW[:, 0]])

# -- SVDF -----------------------------------------------------------------------------------


def _svdf_state_out(x: Any, features: Any, state_in: Any, memory: int) -> Any:
    """NNAPI's state update: the newest feature activations in the last column, the state
    shifted one column left, a zero last column (independent of the kernel's code)."""
    batch, filters = x.shape[0], features.shape[0]
    rows = np.array(state_in, np.float64).reshape(batch, filters, memory)
    rows[:, :, -1] = np.einsum("fi,bi->bf", features, x)
    shifted = np.concatenate([rows[:, :, 1:], np.zeros((batch, filters, 1))], axis=2)
    return shifted.reshape(batch, filters * memory)


def _svdf(name: str, x: Any, features: Any, time: Any, bias: Any | None, state: Any,
          rank: int, output: Any, state_out: Any | None = None) -> None:
    """A case; the expected state out is computed when the spec ignores it."""
    memory = time.shape[1]
    if state_out is None:
        state_out = _svdf_state_out(x, features, state, memory)
    _case(Op.SVDF, name, [
        _f(x, *x.shape), _f(features, *features.shape), _f(time, *time.shape),
        omitted(F32, (features.shape[0] // rank,)) if bias is None else _f(bias, len(bias)),
        _f(state, *state.shape), i32s(rank), i32s(0)], [state_out, output])


_SVDF_F = _a(d.SVDF_WEIGHTS_FEATURE, 4, 3)
_SVDF_T = _a(d.SVDF_WEIGHTS_TIME, 4, 10)
_SVDF_X = np.tile(_a(d.SVDF_INPUT_STEP0, 1, 3), (2, 1))
_SVDF_ZERO = np.zeros((2, 40))
# svdf.mod.py and svdf_bias_present.mod.py (V1_0): rank 1, the first step; svdf_state.mod.py:
# the second step, from a given state; svdf2.mod.py: rank 2.
_svdf("svdf", _SVDF_X, _SVDF_F, _SVDF_T, None, _SVDF_ZERO, 1,
      np.tile(_a(d.SVDF_OUTPUT_STEP0, 1, 4), (2, 1)))
_svdf("svdf_bias_present", _SVDF_X, _SVDF_F, _SVDF_T, [1.0, 2.0, 3.0, 4.0], _SVDF_ZERO, 1,
      np.tile(_a(d.SVDF_BIAS_OUTPUT_STEP0, 1, 4), (2, 1)))
_svdf("svdf_state", np.tile(_a(d.SVDF_STATE_INPUT, 1, 3), (2, 1)), _SVDF_F, _SVDF_T, None,
      np.tile(_a(d.SVDF_STATE_IN_BATCH, 1, 40), (2, 1)), 1,
      np.tile(_a(d.SVDF_STATE_OUTPUT, 1, 4), (2, 1)),
      state_out=np.tile(_a(d.SVDF_STATE_OUT_BATCH, 1, 40), (2, 1)))
_svdf("svdf2", _a(d.SVDF2_INPUT_STEP0, 2, 3), _a(d.SVDF2_WEIGHTS_FEATURE, 8, 3),
      _a(d.SVDF2_WEIGHTS_TIME, 8, 10), None, np.zeros((2, 80)), 2,
      _a(d.SVDF2_OUTPUT_STEP0, 2, 4))
