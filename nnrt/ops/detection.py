"""Detection post-processing: BOX_WITH_NMS_LIMIT and DETECTION_POSTPROCESSING.

NNAPI signatures:

* BOX_WITH_NMS_LIMIT — 0 ``scores`` ``[num_rois, num_classes]`` (TENSOR_FLOAT32,
  TENSOR_FLOAT16, TENSOR_QUANT8_ASYMM or TENSOR_QUANT8_ASYMM_SIGNED), class 0 the background;
  1 ``roi`` ``[num_rois, num_classes * 4]`` boxes ``(x1, y1, x2, y2)`` per class (the scores'
  float type; TENSOR_QUANT16_ASYMM, scale 0.125, zero point 0, for quantised scores);
  2 ``batch_index`` ``[num_rois]`` TENSOR_INT32, boxes of one batch grouped together; scalars
  (FLOAT16 for TENSOR_FLOAT16 scores, else FLOAT32 / INT32): 3 ``score_threshold``,
  4 ``max_num_detections`` (negative: unlimited), 5 ``nms_kernel`` (0 hard, 1 linear, 2
  gaussian), 6 ``iou_threshold``, 7 ``sigma`` (gaussian), 8 ``nms_score_threshold``. Outputs, of
  a data-dependent length ``num_output_rois`` (possibly 0): 0 ``scores`` (the input's type,
  scale and zero point), 1 ``roi`` ``[num_output_rois, 4]`` (input 1's type; quantised:
  0.125 / 0), 2 ``classes`` and 3 ``batch_index`` TENSOR_INT32. Per batch and per class
  (background excluded), the boxes scoring above ``score_threshold`` go through soft NMS: the
  best box is kept, the others' scores multiplied by the kernel of their IoU with it (hard: 0
  at IoU >= threshold; linear: ``1 - IoU`` there; gaussian: ``exp(-IoU² / sigma)``) and those
  falling below ``nms_score_threshold`` dropped; each class and each batch keeps at most
  ``max_num_detections`` boxes (the best ones), listed by class, then by descending score.
* DETECTION_POSTPROCESSING (SSD) — 0 ``class_scores`` ``[batches, num_anchors, num_classes]``
  (TENSOR_FLOAT32 / TENSOR_FLOAT16), 1 ``box_deltas`` ``[batches, num_anchors, length >= 4]``
  ``(dy, dx, dh, dw, ...)``, 2 ``anchors`` ``[num_anchors, 4]`` ``(ctr_y, ctr_x, h, w)``;
  scalars 3-6 ``scale_y``, ``scale_x``, ``scale_h``, ``scale_w`` (> 0), 7 ``use_regular_nms``
  BOOL, 8 ``max_num_detections`` (> 0), 9 ``max_classes_per_detection``, 10
  ``max_num_detections_per_class`` INT32, 11 ``score_threshold``, 12 ``iou_threshold`` (>= 0),
  13 ``is_bg_in_label`` BOOL. Outputs: 0 ``scores`` ``[batches, max_num_detections * k]``, 1
  ``rois`` ``[batches, ..., 4]`` ``(y1, x1, y2, x2)``, 2 ``classes`` TENSOR_INT32, 3
  ``num_detections`` ``[batches]`` TENSOR_INT32, with ``k = 1`` for regular NMS (per-class hard
  NMS, then the best overall) and ``k = max_classes_per_detection`` for fast NMS (hard NMS on
  each anchor's best class score, then its top classes); unused slots are 0. Class labels count
  the background only when ``is_bg_in_label``.

Every type variant is implemented the way NNAPI's CPU executor computes it: in float32 (float16
and quantised inputs converted, outputs converted back with :func:`nnrt.ops.boxes.from_float32`);
output boxes of BOX_WITH_NMS_LIMIT are copies of the input's. Suppression reproduces NNAPI's
order exactly (:func:`nnrt.ops.boxes.suppress`).
"""

from __future__ import annotations

import numpy as np

from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import ExecutionContext, OperationContext
from nnrt.ops._framework.registry import Shape, register
from nnrt.ops.boxes import (
    F32,
    Array,
    NmsStep,
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
)

T = OperandType

_QUANT8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
_FLOAT = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
_SCALAR = {T.TENSOR_FLOAT16: T.FLOAT16}


def _scalar_type(t: OperandType) -> OperandType:
    """The float scalar type of parameters for tensor type ``t``."""
    return _SCALAR.get(t, T.FLOAT32)


# -- BOX_WITH_NMS_LIMIT --------------------------------------------------------------------------

SCORES, ROI, BATCHES, SCORE_THRESHOLD, MAX_DETECTIONS, KERNEL, IOU_THRESHOLD, SIGMA, \
    NMS_SCORE_THRESHOLD = range(9)
_KERNELS = {0: "hard", 1: "linear", 2: "gaussian"}


def _nms_shapes(ctx: OperationContext) -> None:
    """The rules tying the shapes of scores, roi and batch_index."""
    scores = known_dims(ctx, SCORES, 2)
    roi = known_dims(ctx, ROI, 2)
    batches = known_dims(ctx, BATCHES, 1)
    rois, classes = scores if scores is not None else (None, None)
    if classes is not None and classes < 2:
        ctx.fail(f"num_classes (dimension 1) must be at least 2 (class 0 is the background), "
                 f"got {classes}", input=SCORES)
    expect_dim(ctx, ROI, roi, 0, rois, "num_rois (input 0 dimension 0)")
    expect_dim(ctx, ROI, roi, 1, None if classes is None else 4 * classes,
               "4 * num_classes (input 0 dimension 1)")
    expect_dim(ctx, BATCHES, batches, 0, rois, "num_rois (input 0 dimension 0)")


def _nms_step(ctx: ExecutionContext) -> NmsStep:
    kernel = ctx.scalar(KERNEL)
    threshold = F32(ctx.scalar(IOU_THRESHOLD))
    sigma = F32(ctx.scalar(SIGMA))
    floor = F32(ctx.scalar(NMS_SCORE_THRESHOLD))
    if kernel not in _KERNELS:
        ctx.fail(f"nms_kernel must be 0 (hard), 1 (linear) or 2 (gaussian), got {kernel}",
                 input=KERNEL)

    def step(overlap: Array, scores: Array) -> tuple[Array, Array]:
        if kernel == 0:
            factor = np.where(overlap < threshold, F32(1), F32(0))
        elif kernel == 1:
            factor = np.where(overlap < threshold, F32(1), F32(1) - overlap)
        else:
            factor = np.exp(F32(-1) * overlap * overlap / sigma)
        new = (scores * factor).astype(np.float32)
        return new, new < floor
    return step


def _runs(batches: Array) -> list[tuple[int, int]]:
    """``(start, stop)`` of each run of equal batch indices (NNAPI's batch grouping)."""
    if batches.size == 0:
        return []
    edges = np.flatnonzero(np.diff(batches)) + 1
    bounds = [0, *edges.tolist(), int(batches.size)]
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def _box_with_nms(ctx: ExecutionContext) -> list[Array]:
    _nms_shapes(ctx)
    scores = as_float32(ctx.tensor(SCORES), ctx.operand(SCORES))
    n, classes = scores.shape
    raw = ctx.tensor(ROI).reshape(n * classes, 4)
    boxes = as_float32(raw, ctx.operand(ROI))
    bad = ~((boxes[:, 0] <= boxes[:, 2]) & (boxes[:, 1] <= boxes[:, 3]))
    if np.any(bad):
        k = int(np.flatnonzero(bad)[0])
        ctx.fail(f"box {k // classes} of class {k % classes} is invalid (x2 < x1 or y2 < y1): "
                 f"{boxes[k].tolist()}", input=ROI)
    batches = ctx.tensor(BATCHES)
    threshold = F32(ctx.scalar(SCORE_THRESHOLD))
    limit = int(ctx.scalar(MAX_DETECTIONS))
    step = _nms_step(ctx)
    work = scores.reshape(-1).copy()  # soft NMS rescores in place
    selected: list[int] = []
    batch_of: list[int] = []
    for start, stop in _runs(batches):
        kept: list[int] = []
        for c in range(1, classes):
            column = scores[start:stop, c]
            candidates = [(start + int(b)) * classes + c
                          for b in np.flatnonzero(column > threshold)]
            kept += suppress(candidates, work, boxes, limit, step)
        kept = sort_by_score(kept, work)
        if 0 <= limit < len(kept):
            kept = kept[:limit]
        kept = sorted(sort_by_score(kept, work), key=lambda k: k % classes)
        selected += kept
        batch_of += [int(batches[start])] * len(kept)
    index = np.asarray(selected, dtype=np.int64)
    return [from_float32(work[index], ctx.output_operand(0)),
            raw[index].reshape(len(selected), 4).astype(ctx.output_dtype(1)),
            (index % classes).astype(np.int32),
            np.asarray(batch_of, dtype=np.int32)]


@register(OperationType.BOX_WITH_NMS_LIMIT,
          inputs=("scores", "roi", "batch_index", "score_threshold", "max_num_detections",
                  "nms_kernel", "iou_threshold", "sigma", "nms_score_threshold"),
          outputs=("scores", "roi", "classes", "batch_index"),
          kernel_types={*_FLOAT, *_QUANT8}, shapes_from_values=True)
class BoxWithNmsLimit:
    """BOX_WITH_NMS_LIMIT: per-class soft NMS of scored boxes, grouped by batch."""

    @staticmethod
    def validate(ctx: OperationContext) -> None:
        """NNAPI's types, the box quantisation and the shape rules known statically."""
        ctx.expect_counts(9, 4)
        t = ctx.expect_type(SCORES, *_FLOAT, *_QUANT8)
        roi_type = T.TENSOR_QUANT16_ASYMM if t in _QUANT8 else t
        ctx.expect_type(ROI, roi_type)
        ctx.expect_type(BATCHES, T.TENSOR_INT32)
        scalar = _scalar_type(t)
        for i in (SCORE_THRESHOLD, IOU_THRESHOLD, SIGMA, NMS_SCORE_THRESHOLD):
            ctx.expect_scalar(i, scalar)
        ctx.expect_scalar(MAX_DETECTIONS, T.INT32)
        ctx.expect_scalar(KERNEL, T.INT32)
        kernel = ctx.constant(KERNEL)
        if kernel is not None and kernel not in _KERNELS:
            ctx.fail(f"nms_kernel must be 0 (hard), 1 (linear) or 2 (gaussian), got {kernel}",
                     input=KERNEL)
        ctx.expect_output_type(0, t)
        ctx.expect_output_quant_like_input(0, SCORES)
        ctx.expect_output_type(1, roi_type)
        ctx.expect_output_type(2, T.TENSOR_INT32)
        ctx.expect_output_type(3, T.TENSOR_INT32)
        expect_box_quant(ctx, input=ROI)
        expect_box_quant(ctx, output=1)
        _nms_shapes(ctx)

    @staticmethod
    def prepare(ctx: OperationContext) -> list[Shape]:
        """Known only at execution, when the kept boxes are computed."""
        return prepared_shapes(ctx, _box_with_nms)

    @staticmethod
    def execute(ctx: ExecutionContext) -> list[Array]:
        """The kept boxes' scores, boxes, classes and batch indices."""
        return prepared_results(ctx, _box_with_nms)


# -- DETECTION_POSTPROCESSING --------------------------------------------------------------------

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
    batches, count, classes = scores.shape
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
        scalar = _scalar_type(t)
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
