"""RNN and UNIDIRECTIONAL_SEQUENCE_RNN: a fully connected recurrent cell, one step or unrolled.

The cell: ``h' = act(x W^T + h R^T + b)`` (plus ``a W_aux^T`` for a bidirectional cell
reading an auxiliary input ``a``), with ``act`` one of the activations NNAPI's CPU executor
applies (INT32 code: 0 none, 1 relu, 2 relu1, 3 relu6, 4 tanh, 6 sigmoid).

NNAPI signatures; every tensor has the input's type, TENSOR_FLOAT32 or TENSOR_FLOAT16 (both
implemented; the kernels compute in float64):

* RNN (6 inputs, 2 outputs): 0 input ``[batch, input_size]``, 1 weights
  ``[num_units, input_size]``, 2 recurrent weights ``[num_units, num_units]``, 3 bias
  ``[num_units]``, 4 hidden state in ``[batch, num_units]``, 5 activation (INT32). Outputs:
  0 hidden state out and 1 output, both ``[batch, num_units]`` and equal.
* UNIDIRECTIONAL_SEQUENCE_RNN (7 inputs, 1 output or 2 since NNAPI 1.3): 0 input
  ``[max_time, batch, input_size]`` if time-major else ``[batch, max_time, input_size]``,
  1-4 as RNN's, 5 activation (INT32), 6 time major (INT32, 0 or 1). Outputs: 0 the output
  sequence in the input's layout with ``num_units`` features; 1 (optional) the hidden state
  after the last step ``[batch, num_units]``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from nnrt.model.operand import FLOAT_TENSOR_TYPES
from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register
from nnrt.ops.recurrent import (
    RNN_ACTIVATIONS,
    Array,
    check_activation,
    expect_given,
    expect_shape,
    time_major_view,
)

__all__ = ["RnnSlots", "check_rnn_types", "expect_input_size", "rnn_sequence", "rnn_sizes"]

T = OperandType
Activation = Callable[[Array], Array]

#: Both operations' input and activation; UNIDIRECTIONAL_SEQUENCE_RNN's layout code.
INPUT, ACTIVATION, TIME_MAJOR = 0, 5, 6


@dataclass(frozen=True)
class RnnSlots:
    """Where one RNN cell's tensors are: weights, recurrent weights, bias, hidden state."""

    weights: int
    recurrent: int
    bias: int
    state: int

    @property
    def all(self) -> tuple[int, int, int, int]:
        """Every slot, in signature order."""
        return self.weights, self.recurrent, self.bias, self.state


def check_rnn_types(ctx: OperationContext, s: RnnSlots, t: OperandType) -> None:
    """Require the cell's tensors to be of type ``t`` with their ranks."""
    for slot in s.all:
        ctx.expect_type(slot, t)
        ctx.expect_rank(slot, 1 if slot == s.bias else 2)


def rnn_sizes(ctx: OperationContext, s: RnnSlots, batch: int) -> tuple[int, int]:
    """``(num_units, input_size)`` of the cell, its shapes checked against them."""
    for slot in s.all:
        ctx.expect_rank(slot, 1 if slot == s.bias else 2)
        expect_given(ctx, slot)
    num_units, input_size = ctx.shape(s.weights)
    expect_shape(ctx, s.recurrent, (num_units, num_units))
    expect_shape(ctx, s.bias, (num_units,))
    expect_shape(ctx, s.state, (batch, num_units))
    return num_units, input_size


def expect_input_size(ctx: OperationContext, input_size: int, actual: int, slot: int) -> None:
    """Fail unless the tensor at ``slot`` has the ``input_size`` features the weights take."""
    if input_size != actual:
        ctx.fail(f"{actual} features, the weights take {input_size}", input=slot)


def rnn_sequence(ctx: ExecutionContext, s: RnnSlots, act: Activation, xs: Array,
                 aux: tuple[Array, int] | None = None, *, reverse: bool = False
                 ) -> tuple[Array, Array]:
    """The cell over the time-major ``xs``, backwards when ``reverse`` (outputs stay at their
    steps' positions), reading ``aux = (sequence, weights slot)`` too when given: the output
    sequence and the last hidden state."""
    w, r, b, h = (ctx.tensor(slot).astype(np.float64) for slot in s.all)
    aux_xs, aux_w = (aux[0], ctx.tensor(aux[1]).astype(np.float64)) if aux else (None, None)
    out = np.zeros((xs.shape[0], *h.shape))
    for t in (range(xs.shape[0] - 1, -1, -1) if reverse else range(xs.shape[0])):
        z = xs[t] @ w.T + h @ r.T + b
        if aux_xs is not None and aux_w is not None:
            z = z + aux_xs[t] @ aux_w.T
        h = np.asarray(act(z))
        out[t] = h
    return out, h


_CELL = RnnSlots(1, 2, 3, 4)
_CELL_NAMES = ("weights", "recurrent_weights", "bias")


@register(OperationType.RNN, inputs=("input", *_CELL_NAMES, "hidden_state_in", "activation"),
          outputs=("hidden_state_out", "output"), kernel_types=FLOAT_TENSOR_TYPES)
class Rnn:
    """RNN: one step."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """Counts, one float type throughout, ranks, the activation code."""
        ctx.expect_counts(6, 2)
        t = ctx.expect_type(INPUT, T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
        ctx.expect_rank(INPUT, 2)
        check_rnn_types(ctx, _CELL, t)
        ctx.expect_scalar(ACTIVATION, T.INT32)
        check_activation(ctx, ACTIVATION, RNN_ACTIVATIONS)
        for j in range(2):
            ctx.expect_output_type(j, t)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Both outputs ``[batch, num_units]``."""
        check_activation(ctx, ACTIVATION, RNN_ACTIVATIONS)
        ctx.expect_rank(INPUT, 2)
        expect_given(ctx, INPUT)
        batch, features = ctx.shape(INPUT)
        num_units, input_size = rnn_sizes(ctx, _CELL, batch)
        expect_input_size(ctx, input_size, features, INPUT)
        return [(batch, num_units), (batch, num_units)]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """One step in float64."""
        act = RNN_ACTIVATIONS[int(ctx.scalar(ACTIVATION))]
        _, h = rnn_sequence(ctx, _CELL, act, ctx.tensor(INPUT).astype(np.float64)[None])
        return [h, h]


@register(OperationType.UNIDIRECTIONAL_SEQUENCE_RNN,
          inputs=("input", *_CELL_NAMES, "hidden_state", "activation", "time_major"),
          outputs=("output", "hidden_state_out"), kernel_types=FLOAT_TENSOR_TYPES)
class UnidirectionalSequenceRnn:
    """UNIDIRECTIONAL_SEQUENCE_RNN: the cell unrolled over time."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """Counts, one float type throughout, ranks, the activation and layout codes."""
        ctx.expect_counts(7, (1, 2))
        t = ctx.expect_type(INPUT, T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
        ctx.expect_rank(INPUT, 3)
        check_rnn_types(ctx, _CELL, t)
        ctx.expect_scalar(ACTIVATION, T.INT32)
        ctx.expect_scalar(TIME_MAJOR, T.INT32)
        _check_scalars(ctx)
        for j in range(ctx.n_outputs):
            ctx.expect_output_type(j, t)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """The output sequence's shape, then the final hidden state's when asked for."""
        _check_scalars(ctx)
        ctx.expect_rank(INPUT, 3)
        expect_given(ctx, INPUT)
        shape = ctx.shape(INPUT)
        batch = shape[1] if ctx.scalar(TIME_MAJOR) else shape[0]
        num_units, input_size = rnn_sizes(ctx, _CELL, batch)
        expect_input_size(ctx, input_size, shape[2], INPUT)
        shapes: list[Shape] = [(shape[0], shape[1], num_units)]
        if ctx.n_outputs == 2:
            shapes.append((batch, num_units))
        return shapes

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """The sequence in float64."""
        act = RNN_ACTIVATIONS[int(ctx.scalar(ACTIVATION))]
        time_major = bool(ctx.scalar(TIME_MAJOR))
        xs = time_major_view(ctx.tensor(INPUT).astype(np.float64), time_major)
        out, h = rnn_sequence(ctx, _CELL, act, xs)
        return [time_major_view(out, time_major), h][:ctx.n_outputs]


def _check_scalars(ctx: OperationContext) -> None:
    check_activation(ctx, ACTIVATION, RNN_ACTIVATIONS)
    time_major = ctx.constant(TIME_MAJOR)
    if time_major is not None and time_major not in (0, 1):
        ctx.fail(f"must be 0 (batch-major) or 1 (time-major), got {time_major}",
                 input=TIME_MAJOR)
