"""The LSTM cell of LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM and BIDIRECTIONAL_SEQUENCE_LSTM.

One direction's tensors (:class:`LstmSlots` says where each operation keeps them):
input-to-{input, forget, cell, output} weights ``[num_units, input_size]``, recurrent-to-gate
weights ``[num_units, output_size]``, cell-to-{input, forget, output} peephole weights
``[num_units]``, the four gate biases ``[num_units]``, projection weights
``[output_size, num_units]`` and bias ``[output_size]``, layer-normalisation weights
``[num_units]`` for the four gates, and (bidirectional only) auxiliary-input-to-gate weights
``[num_units, aux_input_size]``. ``output_size`` is the projection's rows, else ``num_units``.

Each step (``sigmoid`` the logistic function, ``⊙`` the element-wise product, ``a`` the
auxiliary input when the direction reads it)::

    f = sigmoid(N_f(W_xf x + W_af a + W_hf h + w_cf ⊙ c) + b_f)
    i = 1 - f  (CIFG: no input gate weights)  or  sigmoid(N_i(W_xi x + ... + w_ci ⊙ c) + b_i)
    c' = clip(f ⊙ c + i ⊙ g(N_c(W_xc x + W_ac a + W_hc h) + b_c), cell_clip)
    o = sigmoid(N_o(W_xo x + W_ao a + W_ho h + w_co ⊙ c') + b_o)
    h' = clip(W_proj (o ⊙ g(c')) + b_proj, proj_clip)  or  o ⊙ g(c')  without projection

where the peephole terms appear only with peephole weights, clipping only with a positive
threshold, and ``N_k(z)`` is the identity, or with layer normalisation
``(z - mean(z)) / sqrt(var(z) + 1e-8) * w_norm_k`` over the units.

Optional inputs come in groups (:func:`check_groups`): the input gate's weights, recurrent
weights and bias all or none (none selects CIFG), its peephole weight only with peepholes; the
forget and output peepholes together; the projection bias only with projection weights; the
forget/cell/output layer-normalisation weights all or none, the input one with them unless
CIFG. An input is absent when omitted or empty (:mod:`nnrt.ops.recurrent`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnrt.model.types import OperandType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops.recurrent import (
    LSTM_ACTIVATIONS,
    Array,
    check_activation,
    check_clip,
    expect_given,
    expect_shape,
    given,
    maybe_given,
    sigmoid,
)

__all__ = ["CELL_INPUT_NAMES", "LAYER_NORM_NAMES", "LstmParams", "LstmSizes", "LstmSlots",
           "LstmWeights", "check_aux_weights", "check_cell_scalars", "check_groups",
           "check_ranks", "check_types", "load_weights", "lstm_sequence", "lstm_sizes",
           "lstm_step"]

#: The names of inputs 0-22 of LSTM and UNIDIRECTIONAL_SEQUENCE_LSTM (one signature there).
CELL_INPUT_NAMES = (
    "input", "input_to_input_weights", "input_to_forget_weights", "input_to_cell_weights",
    "input_to_output_weights", "recurrent_to_input_weights", "recurrent_to_forget_weights",
    "recurrent_to_cell_weights", "recurrent_to_output_weights", "cell_to_input_weights",
    "cell_to_forget_weights", "cell_to_output_weights", "input_gate_bias", "forget_gate_bias",
    "cell_bias", "output_gate_bias", "projection_weights", "projection_bias",
    "output_state_in", "cell_state_in", "activation", "cell_clip", "proj_clip",
)
#: The layer-normalisation weights closing both signatures.
LAYER_NORM_NAMES = ("input_layer_norm_weights", "forget_layer_norm_weights",
                    "cell_layer_norm_weights", "output_layer_norm_weights")

INPUT_GATE, FORGET_GATE, CELL_GATE, OUTPUT_GATE = range(4)
_LAYER_NORM_EPSILON = 1e-8


@dataclass(frozen=True)
class LstmSlots:
    """Where one LSTM direction's tensors are among its operation's inputs.

    Gate tuples are in the order input, forget, cell, output; ``cell_to`` is input, forget,
    output. ``norm`` / ``aux_to`` are None when the operation has no such inputs.
    """

    input_to: tuple[int, int, int, int]
    recurrent_to: tuple[int, int, int, int]
    cell_to: tuple[int, int, int]
    bias: tuple[int, int, int, int]
    projection: int
    projection_bias: int
    norm: tuple[int, int, int, int] | None = None
    aux_to: tuple[int, int, int, int] | None = None

    @property
    def required(self) -> tuple[int, ...]:
        """The tensors every LSTM needs: the forget, cell and output gates' weights and biases."""
        return (*self.input_to[1:], *self.recurrent_to[1:], *self.bias[1:])

    @property
    def optional(self) -> tuple[int, ...]:
        """The tensors that may be absent."""
        return (self.input_to[INPUT_GATE], self.recurrent_to[INPUT_GATE], *self.cell_to,
                self.bias[INPUT_GATE], self.projection, self.projection_bias,
                *(self.norm or ()), *(self.aux_to or ()))

    @property
    def matrices(self) -> frozenset[int]:
        """The rank-2 tensors (the others are rank 1)."""
        return frozenset((*self.input_to, *self.recurrent_to, self.projection,
                          *(self.aux_to or ())))


def check_cell_scalars(ctx: OperationContext, activation: int, cell_clip: int,
                       projection_clip: int) -> None:
    """The activation code and the two clips (non-negative) of an LSTM cell."""
    check_activation(ctx, activation, LSTM_ACTIVATIONS)
    check_clip(ctx, cell_clip)
    check_clip(ctx, projection_clip)


def check_types(ctx: OperationContext, s: LstmSlots, t: OperandType) -> None:
    """Require every tensor of the direction to be of type ``t`` with its rank."""
    for slot in s.required:
        ctx.expect_type(slot, t)
    for slot in s.optional:
        ctx.expect_optional_type(slot, t)
    check_ranks(ctx, s)


def check_ranks(ctx: OperationContext, s: LstmSlots) -> None:
    """Require the ranks of the required tensors and of the optional ones present (as far as
    known: an empty optional input may be declared with any rank)."""
    for slot in (*s.required, *s.optional):
        if slot in s.required or maybe_given(ctx, slot):
            ctx.expect_rank(slot, 2 if slot in s.matrices else 1)


def check_groups(ctx: OperationContext, s: LstmSlots) -> bool:
    """NNAPI's all-or-none rules for the optional inputs; returns whether the cell is CIFG."""
    name = _name(ctx, s.input_to[INPUT_GATE])
    cifg = not given(ctx, s.input_to[INPUT_GATE])
    for slot in (s.recurrent_to[INPUT_GATE], s.bias[INPUT_GATE]):
        if given(ctx, slot) == cifg:
            ctx.fail(f"must be given exactly when {name} is (omitting both selects CIFG)",
                     input=slot)
    peephole = given(ctx, s.cell_to[2])
    if given(ctx, s.cell_to[1]) != peephole:
        ctx.fail("the forget and output peephole weights must be given together",
                 input=s.cell_to[1])
    if given(ctx, s.cell_to[0]) != (peephole and not cifg):
        ctx.fail("must be given exactly when there are peephole weights and no CIFG",
                 input=s.cell_to[0])
    if given(ctx, s.projection_bias) and not given(ctx, s.projection):
        ctx.fail("a projection bias needs projection weights", input=s.projection_bias)
    if s.norm is not None:
        norms = [given(ctx, slot) for slot in s.norm[1:]]
        if any(norms) and not all(norms):
            missing = next(slot for slot, p in zip(s.norm[1:], norms, strict=True) if not p)
            ctx.fail("the layer normalisation weights must be given all or none", input=missing)
        if given(ctx, s.norm[INPUT_GATE]) != (all(norms) and not cifg):
            ctx.fail("must be given exactly when there is layer normalisation and no CIFG",
                     input=s.norm[INPUT_GATE])
    return cifg


def check_aux_weights(ctx: OperationContext, s: LstmSlots, cifg: bool) -> None:
    """Cross-linking: the direction's auxiliary weights for exactly its gates."""
    if s.aux_to is None:
        return
    for gate, slot in enumerate(s.aux_to):
        if given(ctx, slot) == (gate == INPUT_GATE and cifg):
            needed = "omitted under CIFG" if gate == INPUT_GATE and cifg else "given"
            ctx.fail(f"with auxiliary weights the auxiliary input-to-gate weights must be "
                     f"{needed}", input=slot)


@dataclass(frozen=True)
class LstmSizes:
    """One direction's sizes."""

    num_units: int
    input_size: int
    output_size: int


def lstm_sizes(ctx: OperationContext, s: LstmSlots, aux_size: int | None = None) -> LstmSizes:
    """The direction's sizes, every present weight's shape checked against them (and the
    auxiliary weights against ``aux_size`` when given)."""
    check_ranks(ctx, s)
    for slot in s.required:
        expect_given(ctx, slot)
    num_units, input_size = ctx.shape(s.input_to[FORGET_GATE])
    output_size = ctx.shape(s.projection)[0] if given(ctx, s.projection) else num_units
    for slot in (s.input_to[INPUT_GATE], s.input_to[CELL_GATE], s.input_to[OUTPUT_GATE]):
        expect_shape(ctx, slot, (num_units, input_size))
    for slot in s.recurrent_to:
        expect_shape(ctx, slot, (num_units, output_size))
    for slot in (*s.cell_to, *s.bias, *(s.norm or ())):
        expect_shape(ctx, slot, (num_units,))
    expect_shape(ctx, s.projection, (output_size, num_units))
    expect_shape(ctx, s.projection_bias, (output_size,))
    if s.aux_to is not None and aux_size is not None:
        for slot in s.aux_to:
            expect_shape(ctx, slot, (num_units, aux_size))
    return LstmSizes(num_units, input_size, output_size)


@dataclass(frozen=True)
class LstmWeights:
    """One direction's tensors in float64; None where absent."""

    input_to: tuple[Array | None, ...]
    recurrent_to: tuple[Array | None, ...]
    cell_to: tuple[Array | None, ...]
    bias: tuple[Array | None, ...]
    projection: Array | None
    projection_bias: Array | None
    norm: tuple[Array | None, ...]
    aux_to: tuple[Array | None, ...]


def load_weights(ctx: ExecutionContext, s: LstmSlots) -> LstmWeights:
    """The direction's tensors of an execution."""

    def load(*slots: int) -> tuple[Array | None, ...]:
        return tuple(ctx.tensor(slot).astype(np.float64) if given(ctx, slot) else None
                     for slot in slots)

    projection, projection_bias = load(s.projection, s.projection_bias)
    return LstmWeights(load(*s.input_to), load(*s.recurrent_to), load(*s.cell_to),
                       load(*s.bias), projection, projection_bias,
                       load(*s.norm) if s.norm else (None,) * 4,
                       load(*s.aux_to) if s.aux_to else (None,) * 4)


@dataclass(frozen=True)
class LstmParams:
    """The activation ``g`` and the clip thresholds (0 disables)."""

    activation: Callable[[Array], Array]
    cell_clip: float
    proj_clip: float


def _gate(w: LstmWeights, k: int, x: Array, h: Array, aux: Array | None,
          peephole: tuple[Array | None, Array] | None) -> Array:
    """The pre-activation of gate ``k``: products, peephole, layer normalisation, bias."""
    z = x @ _req(w.input_to[k]).T + h @ _req(w.recurrent_to[k]).T
    aux_w = w.aux_to[k]
    if aux is not None and aux_w is not None:
        z = z + aux @ aux_w.T
    if peephole is not None and peephole[0] is not None:
        z = z + peephole[0] * peephole[1]
    scale = w.norm[k]
    if scale is not None:
        mean = z.mean(axis=-1, keepdims=True)
        var = ((z - mean) ** 2).mean(axis=-1, keepdims=True)
        z = (z - mean) / np.sqrt(var + _LAYER_NORM_EPSILON) * scale
    return np.asarray(z + _req(w.bias[k]))


def lstm_step(w: LstmWeights, p: LstmParams, x: Array, h: Array, c: Array,
              aux: Array | None = None) -> tuple[Array, Array, list[Array | None]]:
    """One step on ``[batch, ...]`` arrays: the new output and cell states, and the gate
    activations ``[i (None under CIFG), g(candidate), f, o]``."""
    f = sigmoid(_gate(w, FORGET_GATE, x, h, aux, (w.cell_to[1], c)))
    i = (None if w.input_to[INPUT_GATE] is None
         else sigmoid(_gate(w, INPUT_GATE, x, h, aux, (w.cell_to[0], c))))
    candidate = p.activation(_gate(w, CELL_GATE, x, h, aux, None))
    c = f * c + (1.0 - f if i is None else i) * candidate
    if p.cell_clip > 0:
        c = np.clip(c, -p.cell_clip, p.cell_clip)
    o = sigmoid(_gate(w, OUTPUT_GATE, x, h, aux, (w.cell_to[2], c)))
    h = o * p.activation(c)
    if w.projection is not None:
        h = h @ w.projection.T
        if w.projection_bias is not None:
            h = h + w.projection_bias
        if p.proj_clip > 0:
            h = np.clip(h, -p.proj_clip, p.proj_clip)
    return np.asarray(h), np.asarray(c), [i, candidate, f, o]


def lstm_sequence(w: LstmWeights, p: LstmParams, xs: Array, h: Array, c: Array,
                  aux: Array | None = None, *, reverse: bool = False
                  ) -> tuple[Array, Array, Array]:
    """The cell unrolled over the time-major ``xs`` (``[max_time, batch, input_size]``),
    backwards when ``reverse`` (outputs stay at their steps' positions): the output sequence
    and the final output and cell states."""
    steps = range(xs.shape[0] - 1, -1, -1) if reverse else range(xs.shape[0])
    out = np.zeros((xs.shape[0], *h.shape))
    for t in steps:
        h, c, _ = lstm_step(w, p, xs[t], h, c, None if aux is None else aux[t])
        out[t] = h
    return out, h, c


def _req(arr: Array | None) -> Array:
    if arr is None:
        raise ValueError("a required LSTM tensor has no value")
    return arr


def _name(ctx: OperationContext, slot: int) -> Any:
    definition = ctx.definition
    return definition.input_name(slot, ctx.n_inputs) if definition else f"input {slot}"
