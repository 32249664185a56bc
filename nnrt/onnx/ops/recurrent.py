"""LSTM: NNAPI UNIDIRECTIONAL_SEQUENCE_LSTM, once per direction.

ONNX stacks the gates of ``W [dirs, 4H, I]``, ``R [dirs, 4H, H]`` and ``B [dirs, 8H]`` in the
order input, output, forget, cell (``B`` is the input biases then the recurrent ones; NNAPI
takes their sum) and the peepholes ``P [dirs, 3H]`` as input, output, forget: known weights
are split and reordered at import, runtime ones with SLICE and RESHAPE. NNAPI applies one
activation ``g`` to both the cell candidate and the output, so ``activations`` must be Sigmoid
for the gates and the same Tanh, Relu or Sigmoid for ``g`` and ``h`` (the default is Sigmoid,
Tanh, Tanh). ONNX's ``clip`` bounds the gates' pre-activations, NNAPI's ``cell_clip`` the cell
state: a node with ``clip`` is unsupported, as are ``input_forget`` and ``sequence_lens`` other
than the full length.

A reverse direction runs on the input reversed along time (REVERSE) and reverses its output
back; bidirectional runs both and concatenates along the direction axis. ``layout = 1`` (batch
first) uses NNAPI's batch-major mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from nnrt.model.builder import Omitted
from nnrt.model.types import OperationType as Op
from nnrt.onnx.dtypes import operand_type_for
from nnrt.onnx.graph import Value
from nnrt.onnx.node import NodeContext, converter
from nnrt.onnx.ops.elementwise import binary

Array = np.ndarray[Any, Any]

X, W, R, B, SEQUENCE_LENS, INITIAL_H, INITIAL_C, P = range(8)

#: ONNX's gate blocks (i, o, f, c) in NNAPI's argument order (input, forget, cell, output).
_GATES = (0, 2, 3, 1)
#: ONNX's peephole blocks (i, o, f) in NNAPI's order (input, forget, output).
_PEEPHOLES = (0, 2, 1)
#: The activations NNAPI's ``g`` can be, by their ONNX name, with NNAPI's activation code.
_G_CODES = {"tanh": 4, "relu": 1, "sigmoid": 6}
_DIRECTIONS = {"forward": 1, "reverse": 1, "bidirectional": 2}


@converter("LSTM")
def lstm(n: NodeContext) -> list[Value]:
    """LSTM (opsets 7, 14): outputs Y, Y_h, Y_c."""
    x = n.input(X)
    direction = str(n.attr("direction", "forward"))
    if direction not in _DIRECTIONS:
        n.fail(f"unknown direction {direction!r}")
    dirs = _DIRECTIONS[direction]
    layout = int(n.attr("layout", 0))
    if layout not in (0, 1):
        n.fail(f"layout must be 0 or 1, got {layout}")
    _check_unsupported(n)
    codes = _activation_codes(n, dirs)
    if x.dtype not in (np.float32, np.float16):
        n.fail(f"input X has type {x.dtype}; NNAPI's LSTM takes float32 or float16")
    if x.rank != 3:
        n.fail(f"input X must have rank 3, got {x.rank}")
    shape = x.shape
    seq, batch, input_size = shape if layout == 0 else (shape[1], shape[0], shape[2])
    if not (seq and input_size):  # the batch alone may be unknown (0): a dynamic batch
        n.static_shape(x, "input X")
    hidden = int(n.attr("hidden_size", n.input(R).shape[-1]))
    _check_sequence_lens(n, seq, batch)
    lstm_shape = _LstmShape(dirs, batch, hidden, layout)
    w = _input(n, W, "W", (dirs, 4 * hidden, input_size), x.dtype)
    r = _input(n, R, "R", (dirs, 4 * hidden, hidden), x.dtype)
    b = _input(n, B, "B", (dirs, 8 * hidden), x.dtype) if n.has_input(B) else None
    p = _input(n, P, "P", (dirs, 3 * hidden), x.dtype) if n.has_input(P) else None
    outputs = []
    for d in range(dirs):
        reverse = direction == "reverse" or d == 1
        args = _weights(n, d, hidden, (w, r, b, p), x.dtype)
        states = [_state(n, i, d, lstm_shape, x.dtype) for i in (INITIAL_H, INITIAL_C)]
        outputs.append(_run(n, x, args, states, codes[d], layout, reverse))
    return _assemble(n, outputs, layout, (seq, batch, hidden))


@dataclass(frozen=True)
class _LstmShape:
    """The sizes a state's layout depends on."""

    dirs: int
    batch: int
    hidden: int
    layout: int


def _check_unsupported(n: NodeContext) -> None:
    if n.attr("clip") is not None:
        n.fail("clip is not supported: ONNX clips the gates' pre-activations, NNAPI's "
               "cell_clip the cell state")
    if int(n.attr("input_forget", 0)):
        n.fail("input_forget = 1 (coupled input and forget gates) is not supported")


def _activation_codes(n: NodeContext, dirs: int) -> list[int]:
    """NNAPI's activation code ``g`` of each direction."""
    if n.attr("activation_alpha") or n.attr("activation_beta"):
        n.fail("activation_alpha / activation_beta are not supported")
    names = [str(a) for a in n.attr("activations", ["Sigmoid", "Tanh", "Tanh"] * dirs)]
    if len(names) != 3 * dirs:
        n.fail(f"expected {3 * dirs} activations (3 per direction), got {len(names)}")
    codes = []
    for d in range(dirs):
        f, g, h = (a.lower() for a in names[3 * d:3 * d + 3])
        if f != "sigmoid" or g != h or g not in _G_CODES:
            n.fail(f"activations {names[3 * d:3 * d + 3]} are not supported: NNAPI's LSTM "
                   "needs Sigmoid for the gates and one of Tanh, Relu, Sigmoid for both the "
                   "cell and the output")
        codes.append(_G_CODES[g])
    return codes


def _check_sequence_lens(n: NodeContext, seq: int, batch: int) -> None:
    if not n.has_input(SEQUENCE_LENS):
        return
    lens = n.const_input(SEQUENCE_LENS, "sequence_lens")
    if (batch and lens.shape != (batch,)) or lens.ndim != 1 or not (lens == seq).all():
        n.fail(f"sequence_lens {lens.tolist()} is not supported: only the full length {seq} "
               "for every batch entry")


def _input(n: NodeContext, i: int, what: str, shape: tuple[int, ...], dtype: Any) -> Value:
    """Weight input ``i`` (W, R, B or P), checked against ``shape`` and X's type."""
    value = n.input(i)
    if value.shape != shape:
        n.fail(f"{what} has shape {list(value.shape)}, expected {list(shape)}")
    if value.const is not None:
        return _const(value.const.astype(dtype))
    if value.dtype != dtype:
        n.fail(f"{what} has type {value.dtype}, X {np.dtype(dtype)}")
    return value


def _block(n: NodeContext, v: Value, d: int, k: int, rows: int) -> Value:
    """Rows ``k * rows ..`` of direction ``d`` of ``v`` (``[dirs, N, ...]``), without the
    direction axis."""
    if v.const is not None:
        return _const(v.const[d, k * rows:(k + 1) * rows])
    rest = list(v.shape[2:])
    g = n.graph
    part = g.op(Op.SLICE, v, np.asarray([d, k * rows] + [0] * len(rest), np.int32),
                np.asarray([1, rows, *rest], np.int32))
    return g.op(Op.RESHAPE, part, np.asarray([rows, *rest], np.int32))


def _weights(n: NodeContext, d: int, hidden: int,
             values: tuple[Value, Value, Value | None, Value | None], dtype: Any
             ) -> list[Value | Omitted]:
    """Inputs 1..17 of UNIDIRECTIONAL_SEQUENCE_LSTM for direction ``d``."""
    w, r, b, p = values
    omitted = Omitted(operand_type_for(np.dtype(dtype)))
    if b is None:
        biases: list[Value | Omitted] = [_const(np.zeros(hidden, dtype))] * 4
    else:  # ONNX adds the input and the recurrent biases, NNAPI takes their sum
        biases = [binary(n, Op.ADD, _block(n, b, d, k, hidden), _block(n, b, d, k + 4, hidden))
                  for k in _GATES]
    peepholes: list[Value | Omitted] = [omitted] * 3 if p is None else [
        _block(n, p, d, k, hidden) for k in _PEEPHOLES]
    return [*(_block(n, w, d, k, hidden) for k in _GATES),
            *(_block(n, r, d, k, hidden) for k in _GATES),
            *peepholes, *biases, omitted, omitted]


def _const(array: Array) -> Value:
    return Value("", array.dtype, array.shape, const=np.ascontiguousarray(array))


def _state(n: NodeContext, i: int, d: int, sizes: _LstmShape, dtype: Any) -> Value:
    """Initial state ``i`` of direction ``d`` as NNAPI's ``[batch, hidden]`` (zeros if
    absent)."""
    batch, hidden = sizes.batch, sizes.hidden
    if not n.has_input(i):
        if not batch:
            n.fail("initial_h and initial_c are needed when the batch is unknown (zeros of "
                   "an unknown batch cannot be made at import)")
        return _const(np.zeros((batch, hidden), dtype))
    state = n.input(i)
    what = "initial_h" if i == INITIAL_H else "initial_c"
    layer_first = sizes.layout == 0
    expected = (sizes.dirs, batch, hidden) if layer_first else (batch, sizes.dirs, hidden)
    if state.shape != expected:
        n.fail(f"{what} has shape {list(state.shape)}, expected {list(expected)}")
    if state.const is not None:
        part = state.const[d] if layer_first else state.const[:, d]
        return _const(part.astype(dtype))
    if state.dtype != dtype:
        n.fail(f"{what} has type {state.dtype}, X {np.dtype(dtype)}")
    g = n.graph
    rows = batch or -1  # an unknown batch: SLICE to the end, RESHAPE infers it
    if sizes.dirs == 2:
        begin = [d, 0, 0] if layer_first else [0, d, 0]
        size = [1, rows, hidden] if layer_first else [rows, 1, hidden]
        state = g.op(Op.SLICE, state, np.asarray(begin, np.int32), np.asarray(size, np.int32))
    return g.op(Op.RESHAPE, state, np.asarray([rows, hidden], np.int32))


def _run(n: NodeContext, x: Value, weights: list[Value | Omitted], states: list[Value],
         code: int, layout: int, reverse: bool) -> list[Value]:
    """One UNIDIRECTIONAL_SEQUENCE_LSTM: [output, h, c] (the output in X's layout, 3-D)."""
    g = n.graph
    time_axis = np.asarray([layout], np.int32)  # time is axis 0 (layout 0) or 1 (layout 1)
    if reverse:
        x = g.op(Op.REVERSE, x, time_axis)
    out, h, c = g.ops(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, x, *weights, *states, code, 0.0, 0.0,
                      layout == 0, outputs=3)
    if reverse:
        out = g.op(Op.REVERSE, out, time_axis)
    return [out, h, c]


def _assemble(n: NodeContext, outputs: list[list[Value]], layout: int,
              sizes: tuple[int, int, int]) -> list[Value]:
    """Y ``[seq, dirs, batch, H]`` (layout 1: ``[batch, seq, dirs, H]``), Y_h, Y_c
    ``[dirs, batch, H]`` (layout 1: ``[batch, dirs, H]``)."""
    g = n.graph
    seq, batch, hidden = sizes
    batch = batch or -1  # unknown: RESHAPE infers it
    y_shape = [seq, 1, batch, hidden] if layout == 0 else [batch, seq, 1, hidden]
    state_shape = [1, batch, hidden] if layout == 0 else [batch, 1, hidden]
    y_axis, state_axis = (1, 0) if layout == 0 else (2, 1)
    wanted = list(n.node.output)
    result = []
    for k, (shape, axis) in enumerate(((y_shape, y_axis), (state_shape, state_axis),
                                       (state_shape, state_axis))):
        if k >= len(wanted) or not wanted[k]:
            result.append(outputs[0][k])  # not asked for: never reaches the model
            continue
        parts = [g.op(Op.RESHAPE, out[k], np.asarray(shape, np.int32)) for out in outputs]
        result.append(parts[0] if len(parts) == 1 else g.op(Op.CONCATENATION, *parts, axis))
    return result
