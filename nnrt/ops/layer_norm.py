"""Layer normalisation: com.nnrt.LAYER_NORMALIZATION (nnrt's extension, for ONNX
``LayerNormalization``).

Signature:

* com.nnrt.LAYER_NORMALIZATION: input 0 (input) a TENSOR_FLOAT32 / TENSOR_FLOAT16 ``X`` of rank
  ≥ 1; input 1 (scale) a tensor of X's type whose shape broadcasts (numpy rules) to
  ``X.shape[axis:]``; input 2 (bias) an optional tensor of the same kind (omitted: no bias);
  input 3 (axis) an INT32 in ``[-rank, rank)``; input 4 (epsilon) a FLOAT32 (FLOAT16 for a
  TENSOR_FLOAT16 X) scalar, positive and finite. Output 0 of X's type and shape:
  ``Y = (X - mean) / sqrt(var + epsilon) * scale + bias`` with the mean and the population
  variance taken over the axes ``[axis, rank)``.

The reference kernel computes in float64 and rounds once (ONNX computes float32 X in float32,
``stash_type=1``; the results agree within float32 tolerance).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register
from nnrt.ops.activation import scalar_type_for

T = OperandType
Array = np.ndarray[Any, Any]

_FLOATS = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)


def _check_affine_dims(ctx: OperationContext, slot: int, tail: Shape) -> None:
    """Fail unless the known dims of input ``slot`` broadcast to ``tail`` (``X.shape[axis:]``).

    Unknown dims (0) and an unknown rank pass; execution checks the actual shape.
    """
    if ctx.is_omitted(slot):
        return
    dims = ctx.dims(slot)
    bad = len(dims) > len(tail) or any(
        d not in (0, 1) and t not in (0, d)
        for d, t in zip(reversed(dims), reversed(tail), strict=False))
    if bad:
        ctx.fail(f"shape {_show(dims)} does not broadcast to the normalised dims {_show(tail)} "
                 "(input.shape[axis:])", input=slot)


def _show(dims: Shape) -> str:
    items = [str(d) if d else "?" for d in dims]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _check_epsilon(ctx: OperationContext, slot: int) -> None:
    """Fail unless the epsilon of input ``slot`` is positive and finite (when known)."""
    epsilon = ctx.constant(slot)
    if epsilon is not None and not (math.isfinite(epsilon) and epsilon > 0):
        ctx.fail(f"epsilon must be positive and finite, got {epsilon}", input=slot)


@register(OperationType.NNRT_LAYER_NORMALIZATION,
          inputs=("input", "scale", "bias", "axis", "epsilon"), kernel_types=frozenset(_FLOATS))
class LayerNormalization:
    """com.nnrt.LAYER_NORMALIZATION over the trailing axes from ``axis`` on."""

    INPUT, SCALE, BIAS, AXIS, EPSILON = 0, 1, 2, 3, 4

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """Types per slot, rank ≥ 1, axis range, epsilon > 0, scale / bias shapes when known."""
        cls = LayerNormalization
        ctx.expect_counts(5, 1)
        t = ctx.expect_type(cls.INPUT, *_FLOATS)
        ctx.expect_type(cls.SCALE, t)
        ctx.expect_optional_type(cls.BIAS, t)
        rank = ctx.rank_or_none(cls.INPUT)
        axis = ctx.expect_axis(cls.AXIS, rank)
        ctx.expect_scalar(cls.EPSILON, scalar_type_for(t))
        _check_epsilon(ctx, cls.EPSILON)
        ctx.expect_output_like_input(0, cls.INPUT)
        ctx.expect_rank_at_least(cls.INPUT, 1)
        if axis is not None:
            tail = ctx.dims(cls.INPUT)[axis:]
            for slot in (cls.SCALE, cls.BIAS):
                _check_affine_dims(ctx, slot, tail)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Same shape as the input; checks axis, epsilon and the scale / bias shapes."""
        cls = LayerNormalization
        shape = ctx.shape(cls.INPUT)
        if not shape:
            ctx.fail("expected rank of at least 1, got 0", input=cls.INPUT)
        axis = ctx.expect_axis(cls.AXIS, len(shape))
        _check_epsilon(ctx, cls.EPSILON)
        if axis is not None:
            for slot in (cls.SCALE, cls.BIAS):
                _check_affine_dims(ctx, slot, shape[axis:])
        return [shape]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Normalise over ``[axis, rank)`` in float64, then scale and shift."""
        cls = LayerNormalization
        x = ctx.tensor(cls.INPUT).astype(np.float64)
        axes = tuple(range(int(ctx.scalar(cls.AXIS)) % x.ndim, x.ndim))
        epsilon = float(ctx.scalar(cls.EPSILON))
        centred = x - np.mean(x, axis=axes, keepdims=True)
        variance = np.mean(centred * centred, axis=axes, keepdims=True)
        y = centred / np.sqrt(variance + epsilon) * ctx.tensor(cls.SCALE).astype(np.float64)
        bias = ctx.input(cls.BIAS)
        if bias is not None:
            y += bias.astype(np.float64)
        return [y]
