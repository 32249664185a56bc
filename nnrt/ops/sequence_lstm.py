"""UNIDIRECTIONAL_SEQUENCE_LSTM: an LSTM cell unrolled over the time axis of a sequence.

NNAPI signature (24 inputs, or 28 with layer normalisation; 1 or 3 outputs). Every tensor has
the input's type, TENSOR_FLOAT32 or TENSOR_FLOAT16; "optional" inputs may be omitted (NO_VALUE):

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
both present or both absent. ``output_size`` is the projection's rows, else ``num_units``.

Each step (``sigmoid`` the logistic function, ``⊙`` the element-wise product)::

    f = sigmoid(N_f(W_xf x + W_hf h + w_cf ⊙ c) + b_f)
    i = 1 - f  (CIFG: no input gate weights)  or  sigmoid(N_i(W_xi x + W_hi h + w_ci ⊙ c) + b_i)
    c' = clip(f ⊙ c + i ⊙ g(N_c(W_xc x + W_hc h) + b_c), cell_clip)
    o = sigmoid(N_o(W_xo x + W_ho h + w_co ⊙ c') + b_o)
    h' = clip(W_proj (o ⊙ g(c')) + b_proj, proj_clip)  or  o ⊙ g(c')  without projection

where the peephole terms appear only with peephole weights, and ``N_k(z)`` is the identity, or
with layer normalisation ``(z - mean(z)) / sqrt(var(z) + 1e-8) * w_norm_k`` over the units.
Optional inputs come in groups: the input gate's four (CIFG when none; its peephole weight only
with peepholes), the forget/output peepholes together, the projection bias only with projection
weights, the layer-normalisation weights all or none (the input one absent with CIFG).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nnrt.model.operand import FLOAT_TENSOR_TYPES
from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register
from nnrt.ops.activation import scalar_type_for

T = OperandType
Array = np.ndarray[Any, Any]

INPUT = 0
INPUT_TO_INPUT, INPUT_TO_FORGET, INPUT_TO_CELL, INPUT_TO_OUTPUT = 1, 2, 3, 4
RECURRENT_TO_INPUT, RECURRENT_TO_FORGET, RECURRENT_TO_CELL, RECURRENT_TO_OUTPUT = 5, 6, 7, 8
CELL_TO_INPUT, CELL_TO_FORGET, CELL_TO_OUTPUT = 9, 10, 11
INPUT_BIAS, FORGET_BIAS, CELL_BIAS, OUTPUT_BIAS = 12, 13, 14, 15
PROJECTION_WEIGHTS, PROJECTION_BIAS = 16, 17
OUTPUT_STATE_IN, CELL_STATE_IN = 18, 19
ACTIVATION, CELL_CLIP, PROJECTION_CLIP, TIME_MAJOR = 20, 21, 22, 23
INPUT_NORM, FORGET_NORM, CELL_NORM, OUTPUT_NORM = 24, 25, 26, 27

_NAMES = (
    "input", "input_to_input_weights", "input_to_forget_weights", "input_to_cell_weights",
    "input_to_output_weights", "recurrent_to_input_weights", "recurrent_to_forget_weights",
    "recurrent_to_cell_weights", "recurrent_to_output_weights", "cell_to_input_weights",
    "cell_to_forget_weights", "cell_to_output_weights", "input_gate_bias", "forget_gate_bias",
    "cell_bias", "output_gate_bias", "projection_weights", "projection_bias",
    "output_state_in", "cell_state_in", "activation", "cell_clip", "proj_clip", "time_major",
    "input_layer_norm_weights", "forget_layer_norm_weights", "cell_layer_norm_weights",
    "output_layer_norm_weights",
)
_REQUIRED = (INPUT, INPUT_TO_FORGET, INPUT_TO_CELL, INPUT_TO_OUTPUT, RECURRENT_TO_FORGET,
             RECURRENT_TO_CELL, RECURRENT_TO_OUTPUT, FORGET_BIAS, CELL_BIAS, OUTPUT_BIAS,
             OUTPUT_STATE_IN, CELL_STATE_IN)
_OPTIONAL = (INPUT_TO_INPUT, RECURRENT_TO_INPUT, CELL_TO_INPUT, CELL_TO_FORGET, CELL_TO_OUTPUT,
             INPUT_BIAS, PROJECTION_WEIGHTS, PROJECTION_BIAS, INPUT_NORM, FORGET_NORM,
             CELL_NORM, OUTPUT_NORM)
_RANK = {INPUT: 3,
         **dict.fromkeys((*range(1, 9), PROJECTION_WEIGHTS, OUTPUT_STATE_IN, CELL_STATE_IN), 2),
         **dict.fromkeys((*range(9, 16), PROJECTION_BIAS, *range(24, 28)), 1)}
_SCALARS = (ACTIVATION, CELL_CLIP, PROJECTION_CLIP, TIME_MAJOR)
_LAYER_NORM_EPSILON = 1e-8


def _sigmoid(x: Array) -> Array:
    return np.asarray(1.0 / (1.0 + np.exp(-x)))


#: The activation ``g`` by its TFLite-style code (NNAPI lists exactly these).
_ACTIVATIONS: dict[int, Callable[[Array], Array]] = {
    0: lambda x: x,
    1: lambda x: np.maximum(x, 0.0),
    3: lambda x: np.clip(x, 0.0, 6.0),
    4: np.tanh,
    6: _sigmoid,
}


def _present(ctx: OperationContext, *slots: int) -> list[bool]:
    return [not ctx.is_omitted(s) for s in slots]


def _validate_groups(ctx: OperationContext) -> None:
    """NNAPI's all-or-none rules for the optional inputs."""
    cifg = ctx.is_omitted(INPUT_TO_INPUT)
    peephole = not ctx.is_omitted(CELL_TO_OUTPUT)
    for slot in (RECURRENT_TO_INPUT, INPUT_BIAS):
        if ctx.is_omitted(slot) != cifg:
            ctx.fail("must be given exactly when input_to_input_weights is (omitting both "
                     "selects CIFG)", input=slot)
    if ctx.is_omitted(CELL_TO_FORGET) == peephole:
        ctx.fail("the forget and output peephole weights must be given together",
                 input=CELL_TO_FORGET)
    if ctx.is_omitted(CELL_TO_INPUT) != (cifg or not peephole):
        ctx.fail("must be given exactly when there are peephole weights and no CIFG",
                 input=CELL_TO_INPUT)
    if not ctx.is_omitted(PROJECTION_BIAS) and ctx.is_omitted(PROJECTION_WEIGHTS):
        ctx.fail("a projection bias needs projection weights", input=PROJECTION_BIAS)
    norms = _present(ctx, FORGET_NORM, CELL_NORM, OUTPUT_NORM)
    if any(norms) and not all(norms):
        missing = [s for s, p in zip((FORGET_NORM, CELL_NORM, OUTPUT_NORM), norms, strict=True)
                   if not p]
        ctx.fail("the layer normalisation weights must be given all or none", input=missing[0])
    if ctx.is_omitted(INPUT_NORM) != (cifg or not any(norms)):
        ctx.fail("must be given exactly when there is layer normalisation and no CIFG",
                 input=INPUT_NORM)


def _check_clip(ctx: OperationContext, slot: int) -> None:
    value = ctx.constant(slot)
    if value is not None and not value >= 0:
        ctx.fail(f"must be non-negative (0 disables clipping), got {value}", input=slot)


def _check_activation(ctx: OperationContext) -> None:
    code = ctx.constant(ACTIVATION)
    if code is not None and code not in _ACTIVATIONS:
        ctx.fail(f"invalid activation code {code} (expected 0=none, 1=relu, 3=relu6, 4=tanh "
                 "or 6=sigmoid)", input=ACTIVATION)


def _check_ranks(ctx: OperationContext) -> None:
    for slot, rank in _RANK.items():
        if not ctx.is_omitted(slot):
            ctx.expect_rank(slot, rank)


def _expect_shape(ctx: OperationContext, slot: int, expected: Shape) -> None:
    if not ctx.is_omitted(slot) and ctx.shape(slot) != expected:
        ctx.fail(f"expected shape {expected}, got {ctx.shape(slot)}", input=slot)


def _sizes(ctx: OperationContext) -> tuple[int, int, int]:
    """``(num_units, input_size, output_size)``, every weight's shape checked against them."""
    num_units, input_size = ctx.shape(INPUT_TO_FORGET)
    output_size = (ctx.shape(PROJECTION_WEIGHTS)[0] if not ctx.is_omitted(PROJECTION_WEIGHTS)
                   else num_units)
    for slot in (INPUT_TO_INPUT, INPUT_TO_CELL, INPUT_TO_OUTPUT):
        _expect_shape(ctx, slot, (num_units, input_size))
    for slot in range(RECURRENT_TO_INPUT, RECURRENT_TO_OUTPUT + 1):
        _expect_shape(ctx, slot, (num_units, output_size))
    for slot in (*range(CELL_TO_INPUT, OUTPUT_BIAS + 1), *range(INPUT_NORM, OUTPUT_NORM + 1)):
        _expect_shape(ctx, slot, (num_units,))
    _expect_shape(ctx, PROJECTION_WEIGHTS, (output_size, num_units))
    _expect_shape(ctx, PROJECTION_BIAS, (output_size,))
    return num_units, input_size, output_size


@register(OperationType.UNIDIRECTIONAL_SEQUENCE_LSTM, inputs=_NAMES,
          outputs=("output", "output_state_out", "cell_state_out"),
          kernel_types=FLOAT_TENSOR_TYPES)
class UnidirectionalSequenceLstm:
    """UNIDIRECTIONAL_SEQUENCE_LSTM with CIFG, peepholes, projection and layer normalisation."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """Counts, one float type throughout, ranks, the optional groups and scalar values."""
        ctx.expect_counts((24, 28), (1, 3))
        t = ctx.expect_type(INPUT, T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
        for slot in _REQUIRED:
            ctx.expect_type(slot, t)
        for slot in _OPTIONAL:
            ctx.expect_optional_type(slot, t)
        _check_ranks(ctx)
        ctx.expect_scalar(ACTIVATION, T.INT32)
        ctx.expect_scalar(CELL_CLIP, scalar_type_for(t))
        ctx.expect_scalar(PROJECTION_CLIP, scalar_type_for(t))
        ctx.expect_scalar(TIME_MAJOR, T.BOOL)
        for j in range(ctx.n_outputs):
            ctx.expect_output_type(j, t)
        _validate_groups(ctx)
        _check_activation(ctx)
        _check_clip(ctx, CELL_CLIP)
        _check_clip(ctx, PROJECTION_CLIP)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """The output sequence's shape, then the two final states' shapes when asked for."""
        _check_activation(ctx)
        _check_clip(ctx, CELL_CLIP)
        _check_clip(ctx, PROJECTION_CLIP)
        _check_ranks(ctx)
        num_units, input_size, output_size = _sizes(ctx)
        shape = ctx.shape(INPUT)
        if shape[2] != input_size:
            ctx.fail(f"input size {shape[2]} does not match the weights' {input_size}",
                     input=INPUT)
        time_major = bool(ctx.scalar(TIME_MAJOR))
        batch = shape[1] if time_major else shape[0]
        _expect_shape(ctx, OUTPUT_STATE_IN, (batch, output_size))
        _expect_shape(ctx, CELL_STATE_IN, (batch, num_units))
        shapes: list[Shape] = [(*shape[:2], output_size)]
        if ctx.n_outputs == 3:
            shapes += [(batch, output_size), (batch, num_units)]
        return shapes

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Unrolls the cell over time in float64."""
        w = [None if ctx.is_omitted(slot) or slot in _SCALARS
             else ctx.tensor(slot).astype(np.float64) for slot in range(len(_NAMES))]
        g = _ACTIVATIONS[int(ctx.scalar(ACTIVATION))]
        clips = float(ctx.scalar(CELL_CLIP)), float(ctx.scalar(PROJECTION_CLIP))
        time_major = bool(ctx.scalar(TIME_MAJOR))
        x, h, c = _req(w, INPUT), _req(w, OUTPUT_STATE_IN), _req(w, CELL_STATE_IN)
        steps = x if time_major else x.transpose(1, 0, 2)
        outputs = []
        for x_t in steps:
            h, c = _step(w, x_t, h, c, g, clips)
            outputs.append(h)
        out = np.stack(outputs) if outputs else np.zeros((0, *h.shape))
        results = [out if time_major else out.transpose(1, 0, 2)]
        if ctx.n_outputs == 3:
            results += [h, c]
        return results


def _gate(w: list[Array | None], x: Array, h: Array, slots: tuple[int, int, int | None, int, int],
          c: Array) -> Array:
    """The pre-activation of one gate: products, peephole, layer normalisation, bias."""
    input_w, recurrent_w, peephole, norm, bias = slots
    z = x @ _req(w, input_w).T + h @ _req(w, recurrent_w).T
    if peephole is not None and w[peephole] is not None:
        z = z + w[peephole] * c
    scale = w[norm]
    if scale is not None:
        mean = z.mean(axis=-1, keepdims=True)
        var = ((z - mean) ** 2).mean(axis=-1, keepdims=True)
        z = (z - mean) / np.sqrt(var + _LAYER_NORM_EPSILON) * scale
    return np.asarray(z + _req(w, bias))


def _step(w: list[Array | None], x: Array, h: Array, c: Array, g: Callable[[Array], Array],
          clips: tuple[float, float]) -> tuple[Array, Array]:
    """One time step: the new output state and cell state."""
    cell_clip, proj_clip = clips
    f = _sigmoid(_gate(w, x, h, (INPUT_TO_FORGET, RECURRENT_TO_FORGET, CELL_TO_FORGET,
                                 FORGET_NORM, FORGET_BIAS), c))
    if w[INPUT_TO_INPUT] is None:
        i = 1.0 - f
    else:
        i = _sigmoid(_gate(w, x, h, (INPUT_TO_INPUT, RECURRENT_TO_INPUT, CELL_TO_INPUT,
                                     INPUT_NORM, INPUT_BIAS), c))
    candidate = g(_gate(w, x, h, (INPUT_TO_CELL, RECURRENT_TO_CELL, None, CELL_NORM,
                                  CELL_BIAS), c))
    c = f * c + i * candidate
    if cell_clip > 0:
        c = np.clip(c, -cell_clip, cell_clip)
    o = _sigmoid(_gate(w, x, h, (INPUT_TO_OUTPUT, RECURRENT_TO_OUTPUT, CELL_TO_OUTPUT,
                                 OUTPUT_NORM, OUTPUT_BIAS), c))
    h = o * g(c)
    projection = w[PROJECTION_WEIGHTS]
    if projection is not None:
        h = h @ projection.T
        if w[PROJECTION_BIAS] is not None:
            h = h + w[PROJECTION_BIAS]
        if proj_clip > 0:
            h = np.clip(h, -proj_clip, proj_clip)
    return h, c


def _req(w: list[Array | None], slot: int) -> Array:
    arr = w[slot]
    if arr is None:
        raise ValueError(f"required input {slot} ({_NAMES[slot]}) has no value")
    return arr
