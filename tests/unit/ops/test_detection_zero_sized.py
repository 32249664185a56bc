"""Zero-size tensors through the detection operations, after NNAPI's ``zero_sized`` spec examples
(V1_2 roi_align.mod.py, roi_pooling.mod.py): BOX_WITH_NMS_LIMIT keeps no box, and the
operations consuming its empty outputs produce empty outputs of their own."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op

F = T.TENSOR_FLOAT32
Q8 = T.TENSOR_QUANT8_ASYMM
Q16 = T.TENSOR_QUANT16_ASYMM


class Chain:
    """A model whose first operation is the specs' BOX_WITH_NMS_LIMIT keeping no box: scores
    [0.90, 0.10] (the only non-background class scores 0.10 < 0.3)."""

    def __init__(self, *, quantised: bool = False) -> None:
        self.model = nnrt.Model()
        self.quantised = quantised
        score_quant = (0.1, 128) if quantised else ()
        box_quant = (0.125, 0) if quantised else ()
        scores = [0.90, 0.10]
        if quantised:
            scores = [137, 129]  # 0.90 and 0.10 at scale 0.1, zero point 128
        self.score_type, self.box_type = (Q8, Q16) if quantised else (F, F)
        p1 = self.const(self.score_type, (1, 2),
                        np.array([scores], np.uint8 if quantised else np.float32), *score_quant)
        boxes = np.array([[1, 1, 10, 10, 0, 0, 10, 10]], np.uint16 if quantised else np.float32)
        p2 = self.const(self.box_type, (1, 8), boxes * (8 if quantised else 1), *box_quant)
        params = [self.const(T.TENSOR_INT32, (1,), np.array([0], np.int32)), self.scalar(0.3),
                  self.int(-1),
                  self.int(0), self.scalar(0.4), self.scalar(1.0), self.scalar(0.3)]
        self.scores = self.model.add_operand(self.score_type, (0,), *score_quant)
        self.rois = self.model.add_operand(self.box_type, (0, 4), *box_quant)
        self.classes = self.model.add_operand(T.TENSOR_INT32, (0,))
        self.batches = self.model.add_operand(T.TENSOR_INT32, (0,))
        self.model.add_operation(Op.BOX_WITH_NMS_LIMIT, [p1, p2, *params],
                                 [self.scores, self.rois, self.classes, self.batches])

    def const(self, type_: T, dims: tuple[int, ...], value: Any, *quant: Any) -> int:
        index = self.model.add_operand(type_, dims, *quant)
        self.model.set_operand_value(index, value)
        return index

    def scalar(self, value: float) -> int:
        return self.const(T.FLOAT32, (), value)

    def int(self, value: int) -> int:
        return self.const(T.INT32, (), value)

    def flag(self, value: bool) -> int:
        return self.const(T.BOOL, (), value)

    def image(self, dims: tuple[int, ...]) -> int:
        """A model input feature map of the chain's data type."""
        return self.model.add_operand(self.score_type, dims, *((0.1, 128) if self.quantised
                                                              else ()))

    def finish(self, inputs: list[int], outputs: list[int]) -> nnrt.Model:
        self.model.identify_inputs_and_outputs(inputs, [self.scores, self.classes, *outputs])
        return self.model.finish()


def feed(chain: Chain, dims: tuple[int, ...]) -> np.ndarray:
    return np.zeros(dims, np.uint8 if chain.quantised else np.float32)


@pytest.mark.parametrize("quantised", [False, True])
@pytest.mark.parametrize("nchw", [False, True])
def test_roi_align_of_no_boxes(quantised: bool, nchw: bool) -> None:
    chain = Chain(quantised=quantised)
    x = chain.image((1, 1, 1, 1))
    dims = (0, 1, 2, 2) if nchw else (0, 2, 2, 1)
    aligned = chain.image(dims)
    chain.model.add_operation(Op.ROI_ALIGN, [
        x, chain.rois, chain.batches, chain.int(2), chain.int(2), chain.scalar(2.0),
        chain.scalar(2.0), chain.int(4), chain.int(4), chain.flag(nchw)], [aligned])
    model = chain.finish([x], [aligned])
    scores, classes, result = nnrt.reference.run(model, [feed(chain, (1, 1, 1, 1))])
    assert scores.shape == classes.shape == (0,)
    assert result.shape == dims and result.dtype == scores.dtype


def test_roi_pooling_of_no_boxes() -> None:
    chain = Chain()
    x = chain.image((1, 1, 1, 1))
    pooled = chain.image((0, 2, 2, 1))
    chain.model.add_operation(Op.ROI_POOLING, [
        x, chain.rois, chain.batches, chain.int(2), chain.int(2), chain.scalar(2.0),
        chain.scalar(2.0), chain.flag(False)], [pooled])
    model = chain.finish([x], [pooled])
    *_, result = nnrt.reference.run(model, [feed(chain, (1, 1, 1, 1))])
    assert result.shape == (0, 2, 2, 1)


def test_keypoints_and_transform_of_no_boxes() -> None:
    """ROI_ALIGN's empty feature map feeds HEATMAP_MAX_KEYPOINT; the empty boxes feed
    AXIS_ALIGNED_BBOX_TRANSFORM (as their own deltas)."""
    chain = Chain()
    x = chain.image((1, 4, 4, 3))
    heatmap = chain.image((0, 2, 2, 3))
    chain.model.add_operation(Op.ROI_ALIGN, [
        x, chain.rois, chain.batches, chain.int(2), chain.int(2), chain.scalar(1.0),
        chain.scalar(1.0), chain.int(2), chain.int(2), chain.flag(False)], [heatmap])
    scores = chain.model.add_operand(F, (0, 0))
    points = chain.model.add_operand(F, (0, 0, 2))
    chain.model.add_operation(Op.HEATMAP_MAX_KEYPOINT, [heatmap, chain.rois, chain.flag(False)],
                              [scores, points])
    info = chain.const(F, (1, 2), np.array([[32.0, 32.0]]))
    moved = chain.model.add_operand(F, (0, 4))
    chain.model.add_operation(Op.AXIS_ALIGNED_BBOX_TRANSFORM,
                              [chain.rois, chain.rois, chain.batches, info], [moved])
    model = chain.finish([x], [scores, points, moved])
    results = nnrt.reference.run(model, [feed(chain, (1, 4, 4, 3))])
    assert [r.shape for r in results[2:]] == [(0, 3), (0, 3, 2), (0, 4)]
