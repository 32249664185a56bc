"""Box regression: AXIS_ALIGNED_BBOX_TRANSFORM and GENERATE_PROPOSALS.

NNAPI signatures:

* AXIS_ALIGNED_BBOX_TRANSFORM — 0 ``roi`` ``[num_rois, 4]`` boxes ``(x1, y1, x2, y2)``
  (TENSOR_FLOAT32, TENSOR_FLOAT16, or TENSOR_QUANT16_ASYMM with scale 0.125 and zero point 0);
  1 ``bbox_deltas`` ``[num_rois, num_classes * 4]`` ``(dx, dy, dw, dh)`` per class (the roi's
  float type, or TENSOR_QUANT8_ASYMM / TENSOR_QUANT8_ASYMM_SIGNED); 2 ``batch_index``
  ``[num_rois]`` TENSOR_INT32; 3 ``image_info`` ``[batches, 2]`` ``(height, width)`` (the roi's
  type and quantisation). Output 0 ``[num_rois, num_classes * 4]`` of the roi's type
  (quantised: 0.125 / 0): each box moved by its delta — centre shifted by ``dx * width``,
  size scaled by ``exp(dw)`` — and clipped to its batch's image. ``num_rois`` may be 0.
* GENERATE_PROPOSALS — 0 ``scores`` ``[batches, height, width, num_anchors]`` (NHWC; NCHW
  ``[batches, num_anchors, height, width]``) TENSOR_FLOAT32 / TENSOR_FLOAT16 /
  TENSOR_QUANT8_ASYMM / TENSOR_QUANT8_ASYMM_SIGNED; 1 ``bbox_deltas`` ``[..., num_anchors * 4]``
  (the scores' type, own quantisation); 2 ``anchors`` ``[num_anchors, 4]`` (float, or
  TENSOR_QUANT16_SYMM with scale 0.125); 3 ``image_info`` ``[batches, 2]`` (float, or
  TENSOR_QUANT16_ASYMM 0.125 / 0); scalars 4 ``height_stride``, 5 ``width_stride`` (FLOAT16 for
  TENSOR_FLOAT16, else FLOAT32), 6 ``pre_nms_top_n``, 7 ``post_nms_top_n`` INT32, 8
  ``iou_threshold``, 9 ``min_size``, 10 ``layout`` BOOL. Outputs, of a data-dependent length:
  0 ``scores`` (input 0's type, scale and zero point), 1 ``rois`` ``[n, 4]`` (float, or
  TENSOR_QUANT16_ASYMM 0.125 / 0), 2 ``batch_index`` TENSOR_INT32. Per batch, every anchor is
  placed at every grid position (shifted by the strides) and transformed by its deltas; the
  ``pre_nms_top_n`` best (all when <= 0) whose width and height exceed ``min_size`` and whose
  centre lies in the image go through hard NMS keeping at most ``post_nms_top_n`` (all when
  negative), best first.

Every type variant is implemented as NNAPI's CPU executor computes it: in float32, converting
float16 and quantised inputs and the outputs (:mod:`nnrt.ops.boxes`).
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
    hard_step,
    known_dims,
    prepared_results,
    prepared_shapes,
    sort_by_score,
    suppress,
    transform_boxes,
)
from nnrt.ops.space_layout import flag, to_nhwc_array

T = OperandType

_FLOAT = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
_QUANT8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)


def _batch_indices(ctx: ExecutionContext, i: int, batches: int) -> Array:
    """Input ``i``'s batch indices, each checked to name one of ``batches`` images."""
    index = ctx.tensor(i).astype(np.int64)
    bad = (index < 0) | (index >= batches)
    if np.any(bad):
        k = int(np.flatnonzero(bad)[0])
        ctx.fail(f"batch index {int(index[k])} of box {k} is out of range [0, {batches})",
                 input=i)
    return index


def _expect_corners(ctx: OperationContext, i: int, boxes: Array) -> None:
    """Require every box of input ``i`` to have x1 <= x2 and y1 <= y2 (NaN fails)."""
    bad = ~((boxes[:, 0] <= boxes[:, 2]) & (boxes[:, 1] <= boxes[:, 3]))
    if np.any(bad):
        k = int(np.flatnonzero(bad)[0])
        ctx.fail(f"box {k} is invalid (x2 < x1 or y2 < y1): {boxes[k].tolist()}", input=i)


# -- AXIS_ALIGNED_BBOX_TRANSFORM -----------------------------------------------------------------

ROI, DELTAS, BATCHES, IMAGE_INFO = range(4)


def _transform_shapes(ctx: OperationContext) -> tuple[int | None, int | None]:
    """Check the shape rules; returns (num_rois, num_classes * 4) where known."""
    roi = known_dims(ctx, ROI, 2)
    deltas = known_dims(ctx, DELTAS, 2)
    batches = known_dims(ctx, BATCHES, 1)
    info = known_dims(ctx, IMAGE_INFO, 2)
    expect_dim(ctx, ROI, roi, 1, 4, "4 (x1, y1, x2, y2)")
    rois = roi[0] if roi is not None else None
    expect_dim(ctx, DELTAS, deltas, 0, rois, "num_rois (input 0 dimension 0)")
    width = deltas[1] if deltas is not None else None
    if width is not None and (width == 0 or width % 4):
        ctx.fail(f"dimension 1 must be 4 * num_classes with num_classes > 0, got {width}",
                 input=DELTAS)
    expect_dim(ctx, BATCHES, batches, 0, rois, "num_rois (input 0 dimension 0)")
    expect_dim(ctx, IMAGE_INFO, info, 1, 2, "2 (height, width)")
    if info is not None and info[0] == 0:
        ctx.fail("dimension 0 (batches) must be positive, got 0", input=IMAGE_INFO)
    return rois, width


def _transform(ctx: ExecutionContext) -> Array:
    rois = as_float32(ctx.tensor(ROI), ctx.operand(ROI))
    deltas = as_float32(ctx.tensor(DELTAS), ctx.operand(DELTAS))
    info = as_float32(ctx.tensor(IMAGE_INFO), ctx.operand(IMAGE_INFO))
    index = _batch_indices(ctx, BATCHES, info.shape[0])
    _expect_corners(ctx, ROI, rois)
    n, width = deltas.shape
    moved = transform_boxes(rois, deltas.reshape(n, width // 4, 4), info[index, 0],
                            info[index, 1])
    return from_float32(moved.reshape(n, width), ctx.output_operand(0))


@register(OperationType.AXIS_ALIGNED_BBOX_TRANSFORM,
          inputs=("roi", "bbox_deltas", "batch_index", "image_info"),
          kernel_types={*_FLOAT, T.TENSOR_QUANT16_ASYMM})
class AxisAlignedBboxTransform:
    """AXIS_ALIGNED_BBOX_TRANSFORM: boxes moved by per-class deltas, clipped to the image."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's type combinations, the box quantisation and the shape rules."""
        ctx.expect_counts(4, 1)
        t = ctx.expect_type(ROI, *_FLOAT, T.TENSOR_QUANT16_ASYMM)
        if t in _FLOAT:
            ctx.expect_type(DELTAS, t)
        else:
            ctx.expect_type(DELTAS, *_QUANT8)
        ctx.expect_type(BATCHES, T.TENSOR_INT32)
        ctx.expect_type(IMAGE_INFO, t)
        ctx.expect_output_type(0, t)
        expect_box_quant(ctx, input=ROI)
        expect_box_quant(ctx, input=IMAGE_INFO)
        expect_box_quant(ctx, output=0)
        _transform_shapes(ctx)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """``[num_rois, num_classes * 4]``."""
        rois, width = _transform_shapes(ctx)
        if rois is None or width is None:
            return [(ctx.shape(ROI)[0], ctx.shape(DELTAS)[1])]  # raises Unknown
        return [(rois, width)]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """The transformed, clipped boxes."""
        return [_transform(ctx)]


# -- GENERATE_PROPOSALS --------------------------------------------------------------------------

(SCORES, BOX_DELTAS, ANCHORS, INFO, HEIGHT_STRIDE, WIDTH_STRIDE, PRE_NMS, POST_NMS,
 IOU_THRESHOLD, MIN_SIZE, LAYOUT) = range(11)


def _proposal_shapes(ctx: OperationContext) -> None:
    """The rules tying scores, deltas, anchors and image info (in the operation's layout)."""
    scores = known_dims(ctx, SCORES, 4)
    deltas = known_dims(ctx, BOX_DELTAS, 4)
    anchors = known_dims(ctx, ANCHORS, 2)
    info = known_dims(ctx, INFO, 2)
    nchw = ctx.constant(LAYOUT)
    if scores is None or nchw is None:
        return
    h, w, a = (2, 3, 1) if nchw else (1, 2, 3)
    count = scores[a]
    where = "NCHW" if nchw else "NHWC"
    expect_dim(ctx, BOX_DELTAS, deltas, 0, scores[0], "batches (input 0 dimension 0)")
    expect_dim(ctx, BOX_DELTAS, deltas, h, scores[h], f"the height of input 0 ({where})")
    expect_dim(ctx, BOX_DELTAS, deltas, w, scores[w], f"the width of input 0 ({where})")
    expect_dim(ctx, BOX_DELTAS, deltas, a, None if count is None else 4 * count,
               f"4 * num_anchors (input 0 dimension {a}, {where})")
    expect_dim(ctx, ANCHORS, anchors, 0, count, f"num_anchors (input 0 dimension {a}, {where})")
    expect_dim(ctx, ANCHORS, anchors, 1, 4, "4 (x1, y1, x2, y2)")
    expect_dim(ctx, INFO, info, 0, scores[0], "batches (input 0 dimension 0)")
    expect_dim(ctx, INFO, info, 1, 2, "2 (height, width)")


def _keep(boxes: Array, height: F32, width: F32, min_size: F32) -> Array:
    """NNAPI's proposal filter: larger than ``min_size`` both ways, centre inside the image."""
    w = boxes[:, 2] - boxes[:, 0]
    h = boxes[:, 3] - boxes[:, 1]
    cx = boxes[:, 0] + w / F32(2)
    cy = boxes[:, 1] + h / F32(2)
    keep: Array = (w > min_size) & (h > min_size) & (cx < width) & (cy < height)
    return keep


def _propose(ctx: ExecutionContext) -> list[Array]:
    _proposal_shapes(ctx)
    nchw = flag(ctx, LAYOUT)
    scores = to_nhwc_array(as_float32(ctx.tensor(SCORES), ctx.operand(SCORES)), nchw)
    deltas = to_nhwc_array(as_float32(ctx.tensor(BOX_DELTAS), ctx.operand(BOX_DELTAS)), nchw)
    anchors = as_float32(ctx.tensor(ANCHORS), ctx.operand(ANCHORS))
    info = as_float32(ctx.tensor(INFO), ctx.operand(INFO))
    batches, height, width, count = scores.shape
    grid_y = np.arange(height, dtype=np.float32) * F32(ctx.scalar(HEIGHT_STRIDE))
    grid_x = np.arange(width, dtype=np.float32) * F32(ctx.scalar(WIDTH_STRIDE))
    shift = np.stack(np.broadcast_arrays(grid_x[None, :, None], grid_y[:, None, None],
                                         grid_x[None, :, None], grid_y[:, None, None]), -1)
    _expect_corners(ctx, ANCHORS, anchors)
    rois = (anchors[None, None] + shift).reshape(-1, 4).astype(np.float32)
    pre, post = int(ctx.scalar(PRE_NMS)), int(ctx.scalar(POST_NMS))
    min_size = F32(ctx.scalar(MIN_SIZE))
    step = hard_step(float(ctx.scalar(IOU_THRESHOLD)))
    out_scores, out_rois, out_batches = [], [], []
    for b in range(batches):
        size = height * width * count
        image_h, image_w = info[b, 0], info[b, 1]
        boxes = transform_boxes(rois, deltas[b].reshape(size, 1, 4), np.full(size, image_h),
                                np.full(size, image_w))[:, 0]
        flat = scores[b].reshape(-1).copy()
        select = list(range(size))
        if 0 < pre < size:
            select = sort_by_score(select, flat)[:pre]
        keep = _keep(boxes, image_h, image_w, min_size)
        select = [k for k in select if keep[k]]
        kept = suppress(select, flat, boxes, post, step)
        out_scores.append(flat[kept])
        out_rois.append(boxes[kept].reshape(-1, 4))
        out_batches.append(np.full(len(kept), b, np.int32))
    return [from_float32(np.concatenate(out_scores) if out_scores else np.zeros(0, np.float32),
                         ctx.output_operand(0)),
            from_float32(np.concatenate(out_rois) if out_rois else np.zeros((0, 4), np.float32),
                         ctx.output_operand(1)),
            np.concatenate(out_batches) if out_batches else np.zeros(0, np.int32)]


@register(OperationType.GENERATE_PROPOSALS,
          inputs=("scores", "bbox_deltas", "anchors", "image_info", "height_stride",
                  "width_stride", "pre_nms_top_n", "post_nms_top_n", "iou_threshold",
                  "min_size", "layout"),
          outputs=("scores", "rois", "batch_index"),
          kernel_types={*_FLOAT, *_QUANT8}, shapes_from_values=True)
class GenerateProposals:
    """GENERATE_PROPOSALS: anchors transformed by deltas, filtered, then hard NMS per image."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's type combinations, the box quantisation and the shape rules."""
        ctx.expect_counts(11, 3)
        t = ctx.expect_type(SCORES, *_FLOAT, *_QUANT8)
        quantised = t in _QUANT8
        ctx.expect_type(BOX_DELTAS, t)
        ctx.expect_type(ANCHORS, T.TENSOR_QUANT16_SYMM if quantised else t)
        ctx.expect_type(INFO, T.TENSOR_QUANT16_ASYMM if quantised else t)
        scalar = T.FLOAT16 if t == T.TENSOR_FLOAT16 else T.FLOAT32
        for i in (HEIGHT_STRIDE, WIDTH_STRIDE, IOU_THRESHOLD, MIN_SIZE):
            ctx.expect_scalar(i, scalar)
        ctx.expect_scalar(PRE_NMS, T.INT32)
        ctx.expect_scalar(POST_NMS, T.INT32)
        ctx.expect_scalar(LAYOUT, T.BOOL)
        ctx.expect_output_type(0, t)
        ctx.expect_output_quant_like_input(0, SCORES)
        ctx.expect_output_type(1, T.TENSOR_QUANT16_ASYMM if quantised else t)
        ctx.expect_output_type(2, T.TENSOR_INT32)
        expect_box_quant(ctx, input=ANCHORS)
        expect_box_quant(ctx, input=INFO)
        expect_box_quant(ctx, output=1)
        _proposal_shapes(ctx)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Known only at execution, when the proposals are computed."""
        return prepared_shapes(ctx, _propose)

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """The proposals' scores, boxes and batch indices."""
        return prepared_results(ctx, _propose)
