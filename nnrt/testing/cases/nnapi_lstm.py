"""Conformance cases transcribed from NNAPI's published LSTM test specs.

LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM and BIDIRECTIONAL_SEQUENCE_LSTM. The vectors are those of
AOSP's ``runtime/test/specs/<version>/<stem>.mod.py`` files (in :mod:`.nnapi_lstm_data` and
:mod:`.nnapi_lstm3_data`, each named there and in the case name, ``<op>_nnapi_<stem>[_<example>]``). The specs' float16 files
(``lstm_float16``, ``lstm3_float16``, ...) repeat the float32 vectors, and their "relaxed" /
"float16" variations are nnrt's automatic variants.

An optional input the spec declares with zero dims and feeds no data is a zero-size model input
here (NNAPI's way of omitting it, which the kernels must accept); one declared with real dims
and no data is omitted (NO_VALUE). Outputs a spec ignores get :mod:`.sequence_lstm`'s
independent float64 reference: LSTM's scratch buffer (nnrt's documented gate layout), the
backward output of ``bidirectional_sequence_lstm_norm_fw_output``, the cell states of the
V1_3 state outputs and those ``lstm2_state2`` / ``lstm3_state3`` ignore. Cases whose stem names a V1_2 / V1_3 spec not stored in the mirrors used
(batch-major, merged, auxiliary, parallel-linking and state-output examples) are derived from
the transcribed vectors by the transformations those specs apply (transposition,
concatenation, zero weights plus an auxiliary copy), as their comments say.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.cases import nnapi_lstm3_data as d3
from nnrt.testing.cases import nnapi_lstm_data as d
from nnrt.testing.cases.sequence_lstm import lstm_op_reference, lstm_reference
from nnrt.testing.spec import Arg, OpCase, bools, f32, f32s, i32s, omitted, out

CASES: list[OpCase] = []
F32 = T.TENSOR_FLOAT32


def _f(values: Sequence[Any], *dims: int) -> Arg:
    return f32(np.asarray(values, np.float32).reshape(dims))


def _empty(*dims: int) -> Arg:
    """An optional input NNAPI's spec omits: declared ``dims``, no data. Zero dims give a
    zero-size model input, real dims an omitted operand."""
    if all(d == 0 for d in dims):
        return f32(np.zeros(dims, np.float32), role="input")
    return omitted(F32, dims)


def _absent(arg: Any) -> Any:
    """A reference argument, None when the case omits it or gives it empty."""
    return None if arg is None or np.size(arg) == 0 else arg


def _literal(values: Sequence[Any], *dims: int) -> Any:
    return np.asarray(values, np.float64).reshape(dims)


# -- LSTM -----------------------------------------------------------------------------------

def _lstm(name: str, inputs: Sequence[Arg], units: int, outputs: Sequence[Any]) -> None:
    """An LSTM case: literal output state, cell state and output; the reference scratch, and
    the reference cell state where the spec ignores it (``outputs[1]`` None)."""
    h_out, result = (np.asarray(o, np.float64) for o in (outputs[0], outputs[2]))
    c_out = None if outputs[1] is None else np.asarray(outputs[1], np.float64)
    batch = h_out.shape[0]
    cifg = inputs[1].omitted or np.size(inputs[1].value) == 0
    shapes = [(batch, units * (3 if cifg else 4)), h_out.shape, (batch, units), result.shape]

    def reference(*args: Any) -> list[Any]:
        computed = lstm_op_reference(*args)
        return [computed[0], h_out, computed[2] if c_out is None else c_out, result]

    CASES.append(OpCase(f"lstm_nnapi_{name}", Op.LSTM, tuple(inputs),
                        tuple(out(F32, s) for s in shapes), reference=reference))


def _scalars(*, clips: tuple[float, float] = (0.0, 0.0)) -> list[Arg]:
    return [i32s(4), f32s(clips[0]), f32s(clips[1])]


def _lstm1_weights() -> list[Arg]:
    """lstm.mod.py's inputs 1-17: 1 batch, 2 inputs, 4 cells; no peephole or projection."""
    return [_f(d.LSTM1_I2I, 4, 2), _f(d.LSTM1_I2F, 4, 2), _f(d.LSTM1_I2C, 4, 2),
            _f(d.LSTM1_I2O, 4, 2), _f(d.LSTM1_R2I, 4, 4), _f(d.LSTM1_R2F, 4, 4),
            _f(d.LSTM1_R2C, 4, 4), _f(d.LSTM1_R2O, 4, 4), _empty(0), _empty(0), _empty(0),
            _f([0.0] * 4, 4), _f([1.0] * 4, 4), _f([0.0] * 4, 4), _f([0.0] * 4, 4),
            _empty(0, 0), _empty(0)]


# lstm.mod.py and lstm_state.mod.py (V1_0): no CIFG, peephole, projection or clipping.
for _stem, _ex in (("lstm", d.LSTM1_EX), ("lstm_state", d.LSTM1_STATE_EX)):
    _lstm(_stem, [_f(_ex["input"], 1, 2), *_lstm1_weights(), _f(_ex["h"], 1, 4),
                  _f(_ex["c"], 1, 4), *_scalars()], 4,
          [_literal(_ex["h_out"], 1, 4), _literal(_ex["c_out"], 1, 4), _literal(_ex["out"], 1, 4)])

def _lstm2_inputs(x: Sequence[float], h: Sequence[float], c: Sequence[float]) -> list[Arg]:
    """lstm2.mod.py's LSTM (CIFG, peepholes) on input ``x`` and states ``h``, ``c``."""
    return [
        _f(x, 1, 2), _empty(4, 2), _f(d.LSTM2_I2F, 4, 2), _f(d.LSTM2_I2C, 4, 2),
        _f(d.LSTM2_I2O, 4, 2), _empty(4, 4), _f(d.LSTM2_R2F, 4, 4), _f(d.LSTM2_R2C, 4, 4),
        _f(d.LSTM2_R2O, 4, 4), _empty(0), _f(d.LSTM2_C2F, 4), _f(d.LSTM2_C2O, 4), _empty(4),
        _f([1.0] * 4, 4), _f([0.0] * 4, 4), _f([0.0] * 4, 4), _empty(0, 0), _empty(0),
        _f(h, 1, 4), _f(c, 1, 4), *_scalars()]


# lstm2.mod.py (V1_0): CIFG and peepholes, from zero states; lstm2_state.mod.py and
# lstm2_state2.mod.py (V1_0, via ONE): the next two steps from the previous outputs (the
# second ignores its state outputs: the output state is the output, the cell state the
# reference's).
_lstm("lstm2", _lstm2_inputs(d.LSTM2_EX["input"], [0.0] * 4, [0.0] * 4), 4,
      [_literal(d.LSTM2_EX["h_out"], 1, 4), _literal(d.LSTM2_EX["c_out"], 1, 4),
       _literal(d.LSTM2_EX["out"], 1, 4)])
_LSTM2_STATE_H = [-0.423122, -0.0121822, 0.24201, -0.0812458]
_LSTM2_STATE_C = [-0.978419, -0.139203, 0.338163, -0.0983904]
_lstm("lstm2_state", _lstm2_inputs([3.0, 4.0], d.LSTM2_EX["h_out"], d.LSTM2_EX["c_out"]), 4,
      [_literal(_LSTM2_STATE_H, 1, 4), _literal(_LSTM2_STATE_C, 1, 4),
       _literal([-0.42312205, -0.01218222, 0.24201041, -0.08124574], 1, 4)])
_LSTM2_STATE2_OUT = [-0.358325, -0.04621704, 0.21641694, -0.06471302]
_lstm("lstm2_state2", _lstm2_inputs([1.0, 1.0], _LSTM2_STATE_H, _LSTM2_STATE_C), 4,
      [_literal(_LSTM2_STATE2_OUT, 1, 4), None, _literal(_LSTM2_STATE2_OUT, 1, 4)])


def _lstm3_inputs(x: Sequence[float], h: Sequence[float], c: Sequence[float]) -> list[Arg]:
    """lstm3.mod.py's LSTM (peepholes, projection) on input ``x`` and states ``h``, ``c``."""
    return [
        _f(x, 2, 5), _f(d3.LSTM3_INPUT_TO_INPUT, 20, 5),
        _f(d3.LSTM3_INPUT_TO_FORGET, 20, 5), _f(d3.LSTM3_INPUT_TO_CELL, 20, 5),
        _f(d3.LSTM3_INPUT_TO_OUTPUT, 20, 5), _f(d3.LSTM3_RECURRENT_TO_INPUT, 20, 16),
        _f(d3.LSTM3_RECURRENT_TO_FORGET, 20, 16), _f(d3.LSTM3_RECURRENT_TO_CELL, 20, 16),
        _f(d3.LSTM3_RECURRENT_TO_OUTPUT, 20, 16), _f(d3.LSTM3_CELL_TO_INPUT, 20),
        _f(d3.LSTM3_CELL_TO_FORGET, 20), _f(d3.LSTM3_CELL_TO_OUTPUT, 20),
        _f(d3.LSTM3_INPUT_GATE_BIAS, 20), _f(d3.LSTM3_FORGET_GATE_BIAS, 20),
        _f(d3.LSTM3_CELL_GATE_BIAS, 20), _f(d3.LSTM3_OUTPUT_GATE_BIAS, 20),
        _f(d3.LSTM3_PROJECTION, 16, 20), _empty(0), _f(h, 2, 16), _f(c, 2, 20), *_scalars()]


# lstm3.mod.py (V1_0): peepholes and projection, 2 batches, 20 cells, 16 outputs, from zero
# states; lstm3_state3.mod.py (V1_0, via ONE): a later step from given states (its state
# outputs ignored: the output state is the output, the cell state the reference's).
_lstm("lstm3", _lstm3_inputs(d3.LSTM3_INPUT, [0.0] * 32, [0.0] * 40), 20,
      [_literal(d3.LSTM3_OUTPUT_STATE_OUT, 2, 16), _literal(d3.LSTM3_CELL_STATE_OUT, 2, 20),
       _literal(d3.LSTM3_OUTPUT, 2, 16)])
_LSTM3_STATE3_OUT = [
    -0.0189322, 0.0464512, -0.00251373, 0.0225745, -0.0308346, -0.0317124, 0.0460407,
    -0.0189395, 0.0149363, -0.0530162, -0.0150767, -0.0340193, 0.0286833, 0.00824207,
    0.0264887, 0.0305169, -0.0264787, 0.0387855, -0.000764675, 0.0217599, -0.037537,
    -0.0335206, 0.0431679, -0.0211424, 0.010203, -0.062785, -0.00832363, -0.025181, 0.0412031,
    0.0118723, 0.0239643, 0.0394009]
_lstm("lstm3_state3", _lstm3_inputs(
    [0.867394, 0.291279, 0.013714, 0.482521, 0.626339, 0.082922, 0.563329, 0.865614, 0.333232,
     0.259916],
    [-0.0213783, 0.0350169, 0.000324787, 0.0276012, -0.0263374, -0.0371449, 0.0446149,
     -0.0205474, 0.0103729, -0.0576349, -0.0150052, -0.0292043, 0.0376827, 0.0136115,
     0.0243435, 0.0354492, -0.0204549, 0.0450315, -0.00117379, 0.0167673, -0.0375007,
     -0.0238314, 0.038784, -0.0174034, 0.0131743, -0.0506589, -0.00484469, -0.0240239,
     0.0325789, 0.00790064, 0.0220157, 0.0333314],
    [-0.126572, -0.121882, 0.121569, 0.0489971, -0.240177, -0.124685, -0.122565, 0.0162748,
     0.0317536, -0.0270355, 0.0418199, -0.179755, -0.327279, -0.0342741, 0.133831,
     -0.0238279, 0.122148, 0.269115, 0.185989, 0.525976, -0.167208, -0.109612, 0.0531226,
     0.0695387, -0.248335, -0.134123, -0.108246, 0.00628498, 0.0492984, -0.0264919,
     0.0698144, -0.0635602, -0.295363, -0.0760078, 0.102725, -0.0351708, 0.149804, 0.259131,
     0.202573, 0.500664]), 20,
    [_literal(_LSTM3_STATE3_OUT, 2, 16), None, _literal(_LSTM3_STATE3_OUT, 2, 16)])


def _ln_weights(*, cifg: bool) -> list[Arg]:
    """layer_norm_lstm.mod.py's inputs 1-17: 5 inputs, 4 cells, 3 outputs, peepholes,
    projection without bias (the CIFG model omits the input gate's tensors)."""
    gate = (lambda arg, *dims: _empty(*dims)) if cifg else (lambda arg, *dims: arg)
    return [gate(_f(d.LN_I2I, 4, 5), 0, 0), _f(d.LN_I2F, 4, 5), _f(d.LN_I2C, 4, 5),
            _f(d.LN_I2O, 4, 5), gate(_f(d.LN_R2I, 4, 3), 0, 0), _f(d.LN_R2F, 4, 3),
            _f(d.LN_R2C, 4, 3), _f(d.LN_R2O, 4, 3), gate(_f(d.LN_C2I, 4), 0),
            _f(d.LN_C2F, 4), _f(d.LN_C2O, 4), gate(_f(d.LN_BI, 4), 0), _f(d.LN_BF, 4),
            _f(d.LN_BC, 4), _f(d.LN_BO, 4), _f(d.LN_PROJ, 3, 4), _empty(0)]


def _ln_norms(*, cifg: bool) -> list[Arg]:
    return [_empty(0) if cifg else _f(d.LN_NI, 4), _f(d.LN_NF, 4), _f(d.LN_NC, 4),
            _f(d.LN_NO, 4)]


# layer_norm_lstm.mod.py (V1_2): LSTM with layer normalisation, without and with CIFG; three
# examples each, every one a step from the previous one's golden states.
for _cifg, _cells, _outs in ((False, d.LN_CELL, d.LN_OUT), (True, d.LN_CIFG_CELL, d.LN_CIFG_OUT)):
    for _k in range(3):
        _h0 = _outs[_k - 1] if _k else [0.0] * 6
        _c0 = _cells[_k - 1] if _k else [0.0] * 8
        _lstm(f"layer_norm_lstm{'_cifg' if _cifg else ''}_{_k}", [
            _f(d.LN_INPUTS[_k], 2, 5), *_ln_weights(cifg=_cifg), _f(_h0, 2, 3), _f(_c0, 2, 4),
            *_scalars(), *_ln_norms(cifg=_cifg)], 4,
            [_literal(_outs[_k], 2, 3), _literal(_cells[_k], 2, 4), _literal(_outs[_k], 2, 3)])


# -- UNIDIRECTIONAL_SEQUENCE_LSTM ------------------------------------------------------------

def _sequence(name: str, inputs: Sequence[Arg], outputs: Sequence[Any]) -> None:
    CASES.append(OpCase(f"unidirectional_sequence_lstm_nnapi_{name}",
                        Op.UNIDIRECTIONAL_SEQUENCE_LSTM, tuple(inputs),
                        tuple(out(F32, np.shape(o), np.asarray(o)) for o in outputs)))


_LN_CIFG_SEQ = np.asarray(d.LN_CIFG_OUT, np.float64).reshape(3, 2, 3)
_LN_CIFG_ARGS = [_f(d.LN_INPUTS, 3, 2, 5), *_ln_weights(cifg=True), _f([0.0] * 6, 2, 3),
                 _f([0.0] * 8, 2, 4), *_scalars(), bools(True), *_ln_norms(cifg=True)]
# unidirectional_sequence_lstm_layer_norm_cifg_peephole.mod.py (V1_2): the omitted input-gate
# tensors are zero-size model inputs, as in the spec.
_sequence("unidirectional_sequence_lstm_layer_norm_cifg_peephole", _LN_CIFG_ARGS,
          [_LN_CIFG_SEQ])
# ..._state_output (V1_3): the same model with the final states; they are the last step's of
# layer_norm_lstm.mod.py's CIFG examples (the same cell).
_sequence("unidirectional_sequence_lstm_layer_norm_cifg_peephole_state_output", _LN_CIFG_ARGS,
          [_LN_CIFG_SEQ, _LN_CIFG_SEQ[-1], _literal(d.LN_CIFG_CELL[2], 2, 4)])
# unidirectional_sequence_lstm_cifg_peephole.mod.py (V1_2): lstm2's cell over 3 steps.
_sequence("unidirectional_sequence_lstm_cifg_peephole", [
    _f(d.USLSTM_CIFG_INPUT, 3, 1, 2), _empty(0, 0), _f(d.LSTM2_I2F, 4, 2),
    _f(d.LSTM2_I2C, 4, 2), _f(d.LSTM2_I2O, 4, 2), _empty(0, 0), _f(d.LSTM2_R2F, 4, 4),
    _f(d.LSTM2_R2C, 4, 4), _f(d.LSTM2_R2O, 4, 4), _empty(0), _f(d.LSTM2_C2F, 4),
    _f(d.LSTM2_C2O, 4), _empty(0), _f([1.0] * 4, 4), _f([0.0] * 4, 4), _f([0.0] * 4, 4),
    _empty(0, 0), _empty(0), _f([0.0] * 4, 1, 4), _f([0.0] * 4, 1, 4), *_scalars(),
    bools(True), _empty(4), _empty(4), _empty(4), _empty(4)],
    [_literal(d.USLSTM_CIFG_OUTPUT, 3, 1, 4)])
# unidirectional_sequence_lstm_batch_major_norm_peephole_projection (V1_2): layer_norm_lstm's
# non-CIFG cell, batch-major: its golden outputs transposed.
_sequence("unidirectional_sequence_lstm_batch_major_norm_peephole_projection", [
    f32(np.asarray(d.LN_INPUTS, np.float32).reshape(3, 2, 5).transpose(1, 0, 2)),
    *_ln_weights(cifg=False), _f([0.0] * 6, 2, 3), _f([0.0] * 8, 2, 4), *_scalars(),
    bools(False), *_ln_norms(cifg=False)],
    [_literal(d.LN_OUT, 3, 2, 3).transpose(1, 0, 2)])


# -- BIDIRECTIONAL_SEQUENCE_LSTM ------------------------------------------------------------

def _bidirectional(name: str, cells: tuple[list[Arg], list[Arg]], states: list[Arg],
                   x: Arg, aux: tuple[Arg, list[Arg]] | None, norms: list[Arg] | None,
                   flags: tuple[bool, bool], outputs: Sequence[Any] | None = None,
                   reference: Callable[..., list[Any]] | None = None,
                   shapes: Sequence[tuple[int, ...]] = ()) -> None:
    """A case from each direction's inputs 1-17, the four states, the input, the auxiliary
    input and its eight weights (or none), the eight layer-normalisation weights (or none)
    and ``(merge_outputs, time_major)``; literal ``outputs`` or a ``reference``."""
    aux_input, aux_weights = aux if aux else (omitted(F32), [omitted(F32)] * 8)
    inputs = [x, *cells[0], *cells[1], *states, aux_input, *aux_weights, i32s(4), f32s(0.0),
              f32s(0.0), bools(flags[0]), bools(flags[1]), *(norms or [omitted(F32)] * 8)]
    if outputs is not None:
        outs = tuple(out(F32, np.shape(o), np.asarray(o)) for o in outputs)
    else:
        outs = tuple(out(F32, s) for s in shapes)
    CASES.append(OpCase(f"bidirectional_sequence_lstm_nnapi_{name}",
                        Op.BIDIRECTIONAL_SEQUENCE_LSTM, tuple(inputs), outs, reference=reference))


def _bilstm_cell() -> list[Arg]:
    """bidirectional_sequence_lstm.mod.py's cell (each direction): lstm.mod.py's weights,
    peepholes and projection declared with real dims and omitted."""
    cell = _lstm1_weights()
    cell[8:11] = [_empty(4)] * 3
    cell[15:17] = [_empty(4, 4), _empty(4)]
    return cell


_BI_X = _literal(d.BILSTM_INPUT, 3, 1, 2)
_BI_FW = _literal(d.BILSTM_FW_OUTPUT, 3, 1, 4)
_BI_BW = _literal(d.BILSTM_BW_OUTPUT, 3, 1, 4)
_BI_STATES = [_f([0.0] * 4, 1, 4)] * 4
_BI_CELLS = (_bilstm_cell(), _bilstm_cell())
# bidirectional_sequence_lstm.mod.py (V1_2): "blackbox", time-major, separate outputs.
_bidirectional("bidirectional_sequence_lstm", _BI_CELLS, _BI_STATES, f32(_BI_X), None, None,
               (False, True), [_BI_FW, _BI_BW])
# bidirectional_sequence_lstm_merge_outputs (V1_2): both directions on the last axis.
_bidirectional("bidirectional_sequence_lstm_merge_outputs", _BI_CELLS, _BI_STATES, f32(_BI_X),
               None, None, (True, True), [np.concatenate([_BI_FW, _BI_BW], axis=-1)])
# bidirectional_sequence_lstm_float16_batch_major (V1_2): the same, batch-major.
_bidirectional("bidirectional_sequence_lstm_batch_major", _BI_CELLS, _BI_STATES,
               f32(_BI_X.transpose(1, 0, 2)), None, None, (False, False),
               [_BI_FW.transpose(1, 0, 2), _BI_BW.transpose(1, 0, 2)])


def _zero_cell() -> list[Arg]:
    cell = _bilstm_cell()
    cell[:4] = [_f([0.0] * 8, 4, 2)] * 4
    return cell


# bidirectional_sequence_lstm_aux_input (V1_2): cross-linking; the input and its weights are
# zeros, the auxiliary input carries the data through the auxiliary weights.
_bidirectional("bidirectional_sequence_lstm_aux_input", (_zero_cell(), _zero_cell()),
               _BI_STATES, f32(np.zeros((3, 1, 2), np.float32)),
               (f32(_BI_X), [*_lstm1_weights()[:4]] * 2), None, (False, True), [_BI_FW, _BI_BW])
# bidirectional_sequence_lstm parallel_linking (V1_3): no auxiliary weights; the backward cell
# reads the auxiliary input (a copy of the input).
_bidirectional("bidirectional_sequence_lstm_parallel_linking", _BI_CELLS, _BI_STATES,
               f32(_BI_X), (f32(_BI_X), [_empty(0, 0)] * 8), None, (False, True),
               [_BI_FW, _BI_BW])


def _with_cell_states(fw: Any, bw: Any) -> Callable[..., list[Any]]:
    """Literal sequences and output states; the cell states from the reference (the V1_2
    vectors do not give them)."""

    def reference(*args: Any) -> list[Any]:
        fw_args, bw_args = _direction_args(args, 0), _direction_args(args, 1)
        _, _, fw_c = lstm_reference(*fw_args)
        _, _, bw_c = lstm_reference(*_reversed(bw_args))
        return [fw, bw, fw[-1], fw_c, bw[0], bw_c]

    return reference


def _direction_args(args: Sequence[Any], k: int) -> list[Any]:
    """UNIDIRECTIONAL_SEQUENCE_LSTM's arguments for direction ``k`` of a bidirectional case."""
    cell = [_absent(a) for a in args[1 + 17 * k:18 + 17 * k]]
    norms = [_absent(a) for a in args[53 + 4 * k:57 + 4 * k]]
    return [args[0], *cell, args[35 + 2 * k], args[36 + 2 * k], args[48], args[49], args[50],
            args[52], *norms]


def _reversed(args: list[Any]) -> list[Any]:
    axis = 0 if args[23] else 1
    return [np.flip(args[0], axis), *args[1:]]


# bidirectional_sequence_lstm_state_output (V1_3): the four final states as well.
_bidirectional("bidirectional_sequence_lstm_state_output", _BI_CELLS, _BI_STATES, f32(_BI_X),
               None, None, (False, True), reference=_with_cell_states(_BI_FW, _BI_BW),
               shapes=[(3, 1, 4), (3, 1, 4), (1, 4), (1, 4), (1, 4), (1, 4)])


def _backward_by_reference(fw: Any) -> Callable[..., list[Any]]:
    def reference(*args: Any) -> list[Any]:
        bw, _, _ = lstm_reference(*_reversed(_direction_args(args, 1)))
        return [fw, np.flip(bw, 0)]

    return reference


# bidirectional_sequence_lstm_norm_fw_output.mod.py (V1_2): layer normalisation, peepholes,
# projection; the spec checks the forward output, the backward one is the reference's.
_NORM_FW = _literal(d.BILSTM_NORM_FW_OUTPUT, 3, 2, 3)
_bidirectional("bidirectional_sequence_lstm_norm_fw_output",
               (_ln_weights(cifg=False), _ln_weights(cifg=False)),
               [_f([0.0] * 6, 2, 3), _f([0.0] * 8, 2, 4)] * 2,
               _f(d.BILSTM_NORM_INPUT, 3, 2, 5), None, _ln_norms(cifg=False) * 2,
               (False, True), reference=_backward_by_reference(_NORM_FW),
               shapes=[(3, 2, 3), (3, 2, 3)])
