"""HEATMAP_MAX_KEYPOINT: the most likely keypoint positions from heatmaps, refined sub-pixel.

NNAPI signature: 0 ``heatmap`` ``[num_boxes, size, size, num_keypoints]`` (NHWC; NCHW
``[num_boxes, num_keypoints, size, size]``), size >= 2, TENSOR_FLOAT32 / TENSOR_FLOAT16 /
TENSOR_QUANT8_ASYMM / TENSOR_QUANT8_ASYMM_SIGNED; 1 ``boxes`` ``[num_boxes, 4]`` ``(x1, y1,
x2, y2)`` (the heatmap's float type, or TENSOR_QUANT16_ASYMM with scale 0.125 and zero point
0); 2 ``layout`` BOOL. Outputs: 0 ``scores`` ``[num_boxes, num_keypoints]`` (the heatmap's
type; quantised with its own scale and zero point), 1 ``keypoints`` ``[num_boxes,
num_keypoints, 2]`` ``(x, y)`` (the boxes' type; quantised 0.125 / 0). ``num_boxes`` may be 0.

For each box and keypoint the heatmap's first maximum is refined by a second-order Taylor
expansion on its 3x3 neighbourhood (mirrored at the borders): the offset solving the local
quadratic (left at 0 when its determinant is below ``atol + rtol * A00 * A11``, 1e-5 each —
1e-3 for float16 — and scaled back to at most 1.5 cells) moves the keypoint, and the quadratic's
value there is the score. Positions map from the heatmap grid (cell centres) to the box. Every
type is computed as NNAPI's CPU executor does: in float32, quantised and float16 data converted
(:mod:`nnrt.ops.boxes`).
"""

from __future__ import annotations

import numpy as np

from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register
from nnrt.ops.boxes import (
    F32,
    Array,
    as_float32,
    expect_box_quant,
    expect_dim,
    from_float32,
    known_dims,
)
from nnrt.ops.space_layout import flag, to_nhwc_array

T = OperandType

HEATMAP, BOXES, LAYOUT = range(3)
_FLOAT = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
_QUANT8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
_LOWEST = F32(-np.finfo(np.float32).max)


def _shapes(ctx: OperationContext) -> tuple[int | None, int | None]:
    """Check the heatmap and boxes shapes; returns (num_boxes, num_keypoints) where known."""
    heatmap = known_dims(ctx, HEATMAP, 4)
    boxes = known_dims(ctx, BOXES, 2)
    nchw = ctx.constant(LAYOUT)
    if heatmap is None or nchw is None:
        return None, None
    where = "NCHW" if nchw else "NHWC"
    size, other = heatmap[2], heatmap[3 if nchw else 1]
    if size is not None and other is not None and size != other:
        ctx.fail(f"the heatmap must be square, got {other} x {size} ({where})", input=HEATMAP)
    if size is not None and size < 2:
        ctx.fail(f"the heatmap size must be at least 2, got {size}", input=HEATMAP)
    expect_dim(ctx, BOXES, boxes, 0, heatmap[0], "num_boxes (input 0 dimension 0)")
    expect_dim(ctx, BOXES, boxes, 1, 4, "4 (x1, y1, x2, y2)")
    return heatmap[0], heatmap[1 if nchw else 3]


def _refine(grid: Array, tolerance: float) -> tuple[F32, F32, F32 | None]:
    """NNAPI's Taylor step on a 3x3 float32 ``grid``: (dx, dy, score) with score None when the
    Hessian is singular (the offset stays 0 and the score is the maximum)."""
    two, half = F32(2), F32(0.5)
    b0 = -(grid[1, 2] - grid[1, 0]) / two
    b1 = -(grid[2, 1] - grid[0, 1]) / two
    a00 = grid[1, 0] - two * grid[1, 1] + grid[1, 2]
    a01 = (grid[2, 2] - grid[2, 0] - grid[0, 2] + grid[0, 0]) / F32(4)
    a11 = grid[0, 1] - two * grid[1, 1] + grid[2, 1]
    cross = a00 * a11
    det = cross - a01 * a01
    if abs(det) < F32(tolerance) + F32(tolerance) * cross:
        return F32(0), F32(0), None
    dx = (a11 * b0 - a01 * b1) / det
    dy = (a00 * b1 - a01 * b0) / det
    if abs(dx) > F32(1.5) or abs(dy) > F32(1.5):
        scale = F32(1.5) / max(abs(dx), abs(dy))
        dx, dy = dx * scale, dy * scale
    score = grid[1, 1] - b0 * dx - b1 * dy + (
        (a00 * dx + a01 * dy) * dx + (a01 * dx + a11 * dy) * dy) * half
    return dx, dy, score


def _mirror(k: int, size: int) -> int:
    return 1 if k < 0 else (size - 2 if k >= size else k)


def _keypoints(ctx: ExecutionContext) -> list[Array]:
    _shapes(ctx)
    nchw = flag(ctx, LAYOUT)
    heatmap = to_nhwc_array(as_float32(ctx.tensor(HEATMAP), ctx.operand(HEATMAP)), nchw)
    boxes = as_float32(ctx.tensor(BOXES), ctx.operand(BOXES))
    count, size, _, keypoints = heatmap.shape
    tolerance = 1e-3 if ctx.input_type(HEATMAP) == T.TENSOR_FLOAT16 else 1e-5
    scores = np.zeros((count, keypoints), np.float32)
    points = np.zeros((count, keypoints, 2), np.float32)
    with np.errstate(all="ignore"):
        for n in range(count):
            x1, y1, x2, y2 = boxes[n]
            if not (x1 <= x2 and y1 <= y2):
                ctx.fail(f"box {n} {boxes[n].tolist()} is invalid (x2 < x1 or y2 < y1)",
                         input=BOXES)
            for j in range(keypoints):
                plane = heatmap[n, :, :, j].reshape(-1)
                best = int(np.argmax(np.where(np.isnan(plane), -np.inf, plane)))
                top = plane[best]
                if not top > _LOWEST:  # nothing beats NNAPI's initial -FLT_MAX
                    best, top = 0, _LOWEST
                row, col = divmod(best, size)
                grid = np.asarray([[heatmap[n, _mirror(row + dr, size), _mirror(col + dc, size), j]
                                    for dc in (-1, 0, 1)] for dr in (-1, 0, 1)], np.float32)
                dx, dy, score = _refine(grid, tolerance)
                scores[n, j] = top if score is None else score
                rel_x = (F32(col) + dx + F32(0.5)) / F32(size)
                rel_y = (F32(row) + dy + F32(0.5)) / F32(size)
                points[n, j] = (rel_x * (x2 - x1) + x1, rel_y * (y2 - y1) + y1)
    return [from_float32(scores, ctx.output_operand(0)),
            from_float32(points, ctx.output_operand(1))]


@register(OperationType.HEATMAP_MAX_KEYPOINT, inputs=("heatmap", "boxes", "layout"),
          outputs=("scores", "keypoints"), kernel_types={*_FLOAT, *_QUANT8})
class HeatmapMaxKeypoint:
    """HEATMAP_MAX_KEYPOINT: per box and keypoint, the refined heatmap maximum and position."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's types, the box quantisation and the shape rules."""
        ctx.expect_counts(3, 2)
        t = ctx.expect_type(HEATMAP, *_FLOAT, *_QUANT8)
        box_type = T.TENSOR_QUANT16_ASYMM if t in _QUANT8 else t
        ctx.expect_type(BOXES, box_type)
        ctx.expect_scalar(LAYOUT, T.BOOL)
        ctx.expect_output_type(0, t)
        ctx.expect_output_type(1, box_type)
        expect_box_quant(ctx, input=BOXES)
        expect_box_quant(ctx, output=1)
        _shapes(ctx)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """``[num_boxes, num_keypoints]`` and ``[num_boxes, num_keypoints, 2]``."""
        count, keypoints = _shapes(ctx)
        if count is None or keypoints is None:
            shape = ctx.shape(HEATMAP)  # raises Unknown
            count, keypoints = shape[0], shape[1 if flag(ctx, LAYOUT) else 3]
        return [(count, keypoints), (count, keypoints, 2)]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """The keypoints' scores and positions."""
        return _keypoints(ctx)
