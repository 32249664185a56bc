"""DETECTION_POSTPROCESSING: SSD box decoding followed by regular or fast NMS.

NNAPI signature: 0 ``class_scores`` ``[batches, num_anchors, num_classes]`` (TENSOR_FLOAT32 /
TENSOR_FLOAT16), class 0 the background; 1 ``box_deltas`` ``[batches, num_anchors, length >=
4]`` ``(dy, dx, dh, dw, ...)``; 2 ``anchors`` ``[num_anchors, 4]`` ``(ctr_y, ctr_x, h, w)``;
scalars (FLOAT16 for TENSOR_FLOAT16, else FLOAT32) 3-6 ``scale_y``, ``scale_x``, ``scale_h``,
``scale_w`` (> 0); 7 ``use_regular_nms`` BOOL; INT32 8 ``max_num_detections`` (> 0), 9
``max_classes_per_detection``, 10 ``max_num_detections_per_class``; 11 ``score_threshold``, 12
``iou_threshold`` (>= 0); 13 ``is_bg_in_label`` BOOL. Outputs: 0 ``scores`` ``[batches,
max_num_detections * k]``, 1 ``rois`` ``[batches, max_num_detections * k, 4]`` ``(y1, x1, y2,
x2)``, 2 ``classes`` TENSOR_INT32 of the same ``[batches, ...]`` shape, 3 ``num_detections``
``[batches]`` TENSOR_INT32; ``k`` is 1 for regular NMS (per-class hard NMS keeping
``max_num_detections_per_class``, then the best ``max_num_detections`` overall) and
``max_classes_per_detection`` for fast NMS (hard NMS on each anchor's best class score, then
each kept anchor's top classes). Unused slots are 0; class labels count the background only
when ``is_bg_in_label``.

Both types are computed as NNAPI's CPU executor does: in float32 (float16 converted in and
out), with NNAPI's suppression order (:func:`nnrt.ops.boxes.suppress`).
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
    expect_dim,
    from_float32,
    hard_step,
    known_dims,
    sort_by_score,
    suppress,
)

T = OperandType

_FLOAT = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)


(CLASS_SCORES, DELTAS, ANCHORS, SCALE_Y, SCALE_X, SCALE_H, SCALE_W, REGULAR_NMS,
 MAX_NUM_DETECTIONS, MAX_CLASSES_PER_DETECTION, MAX_DETECTIONS_PER_CLASS, SCORE_LIMIT,
 IOU_LIMIT, BG_IN_LABEL) = range(14)
_POSITIVE = (SCALE_Y, SCALE_X, SCALE_H, SCALE_W)


def _check_params(ctx: OperationContext) -> None:
    """NNAPI's rules on the parameters that are known (constants, or at execution)."""
    for i in _POSITIVE:
        value = ctx.constant(i)
        if value is not None and not value > 0:
            ctx.fail(f"must be positive, got {value}", input=i)
    for i in (SCORE_LIMIT, IOU_LIMIT):
        value = ctx.constant(i)
        if value is not None and not value >= 0:
            ctx.fail(f"must be at least 0, got {value}", input=i)
    detections = ctx.constant(MAX_NUM_DETECTIONS)
    if detections is not None and detections <= 0:
        ctx.fail(f"must be positive, got {detections}", input=MAX_NUM_DETECTIONS)
    regular = ctx.constant(REGULAR_NMS)
    if regular is None:
        return
    slot = MAX_DETECTIONS_PER_CLASS if regular else MAX_CLASSES_PER_DETECTION
    value = ctx.constant(slot)
    if value is not None and value <= 0:
        ctx.fail(f"must be positive with use_regular_nms={bool(regular)}, got {value}",
                 input=slot)


def _ssd_shapes(ctx: OperationContext) -> tuple[int | None, int | None]:
    """Check the input shapes against each other; returns (batches, num_anchors) if known."""
    scores = known_dims(ctx, CLASS_SCORES, 3)
    deltas = known_dims(ctx, DELTAS, 3)
    anchors = known_dims(ctx, ANCHORS, 2)
    batches, count, classes = scores if scores is not None else (None, None, None)
    if classes is not None and classes < 2:
        ctx.fail(f"num_classes (dimension 2) must be at least 2 (class 0 is the background), "
                 f"got {classes}", input=CLASS_SCORES)
    expect_dim(ctx, DELTAS, deltas, 0, batches, "batches (input 0 dimension 0)")
    expect_dim(ctx, DELTAS, deltas, 1, count, "num_anchors (input 0 dimension 1)")
    if deltas is not None and deltas[2] is not None and deltas[2] < 4:
        ctx.fail(f"the box encoding length (dimension 2) must be at least 4, got {deltas[2]}",
                 input=DELTAS)
    expect_dim(ctx, ANCHORS, anchors, 0, count, "num_anchors (input 0 dimension 1)")
    expect_dim(ctx, ANCHORS, anchors, 1, 4, "4 (ctr_y, ctr_x, h, w)")
    return batches, count


def _decode(ctx: ExecutionContext, deltas: Array, anchors: Array) -> Array:
    """SSD's center-size decoding of ``deltas`` (num_anchors, length) into (y1, x1, y2, x2)."""
    scale_y, scale_x, scale_h, scale_w = (F32(ctx.scalar(i)) for i in _POSITIVE)
    y = anchors[:, 0] + anchors[:, 2] * deltas[:, 0] / scale_y
    x = anchors[:, 1] + anchors[:, 3] * deltas[:, 1] / scale_x
    with np.errstate(all="ignore"):
        half_h = anchors[:, 2] * np.exp(deltas[:, 2] / scale_h) * F32(0.5)
        half_w = anchors[:, 3] * np.exp(deltas[:, 3] / scale_w) * F32(0.5)
    return np.stack([y - half_h, x - half_w, y + half_h, x + half_w], axis=1).astype(np.float32)


def _first_max_class(row: Array) -> float:
    """``std::max_element`` over classes 1..: the best non-background score of an anchor."""
    scores = row[1:]
    if np.isnan(scores[0]):
        return float(scores[0])
    return float(scores[int(np.argmax(np.where(np.isnan(scores), -np.inf, scores)))])


def _detect(ctx: ExecutionContext) -> list[Array]:
    _check_params(ctx)
    _ssd_shapes(ctx)
    scores = as_float32(ctx.tensor(CLASS_SCORES), ctx.operand(CLASS_SCORES))
    deltas = as_float32(ctx.tensor(DELTAS), ctx.operand(DELTAS))
    anchors = as_float32(ctx.tensor(ANCHORS), ctx.operand(ANCHORS))
    batches, _, classes = scores.shape
    regular = bool(ctx.scalar(REGULAR_NMS))
    limit = int(ctx.scalar(MAX_NUM_DETECTIONS))
    per_class = int(ctx.scalar(MAX_DETECTIONS_PER_CLASS))
    out_classes = min(classes - 1, int(ctx.scalar(MAX_CLASSES_PER_DETECTION)))
    width = _detections(ctx)
    threshold = F32(ctx.scalar(SCORE_LIMIT))
    step = hard_step(float(ctx.scalar(IOU_LIMIT)))
    shift = 0 if ctx.scalar(BG_IN_LABEL) else 1
    out_scores = np.zeros((batches, width), np.float32)
    out_boxes = np.zeros((batches, width, 4), np.float32)
    labels = np.zeros((batches, width), np.int32)
    found = np.zeros(batches, np.int32)
    for b in range(batches):
        boxes = _decode(ctx, deltas[b], anchors)
        if regular:
            flat = scores[b].reshape(-1).copy()
            per_index = np.repeat(boxes, classes, axis=0)
            kept: list[int] = []
            for c in range(1, classes):
                candidates = [a * classes + c for a in np.flatnonzero(scores[b, :, c] > threshold)]
                kept += suppress(candidates, flat, per_index, per_class, step)
            kept = sort_by_score(kept, flat)[:limit]
            rows = [(flat[k], k // classes, k % classes) for k in kept]
        else:
            best = np.asarray([_first_max_class(row) for row in scores[b]], np.float32)
            candidates = [int(a) for a in np.flatnonzero(best > threshold)]
            rows = []
            for a in suppress(candidates, best, boxes, limit, step):
                order = sort_by_score(list(range(1, classes)), scores[b, a])
                rows += [(scores[b, a, c], a, c) for c in order[:out_classes]]
        for j, (score, anchor, c) in enumerate(rows):
            out_scores[b, j], out_boxes[b, j], labels[b, j] = score, boxes[anchor], c - shift
        found[b] = len(rows)
    return [from_float32(out_scores, ctx.output_operand(0)),
            from_float32(out_boxes, ctx.output_operand(1)), labels, found]


def _detections(ctx: OperationContext) -> int:
    """The number of detection slots per batch: max_num_detections, times
    max_classes_per_detection for fast NMS."""
    limit = int(ctx.scalar(MAX_NUM_DETECTIONS))
    if ctx.scalar(REGULAR_NMS):
        return limit
    return limit * int(ctx.scalar(MAX_CLASSES_PER_DETECTION))


@register(OperationType.DETECTION_POSTPROCESSING,
          inputs=("class_scores", "box_deltas", "anchors", "scale_y", "scale_x", "scale_h",
                  "scale_w", "use_regular_nms", "max_num_detections",
                  "max_classes_per_detection", "max_num_detections_per_class",
                  "score_threshold", "iou_threshold", "is_bg_in_label"),
          outputs=("scores", "rois", "classes", "num_detections"),
          kernel_types=set(_FLOAT))
class DetectionPostprocessing:
    """DETECTION_POSTPROCESSING: SSD box decoding and regular or fast NMS."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's types and the parameter and shape rules known statically."""
        ctx.expect_counts(14, 4)
        t = ctx.expect_type(CLASS_SCORES, *_FLOAT)
        ctx.expect_type(DELTAS, t)
        ctx.expect_type(ANCHORS, t)
        scalar = T.FLOAT16 if t == T.TENSOR_FLOAT16 else T.FLOAT32
        for i in (*_POSITIVE, SCORE_LIMIT, IOU_LIMIT):
            ctx.expect_scalar(i, scalar)
        for i in (REGULAR_NMS, BG_IN_LABEL):
            ctx.expect_scalar(i, T.BOOL)
        for i in (MAX_NUM_DETECTIONS, MAX_CLASSES_PER_DETECTION, MAX_DETECTIONS_PER_CLASS):
            ctx.expect_scalar(i, T.INT32)
        ctx.expect_output_type(0, t)
        ctx.expect_output_type(1, t)
        ctx.expect_output_type(2, T.TENSOR_INT32)
        ctx.expect_output_type(3, T.TENSOR_INT32)
        _check_params(ctx)
        _ssd_shapes(ctx)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """``[batches, n]``, ``[batches, n, 4]``, ``[batches, n]``, ``[batches]``."""
        _check_params(ctx)
        batches, _ = _ssd_shapes(ctx)
        if batches is None:
            batches = ctx.shape(CLASS_SCORES)[0]  # raises Unknown
        n = _detections(ctx)
        return [(batches, n), (batches, n, 4), (batches, n), (batches,)]

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """Decoded boxes after NMS, their scores and classes, and their count per batch."""
        return _detect(ctx)
