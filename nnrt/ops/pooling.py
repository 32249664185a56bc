"""2-D pooling: AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D.

NNAPI signatures (all three share them):

* explicit padding, 10 inputs (+ optional layout at 10): input, padding left, right, top, bottom,
  stride width, stride height, filter width, filter height (all INT32), fused activation;
* implicit padding, 7 inputs (+ optional layout at 7): input, padding scheme (1 SAME, 2 VALID),
  stride width, stride height, filter width, filter height, fused activation.

Input 0 is a 4-D tensor, NHWC unless the BOOL layout flag is true (NCHW). Types: TENSOR_FLOAT32,
TENSOR_FLOAT16, and for AVERAGE / MAX also TENSOR_QUANT8_ASYMM(_SIGNED) (output scale and zero
point equal to the input's); the quantised variants validate but have no kernel here. Strides
and filter sizes are positive, explicit paddings non-negative and smaller than the filter size
on their side. The output has the input's type and shape ``[batches, out_h, out_w, depth]``
with ``out = (size + pad_head + pad_tail - filter) // stride + 1``.

Windows only cover real elements: AVERAGE divides by the number of non-padding elements, L2 is
the square root of the mean of squares over them, MAX ignores padding.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import OperationDef, Shape, add_definition
from nnrt.ops.fused import apply_activation
from nnrt.ops.padding import conv_out_size
from nnrt.ops.pooling_geometry import (
    EXPLICIT_COUNTS,
    EXPLICIT_NAMES,
    IMPLICIT_COUNTS,
    IMPLICIT_NAMES,
    PoolParams,
    check_params,
    layout_slot,
    param_slots,
    read_params,
)

T = OperandType
Array = np.ndarray[Any, Any]

INPUT = 0

_FLOAT_TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
_QUANT_TYPES = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
_TYPES: dict[OperationType, tuple[OperandType, ...]] = {
    OperationType.AVERAGE_POOL_2D: _FLOAT_TYPES + _QUANT_TYPES,
    OperationType.MAX_POOL_2D: _FLOAT_TYPES + _QUANT_TYPES,
    OperationType.L2_POOL_2D: _FLOAT_TYPES,
}
_KERNEL_TYPES = frozenset(_FLOAT_TYPES)


def _validate(ctx: OperationContext) -> None:
    ctx.expect_counts((*IMPLICIT_COUNTS, *EXPLICIT_COUNTS), 1)
    t = ctx.expect_type(INPUT, *_TYPES[ctx.op_type])
    slots = param_slots(ctx)
    for slot in slots.values():
        ctx.expect_scalar(slot, T.INT32)
    ctx.expect_activation(slots["activation"])
    layout = layout_slot(ctx)
    if layout < ctx.n_inputs:
        ctx.expect_optional_type(layout, T.BOOL)
    ctx.expect_rank(INPUT, 4)
    ctx.expect_output_like_input(0, INPUT)
    if t in _QUANT_TYPES:
        src, dst = ctx.operand(INPUT), ctx.output_operand(0)
        if (dst.scale, dst.zero_point) != (src.scale, src.zero_point):
            ctx.fail(f"{t.name} output needs the input's scale and zero point "
                     f"({src.scale}, {src.zero_point}), got ({dst.scale}, {dst.zero_point})",
                     output=0)
    check_params(ctx, static=True)


def _nhwc(shape: Shape, nchw: bool) -> tuple[int, int, int, int]:
    n, a, b, c = shape
    return (n, b, c, a) if nchw else (n, a, b, c)


def _geometry(ctx: OperationContext, shape: Shape) -> tuple[PoolParams, int, int]:
    """Checked parameters and the output height and width for an input of ``shape``."""
    if len(shape) != 4:
        ctx.fail(f"expected rank 4, got {len(shape)}", input=INPUT)
    check_params(ctx, static=False)
    p = read_params(ctx, shape)
    _, h, w, c = _nhwc(shape, p.nchw)
    if min(h, w, c) <= 0:
        ctx.fail(f"height, width and depth must be positive, got shape {shape}", input=INPUT)
    slots = param_slots(ctx)
    for size, filt, head, tail, name in ((h, p.filter_h, p.pad_top, p.pad_bottom, "height"),
                                         (w, p.filter_w, p.pad_left, p.pad_right, "width")):
        if size + head + tail < filt:
            ctx.fail(f"filter {name} {filt} exceeds the padded input {name} "
                     f"{size + head + tail}", input=slots[f"filter_{name}"])
    oh = conv_out_size(h, p.filter_h, p.stride_h, 1, (p.pad_top, p.pad_bottom))
    ow = conv_out_size(w, p.filter_w, p.stride_w, 1, (p.pad_left, p.pad_right))
    return p, oh, ow


def _prepare(ctx: OperationContext) -> list[Shape]:
    shape = ctx.shape(INPUT)
    p, oh, ow = _geometry(ctx, shape)
    n, _, _, c = _nhwc(shape, p.nchw)
    return [(n, c, oh, ow) if p.nchw else (n, oh, ow, c)]


def _windows(padded: Array, p: PoolParams, oh: int, ow: int) -> list[Array]:
    """Every filter tap's view of ``padded`` (NHWC) at all output positions."""
    views = []
    for dy in range(p.filter_h):
        for dx in range(p.filter_w):
            views.append(padded[:, dy:dy + (oh - 1) * p.stride_h + 1:p.stride_h,
                                dx:dx + (ow - 1) * p.stride_w + 1:p.stride_w, :])
    return views


def _execute(ctx: ExecutionContext) -> list[Array]:
    x = ctx.tensor(INPUT).astype(np.float64)
    p, oh, ow = _geometry(ctx, tuple(x.shape))
    if p.nchw:
        x = x.transpose(0, 2, 3, 1)
    pads = ((0, 0), (p.pad_top, p.pad_bottom), (p.pad_left, p.pad_right), (0, 0))
    if ctx.op_type == OperationType.MAX_POOL_2D:
        padded = np.pad(x, pads, constant_values=-np.inf)
        result = np.full((x.shape[0], oh, ow, x.shape[3]), -np.inf)
        for view in _windows(padded, p, oh, ow):
            result = np.maximum(result, view)
    else:
        values = x * x if ctx.op_type == OperationType.L2_POOL_2D else x
        padded = np.pad(values, pads)
        valid = np.pad(np.ones((1, x.shape[1], x.shape[2], 1)), pads)
        total = np.zeros((x.shape[0], oh, ow, x.shape[3]))
        count = np.zeros((1, oh, ow, 1))
        for view, ones in zip(_windows(padded, p, oh, ow), _windows(valid, p, oh, ow),
                              strict=True):
            total = total + view
            count = count + ones
        result = total / count
        if ctx.op_type == OperationType.L2_POOL_2D:
            result = np.sqrt(result)
    result = apply_activation(result, p.activation)
    if p.nchw:
        result = result.transpose(0, 3, 1, 2)
    return [result]


for _op in (OperationType.AVERAGE_POOL_2D, OperationType.MAX_POOL_2D,
            OperationType.L2_POOL_2D):
    add_definition(OperationDef(
        type=_op, validate=_validate, prepare=_prepare, execute=_execute,
        inputs=EXPLICIT_NAMES, kernel_types=_KERNEL_TYPES,
        signatures={n: IMPLICIT_NAMES for n in IMPLICIT_COUNTS},
    ))
