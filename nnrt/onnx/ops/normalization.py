"""Normalisations: BatchNormalization, LayerNormalization, InstanceNormalization, Softmax and
LogSoftmax.

* BatchNormalization (inference): with known statistics, one MUL by ``scale / sqrt(var + eps)``
  and one ADD of ``B - mean * that``, both per channel and computed in float64 then rounded
  once; with runtime statistics the ONNX formula step by step. Training mode is refused.
* LayerNormalization: the extension operation com.nnrt.LAYER_NORMALIZATION; the optional Mean
  and InvStdDev outputs (float32 X) are ONNX's formulas from MEAN, SUB, MUL, ADD and RSQRT over
  the input flattened to ``[outer, normalised]``.
* InstanceNormalization: NNAPI INSTANCE_NORMALIZATION (NCHW, gamma 1, beta 0), then MUL by the
  per-channel scale and ADD of the bias; other ranks than 4 run as ``[N, C, rest, 1]``.
* Softmax / LogSoftmax: NNAPI SOFTMAX / LOG_SOFTMAX (beta 1) along ``axis`` from opset 13; before
  it, ONNX flattens the input to 2-D at ``axis`` (default 1) and normalises each row, so the
  operation runs on that reshaped tensor. SOFTMAX takes ranks up to 4.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nnrt.model.builder import Omitted
from nnrt.model.types import NNRT_MAX_RANK
from nnrt.model.types import OperationType as Op
from nnrt.onnx.graph import Value
from nnrt.onnx.node import NodeContext, converter
from nnrt.onnx.ops.linear import known_product, require_float, reshape

__all__ = ["batch_normalization", "instance_normalization", "layer_normalization", "softmax"]

Array = np.ndarray[Any, Any]

#: The highest rank NNAPI SOFTMAX takes.
_MAX_RANK = NNRT_MAX_RANK


def _only_first_output(n: NodeContext, what: str) -> None:
    if any(name for name in list(n.node.output)[1:]):
        n.fail(f"{what} outputs are not supported (only Y is computed)")


def _per_channel(n: NodeContext, v: Value, x: Value, shape: tuple[int, ...]) -> Value:
    """Parameter ``v`` reshaped to ``shape`` (broadcasting over ``x``) in ``x``'s dtype."""
    if v.const is not None:
        arr = np.ascontiguousarray(v.const.astype(x.dtype).reshape(shape))
        return Value("", x.dtype, shape, const=arr)
    if v.dtype != x.dtype:
        n.fail(f"parameter {v.name!r} is {v.dtype} but X is {x.dtype}")
    return reshape(n, v, shape)


# -- BatchNormalization ----------------------------------------------------------------------


@converter("BatchNormalization")
def batch_normalization(n: NodeContext) -> list[Value]:
    """BatchNormalization at inference: ``(x - mean) / sqrt(var + eps) * scale + B``."""
    x = n.input(0)
    scale, bias, mean, var = (n.input(i) for i in range(1, 5))
    require_float(n, x)
    epsilon = float(n.attr("epsilon", 1e-5))
    n.attr("momentum")  # only updates running statistics in training
    if n.opset >= 14 and n.attr("training_mode", 0):
        n.fail("training_mode = 1 is not supported (inference only)")
    _only_first_output(n, "training (running / saved statistics)")
    if x.rank < 2:
        n.fail(f"X must have rank ≥ 2, got {x.rank}")
    channels = (x.shape[1], *(1,) * (x.rank - 2))
    if n.opset < 9 and not n.attr("spatial", 1):
        channels = n.static_shape(x)[1:]  # statistics per channel and position
    if not x.shape[1]:
        n.fail(f"X has an unknown channel dim {list(x.shape)}; pass input_shapes=")
    for v in (scale, bias, mean, var):
        if v.const is not None and v.const.size != math.prod(channels):
            n.fail(f"parameter {v.name!r} has shape {list(v.shape)}, expected "
                   f"{math.prod(channels)} values")
    g = n.graph
    if all(v.const is not None for v in (scale, bias, mean, var)):
        factor, shift = _folded(scale, bias, mean, var, epsilon)
        a = Value("", x.dtype, channels, const=factor.astype(x.dtype).reshape(channels))
        b = Value("", x.dtype, channels, const=shift.astype(x.dtype).reshape(channels))
        return [g.op(Op.ADD, g.op(Op.MUL, x, a, 0), b, 0)]
    scale, bias, mean, var = (_per_channel(n, v, x, channels) for v in (scale, bias, mean, var))
    eps = Value("", x.dtype, (1,), const=np.asarray([epsilon], x.dtype))
    std = g.op(Op.SQRT, g.op(Op.ADD, var, eps, 0))
    normal = g.op(Op.DIV, g.op(Op.SUB, x, mean, 0), std, 0)
    return [g.op(Op.ADD, g.op(Op.MUL, normal, scale, 0), bias, 0)]


def _folded(scale: Value, bias: Value, mean: Value, var: Value,
            epsilon: float) -> tuple[Array, Array]:
    """``scale / sqrt(var + eps)`` and ``B - mean * that``, in float64."""
    s, b, m, v = (np.asarray(p.const, np.float64).reshape(-1) for p in (scale, bias, mean, var))
    factor = s / np.sqrt(v + epsilon)
    return factor, b - m * factor


# -- LayerNormalization ----------------------------------------------------------------------


@converter("LayerNormalization")
def layer_normalization(n: NodeContext) -> list[Value]:
    """LayerNormalization: com.nnrt.LAYER_NORMALIZATION over the axes from ``axis`` on."""
    x, scale = n.input(0), n.input(1)
    require_float(n, x)
    axis = int(n.attr("axis", -1))
    epsilon = float(n.attr("epsilon", 1e-5))
    stash_type = int(n.attr("stash_type", 1))
    if stash_type != 1:
        n.fail(f"stash_type {stash_type} is not supported (only 1: float32 statistics)")
    if not -x.rank <= axis < x.rank:
        n.fail(f"axis {axis} is out of range for rank {x.rank}")
    tail = x.shape[axis:]
    scale = _affine(n, scale, x, tail)
    bias = _affine(n, n.input(2), x, tail) if n.has_input(2) else Omitted()
    y = n.graph.op(Op.NNRT_LAYER_NORMALIZATION, x, scale, bias, axis, epsilon)
    if not any(list(n.node.output)[1:]):
        return [y]
    return [y, *_layer_statistics(n, x, axis % x.rank, epsilon)]


def _layer_statistics(n: NodeContext, x: Value, axis: int, epsilon: float) -> list[Value]:
    """LayerNormalization's Mean and InvStdDev outputs: ``mean(x)`` and
    ``1 / sqrt(mean((x - mean) ** 2) + epsilon)`` over the axes from ``axis`` on, kept."""
    if x.dtype != np.float32:
        n.fail(f"the Mean / InvStdDev outputs of a {x.dtype} X are not supported")
    shape = n.static_shape(x)
    rows = math.prod(shape[:axis])
    flat = reshape(n, x, (rows, math.prod(shape[axis:])))
    g = n.graph
    one = np.asarray([1], np.int32)
    mean = g.op(Op.MEAN, flat, one, 1)
    centred = g.op(Op.SUB, flat, mean, 0)
    variance = g.op(Op.MEAN, g.op(Op.MUL, centred, centred, 0), one, 1)
    eps = Value("", x.dtype, (1,), const=np.asarray([epsilon], x.dtype))
    inv_std = g.op(Op.RSQRT, g.op(Op.ADD, variance, eps, 0))
    kept = shape[:axis] + (1,) * (x.rank - axis)
    return [reshape(n, mean, kept), reshape(n, inv_std, kept)]


def _affine(n: NodeContext, v: Value, x: Value, tail: tuple[int, ...]) -> Value:
    """Scale / bias in X's dtype; it must broadcast to ``X.shape[axis:]``."""
    try:
        np.broadcast_shapes(v.shape, tail)
    except ValueError:
        n.fail(f"parameter {v.name!r} of shape {list(v.shape)} does not broadcast to the "
               f"normalised dims {list(tail)}")
    if v.dtype == x.dtype:
        return v
    if v.const is None:
        n.fail(f"parameter {v.name!r} is {v.dtype} but X is {x.dtype}")
    return Value("", x.dtype, v.shape, const=v.const.astype(x.dtype))


# -- InstanceNormalization -------------------------------------------------------------------


@converter("InstanceNormalization")
def instance_normalization(n: NodeContext) -> list[Value]:
    """InstanceNormalization: INSTANCE_NORMALIZATION (NCHW), then per-channel scale and bias."""
    x, scale, bias = n.input(0), n.input(1), n.input(2)
    require_float(n, x)
    epsilon = float(n.attr("epsilon", 1e-5))
    if x.rank < 3:
        n.fail(f"X must have rank ≥ 3 (N, C, spatial…), got {x.rank}")
    x4 = x
    if x.rank != 4:
        shape = n.static_shape(x)
        x4 = reshape(n, x, (*shape[:2], math.prod(shape[2:]), 1))
    g = n.graph
    y = g.op(Op.INSTANCE_NORMALIZATION, x4, 1.0, 0.0, epsilon, True)
    channels = (x.shape[1] or scale.shape[0], 1, 1)
    if scale.const is None or np.any(scale.const != 1):
        y = g.op(Op.MUL, y, _per_channel(n, scale, x, channels), 0)
    if bias.const is None or np.any(bias.const != 0):
        y = g.op(Op.ADD, y, _per_channel(n, bias, x, channels), 0)
    return [y if x.rank == 4 else reshape(n, y, x.shape)]


# -- Softmax, LogSoftmax ---------------------------------------------------------------------


@converter("Softmax", "LogSoftmax")
def softmax(n: NodeContext) -> list[Value]:
    """Softmax / LogSoftmax: SOFTMAX / LOG_SOFTMAX with beta 1 (opset < 13: over the input
    flattened to 2-D at ``axis``)."""
    x = n.input(0)
    require_float(n, x)
    op = Op.SOFTMAX if n.op_type == "Softmax" else Op.LOG_SOFTMAX
    if x.rank == 0:
        n.fail("a scalar input is not supported")
    legacy = n.opset < 13
    axis = int(n.attr("axis", 1 if legacy else -1))
    if not -x.rank <= axis < x.rank + legacy:
        n.fail(f"axis {axis} is out of range for rank {x.rank}")
    if axis < 0:
        axis += x.rank
    if op == Op.SOFTMAX and x.rank > _MAX_RANK:
        n.fail(f"rank {x.rank} inputs are not supported (nnrt's SOFTMAX takes rank ≤ {_MAX_RANK})")
    if legacy and axis != x.rank - 1:
        shape = x.shape
        flat = reshape(n, x, (known_product(shape[:axis]), known_product(shape[axis:])))
        return [reshape(n, n.graph.op(op, flat, 1.0, 1), shape)]
    return [n.graph.op(op, x, 1.0, axis)]
