"""2-D pooling: AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D.

NNAPI signatures (all three share them):

* explicit padding, 10 inputs (+ optional layout at 10): input, padding left, right, top, bottom,
  stride width, stride height, filter width, filter height (all INT32), fused activation;
* implicit padding, 7 inputs (+ optional layout at 7): input, padding scheme (1 SAME, 2 VALID),
  stride width, stride height, filter width, filter height, fused activation.

Input 0 is a 4-D tensor, NHWC unless the BOOL layout flag is true (NCHW). Types: TENSOR_FLOAT32,
TENSOR_FLOAT16, and for AVERAGE / MAX also TENSOR_QUANT8_ASYMM(_SIGNED) (output scale and zero
point equal to the input's). Strides and filter sizes are positive, explicit paddings
non-negative and smaller than the filter size on their side. The output has the input's type and
shape ``[batches, out_h, out_w, depth]`` with ``out = (size + pad_head + pad_tail - filter) //
stride + 1``.

Windows only cover real elements: AVERAGE divides by the number of non-padding elements, L2 is
the square root of the mean of squares over them, MAX ignores padding. The quantised variants
work on the stored integers (input and output share scale and zero point), as NNAPI's CPU
executor does: MAX takes their maximum; AVERAGE sums them in int32 and divides with rounding
half away from zero, ``sign(s) * ((|s| + n // 2) // n)`` for a sum ``s`` of ``n`` elements
(TFLite's uint8 and int8 kernels); both then clamp to the fused activation's quantised range.
"""

from __future__ import annotations

from collections.abc import Callable
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
from nnrt.ops.quant import activation_range, is_quantized, saturate

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


def _execute(ctx: ExecutionContext) -> list[Array]:
    x = ctx.tensor(INPUT)
    p, oh, ow = _geometry(ctx, tuple(x.shape))
    if p.nchw:
        x = x.transpose(0, 2, 3, 1)
    quantised = is_quantized(ctx.input_type(INPUT))
    values: Array = x.astype(np.int64 if quantised else np.float64)
    result: Array
    if ctx.op_type == OperationType.MAX_POOL_2D:
        result = _max(values, p, oh, ow)
    else:
        if ctx.op_type == OperationType.L2_POOL_2D:
            values = values * values
        total, count = _sums(values, p, oh, ow)
        if quantised:
            result = np.sign(total) * ((np.abs(total) + count // 2) // count)
        else:
            result = total / count
        if ctx.op_type == OperationType.L2_POOL_2D:
            result = np.sqrt(result)
    if quantised:
        operand = ctx.output_operand(0)
        low, high = activation_range(p.activation, operand.scale, operand.zero_point,
                                     operand.type)
        result = saturate(result, operand.type, low, high)
    else:
        result = apply_activation(result, p.activation)
    if p.nchw:
        result = result.transpose(0, 3, 1, 2)
    return [result]


def _pads(p: PoolParams) -> tuple[tuple[int, int], ...]:
    return (0, 0), (p.pad_top, p.pad_bottom), (p.pad_left, p.pad_right), (0, 0)


def _along(x: Array, axis: int, size: int, stride: int, n_out: int,
           combine: Callable[[Array, Array], Array]) -> Array:
    """``combine`` of the ``size`` taps of each window along ``axis`` (1 or 2), strided."""
    end = (n_out - 1) * stride + 1
    result = None
    for k in range(size):
        index = [slice(None)] * 4
        index[axis] = slice(k, k + end, stride)
        view = x[tuple(index)]
        result = view if result is None else combine(result, view)
    return np.asarray(result)


def _reduce(padded: Array, p: PoolParams, oh: int, ow: int,
            combine: Callable[[Array, Array], Array]) -> Array:
    """``combine`` over every window of ``padded`` (NHWC): rows first, then columns."""
    rows = _along(padded, 1, p.filter_h, p.stride_h, oh, combine)
    return _along(rows, 2, p.filter_w, p.stride_w, ow, combine)


def _max(x: Array, p: PoolParams, oh: int, ow: int) -> Array:
    """The maximum over each window's real elements (every window holds at least one)."""
    low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    return _reduce(np.pad(x, _pads(p), constant_values=low), p, oh, ow, np.maximum)


def _sums(x: Array, p: PoolParams, oh: int, ow: int) -> tuple[Array, Array]:
    """The sum over each window's real elements and their count (``[1, oh, ow, 1]``)."""
    valid = np.pad(np.ones((1, x.shape[1], x.shape[2], 1), np.int64), _pads(p))
    return (_reduce(np.pad(x, _pads(p)), p, oh, ow, np.add),
            _reduce(valid, p, oh, ow, np.add))


for _op in (OperationType.AVERAGE_POOL_2D, OperationType.MAX_POOL_2D,
            OperationType.L2_POOL_2D):
    add_definition(OperationDef(
        type=_op, validate=_validate, prepare=_prepare, execute=_execute,
        inputs=EXPLICIT_NAMES, kernel_types=frozenset(_TYPES[_op]),
        signatures={n: IMPLICIT_NAMES for n in IMPLICIT_COUNTS},
    ))
