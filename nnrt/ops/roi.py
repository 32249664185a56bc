"""Region-of-interest pooling: ROI_ALIGN and ROI_POOLING.

NNAPI signatures (ROI_ALIGN has inputs 0-9, ROI_POOLING 0-6 then ``layout`` as input 7):

* 0 ``input`` ``[batches, height, width, depth]`` (NHWC; NCHW ``[batches, depth, height,
  width]``) TENSOR_FLOAT32 / TENSOR_FLOAT16 / TENSOR_QUANT8_ASYMM / TENSOR_QUANT8_ASYMM_SIGNED,
  every dimension positive;
* 1 ``rois`` ``[num_rois, 4]`` ``(x1, y1, x2, y2)`` in the original image (the input's float
  type, or TENSOR_QUANT16_ASYMM with scale 0.125 and zero point 0); ``num_rois`` may be 0;
* 2 ``batch_index`` ``[num_rois]`` TENSOR_INT32;
* 3 ``output_height``, 4 ``output_width`` INT32 (> 0); 5 ``height_stride``, 6 ``width_stride``
  (> 0; FLOAT16 for TENSOR_FLOAT16, else FLOAT32): the ratio of the original image to the
  feature map;
* ROI_ALIGN: 7 ``height_sampling_ratio``, 8 ``width_sampling_ratio`` INT32 (>= 0; 0 means
  ``ceil(roi size / output size)``), 9 ``layout`` BOOL; ROI_POOLING: 7 ``layout``.

Output 0 ``[num_rois, output_height, output_width, depth]`` in the input's layout and type; for
ROI_POOLING a quantised output keeps the input's scale and zero point, for ROI_ALIGN it has its
own. Boxes must lie in the feature map (after dividing by the strides) with x1 <= x2, y1 <= y2.

ROI_ALIGN averages, per output cell, a grid of bilinearly interpolated samples; ROI_POOLING takes
the maximum over the cell's integer region (boxes rounded half away from zero; an empty region
gives 0). Float inputs are computed in float32. Quantised ROI_ALIGN follows NNAPI's integer
kernel: interpolation weights quantised to 1/255 steps, int32 accumulation of ``weight * (q -
zeroPoint)``, then a quantised multiplier ``in_scale / 255 / out_scale / samples`` with
rounding and the output zero point; quantised ROI_POOLING compares the stored integers.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register
from nnrt.ops.boxes import F32, Array, as_float32, expect_box_quant, expect_dim, known_dims
from nnrt.ops.quant import (
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    round_half_away,
    saturate,
)
from nnrt.ops.space_layout import flag, from_nhwc, from_nhwc_array, to_nhwc, to_nhwc_array

T = OperandType

INPUT, ROIS, BATCHES, OUT_HEIGHT, OUT_WIDTH, HEIGHT_STRIDE, WIDTH_STRIDE = range(7)
H_SAMPLING, W_SAMPLING = 7, 8
_LAYOUT = {OperationType.ROI_ALIGN: 9, OperationType.ROI_POOLING: 7}
_FLOAT = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
_QUANT8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
_TYPES = (*_FLOAT, *_QUANT8)
#: NNAPI's quantisation step of ROI_ALIGN's interpolation weights.
_WEIGHT_SCALE = F32(1.0) / F32(255.0)


def _validate(ctx: OperationContext) -> None:
    align = ctx.op_type == OperationType.ROI_ALIGN
    layout = _LAYOUT[ctx.op_type]
    ctx.expect_counts(layout + 1, 1)
    t = ctx.expect_type(INPUT, *_TYPES)
    ctx.expect_type(ROIS, T.TENSOR_QUANT16_ASYMM if t in _QUANT8 else t)
    ctx.expect_type(BATCHES, T.TENSOR_INT32)
    ctx.expect_scalar(OUT_HEIGHT, T.INT32)
    ctx.expect_scalar(OUT_WIDTH, T.INT32)
    scalar = T.FLOAT16 if t == T.TENSOR_FLOAT16 else T.FLOAT32
    ctx.expect_scalar(HEIGHT_STRIDE, scalar)
    ctx.expect_scalar(WIDTH_STRIDE, scalar)
    if align:
        ctx.expect_scalar(H_SAMPLING, T.INT32)
        ctx.expect_scalar(W_SAMPLING, T.INT32)
    ctx.expect_scalar(layout, T.BOOL)
    ctx.expect_output_type(0, t)
    if not align:
        ctx.expect_output_quant_like_input(0, INPUT)
    expect_box_quant(ctx, input=ROIS)
    _check_params(ctx)
    _rois_shape(ctx)


def _check_params(ctx: OperationContext) -> None:
    """Output sizes and strides positive, sampling ratios non-negative, where known."""
    for i in (OUT_HEIGHT, OUT_WIDTH, HEIGHT_STRIDE, WIDTH_STRIDE):
        value = ctx.constant(i)
        if value is not None and not value > 0:
            ctx.fail(f"must be positive, got {value}", input=i)
    if ctx.op_type == OperationType.ROI_ALIGN:
        for i in (H_SAMPLING, W_SAMPLING):
            value = ctx.constant(i)
            if value is not None and value < 0:
                ctx.fail(f"must be at least 0 (0: adaptive), got {value}", input=i)


def _rois_shape(ctx: OperationContext) -> int | None:
    """Check the rois and batch_index shapes; returns num_rois where known."""
    known_dims(ctx, INPUT, 4)
    rois = known_dims(ctx, ROIS, 2)
    batches = known_dims(ctx, BATCHES, 1)
    expect_dim(ctx, ROIS, rois, 1, 4, "4 (x1, y1, x2, y2)")
    count = rois[0] if rois is not None else None
    expect_dim(ctx, BATCHES, batches, 0, count, "num_rois (input 1 dimension 0)")
    return count


def _prepare(ctx: OperationContext) -> list[Shape]:
    _check_params(ctx)
    count = _rois_shape(ctx)
    if count is None:
        count = ctx.shape(ROIS)[0]  # raises Unknown
    nchw = flag(ctx, _LAYOUT[ctx.op_type])
    batches, height, width, depth = to_nhwc(ctx.shape(INPUT), nchw)
    if min(batches, height, width, depth) <= 0:
        ctx.fail(f"every dimension must be positive, got shape {ctx.shape(INPUT)}", input=INPUT)
    out = (count, int(ctx.scalar(OUT_HEIGHT)), int(ctx.scalar(OUT_WIDTH)), depth)
    return [from_nhwc(out, nchw)]


def _regions(ctx: ExecutionContext, height: int, width: int, batches: int
             ) -> tuple[Array, Array]:
    """The boxes scaled to the feature map (float32, (n, 4)) and their batch indices, checked:
    batch in range, corners ordered, inside the feature map."""
    rois = as_float32(ctx.tensor(ROIS), ctx.operand(ROIS))
    h_scale = F32(1.0) / F32(ctx.scalar(HEIGHT_STRIDE))
    w_scale = F32(1.0) / F32(ctx.scalar(WIDTH_STRIDE))
    scaled = rois * np.asarray([w_scale, h_scale, w_scale, h_scale], np.float32)
    index = ctx.tensor(BATCHES).astype(np.int64)
    for k in range(rois.shape[0]):
        if not 0 <= index[k] < batches:
            ctx.fail(f"batch index {int(index[k])} of roi {k} is out of range [0, {batches})",
                     input=BATCHES)
        x1, y1, x2, y2 = scaled[k]
        if not (rois[k] >= 0).all() or not (x1 <= width and x2 <= width and y1 <= height
                                             and y2 <= height):
            ctx.fail(f"roi {k} {rois[k].tolist()} lies outside the {height} x {width} feature "
                     "map (after dividing by the strides)", input=ROIS)
        if not (x1 <= x2 and y1 <= y2):
            ctx.fail(f"roi {k} {rois[k].tolist()} is invalid (x2 < x1 or y2 < y1)", input=ROIS)
    return scaled, index


# -- ROI_ALIGN -----------------------------------------------------------------------------------

def _samples(start: F32, end: F32, size: int, ratio: int, limit: int
             ) -> tuple[Array, Array, Array, int]:
    """Sample positions along one axis: low and high neighbour indices and the weight of the
    high one, (size * samples,) each in cell order, and the samples per cell."""
    extent = max(F32(end - start), F32(1.0))
    step = F32(extent / F32(size))
    count = ratio if ratio > 0 else int(np.ceil(step))
    bin_size = F32(step / F32(count))
    cell = np.arange(size, dtype=np.float32)[:, None] * step + start
    pos = (cell + bin_size / F32(2) + bin_size * np.arange(count, dtype=np.float32)).reshape(-1)
    pos = pos.astype(np.float32)
    low = np.floor(pos).astype(np.int64)
    frac = (pos - low.astype(np.float32)).astype(np.float32)
    edge = low >= limit - 1
    low = np.where(edge, limit - 1, low)
    high = np.where(edge, limit - 1, low + 1)
    frac = np.where(edge, F32(0), frac)
    return low, high, frac, count


def _align_roi(ctx: ExecutionContext, image: Array, box: Array, out_h: int, out_w: int
               ) -> tuple[list[tuple[Array, Array]], int]:
    """Per corner, (bilinear weights (Hs, Ws) in float32, gathered values (Hs, Ws, depth)) for
    one roi, and the number of samples per output cell."""
    height, width = image.shape[:2]
    ratio_h, ratio_w = int(ctx.scalar(H_SAMPLING)), int(ctx.scalar(W_SAMPLING))
    y_low, y_high, dy, count_h = _samples(box[1], box[3], out_h, ratio_h, height)
    x_low, x_high, dx, count_w = _samples(box[0], box[2], out_w, ratio_w, width)
    wy = (F32(1) - dy, dy)
    wx = (F32(1) - dx, dx)
    corners = []
    for ys, wy_k in ((y_low, wy[0]), (y_high, wy[1])):
        for xs, wx_k in ((x_low, wx[0]), (x_high, wx[1])):
            weight = (wx_k[None, :] * wy_k[:, None]).astype(np.float32)
            corners.append((weight, image[ys][:, xs]))
    return corners, count_h * count_w


def _cells(total: Array, out_h: int, out_w: int) -> Array:
    """Sum (Hs, Ws, depth) samples into (out_h, out_w, depth) cells."""
    hs, ws, depth = total.shape
    cells: Array = total.reshape(out_h, hs // out_h, out_w, ws // out_w, depth).sum(axis=(1, 3))
    return cells


def _roi_align(ctx: ExecutionContext, x: Array, boxes: Array, index: Array) -> Array:
    out_h, out_w = int(ctx.scalar(OUT_HEIGHT)), int(ctx.scalar(OUT_WIDTH))
    operand = ctx.operand(INPUT)
    quantised = operand.type in _QUANT8
    out = ctx.output_operand(0)
    results = []
    for k in range(boxes.shape[0]):
        image = x[index[k]]
        corners, samples = _align_roi(ctx, image, boxes[k], out_h, out_w)
        if not quantised:
            total = sum(w[..., None] * v.astype(np.float32) for w, v in corners)
            results.append(_cells(np.asarray(total, np.float32), out_h, out_w) / F32(samples))
            continue
        acc = sum(round_half_away((w / _WEIGHT_SCALE).astype(np.float64)).astype(np.int64)[
            ..., None] * (v.astype(np.int64) - operand.zero_point) for w, v in corners)
        real = F32(operand.scale) * _WEIGHT_SCALE / F32(out.scale) / F32(samples)
        if not 0 < real < 1:
            ctx.fail(f"the rescaling factor input_scale / 255 / output_scale / samples = {real} "
                     "must be below 1", output=0)
        multiplier, shift = quantize_multiplier(float(real))
        scaled = multiply_by_quantized_multiplier(_cells(np.asarray(acc), out_h, out_w),
                                                  multiplier, shift)
        results.append(saturate(scaled + out.zero_point, out.type))
    dtype = ctx.output_dtype(0)
    if not results:
        return np.zeros((0, out_h, out_w, x.shape[3]), dtype)
    return np.stack(results).astype(dtype)


def _per_region(ctx: ExecutionContext,
                kernel: Callable[[ExecutionContext, Array, Array, Array], Array]) -> Array:
    """``kernel(ctx, input in NHWC, boxes, batch indices)``, in the input's layout."""
    nchw = flag(ctx, _LAYOUT[ctx.op_type])
    x = to_nhwc_array(ctx.tensor(INPUT), nchw)
    boxes, index = _regions(ctx, x.shape[1], x.shape[2], x.shape[0])
    return from_nhwc_array(kernel(ctx, x, boxes, index), nchw)


@register(OperationType.ROI_ALIGN,
          inputs=("input", "rois", "batch_index", "output_height", "output_width",
                  "height_stride", "width_stride", "height_sampling_ratio",
                  "width_sampling_ratio", "layout"),
          kernel_types=set(_TYPES))
class RoiAlign:
    """ROI_ALIGN: bilinear sampling averaged over each output cell of each roi."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """Types, the box quantisation, parameters and shape rules."""
        _validate(ctx)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """``[num_rois, output_height, output_width, depth]`` in the input's layout."""
        return _prepare(ctx)

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """The aligned regions."""
        return [_per_region(ctx, _roi_align)]


# -- ROI_POOLING ---------------------------------------------------------------------------------

def _pool_bounds(start: F32, end: F32, size: int, limit: int) -> list[tuple[int, int]]:
    """The ``[start, end)`` integer ranges of the output cells along one axis."""
    first, last = int(round_half_away(float(start))), int(round_half_away(float(end)))
    step = F32(F32(max(last - first + 1, 1)) / F32(size))
    bounds = []
    for j in range(size):
        lo = int(np.floor(F32(step * F32(j) + F32(first))))
        hi = int(np.ceil(F32(step * F32(j + 1) + F32(first))))
        bounds.append((min(max(lo, 0), limit), min(max(hi, 0), limit)))
    return bounds


def _roi_pool(ctx: ExecutionContext, x: Array, boxes: Array, index: Array) -> Array:
    out_h, out_w = int(ctx.scalar(OUT_HEIGHT)), int(ctx.scalar(OUT_WIDTH))
    height, width, depth = x.shape[1:]
    operand = ctx.operand(INPUT)
    empty = operand.zero_point if operand.type in _QUANT8 else 0
    out = np.full((boxes.shape[0], out_h, out_w, depth), empty, dtype=x.dtype)
    for k in range(boxes.shape[0]):
        image = x[index[k]]
        rows = _pool_bounds(boxes[k, 1], boxes[k, 3], out_h, height)
        cols = _pool_bounds(boxes[k, 0], boxes[k, 2], out_w, width)
        for i, (y0, y1) in enumerate(rows):
            for j, (x0, x1) in enumerate(cols):
                if y1 > y0 and x1 > x0:
                    out[k, i, j] = image[y0:y1, x0:x1].max(axis=(0, 1))
    return out


@register(OperationType.ROI_POOLING,
          inputs=("input", "rois", "batch_index", "output_height", "output_width",
                  "height_stride", "width_stride", "layout"),
          kernel_types=set(_TYPES))
class RoiPooling:
    """ROI_POOLING: the maximum over each output cell's region of each roi."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """Types, the box quantisation, parameters and shape rules."""
        _validate(ctx)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """``[num_rois, output_height, output_width, depth]`` in the input's layout."""
        return _prepare(ctx)

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """The pooled regions."""
        return [_per_region(ctx, _roi_pool)]
