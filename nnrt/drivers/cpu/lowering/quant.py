"""Lowering of quantised operations onto :mod:`nnrt.drivers.cpu.kernels.quant`.

Every quantisation parameter is fixed at compile time, so the lowering turns them into the
kernels' integer constants once: filters minus their zero point as float64 GEMM matrices,
per-channel quantised multipliers and shifts, zero points and the fused activation's clamp in
the quantised domain (:func:`nnrt.ops.quant.activation_range`). A function of one quantised
input becomes a 256-entry table computed by the reference kernel itself
(:func:`nnrt.reference.single.evaluate_operation`), so it equals the reference by
construction. Data movement on quantised tensors (RESHAPE, TRANSPOSE, ...) needs no lowering
of its own: those operations keep the input's quantisation and their float lowerings move
integers as they move floats.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.drivers.cpu.graph import Ref
from nnrt.drivers.cpu.lowering.base import Lowerer, Lowering
from nnrt.drivers.cpu.lowering.nn import conv_geometry, pool_counts
from nnrt.model.model import Model
from nnrt.model.operand import dtype_of
from nnrt.model.types import OperationType
from nnrt.ops._framework.context import OperationContext
from nnrt.ops.binary import quant8_multipliers
from nnrt.ops.conv_geometry import nhwc_dims
from nnrt.ops.conv_quant import channel_multipliers
from nnrt.ops.pad import PADDINGS, PARAM
from nnrt.ops.pooling_geometry import check_params, read_params
from nnrt.ops.quant import QUANT_RANGES, activation_range
from nnrt.ops.shape_params import int_matrix
from nnrt.ops.softmax import optional_axis
from nnrt.reference.single import evaluate_operation

__all__ = ["QUANT_LOWERINGS", "TABULATED"]

Op = OperationType
Array = np.ndarray[Any, Any]

#: Operations of one quantised data input computed by a table of its values.
TABULATED = frozenset({Op.RELU, Op.RELU1, Op.RELU6, Op.LOGISTIC, Op.TANH, Op.HARD_SWISH,
                       Op.DEQUANTIZE})


def _nchw(ctx: OperationContext) -> bool:
    if ctx.op_type == Op.FULLY_CONNECTED:
        return False
    return conv_geometry(ctx, None if ctx.op_type == Op.CONV_2D else "depth_multiplier")[1]


def _rescale(lw: Lowerer, ctx: OperationContext, activation: int) -> tuple[Any, ...]:
    """(multipliers, shifts, output zero point, low, high) of a CONV / FC style operation."""
    op = ctx.operation
    operands = lw.model.operands
    x, w, y = operands[op.inputs[0]], operands[op.inputs[1]], operands[op.outputs[0]]
    channels = lw.shape(op.outputs[0])[-1 if not _nchw(ctx) else 1]
    scales = (w.channel_quant.scales if w.channel_quant is not None else (w.scale,) * channels)
    mults, shifts = channel_multipliers(x.scale, scales, y.scale)
    mult, shift = lw.constant(mults, "int64"), lw.constant(shifts, "int64")
    low, high = activation_range(activation, y.scale, y.zero_point, y.type)
    return mult, shift, y.zero_point, low, high


def _offset_weights(lw: Lowerer, operand_index: int) -> Array:
    operand = lw.model.operands[operand_index]
    value = lw.const_of(operand_index)
    if value is None:  # the partition step takes only constant weights
        raise ValueError(f"operand {operand_index}: quantised weights must be constant")
    return np.asarray(value, np.float64) - operand.zero_point


def _bias(lw: Lowerer, operand_index: int) -> Ref:
    value = lw.const_of(operand_index)
    if value is None:
        raise ValueError(f"operand {operand_index}: quantised bias must be constant")
    return lw.constant(np.asarray(value, np.float64), "float64")


def _conv(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    g, nchw = conv_geometry(ctx, None)
    depth_out = lw.shape(op.inputs[1])[0]
    w = _offset_weights(lw, op.inputs[1])
    wm = lw.constant(w.reshape(depth_out, -1).T, "float64")
    geo = (g.pad_top, g.pad_bottom, g.pad_left, g.pad_right, g.stride_h, g.stride_w,
           *lw.shape(op.inputs[1])[1:3])
    mult, shift, zero, low, high = _rescale(lw, ctx, g.activation)
    out = lw.result(op.outputs[0])
    lw.emit("q_conv", out, [lw.ref(op.inputs[0]), wm, _bias(lw, op.inputs[2]),
                            lw.model.operands[op.inputs[0]].zero_point, geo, mult, shift, zero,
                            low, high, nchw], ctx.index)


def _depthwise(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    g, nchw = conv_geometry(ctx, "depth_multiplier")
    _, kh, kw, depth_out = lw.shape(op.inputs[1])
    w = _offset_weights(lw, op.inputs[1])
    wt = lw.constant(w.reshape(kh * kw, depth_out), "float64")
    geo = (g.pad_top, g.pad_bottom, g.pad_left, g.pad_right, g.stride_h, g.stride_w, kh, kw)
    mult, shift, zero, low, high = _rescale(lw, ctx, g.activation)
    out = lw.result(op.outputs[0])
    lw.emit("q_depthwise", out, [lw.ref(op.inputs[0]), wt, _bias(lw, op.inputs[2]),
                                 lw.model.operands[op.inputs[0]].zero_point, geo, g.extra,
                                 mult, shift, zero, low, high, nchw], ctx.index)


def _fully_connected(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    w = _offset_weights(lw, op.inputs[1])
    wt = lw.constant(w.T, "float64")
    mult, shift, zero, low, high = _rescale(lw, ctx, int(ctx.value(3)))
    out = lw.result(op.outputs[0])
    lw.emit("q_fc", out, [lw.ref(op.inputs[0]), wt, _bias(lw, op.inputs[2]),
                          lw.model.operands[op.inputs[0]].zero_point, mult, shift, zero, low,
                          high], ctx.index)


def _add_sub_mul(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    a, b, y = (lw.model.operands[k] for k in (*op.inputs[:2], op.outputs[0]))
    multipliers = quant8_multipliers(ctx.op_type, a.scale, b.scale, y.scale)
    low, high = activation_range(int(ctx.value(2)), y.scale, y.zero_point, y.type)
    out = lw.result(op.outputs[0])
    zeros = (a.zero_point, b.zero_point, y.zero_point)
    x1, x2 = lw.ref(op.inputs[0]), lw.ref(op.inputs[1])
    if ctx.op_type == Op.MUL:
        lw.emit("q_mul", out, [x1, x2, zeros, *multipliers[0], low, high], ctx.index)
        return
    lw.emit("q_add", out, [x1, x2, zeros, tuple(m for m, _ in multipliers),
                           tuple(s for _, s in multipliers), low, high], ctx.index)


def _pool(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    in_shape, out_shape = lw.shape(op.inputs[0]), lw.shape(op.outputs[0])
    check_params(ctx, static=False)
    p = read_params(ctx, in_shape)
    geo = (p.pad_top, p.pad_bottom, p.pad_left, p.pad_right, p.stride_h, p.stride_w,
           p.filter_h, p.filter_w)
    y = lw.model.operands[op.outputs[0]]
    low, high = activation_range(p.activation, y.scale, y.zero_point, y.type)
    out = lw.result(op.outputs[0])
    x = lw.ref(op.inputs[0])
    if ctx.op_type == Op.MAX_POOL_2D:
        lw.emit("q_max_pool", out, [x, geo, low, high, p.nchw], ctx.index)
        return
    _, h, w, _ = nhwc_dims(in_shape, p.nchw)
    _, oh, ow, _ = nhwc_dims(out_shape, p.nchw)
    counts = np.rint(pool_counts((h, w), geo, (oh, ow))).astype(np.int64)
    lw.emit("q_avg_pool", out, [x, lw.constant(counts, "int64"), geo, low, high, p.nchw],
            ctx.index)


def _softmax(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    x, y = lw.model.operands[op.inputs[0]], lw.model.operands[op.outputs[0]]
    axis = optional_axis(ctx, 2, len(lw.shape(op.inputs[0])))
    out = lw.result(op.outputs[0])
    lw.emit("q_softmax", out, [lw.ref(op.inputs[0]), axis, float(ctx.value(1)), x.scale,
                               y.zero_point, int(y.type)], ctx.index)


def _mean(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    rank = len(lw.shape(op.inputs[0]))
    axes = tuple(sorted({int(a) % rank for a in np.asarray(ctx.value(1)).reshape(-1)}))
    out = lw.result(op.outputs[0])
    lw.emit("q_mean", out, [lw.ref(op.inputs[0]), axes], ctx.index)


def _pad(lw: Lowerer, ctx: OperationContext) -> None:
    """PAD fills with the zero point (real 0), PAD_V2 with its given quantised value."""
    op = ctx.operation
    shape = lw.shape(op.inputs[0])
    pads = tuple(int_matrix(ctx, PADDINGS, len(shape)))
    x = lw.model.operands[op.inputs[0]]
    value = int(ctx.value(PARAM)) if ctx.op_type == Op.PAD_V2 else x.zero_point
    out = lw.result(op.outputs[0])
    lw.emit("pad", out, [lw.ref(op.inputs[0]), pads, float(value)], ctx.index)


def _tabulated(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    table, offset = lookup_table(lw.model, ctx.index)
    out = lw.result(op.outputs[0])
    lw.emit("q_lut", out, [lw.ref(op.inputs[0]), lw.constant(table, table.dtype.name), offset],
            ctx.index)


def lookup_table(model: Model, index: int) -> tuple[Array, int]:
    """The results of operation ``index`` for every value of its quantised input 0, computed by
    the reference kernel, and the offset from an input value to its entry."""
    op = model.operations[index]
    x = model.operands[op.inputs[0]]
    low, high = QUANT_RANGES[x.type]
    values = np.arange(low, high + 1).astype(dtype_of(x.type))
    results = evaluate_operation(model, index, {op.inputs[0]: values},
                                 output_dims=[values.shape])
    if results is None:
        raise ValueError(f"operation {index} ({op.type.name}): the reference kernel cannot "
                         "tabulate it")
    return np.ascontiguousarray(results[0]), -low


QUANT_LOWERINGS: dict[OperationType, Lowering] = {
    Op.CONV_2D: _conv,
    Op.DEPTHWISE_CONV_2D: _depthwise,
    Op.FULLY_CONNECTED: _fully_connected,
    Op.ADD: _add_sub_mul,
    Op.SUB: _add_sub_mul,
    Op.MUL: _add_sub_mul,
    Op.MAX_POOL_2D: _pool,
    Op.AVERAGE_POOL_2D: _pool,
    Op.SOFTMAX: _softmax,
    Op.MEAN: _mean,
    Op.PAD: _pad,
    Op.PAD_V2: _pad,
    **dict.fromkeys(TABULATED, _tabulated),
}
