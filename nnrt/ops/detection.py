"""BOX_WITH_NMS_LIMIT: per-class soft non-maximum suppression of scored boxes, per batch.

NNAPI signature: 0 ``scores`` ``[num_rois, num_classes]`` (TENSOR_FLOAT32, TENSOR_FLOAT16,
TENSOR_QUANT8_ASYMM or TENSOR_QUANT8_ASYMM_SIGNED), class 0 the background; 1 ``roi``
``[num_rois, num_classes * 4]`` boxes ``(x1, y1, x2, y2)`` per class (the scores' float type;
TENSOR_QUANT16_ASYMM, scale 0.125, zero point 0, for quantised scores); 2 ``batch_index``
``[num_rois]`` TENSOR_INT32, boxes of one batch grouped together; scalars (FLOAT16 for
TENSOR_FLOAT16 scores, else FLOAT32; INT32): 3 ``score_threshold``, 4 ``max_num_detections``
(negative: unlimited), 5 ``nms_kernel`` (0 hard, 1 linear, 2 gaussian), 6 ``iou_threshold``,
7 ``sigma`` (gaussian), 8 ``nms_score_threshold``. Outputs, of a data-dependent length
``num_output_rois`` (possibly 0): 0 ``scores`` (the input's type, scale and zero point), 1
``roi`` ``[num_output_rois, 4]`` (input 1's type; quantised: 0.125 / 0), 2 ``classes`` and 3
``batch_index`` TENSOR_INT32.

Per batch and per class (background excluded), the boxes scoring above ``score_threshold`` go
through soft NMS: the best box is kept, the others' scores multiplied by the kernel of their IoU
with it (hard: 0 at IoU >= threshold; linear: ``1 - IoU`` there; gaussian: ``exp(-IoU² /
sigma)``) and those falling below ``nms_score_threshold`` dropped; each class and each batch
keeps at most ``max_num_detections`` boxes (the best ones), listed by class, then by descending
score.

Every type variant is implemented the way NNAPI's CPU executor computes it: in float32 (float16
and quantised inputs converted, scores converted back with :func:`nnrt.ops.boxes.from_float32`);
output boxes are copies of the input's. Suppression reproduces NNAPI's order exactly
(:func:`nnrt.ops.boxes.suppress`).
"""

from __future__ import annotations

import itertools

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
    return list(itertools.pairwise(bounds))


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
