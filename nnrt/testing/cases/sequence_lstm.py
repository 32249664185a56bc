"""Conformance cases for UNIDIRECTIONAL_SEQUENCE_LSTM.

The expected outputs come from NNAPI's published layer-normalisation example and, for the other
cases, from a float64 reference written here with scalar loops over batches and units,
independently of the kernels (nnrt/ops/lstm_cell.py). The other LSTM case files use it too:
:func:`lstm_step_reference` (one step), :func:`lstm_reference` (a sequence) and
:func:`lstm_op_reference` (LSTM's outputs, its scratch buffer included).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import Arg, OpCase, bools, f32, f32s, i32s, omitted, out

CASES: list[OpCase] = []

Vector = list[float]


def _sigmoid(v: float) -> float:
    return 1.0 / (1.0 + math.exp(-v))


ACTIVATIONS: dict[int, Callable[[float], float]] = {
    0: lambda v: v,
    1: lambda v: max(v, 0.0),
    3: lambda v: min(max(v, 0.0), 6.0),
    4: math.tanh,
    6: _sigmoid,
}


def _clip(values: Vector, bound: float) -> Vector:
    if bound <= 0:
        return values
    return [min(max(v, -bound), bound) for v in values]


def _gate(rows_x: Any, rows_h: Any, x: Any, h: Vector, peephole: Any, cell: Vector,
          norm: Any, bias: Any) -> Vector:
    """One gate's pre-activation, unit by unit: products, peephole, layer norm, bias."""
    units = len(rows_x)
    z = []
    for u in range(units):
        acc = sum(float(rows_x[u][k]) * float(x[k]) for k in range(len(x)))
        acc += sum(float(rows_h[u][k]) * h[k] for k in range(len(h)))
        if peephole is not None:
            acc += float(peephole[u]) * cell[u]
        z.append(acc)
    if norm is not None:
        mean = sum(z) / units
        var = sum((v - mean) ** 2 for v in z) / units
        z = [(v - mean) / math.sqrt(var + 1e-8) * float(norm[u]) for u, v in enumerate(z)]
    return [v + float(bias[u]) for u, v in enumerate(z)]


def lstm_step_reference(weights: Sequence[Any], x: Any, h: Vector, c: Vector,
                        g: Callable[[float], float], clips: tuple[float, float]
                        ) -> tuple[Vector, Vector, list[Vector | None]]:
    """One step for one batch entry in float64 scalar loops: the new output and cell states
    and the gate activations ``[i (None under CIFG), g(candidate), f, o]``.

    ``weights`` are UNIDIRECTIONAL_SEQUENCE_LSTM's inputs 1-17 then the four layer
    normalisation weights (None when absent).
    """
    (w_xi, w_xf, w_xc, w_xo, w_hi, w_hf, w_hc, w_ho, p_i, p_f, p_o, b_i, b_f, b_c, b_o, proj,
     proj_b, n_i, n_f, n_c, n_o) = weights
    f = [_sigmoid(v) for v in _gate(w_xf, w_hf, x, h, p_f, c, n_f, b_f)]
    i = (None if w_xi is None
         else [_sigmoid(v) for v in _gate(w_xi, w_hi, x, h, p_i, c, n_i, b_i)])
    cand = [g(v) for v in _gate(w_xc, w_hc, x, h, None, c, n_c, b_c)]
    i_used = [1.0 - v for v in f] if i is None else i
    new_c = _clip([f[u] * c[u] + i_used[u] * cand[u] for u in range(len(c))], clips[0])
    o = [_sigmoid(v) for v in _gate(w_xo, w_ho, x, h, p_o, new_c, n_o, b_o)]
    m = [o[u] * g(new_c[u]) for u in range(len(new_c))]
    if proj is not None:
        m = _clip([sum(float(proj[r][u]) * m[u] for u in range(len(m)))
                   + (float(proj_b[r]) if proj_b is not None else 0.0)
                   for r in range(len(proj))], clips[1])
    return m, new_c, [i, cand, f, o]


def lstm_reference(*args: Any) -> list[Any]:
    """Every output (sequence, last output state, last cell state) in float64, from
    UNIDIRECTIONAL_SEQUENCE_LSTM's arguments (absent inputs None)."""
    x, activation, cell_clip, proj_clip, time_major = args[0], *args[20:24]
    norms = (*args[24:], None, None, None, None)[:4]
    weights = (*args[1:18], *norms)
    g = ACTIVATIONS[activation]
    if not time_major:
        x = np.transpose(x, (1, 0, 2))
    steps, batches = x.shape[0], x.shape[1]
    h = [[float(v) for v in row] for row in args[18]]
    c = [[float(v) for v in row] for row in args[19]]
    seq = np.zeros((steps, batches, len(h[0])))
    for t in range(steps):
        for b in range(batches):
            h[b], c[b], _ = lstm_step_reference(weights, x[t, b], h[b], c[b], g,
                                                (cell_clip, proj_clip))
            seq[t, b] = h[b]
    if not time_major:
        seq = np.transpose(seq, (1, 0, 2))
    return [seq, np.array(h), np.array(c)]


def lstm_op_reference(*args: Any) -> list[Any]:
    """LSTM's four outputs from its arguments (absent inputs None or empty): the scratch
    buffer (the gate activations in NNAPI's block layout, input gate absent under CIFG), the
    output state, the cell state and the output."""
    weights = [None if a is None or np.size(a) == 0 else a
               for a in (*args[1:18], *(*args[23:], None, None, None, None)[:4])]
    rows = [lstm_step_reference(weights, x, [float(v) for v in h], [float(v) for v in c],
                                ACTIVATIONS[args[20]], (args[21], args[22]))
            for x, h, c in zip(args[0], args[18], args[19], strict=True)]
    gates: list[Any] = [[row[2][k] for row in rows] for k in range(4)]
    blocks = [np.ravel(gate) for gate in gates if gate[0] is not None]
    h_out = np.array([row[0] for row in rows])
    return [np.concatenate(blocks).reshape(len(rows), -1), h_out,
            np.array([row[1] for row in rows]), h_out]


def _first(n: int) -> Callable[..., list[Any]]:
    def reference(*args: Any) -> list[Any]:
        return lstm_reference(*args)[:n]
    return reference


def _case(name: str, *, seed: int, batch: int = 2, steps: int = 3, input_size: int = 3,
          units: int = 4, output_size: int | None = None, cifg: bool = False,
          peephole: bool = False, projection_bias: bool = False, layer_norm: bool = False,
          activation: int = 4, clips: tuple[float, float] = (0.0, 0.0),
          time_major: bool = True, n_outputs: int = 3) -> OpCase:
    """A case with seeded weights in [-0.6, 0.6); ``output_size`` set means a projection."""
    rng = np.random.default_rng(seed)
    projected = output_size is not None
    out_size = output_size if output_size is not None else units

    def tensor(shape: Sequence[int], present: bool = True) -> Arg:
        if not present:
            return omitted(T.TENSOR_FLOAT32, shape)
        return f32(rng.uniform(-0.6, 0.6, tuple(shape)).astype(np.float32))

    x_shape = (steps, batch, input_size) if time_major else (batch, steps, input_size)
    inputs = [
        tensor(x_shape),
        *(tensor((units, input_size), present=not cifg or k > 0) for k in range(4)),
        *(tensor((units, out_size), present=not cifg or k > 0) for k in range(4)),
        tensor((units,), present=peephole and not cifg),
        tensor((units,), present=peephole), tensor((units,), present=peephole),
        *(tensor((units,), present=not cifg or k > 0) for k in range(4)),
        tensor((out_size, units), present=projected),
        tensor((out_size,), present=projection_bias),
        tensor((batch, out_size)), tensor((batch, units)),
        i32s(activation), f32s(clips[0]), f32s(clips[1]), bools(time_major),
    ]
    if layer_norm:
        inputs += [tensor((units,), present=not cifg), tensor((units,)), tensor((units,)),
                   tensor((units,))]
    seq = (steps, batch, out_size) if time_major else (batch, steps, out_size)
    outputs = [out(T.TENSOR_FLOAT32, seq), out(T.TENSOR_FLOAT32, (batch, out_size)),
               out(T.TENSOR_FLOAT32, (batch, units))][:n_outputs]
    return OpCase(f"unidirectional_sequence_lstm_{name}", Op.UNIDIRECTIONAL_SEQUENCE_LSTM,
                  tuple(inputs), tuple(outputs), reference=_first(n_outputs))


CASES += [
    _case("basic", seed=1),
    _case("batch_major_one_output", seed=2, time_major=False, n_outputs=1),
    _case("cifg_peephole", seed=3, cifg=True, peephole=True),
    _case("peephole_projection_clipped", seed=4, peephole=True, output_size=3,
          projection_bias=True, clips=(0.4, 0.15)),
    _case("projection_no_bias_batch_major", seed=5, output_size=2, time_major=False),
    _case("layer_norm", seed=6, layer_norm=True, peephole=True, output_size=3),
    _case("layer_norm_cifg", seed=7, layer_norm=True, cifg=True, batch=3),
    _case("relu", seed=8, activation=1, clips=(0.9, 0.0)),
    _case("relu6_single_step", seed=9, activation=3, steps=1, batch=1),
    _case("sigmoid", seed=10, activation=6),
    _case("no_activation", seed=11, activation=0, steps=4),
]


# -- NNAPI's published example (3 time steps, layer normalisation, no CIFG, peephole,
#    projection without bias, no clipping) ---------------------------------------------------

def _f(values: Sequence[float], *shape: int) -> Arg:
    return f32(np.array(values, np.float32).reshape(shape))


_N_CELL, _N_INPUT, _N_OUTPUT, _N_BATCH, _MAX_TIME = 4, 5, 3, 2, 3
_EXAMPLE_INPUTS = (
    _f([0.7, 0.8, 0.1, 0.2, 0.3, 0.3, 0.2, 0.9, 0.8, 0.1, 0.8, 0.1, 0.2, 0.4, 0.5, 0.1, 0.5, 0.2,
        0.4, 0.2, 0.2, 0.7, 0.7, 0.1, 0.7, 0.6, 0.9, 0.2, 0.5, 0.7], _MAX_TIME, _N_BATCH, _N_INPUT),
    _f([0.5, 0.6, 0.7, -0.8, -0.9, 0.1, 0.2, 0.3, -0.4, 0.5, -0.8, 0.7, -0.6, 0.5, -0.4, -0.5,
        -0.4, -0.3, -0.2, -0.1], _N_CELL, _N_INPUT),
    _f([-0.6, -0.1, 0.3, 0.2, 0.9, -0.5, -0.2, -0.4, 0.3, -0.8, -0.4, 0.3, -0.5, -0.4, -0.6,
        0.3, -0.4, -0.6, -0.5, -0.5], _N_CELL, _N_INPUT),
    _f([-0.4, -0.3, -0.2, -0.1, -0.5, 0.5, -0.2, -0.3, -0.2, -0.6, 0.6, -0.1, -0.4, -0.3, -0.7,
        0.7, -0.9, -0.5, 0.8, 0.6], _N_CELL, _N_INPUT),
    _f([-0.8, -0.4, -0.2, -0.9, -0.1, -0.7, 0.3, -0.3, -0.8, -0.2, 0.6, -0.2, 0.4, -0.7, -0.3,
        -0.5, 0.1, 0.5, -0.6, -0.4], _N_CELL, _N_INPUT),
    _f([-0.2, -0.3, 0.4, 0.1, -0.5, 0.9, -0.2, -0.3, -0.7, 0.05, -0.2, -0.6], _N_CELL, _N_OUTPUT),
    _f([-0.5, -0.3, -0.5, -0.2, 0.6, 0.4, 0.9, 0.3, -0.1, 0.2, 0.5, 0.2], _N_CELL, _N_OUTPUT),
    _f([-0.3, 0.2, 0.1, -0.3, 0.8, -0.08, -0.2, 0.3, 0.8, -0.6, -0.1, 0.2], _N_CELL, _N_OUTPUT),
    _f([0.3, -0.1, 0.1, -0.2, -0.5, -0.7, -0.2, -0.6, -0.1, -0.4, -0.7, -0.2], _N_CELL,
       _N_OUTPUT),
    _f([0.05, 0.1, 0.25, 0.15], _N_CELL),
    _f([-0.02, -0.15, -0.25, -0.03], _N_CELL),
    _f([0.1, -0.1, -0.5, 0.05], _N_CELL),
    _f([0.03, 0.15, 0.22, 0.38], _N_CELL),
    _f([0.1, -0.3, -0.2, 0.1], _N_CELL),
    _f([-0.05, 0.72, 0.25, 0.08], _N_CELL),
    _f([0.05, -0.01, 0.2, 0.1], _N_CELL),
    _f([-0.1, 0.2, 0.01, -0.2, 0.1, 0.5, 0.3, 0.08, 0.07, 0.2, -0.4, 0.2], _N_OUTPUT, _N_CELL),
    omitted(T.TENSOR_FLOAT32, (_N_OUTPUT,)),
    _f([0.0] * (_N_BATCH * _N_OUTPUT), _N_BATCH, _N_OUTPUT),
    _f([0.0] * (_N_BATCH * _N_CELL), _N_BATCH, _N_CELL),
    i32s(4), f32s(0.0), f32s(0.0), bools(True),
    _f([0.1, 0.2, 0.3, 0.5], _N_CELL),
    _f([0.2, 0.2, 0.4, 0.3], _N_CELL),
    _f([0.7, 0.2, 0.3, 0.8], _N_CELL),
    _f([0.6, 0.2, 0.2, 0.5], _N_CELL),
)
_EXAMPLE_OUTPUT = np.array([
    0.0244077, 0.128027, -0.00170918, -0.00692428, 0.0848741, 0.063445,
    0.0137642, 0.140751, 0.0395835, -0.00403912, 0.139963, 0.072681,
    -0.00459231, 0.155278, 0.0837377, 0.00752706, 0.161903, 0.0561371,
]).reshape(_MAX_TIME, _N_BATCH, _N_OUTPUT)
CASES.append(OpCase(
    "unidirectional_sequence_lstm_nnapi_layer_norm_example", Op.UNIDIRECTIONAL_SEQUENCE_LSTM,
    _EXAMPLE_INPUTS, (out(T.TENSOR_FLOAT32, _EXAMPLE_OUTPUT.shape, _EXAMPLE_OUTPUT),)))
