"""Image resizing: RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR.

NNAPI signature (both operations; 3 to 6 inputs for RESIZE_BILINEAR, 4 to 6 for
RESIZE_NEAREST_NEIGHBOR, whose layout input is not optional):

* 0 ``input``: 4-D TENSOR_FLOAT32 / TENSOR_FLOAT16 / TENSOR_QUANT8_ASYMM /
  TENSOR_QUANT8_ASYMM_SIGNED, ``[batches, height, width, depth]`` (NHWC) or
  ``[batches, depth, height, width]`` (NCHW). Only batches may be 0.
* 1 ``width``, 2 ``height``: either INT32 output sizes (> 0), or scale factors of the same
  scalar type — FLOAT32 for TENSOR_FLOAT32 and the quantised types, FLOAT16 for TENSOR_FLOAT16 —
  giving ``new_size = floor(size * scale)`` (computed in float32 as NNAPI does).
* 3 ``layout``: BOOL, true for NCHW (optional for RESIZE_BILINEAR, default false).
* 4 ``align_corners``, 5 ``half_pixel_centers``: optional BOOLs (feature level 4), default false;
  they may not both be true.

Output 0: ``[batches, new_height, new_width, depth]`` in the input's layout, of the input's type
(quantised: same scale and zero point). Coordinates follow TensorFlow Lite, as NNAPI's CPU
reference does: the scale is ``in / out`` (``(in - 1) / (out - 1)`` with align_corners and
``out > 1``) in float32; a source coordinate is ``x * scale``, or ``(x + 0.5) * scale`` with
half_pixel_centers (bilinear also subtracts 0.5). Bilinear interpolates between the clamped floor
and ceil neighbours; nearest neighbour takes ``floor`` (``round`` half away from zero with
align_corners) clamped to the input.

Quantised inputs (the output shares their scale and zero point) are resized on the stored
integers, as NNAPI's CPU executor does: nearest neighbour copies them; bilinear runs the TFLite
reference kernel it calls for every type, which evaluates ``v00 * (1 - dy) * (1 - dx) + v10 * dy
* (1 - dx) + v01 * (1 - dy) * dx + v11 * dy * dx`` in float32, in that order, and converts the
result to the integer type with a C cast: truncation toward zero, not rounding (NNAPI's expected
values, rounded by its test generator, are within its one-step tolerance of it).
"""

from __future__ import annotations

import numpy as np

from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import OperationDef, Shape, add_definition
from nnrt.ops.quant import is_quantized, saturate
from nnrt.ops.space_layout import (
    IMAGE_TYPES,
    Array,
    expect_bool_flags,
    flag,
    from_nhwc,
    from_nhwc_array,
    to_nhwc,
    to_nhwc_array,
)

T = OperandType

INPUT, WIDTH, HEIGHT, LAYOUT, ALIGN_CORNERS, HALF_PIXEL_CENTERS = 0, 1, 2, 3, 4, 5

_INPUTS = ("input", "width", "height", "layout", "align_corners", "half_pixel_centers")
_KERNEL_TYPES = frozenset(IMAGE_TYPES)
#: The scale-factor scalar type allowed for each input tensor type.
_SCALE_TYPE = {
    T.TENSOR_FLOAT32: T.FLOAT32,
    T.TENSOR_FLOAT16: T.FLOAT16,
    T.TENSOR_QUANT8_ASYMM: T.FLOAT32,
    T.TENSOR_QUANT8_ASYMM_SIGNED: T.FLOAT32,
}
_MIN_INPUTS = {OperationType.RESIZE_BILINEAR: 3, OperationType.RESIZE_NEAREST_NEIGHBOR: 4}


def _validate(ctx: OperationContext) -> None:
    ctx.expect_counts(range(_MIN_INPUTS[ctx.op_type], 7), 1)
    t = ctx.expect_type(INPUT, *IMAGE_TYPES)
    ctx.expect_rank(INPUT, 4)
    size_type = ctx.expect_type(HEIGHT, T.INT32, _SCALE_TYPE[t])
    ctx.expect_type(WIDTH, size_type)
    if ctx.op_type == OperationType.RESIZE_NEAREST_NEIGHBOR:
        ctx.expect_present(LAYOUT)
    expect_bool_flags(ctx, LAYOUT)
    ctx.expect_output_like_input(0, INPUT)
    ctx.expect_output_quant_like_input(0, INPUT)
    for i in (WIDTH, HEIGHT):
        value = ctx.constant(i)
        if value is not None and not value > 0:
            what = "output size" if size_type == T.INT32 else "scale"
            ctx.fail(f"{what} must be positive, got {value}", input=i)
    if ctx.constant(ALIGN_CORNERS) and ctx.constant(HALF_PIXEL_CENTERS):
        ctx.fail("half_pixel_centers requires align_corners to be false",
                 input=HALF_PIXEL_CENTERS)


def _output_size(ctx: OperationContext, in_size: int, i: int) -> int:
    """The output size along one axis from the size or scale input ``i``."""
    value = ctx.scalar(i)
    if ctx.input_type(i) == T.INT32:
        return int(value)
    return int(np.floor(np.float32(in_size) * np.float32(value)))


def _prepare(ctx: OperationContext) -> list[Shape]:
    shape = ctx.shape(INPUT)
    if len(shape) != 4:
        ctx.fail(f"expected rank 4, got {len(shape)}", input=INPUT)
    nchw = flag(ctx, LAYOUT)
    if flag(ctx, ALIGN_CORNERS) and flag(ctx, HALF_PIXEL_CENTERS):
        ctx.fail("half_pixel_centers requires align_corners to be false",
                 input=HALF_PIXEL_CENTERS)
    batches, height, width, depth = to_nhwc(shape, nchw)
    if min(height, width, depth) <= 0:
        ctx.fail(f"height, width and depth must be positive (only batches may be 0), got "
                 f"shape {shape}", input=INPUT)
    new_height = _output_size(ctx, height, HEIGHT)
    new_width = _output_size(ctx, width, WIDTH)
    if new_height <= 0 or new_width <= 0:
        ctx.fail(f"output height and width must be positive, got {new_height} x {new_width}",
                 input=HEIGHT if new_height <= 0 else WIDTH)
    return [from_nhwc((batches, new_height, new_width, depth), nchw)]


def _scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    """TensorFlow Lite's input/output coordinate scale, in float32."""
    if align_corners and out_size > 1:
        return np.float32(in_size - 1) / np.float32(out_size - 1)
    return np.float32(in_size) / np.float32(out_size)


def _source(in_size: int, out_size: int, align_corners: bool, half_pixel: bool,
            bilinear: bool) -> Array:
    """Source coordinate of each output index, computed in float32 as TensorFlow Lite does
    (returned as float64). Half-pixel centres sample at ``(x + 0.5) * scale``, minus 0.5 for
    bilinear interpolation."""
    scale = _scale(in_size, out_size, align_corners)
    index = np.arange(out_size, dtype=np.float32)
    if not half_pixel:
        return (index * scale).astype(np.float64)
    coords = (index + np.float32(0.5)) * scale
    if bilinear:
        coords = coords - np.float32(0.5)
    return coords.astype(np.float64)


def _bilinear_axis(in_size: int, out_size: int, align_corners: bool, half_pixel: bool
                   ) -> tuple[Array, Array, Array]:
    """Lower and upper source indices and the weight of the upper one, per output index."""
    src = _source(in_size, out_size, align_corners, half_pixel, bilinear=True)
    low = np.clip(np.floor(src), 0, in_size - 1)
    high = np.clip(np.ceil(src), 0, in_size - 1)
    return low.astype(np.intp), high.astype(np.intp), src - low


def _nearest_axis(in_size: int, out_size: int, align_corners: bool, half_pixel: bool) -> Array:
    """The source index of each output index."""
    src = _source(in_size, out_size, align_corners, half_pixel, bilinear=False)
    index = np.floor(src)
    if align_corners:  # roundf: halves go away from zero (coordinates are non-negative)
        index += (src - index) >= 0.5
    return np.clip(index, 0, in_size - 1).astype(np.intp)


def _resize_bilinear(x: Array, out_h: int, out_w: int, align: bool, half: bool) -> Array:
    y0, y1, fy = _bilinear_axis(x.shape[1], out_h, align, half)
    x0, x1, fx = _bilinear_axis(x.shape[2], out_w, align, half)
    fy = fy[:, None, None]
    fx = fx[None, :, None]
    top, bottom = x[:, y0], x[:, y1]
    result: Array = (top[:, :, x0] * (1 - fy) * (1 - fx) + bottom[:, :, x0] * fy * (1 - fx)
              + top[:, :, x1] * (1 - fy) * fx + bottom[:, :, x1] * fy * fx)
    return result


def _resize_bilinear_quantised(x: Array, out_h: int, out_w: int, align: bool, half: bool,
                               type_: OperandType) -> Array:
    """Bilinear resizing of stored integers in float32, truncated (see the module docstring)."""
    y0, y1, fy = _bilinear_axis(x.shape[1], out_h, align, half)
    x0, x1, fx = _bilinear_axis(x.shape[2], out_w, align, half)
    one = np.float32(1)
    dy, dx = fy.astype(np.float32)[:, None, None], fx.astype(np.float32)[None, :, None]
    top, bottom = x[:, y0].astype(np.float32), x[:, y1].astype(np.float32)
    value = (top[:, :, x0] * (one - dy) * (one - dx) + bottom[:, :, x0] * dy * (one - dx)
             + top[:, :, x1] * (one - dy) * dx + bottom[:, :, x1] * dy * dx)
    return saturate(np.trunc(value), type_)


def _resize_nearest(x: Array, out_h: int, out_w: int, align: bool, half: bool) -> Array:
    rows = _nearest_axis(x.shape[1], out_h, align, half)
    cols = _nearest_axis(x.shape[2], out_w, align, half)
    return x[:, rows][:, :, cols]


def _execute(ctx: ExecutionContext) -> list[Array]:
    nchw = flag(ctx, LAYOUT)
    align, half = flag(ctx, ALIGN_CORNERS), flag(ctx, HALF_PIXEL_CENTERS)
    _, out_h, out_w, _ = to_nhwc(ctx.output_shapes[0], nchw)
    x = to_nhwc_array(ctx.tensor(INPUT), nchw)
    t = ctx.input_type(INPUT)
    if x.size == 0:
        return [np.zeros(ctx.output_shapes[0], ctx.output_dtype(0))]
    if ctx.op_type == OperationType.RESIZE_NEAREST_NEIGHBOR:
        y = _resize_nearest(x, out_h, out_w, align, half)
    elif is_quantized(t):
        y = _resize_bilinear_quantised(x, out_h, out_w, align, half, t)
    else:
        y = _resize_bilinear(x.astype(np.float64), out_h, out_w, align, half)
    return [from_nhwc_array(y, nchw)]


for _op in (OperationType.RESIZE_BILINEAR, OperationType.RESIZE_NEAREST_NEIGHBOR):
    add_definition(OperationDef(
        type=_op, validate=_validate, prepare=_prepare, execute=_execute,
        inputs=_INPUTS, kernel_types=_KERNEL_TYPES,
    ))
