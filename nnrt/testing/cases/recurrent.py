"""Conformance cases of nnrt's own for the recurrent operations' edge rules.

Clipping, the activations NNAPI's vectors do not use, CIFG with layer normalisation and
cross-linking, SVDF with an activation and a non-zero state, RNN activations. Weights are
seeded in [-0.6, 0.6); the expected values come from float64 scalar-loop references written
independently of the kernels: :func:`.sequence_lstm.lstm_op_reference` /
:func:`.sequence_lstm.lstm_reference` (a direction's auxiliary input folded in by concatenating
it to the input and its weights to the input weights), and the loops below.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.cases.sequence_lstm import lstm_op_reference, lstm_reference
from nnrt.testing.spec import Arg, OpCase, bools, f32, f32s, i32s, omitted, out

CASES: list[OpCase] = []
F32 = T.TENSOR_FLOAT32


def _rng_tensor(rng: np.random.Generator) -> Callable[..., Arg]:
    def tensor(*shape: int, present: bool = True) -> Arg:
        if not present:
            return omitted(F32, shape)
        return f32(rng.uniform(-0.6, 0.6, shape).astype(np.float32))
    return tensor


def _lstm_cell(t: Callable[..., Arg], units: int, inputs: int, output: int, *, cifg: bool,
               peephole: bool, projection: bool) -> list[Arg]:
    """Inputs 1-17 of an LSTM direction."""
    return [*(t(units, inputs, present=not cifg or k > 0) for k in range(4)),
            *(t(units, output, present=not cifg or k > 0) for k in range(4)),
            t(units, present=peephole and not cifg), t(units, present=peephole),
            t(units, present=peephole), *(t(units, present=not cifg or k > 0) for k in range(4)),
            t(output, units, present=projection), t(output, present=projection)]


# -- LSTM: one step with clipping, relu6 / sigmoid, CIFG with layer normalisation ------------

def _lstm_step_case(name: str, seed: int, *, cifg: bool, layer_norm: bool, activation: int,
                    clips: tuple[float, float], projection: bool) -> None:
    t = _rng_tensor(np.random.default_rng(seed))
    batch, inputs, units = 3, 4, 5
    output = 3 if projection else units
    args = [t(batch, inputs), *_lstm_cell(t, units, inputs, output, cifg=cifg, peephole=True,
                                          projection=projection),
            t(batch, output), t(batch, units), i32s(activation), f32s(clips[0]), f32s(clips[1])]
    if layer_norm:
        args += [t(units, present=not cifg), t(units), t(units), t(units)]

    gates = 3 if cifg else 4
    CASES.append(OpCase(f"lstm_{name}", Op.LSTM, tuple(args), (
        out(F32, (batch, units * gates)), out(F32, (batch, output)), out(F32, (batch, units)),
        out(F32, (batch, output))), reference=lstm_op_reference))


_lstm_step_case("clipped_relu6_projection", 21, cifg=False, layer_norm=False, activation=3,
                clips=(0.25, 0.05), projection=True)
_lstm_step_case("cifg_layer_norm_sigmoid_clipped", 22, cifg=True, layer_norm=True,
                activation=6, clips=(0.3, 0.0), projection=False)


# -- BIDIRECTIONAL_SEQUENCE_LSTM: cross-linking with a CIFG backward cell, merged, batch-major,
#    with the final states -------------------------------------------------------------------

def _fold_aux(args: Sequence[Any], cell: slice, aux: Any, aux_weights: Sequence[Any]) -> list[Any]:
    """A direction's inputs 1-17 with the auxiliary weights appended to the input weights."""
    weights = [None if w is None else np.asarray(w) for w in args[cell]]
    for k in range(4):
        if weights[k] is not None and aux is not None:
            weights[k] = np.concatenate([weights[k], aux_weights[k]], axis=1)
    return weights


def _bidirectional_reference(*a: Any) -> list[Any]:
    x, aux, time_major = a[0], a[39], a[52]
    axis = 0 if time_major else 1
    both = np.concatenate([x, aux], axis=2)
    scalars = [a[48], a[49], a[50], time_major]
    fw = lstm_reference(both, *_fold_aux(a, slice(1, 18), aux, a[40:44]), a[35], a[36],
                        *scalars)
    bw = lstm_reference(np.flip(both, axis), *_fold_aux(a, slice(18, 35), aux, a[44:48]),
                        a[37], a[38], *scalars)
    merged = np.concatenate([fw[0], np.flip(bw[0], axis)], axis=2)
    return [merged, fw[1], fw[2], bw[1], bw[2]]


def _bidirectional_case() -> None:
    t = _rng_tensor(np.random.default_rng(23))
    batch, steps, inputs, aux_size, units = 2, 4, 3, 2, 4
    args = [t(batch, steps, inputs),
            *_lstm_cell(t, units, inputs, 3, cifg=False, peephole=True, projection=True),
            *_lstm_cell(t, units, inputs, units, cifg=True, peephole=False, projection=False),
            t(batch, 3), t(batch, units), t(batch, units), t(batch, units),
            t(batch, steps, aux_size), *(t(units, aux_size) for _ in range(4)),
            t(units, aux_size, present=False), *(t(units, aux_size) for _ in range(3)),
            i32s(4), f32s(0.5), f32s(0.2), bools(True), bools(False),
            *(omitted(F32, (units,)) for _ in range(8))]
    CASES.append(OpCase(
        "bidirectional_sequence_lstm_cross_linking_cifg_merged_batch_major_states",
        Op.BIDIRECTIONAL_SEQUENCE_LSTM, tuple(args),
        (out(F32, (batch, steps, 3 + units)), out(F32, (batch, 3)), out(F32, (batch, units)),
         out(F32, (batch, units)), out(F32, (batch, units))),
        reference=_bidirectional_reference))


_bidirectional_case()


# -- RNN activations; SVDF with an activation and a non-zero state --------------------------

def _act(code: int) -> Callable[[float], float]:
    return {2: lambda v: min(max(v, -1.0), 1.0), 4: math.tanh,
            6: lambda v: 1.0 / (1.0 + math.exp(-v))}[code]


def _rnn_reference(x: Any, w: Any, r: Any, b: Any, h: Any, code: int) -> list[Any]:
    g = _act(code)
    new = [[g(sum(float(w[u][i]) * float(xb[i]) for i in range(len(xb)))
              + sum(float(r[u][k]) * float(hb[k]) for k in range(len(hb))) + float(b[u]))
            for u in range(len(b))] for xb, hb in zip(x, h, strict=True)]
    return [np.array(new), np.array(new)]


for _code, _name in ((2, "relu1"), (4, "tanh"), (6, "sigmoid")):
    _t = _rng_tensor(np.random.default_rng(30 + _code))
    CASES.append(OpCase(f"rnn_{_name}", Op.RNN,
                        (_t(2, 3), _t(5, 3), _t(5, 5), _t(5), _t(2, 5), i32s(_code)),
                        (out(F32, (2, 5)), out(F32, (2, 5))), reference=_rnn_reference))


def _svdf_reference(x: Any, wf: Any, wt: Any, bias: Any, state: Any, rank: int,
                    code: int) -> list[Any]:
    filters, memory = len(wt), len(wt[0])
    state_out, output = [], []
    for xb, sb in zip(x, state, strict=True):
        rows = [[float(v) for v in sb[f * memory:(f + 1) * memory]] for f in range(filters)]
        for f in range(filters):
            rows[f][-1] = sum(float(wf[f][i]) * float(xb[i]) for i in range(len(xb)))
        per_filter = [sum(rows[f][m] * float(wt[f][m]) for m in range(memory))
                      for f in range(filters)]
        units = [sum(per_filter[u * rank:(u + 1) * rank]) + (float(bias[u]) if bias is not None
                                                            else 0.0)
                 for u in range(filters // rank)]
        output.append([_act(code)(v) for v in units])
        state_out.append([v for row in rows for v in (*row[1:], 0.0)])
    return [np.array(state_out), np.array(output)]


_t = _rng_tensor(np.random.default_rng(40))
CASES.append(OpCase("svdf_rank3_tanh_state", Op.SVDF,
                    (_t(2, 3), _t(6, 3), _t(6, 4), _t(2), _t(2, 24), i32s(3), i32s(4)),
                    (out(F32, (2, 24)), out(F32, (2, 2))), reference=_svdf_reference))
