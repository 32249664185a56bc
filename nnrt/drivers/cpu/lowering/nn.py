"""Lowering of matrix, convolution and pooling operations, with weight pre-packing.

Their kernels are in :mod:`nnrt.drivers.cpu.kernels.nn` (convolutions, pooling) and
:mod:`nnrt.drivers.cpu.kernels.basic` (FULLY_CONNECTED, BATCH_MATMUL).

Constant weights are packed at compile time into the layout their kernel wants (they become
tensors of the bytecode module); weights computed at execution time get a packing call instead:

* FULLY_CONNECTED weights ``[units, in]`` -> ``[in, units]`` contiguous (a plain GEMM operand);
* CONV_2D filters ``[out, kh, kw, in]`` -> the GEMM matrix ``[kh * kw * in, out]`` of im2col;
* DEPTHWISE_CONV_2D filters ``[1, kh, kw, out]`` -> ``[kh * kw, out]``, one row per tap;
* a constant BATCH_MATMUL right-hand side with ``adj_y`` is stored transposed.

Convolution and pooling geometry (signatures, implicit padding, layout) is read with the
reference kernels' own helpers, so both interpret NNAPI's parameters identically.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nnrt.drivers.cpu.graph import Ref
from nnrt.drivers.cpu.lowering.base import Lowerer, Lowering
from nnrt.model.types import OperationType
from nnrt.ops._framework.context import OperationContext
from nnrt.ops.conv_geometry import (
    Geometry,
    layout_of,
    nhwc_dims,
    optional_tail_signature,
    read_geometry,
)
from nnrt.ops.pooling_geometry import check_params, read_params

__all__ = ["NN_LOWERINGS", "conv_geometry", "pool_counts"]

Op = OperationType
Array = np.ndarray[Any, Any]


def _fully_connected(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    units, size = lw.shape(op.inputs[1])
    weights = lw.const_of(op.inputs[1])
    if weights is not None:
        wt = lw.constant(np.ascontiguousarray(np.asarray(weights, np.float32).T))
    else:
        wt = lw.intermediate((size, units))
        lw.emit("pack_fc", wt.value, [lw.ref(op.inputs[1])], ctx.index)
    out = lw.result(op.outputs[0])
    lw.emit("fc", out, [lw.ref(op.inputs[0]), wt, lw.ref(op.inputs[2]), int(ctx.value(3))],
            ctx.index, act_slot=3)


def _batch_matmul(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    adj_x = False if ctx.is_omitted(2) else bool(ctx.value(2))
    adj_y = False if ctx.is_omitted(3) else bool(ctx.value(3))
    rhs = lw.const_of(op.inputs[1])
    if rhs is not None and adj_y:
        b = lw.constant(np.swapaxes(np.asarray(rhs, np.float32), -1, -2))
        adj_y = False
    else:
        b = lw.ref(op.inputs[1])
    out = lw.result(op.outputs[0])
    lw.emit("batch_matmul", out, [lw.ref(op.inputs[0]), b, adj_x, adj_y], ctx.index)


def conv_geometry(ctx: OperationContext, extra: str | None) -> tuple[Geometry, bool]:
    """The resolved geometry of a CONV_2D (``extra`` None) or DEPTHWISE_CONV_2D operation."""
    sig = optional_tail_signature(ctx, extra)
    nchw = layout_of(ctx, sig)
    _, height, width, _ = nhwc_dims(ctx.shape(0), nchw)
    filt = ctx.shape(1)
    return read_geometry(ctx, sig, spatial=(height, width), filter_hw=(filt[1], filt[2])), nchw


def _geo_tuple(top: int, bottom: int, left: int, right: int, stride_h: int, stride_w: int,
               kh: int, kw: int) -> tuple[int, ...]:
    return (top, bottom, left, right, stride_h, stride_w, kh, kw)


def _window_temps(lw: Lowerer, in_shape: tuple[int, ...], out_shape: tuple[int, ...],
                  geo: tuple[int, ...], nchw: bool, channels: int | None = None
                  ) -> tuple[Ref | None, Ref | None]:
    """(padded input, NHWC result) scratch buffers a window kernel needs (None if not)."""
    n, h, w, c = nhwc_dims(in_shape, nchw)
    top, bottom, left, right = geo[:4]
    padded = None
    if top or bottom or left or right:
        padded = lw.temp((n, h + top + bottom, w + left + right, channels or c))
    result = lw.temp(nhwc_dims(out_shape, nchw)) if nchw else None
    return padded, result


def _conv(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    g, nchw = conv_geometry(ctx, None)
    depth_out, kh, kw, depth_in = lw.shape(op.inputs[1])
    geo = _geo_tuple(g.pad_top, g.pad_bottom, g.pad_left, g.pad_right, g.stride_h, g.stride_w,
                     kh, kw)
    filt = lw.const_of(op.inputs[1])
    if filt is not None:
        wm = lw.constant(np.asarray(filt, np.float32).reshape(depth_out, -1).T)
    else:
        wm = lw.intermediate((kh * kw * depth_in, depth_out))
        lw.emit("pack_conv", wm.value, [lw.ref(op.inputs[1])], ctx.index)
    in_shape, out_shape = lw.shape(op.inputs[0]), lw.shape(op.outputs[0])
    padded, result = _window_temps(lw, in_shape, out_shape, geo, nchw)
    n, oh, ow, _ = nhwc_dims(out_shape, nchw)
    direct = (kh, kw, g.stride_h, g.stride_w) == (1, 1, 1, 1) and padded is None
    cols = None if direct else lw.temp((n, oh, ow, kh, kw, depth_in))
    out = lw.result(op.outputs[0])
    lw.emit("conv", out, [lw.ref(op.inputs[0]), wm, lw.ref(op.inputs[2]), padded, cols, result,
                          geo, g.activation, nchw], ctx.index, act_slot=7)


def _depthwise(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    g, nchw = conv_geometry(ctx, "depth_multiplier")
    _, kh, kw, depth_out = lw.shape(op.inputs[1])
    geo = _geo_tuple(g.pad_top, g.pad_bottom, g.pad_left, g.pad_right, g.stride_h, g.stride_w,
                     kh, kw)
    filt = lw.const_of(op.inputs[1])
    if filt is not None:
        wt = lw.constant(np.asarray(filt, np.float32).reshape(kh * kw, depth_out))
    else:
        wt = lw.view("view", None, [lw.ref(op.inputs[1]), (kh * kw, depth_out)], ctx.index,
                     (kh * kw, depth_out))
    in_shape, out_shape = lw.shape(op.inputs[0]), lw.shape(op.outputs[0])
    padded, result = _window_temps(lw, in_shape, out_shape, geo, nchw, depth_out)
    tmp = lw.temp(nhwc_dims(out_shape, nchw))
    out = lw.result(op.outputs[0])
    lw.emit("depthwise", out, [lw.ref(op.inputs[0]), wt, lw.ref(op.inputs[2]), padded, tmp,
                               result, geo, g.extra, g.activation, nchw], ctx.index, act_slot=8)


def pool_counts(shape: tuple[int, int], geo: tuple[int, ...], out_hw: tuple[int, int]
                ) -> Array:
    """Per output position, how many real (unpadded) input elements its window covers."""
    top, bottom, left, right, sh, sw, kh, kw = geo
    valid = np.pad(np.ones(shape, np.float32), ((top, bottom), (left, right)))
    oh, ow = out_hw
    counts = np.zeros(out_hw, np.float32)
    for i in range(kh):
        for j in range(kw):
            counts += valid[i:i + (oh - 1) * sh + 1:sh, j:j + (ow - 1) * sw + 1:sw]
    return counts.reshape(1, oh, ow, 1)


def _pool(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    in_shape, out_shape = lw.shape(op.inputs[0]), lw.shape(op.outputs[0])
    check_params(ctx, static=False)
    p = read_params(ctx, in_shape)
    geo = _geo_tuple(p.pad_top, p.pad_bottom, p.pad_left, p.pad_right, p.stride_h, p.stride_w,
                     p.filter_h, p.filter_w)
    padded, result = _window_temps(lw, in_shape, out_shape, geo, p.nchw)
    out = lw.result(op.outputs[0])
    x = lw.ref(op.inputs[0])
    if ctx.op_type == Op.MAX_POOL_2D:
        lw.emit("max_pool", out, [x, padded, result, geo, p.activation, p.nchw], ctx.index,
                act_slot=4)
        return
    _, h, w, _ = nhwc_dims(in_shape, p.nchw)
    _, oh, ow, _ = nhwc_dims(out_shape, p.nchw)
    counts: Ref | float = float(p.filter_h * p.filter_w)
    if padded is not None:
        table = pool_counts((h, w), geo, (oh, ow))
        if not np.all(table == math.prod((p.filter_h, p.filter_w))):
            counts = lw.constant(table)
    lw.emit("avg_pool", out, [x, padded, result, counts, geo, p.activation, p.nchw],
            ctx.index, act_slot=5)


NN_LOWERINGS: dict[OperationType, Lowering] = {
    Op.FULLY_CONNECTED: _fully_connected,
    Op.BATCH_MATMUL: _batch_matmul,
    Op.CONV_2D: _conv,
    Op.DEPTHWISE_CONV_2D: _depthwise,
    Op.MAX_POOL_2D: _pool,
    Op.AVERAGE_POOL_2D: _pool,
}
