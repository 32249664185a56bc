"""SVDF: a singular-value-decomposition filter, one step of a time-convolution memory.

NNAPI signature (7 inputs, 2 outputs). Every tensor has the input's type, TENSOR_FLOAT32 or
TENSOR_FLOAT16 (both implemented; the kernel computes in float64):

* 0 input ``[batch, input_size]``;
* 1 weights feature ``[num_filters, input_size]``, ``num_filters = num_units * rank``;
* 2 weights time ``[num_filters, memory_size]``;
* 3 bias ``[num_units]`` (optional: omitted or empty);
* 4 state in ``[batch, memory_size * num_filters]``;
* 5 rank (INT32, positive, dividing ``num_filters``); 6 activation (INT32: 0 none, 1 relu,
  2 relu1, 3 relu6, 4 tanh, 6 sigmoid).

Outputs: 0 state out, the state's shape; 1 output ``[batch, num_units]``.

NNAPI's documentation gives the state ``(memory_size - 1) * num_units * rank`` values a batch;
its CPU executor and its test models use ``memory_size * num_filters``, and so does nnrt. Per
batch the state is ``num_filters`` rows of ``memory_size`` values. A step (the CPU executor's):
the last column of the state becomes the feature activations ``weights_feature @ x``; filter
``f`` outputs ``state[f] · weights_time[f]``; each unit sums its ``rank`` consecutive filters,
adds its bias and applies the activation; the state out is the state shifted one column to the
left (the oldest column dropped) with a zero last column.
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
    check_activation,
    expect_given,
    expect_shape,
    given,
    maybe_given,
)

T = OperandType

INPUT, WEIGHTS_FEATURE, WEIGHTS_TIME, BIAS, STATE_IN, RANK, ACTIVATION = range(7)


def _check_scalars(ctx: OperationContext) -> None:
    check_activation(ctx, ACTIVATION, RNN_ACTIVATIONS)
    rank = ctx.constant(RANK)
    if rank is not None and rank <= 0:
        ctx.fail(f"must be positive, got {rank}", input=RANK)


@register(OperationType.SVDF,
          inputs=("input", "weights_feature", "weights_time", "bias", "state_in", "rank",
                  "activation"),
          outputs=("state_out", "output"), kernel_types=FLOAT_TENSOR_TYPES)
class Svdf:
    """SVDF with any rank, an optional bias and a fused activation."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """Counts, one float type throughout, ranks and scalar values."""
        ctx.expect_counts(7, 2)
        t = ctx.expect_type(INPUT, T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
        for slot in (INPUT, WEIGHTS_FEATURE, WEIGHTS_TIME, STATE_IN):
            ctx.expect_type(slot, t)
            ctx.expect_rank(slot, 2)
        ctx.expect_optional_type(BIAS, t)
        if maybe_given(ctx, BIAS):
            ctx.expect_rank(BIAS, 1)
        ctx.expect_scalar(RANK, T.INT32)
        ctx.expect_scalar(ACTIVATION, T.INT32)
        _check_scalars(ctx)
        for j in range(2):
            ctx.expect_output_type(j, t)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """The state's shape and ``[batch, num_units]``."""
        _check_scalars(ctx)
        for slot in (INPUT, WEIGHTS_FEATURE, WEIGHTS_TIME, STATE_IN):
            ctx.expect_rank(slot, 2)
            expect_given(ctx, slot)
        batch, input_size = ctx.shape(INPUT)
        num_filters = ctx.shape(WEIGHTS_FEATURE)[0]
        expect_shape(ctx, WEIGHTS_FEATURE, (num_filters, input_size))
        if ctx.shape(WEIGHTS_TIME)[0] != num_filters:
            ctx.fail(f"expected {num_filters} rows like weights_feature, got "
                     f"{ctx.shape(WEIGHTS_TIME)[0]}", input=WEIGHTS_TIME)
        memory_size = ctx.shape(WEIGHTS_TIME)[1]
        rank = int(ctx.scalar(RANK))
        if num_filters % rank:
            ctx.fail(f"rank {rank} does not divide the {num_filters} filters of "
                     "weights_feature", input=RANK)
        num_units = num_filters // rank
        expect_shape(ctx, BIAS, (num_units,))
        state = (batch, memory_size * num_filters)
        expect_shape(ctx, STATE_IN, state)
        return [state, (batch, num_units)]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """One step in float64."""
        x = ctx.tensor(INPUT).astype(np.float64)
        features = ctx.tensor(WEIGHTS_FEATURE).astype(np.float64)
        weights_time = ctx.tensor(WEIGHTS_TIME).astype(np.float64)
        num_filters, memory_size = weights_time.shape
        batch = x.shape[0]
        state = ctx.tensor(STATE_IN).astype(np.float64).reshape(batch, num_filters, memory_size)
        state[:, :, -1] = x @ features.T
        filters = (state * weights_time).sum(axis=-1)
        rank = int(ctx.scalar(RANK))
        out = filters.reshape(batch, num_filters // rank, rank).sum(axis=-1)
        if given(ctx, BIAS):
            out = out + ctx.tensor(BIAS).astype(np.float64)
        out = RNN_ACTIVATIONS[int(ctx.scalar(ACTIVATION))](out)
        shifted = np.zeros_like(state)
        shifted[:, :, :-1] = state[:, :, 1:]
        return [shifted.reshape(batch, -1), out]
