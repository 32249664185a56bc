"""Malformed detection models (boxes, NMS, proposals, ROI pooling, keypoints) are rejected with
messages naming the operation, the operand and the rule it breaks."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import single_op
from single_op import IN

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op

F = T.TENSOR_FLOAT32


def build(op: Op, inputs: list[tuple[Any, ...]], outputs: list[tuple[Any, ...]]) -> nnrt.Model:
    """A one-operation model; an input whose value is IN is a model input."""
    return single_op.build(op, inputs, outputs, model_input=IN)


def where(op: Op, slot: int, name: str, kind: str = "input") -> str:
    return rf"operation 0 \({op.name}\), {kind} {slot} \({name}\): "


# -- BOX_WITH_NMS_LIMIT --------------------------------------------------------------------------

def nms_inputs(scores: tuple[int, ...] = (3, 3), roi: tuple[int, ...] = (3, 12),
               batches: tuple[int, ...] = (3,), kernel: int = 0, *,
               scores_type: T = F, roi_quant: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    roi_type = T.TENSOR_QUANT16_ASYMM if roi_quant else F
    return [(scores_type, scores, IN, *((0.01, 0) if scores_type != F else ())),
            (roi_type, roi, IN, *roi_quant), (T.TENSOR_INT32, batches, IN),
            (T.FLOAT32, (), 0.3), (T.INT32, (), -1), (T.INT32, (), kernel),
            (T.FLOAT32, (), 0.4), (T.FLOAT32, (), 1.0), (T.FLOAT32, (), 0.3)]


def nms_outputs(scores_type: T = F, roi_type: T = F) -> list[tuple[Any, ...]]:
    quant_scores = (0.01, 0) if scores_type != F else ()
    quant_roi = (0.125, 0) if roi_type != F else ()
    return [(scores_type, (0,), *quant_scores), (roi_type, (0, 4), *quant_roi),
            (T.TENSOR_INT32, (0,)), (T.TENSOR_INT32, (0,))]


NMS = Op.BOX_WITH_NMS_LIMIT


def test_nms_roi_width_is_four_per_class() -> None:
    with pytest.raises(nnrt.BadData, match=where(NMS, 1, "roi") + r"dimension 1 must be 4 \* "
                       r"num_classes \(input 0 dimension 1\) = 12, got 8 \(shape \(3, 8\)\)"):
        build(NMS, nms_inputs(roi=(3, 8)), nms_outputs()).finish()


def test_nms_box_counts_agree() -> None:
    with pytest.raises(nnrt.BadData, match=where(NMS, 1, "roi") + r"dimension 0 must be "
                       r"num_rois \(input 0 dimension 0\) = 3, got 4"):
        build(NMS, nms_inputs(roi=(4, 12)), nms_outputs()).finish()
    with pytest.raises(nnrt.BadData, match=where(NMS, 2, "batch_index") + r"dimension 0 must "
                       r"be num_rois \(input 0 dimension 0\) = 3, got 2"):
        build(NMS, nms_inputs(batches=(2,)), nms_outputs()).finish()


def test_nms_needs_a_class_besides_the_background() -> None:
    with pytest.raises(nnrt.BadData, match=where(NMS, 0, "scores") + r"num_classes \(dimension "
                       r"1\) must be at least 2 \(class 0 is the background\), got 1"):
        build(NMS, nms_inputs(scores=(3, 1), roi=(3, 4)), nms_outputs()).finish()


def test_nms_ranks_and_kernel() -> None:
    with pytest.raises(nnrt.BadData, match=where(NMS, 1, "roi") + "expected rank 2, got 3"):
        build(NMS, nms_inputs(roi=(3, 3, 4)), nms_outputs()).finish()
    with pytest.raises(nnrt.BadData, match=where(NMS, 5, "nms_kernel") + r"nms_kernel must be 0 "
                       r"\(hard\), 1 \(linear\) or 2 \(gaussian\), got 3"):
        build(NMS, nms_inputs(kernel=3), nms_outputs()).finish()


def test_nms_quantised_boxes_use_eighths() -> None:
    q8 = T.TENSOR_QUANT8_ASYMM
    with pytest.raises(nnrt.BadData, match=where(NMS, 1, "roi") + r"TENSOR_QUANT16_ASYMM box "
                       r"coordinates must have scale 0.125 and zero point 0, got scale 0.25 "
                       r"and zero point 0"):
        build(NMS, nms_inputs(scores_type=q8, roi_quant=(0.25, 0)),
              nms_outputs(q8, T.TENSOR_QUANT16_ASYMM)).finish()
    with pytest.raises(nnrt.BadData, match=where(NMS, 1, "roi") + "expected TENSOR_QUANT16_ASYMM,"
                       " got TENSOR_FLOAT32"):
        build(NMS, nms_inputs(scores_type=q8), nms_outputs(q8, T.TENSOR_QUANT16_ASYMM)).finish()


def test_nms_scores_output_keeps_the_input_quantisation() -> None:
    q8 = T.TENSOR_QUANT8_ASYMM
    outputs = nms_outputs(q8, T.TENSOR_QUANT16_ASYMM)
    outputs[0] = (q8, (0,), 0.02, 0)
    with pytest.raises(nnrt.BadData, match=where(NMS, 0, "scores", "output") + r"expected the "
                       r"scale and zero point of input 0"):
        build(NMS, nms_inputs(scores_type=q8, roi_quant=(0.125, 0)), outputs).finish()


def test_nms_rejects_inverted_boxes_at_execution() -> None:
    model = build(NMS, nms_inputs(scores=(1, 2), roi=(1, 8), batches=(1,)),
                  nms_outputs()).finish()
    roi = np.array([[0, 0, 1, 1, 5, 0, 4, 1]], np.float32)
    with pytest.raises(nnrt.BadData, match=where(NMS, 1, "roi") + r"box 0 of class 1 is invalid "
                       r"\(x2 < x1 or y2 < y1\)"):
        nnrt.reference.run(model, [np.ones((1, 2), np.float32), roi, np.zeros(1, np.int32)])


def test_nms_shapes_checked_at_execution() -> None:
    model = build(NMS, nms_inputs(scores=(0, 2), roi=(0, 0), batches=(0,)), nms_outputs()).finish()
    with pytest.raises(nnrt.BadData, match=where(NMS, 1, "roi") + r"dimension 1 must be 4 \* "
                       r"num_classes \(input 0 dimension 1\) = 8, got 4"):
        nnrt.reference.run(model, [np.ones((1, 2), np.float32), np.ones((1, 4), np.float32),
                                   np.zeros(1, np.int32)])


def test_nms_output_length_follows_the_values_each_execution() -> None:
    """The kept boxes depend on the scores: a plan reused for inputs of the same shapes must
    not reuse the previous output shapes."""
    from nnrt.reference.interpreter import ExecutionPlan
    inputs = nms_inputs(scores=(2, 2), roi=(2, 8), batches=(2,))
    inputs[2] = (T.TENSOR_INT32, (2,), np.zeros(2, np.int32))  # a constant: float inputs only
    plan = ExecutionPlan(build(NMS, inputs, nms_outputs()).finish())
    roi = np.array([[0, 0, 1, 1, 0, 0, 1, 1], [0, 0, 1, 1, 5, 5, 6, 6]], np.float32)
    for scores, kept in (([[0, 0.9], [0, 0.8]], 2), ([[0, 0.9], [0, 0.1]], 1),
                         ([[0, 0.1], [0, 0.1]], 0)):
        results = plan.execute(plan.binder.bind([np.array(scores, np.float32), roi]))
        assert [r.shape for r in results] == [(kept,), (kept, 4), (kept,), (kept,)]


# -- AXIS_ALIGNED_BBOX_TRANSFORM -----------------------------------------------------------------

BBOX = Op.AXIS_ALIGNED_BBOX_TRANSFORM


def bbox_inputs(deltas: tuple[int, ...] = (2, 8)) -> list[tuple[Any, ...]]:
    return [(F, (2, 4), IN), (F, deltas, IN), (T.TENSOR_INT32, (2,), IN), (F, (1, 2), IN)]


def test_bbox_deltas_are_four_per_class() -> None:
    with pytest.raises(nnrt.BadData, match=where(BBOX, 1, "bbox_deltas") + r"dimension 1 must "
                       r"be 4 \* num_classes with num_classes > 0, got 6"):
        build(BBOX, bbox_inputs((2, 6)), [(F, (2, 6))]).finish()


def test_bbox_batch_index_in_range_at_execution() -> None:
    model = build(BBOX, bbox_inputs(), [(F, (2, 8))]).finish()
    with pytest.raises(nnrt.BadData, match=where(BBOX, 2, "batch_index") + r"batch index 1 of "
                       r"box 1 is out of range \[0, 1\)"):
        nnrt.reference.run(model, [np.ones((2, 4), np.float32), np.zeros((2, 8), np.float32),
                                   np.array([0, 1], np.int32), np.ones((1, 2), np.float32)])


def test_bbox_transform_of_no_boxes() -> None:
    model = build(BBOX, [(F, (0, 4), IN), (F, (0, 8), IN), (T.TENSOR_INT32, (0,), IN),
                         (F, (1, 2), IN)], [(F, (0, 8))]).finish()
    (result,) = nnrt.reference.run(model, [np.zeros((0, 4), np.float32),
                                           np.zeros((0, 8), np.float32), np.zeros(0, np.int32),
                                           np.ones((1, 2), np.float32)])
    assert result.shape == (0, 8)


# -- GENERATE_PROPOSALS --------------------------------------------------------------------------

PROPOSALS = Op.GENERATE_PROPOSALS


def proposal_inputs(deltas: tuple[int, ...], nchw: bool, post_nms: int = -1
                    ) -> list[tuple[Any, ...]]:
    scores = (1, 2, 2, 2)
    return [(F, scores, IN), (F, deltas, IN), (F, (2, 4), IN), (F, (1, 2), IN),
            (T.FLOAT32, (), 4.0), (T.FLOAT32, (), 4.0), (T.INT32, (), -1), (T.INT32, (), post_nms),
            (T.FLOAT32, (), 0.3), (T.FLOAT32, (), 1.0), (T.BOOL, (), nchw)]


PROPOSAL_OUTPUTS = [(F, (0,)), (F, (0, 4)), (T.TENSOR_INT32, (0,))]


def test_proposal_deltas_are_four_per_anchor() -> None:
    with pytest.raises(nnrt.BadData, match=where(PROPOSALS, 1, "bbox_deltas") + r"dimension 3 "
                       r"must be 4 \* num_anchors \(input 0 dimension 3, NHWC\) = 8, got 4"):
        build(PROPOSALS, proposal_inputs((1, 2, 2, 4), False), PROPOSAL_OUTPUTS).finish()
    with pytest.raises(nnrt.BadData, match=where(PROPOSALS, 1, "bbox_deltas") + r"dimension 1 "
                       r"must be 4 \* num_anchors \(input 0 dimension 1, NCHW\) = 8, got 4"):
        build(PROPOSALS, proposal_inputs((1, 4, 2, 2), True), PROPOSAL_OUTPUTS).finish()


def test_proposals_kept_after_nms_may_be_none() -> None:
    """post_nms_top_n = 0 keeps no proposal (NNAPI's kernel): zero-size outputs."""
    model = build(PROPOSALS, proposal_inputs((1, 2, 2, 8), False, post_nms=0),
                  PROPOSAL_OUTPUTS).finish()
    anchors = np.array([[0, 1, 4, 3], [1, 0, 3, 4]], np.float32)
    results = nnrt.reference.run(model, [np.ones((1, 2, 2, 2), np.float32),
                                         np.zeros((1, 2, 2, 8), np.float32), anchors,
                                         np.full((1, 2), 32, np.float32)])
    assert [r.shape for r in results] == [(0,), (0, 4), (0,)]


# -- ROI_ALIGN / ROI_POOLING ---------------------------------------------------------------------

ALIGN, POOL = Op.ROI_ALIGN, Op.ROI_POOLING


def roi_inputs(op: Op, rois: tuple[int, ...] = (1, 4), ratio: int = 2, *,
               quant: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    image_type = T.TENSOR_QUANT8_ASYMM if quant else F
    roi_type = T.TENSOR_QUANT16_ASYMM if quant else F
    inputs = [(image_type, (1, 4, 4, 1), IN, *quant), (roi_type, rois, IN, *(
        (0.125, 0) if quant else ())), (T.TENSOR_INT32, (1,), IN), (T.INT32, (), 2),
        (T.INT32, (), 2), (T.FLOAT32, (), 1.0), (T.FLOAT32, (), 1.0)]
    if op == ALIGN:
        inputs += [(T.INT32, (), ratio), (T.INT32, (), ratio)]
    return [*inputs, (T.BOOL, (), False)]


def test_roi_boxes_have_four_coordinates() -> None:
    for op in (ALIGN, POOL):
        with pytest.raises(nnrt.BadData, match=where(op, 1, "rois") + r"dimension 1 must be 4 "
                           r"\(x1, y1, x2, y2\) = 4, got 5"):
            build(op, roi_inputs(op, (1, 5)), [(F, (1, 2, 2, 1))]).finish()


def test_roi_align_sampling_ratio_not_negative() -> None:
    with pytest.raises(nnrt.BadData, match=where(ALIGN, 7, "height_sampling_ratio") + r"must be "
                       r"at least 0 \(0: adaptive\), got -1"):
        build(ALIGN, roi_inputs(ALIGN, ratio=-1), [(F, (1, 2, 2, 1))]).finish()


def test_roi_pooling_keeps_the_input_quantisation() -> None:
    q8 = T.TENSOR_QUANT8_ASYMM
    with pytest.raises(nnrt.BadData, match=where(POOL, 0, "output", "output") + r"expected the "
                       r"scale and zero point of input 0"):
        build(POOL, roi_inputs(POOL, quant=(0.5, 128)), [(q8, (1, 2, 2, 1), 0.25, 128)]).finish()


def test_roi_outside_the_feature_map_fails_at_execution() -> None:
    model = build(ALIGN, roi_inputs(ALIGN), [(F, (1, 2, 2, 1))]).finish()
    with pytest.raises(nnrt.BadData, match=where(ALIGN, 1, "rois") + r"roi 0 \[0.0, 0.0, 5.0, "
                       r"2.0\] lies outside the 4 x 4 feature map"):
        nnrt.reference.run(model, [np.ones((1, 4, 4, 1), np.float32),
                                   np.array([[0, 0, 5, 2]], np.float32), np.zeros(1, np.int32)])


# -- HEATMAP_MAX_KEYPOINT / DETECTION_POSTPROCESSING ---------------------------------------------

HEATMAP, SSD = Op.HEATMAP_MAX_KEYPOINT, Op.DETECTION_POSTPROCESSING


def test_heatmap_is_square_and_boxes_match() -> None:
    outputs = [(F, (2, 1)), (F, (2, 1, 2))]
    with pytest.raises(nnrt.BadData, match=where(HEATMAP, 0, "heatmap") + r"the heatmap must be "
                       r"square, got 4 x 3 \(NHWC\)"):
        build(HEATMAP, [(F, (2, 4, 3, 1), IN), (F, (2, 4), IN), (T.BOOL, (), False)],
              outputs).finish()
    with pytest.raises(nnrt.BadData, match=where(HEATMAP, 1, "boxes") + r"dimension 0 must be "
                       r"num_boxes \(input 0 dimension 0\) = 2, got 3"):
        build(HEATMAP, [(F, (2, 4, 4, 1), IN), (F, (3, 4), IN), (T.BOOL, (), False)],
              outputs).finish()


def ssd_inputs(anchors: int = 6, detections: int = 3, encoding: int = 4) -> list[tuple[Any, ...]]:
    scalar = (T.FLOAT32, (), 1.0)
    return [(F, (1, 6, 3), IN), (F, (1, 6, encoding), IN), (F, (anchors, 4), IN), scalar, scalar,
            scalar, scalar, (T.BOOL, (), True), (T.INT32, (), detections), (T.INT32, (), 1),
            (T.INT32, (), 1), (T.FLOAT32, (), 0.0), (T.FLOAT32, (), 0.5), (T.BOOL, (), False)]


SSD_OUTPUTS = [(F, (1, 3)), (F, (1, 3, 4)), (T.TENSOR_INT32, (1, 3)), (T.TENSOR_INT32, (1,))]


def test_ssd_anchors_and_encoding() -> None:
    with pytest.raises(nnrt.BadData, match=where(SSD, 2, "anchors") + r"dimension 0 must be "
                       r"num_anchors \(input 0 dimension 1\) = 6, got 5"):
        build(SSD, ssd_inputs(anchors=5), SSD_OUTPUTS).finish()
    with pytest.raises(nnrt.BadData, match=where(SSD, 1, "box_deltas") + r"the box encoding "
                       r"length \(dimension 2\) must be at least 4, got 3"):
        build(SSD, ssd_inputs(encoding=3), SSD_OUTPUTS).finish()
    with pytest.raises(nnrt.BadData, match=where(SSD, 8, "max_num_detections") + "must be "
                       "positive, got 0"):
        build(SSD, ssd_inputs(detections=0), SSD_OUTPUTS).finish()
