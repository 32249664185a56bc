"""nnrt's own cases for the detection operations' edge rules: zero-size tensors and saturation.

NNAPI 1.3 allows zero boxes in BOX_WITH_NMS_LIMIT, AXIS_ALIGNED_BBOX_TRANSFORM, ROI_ALIGN,
ROI_POOLING and HEATMAP_MAX_KEYPOINT, and the operations that keep a data-dependent number of
boxes may keep none. A zero-size tensor cannot be a constant (a 0 in declared dims means
unknown), so these cases skip the ``consts`` variant. The expected values need no arithmetic:
empty outputs, or results far beyond the quantised range (saturated).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import OpCase, bools, f32, f32s, i32, i32s, out, quant

CASES: list[OpCase] = []

_NO_CONSTS = ("consts",)


def _empty(*dims: int) -> Any:
    return np.zeros(dims)


def _nms_params(score_threshold: float) -> tuple[Any, ...]:
    return (f32s(score_threshold), i32s(-1), i32s(0), f32s(0.4), f32s(1.0), f32s(0.3))


_NMS_EMPTY = (out(T.TENSOR_FLOAT32, (0,), _empty(0)), out(T.TENSOR_FLOAT32, (0, 4), _empty(0, 4)),
              out(T.TENSOR_INT32, (0,), _empty(0)), out(T.TENSOR_INT32, (0,), _empty(0)))

CASES += [
    OpCase("box_with_nms_limit_no_rois", Op.BOX_WITH_NMS_LIMIT,
           inputs=(f32(_empty(0, 3)), f32(_empty(0, 12)), i32(np.zeros(0, np.int32)),
                   *_nms_params(0.3)),
           outputs=_NMS_EMPTY, skip=_NO_CONSTS),
    # every score at or below the threshold (0.3 is not above 0.3): nothing kept
    OpCase("box_with_nms_limit_none_above_threshold", Op.BOX_WITH_NMS_LIMIT,
           inputs=(f32([[0.9, 0.3], [0.9, 0.1]]), f32([[0, 0, 1, 1, 0, 0, 1, 1]] * 2),
                   i32([0, 1]), *_nms_params(0.3)),
           outputs=_NMS_EMPTY),
    OpCase("axis_aligned_bbox_transform_no_rois", Op.AXIS_ALIGNED_BBOX_TRANSFORM,
           inputs=(f32(_empty(0, 4)), f32(_empty(0, 8)), i32(np.zeros(0, np.int32)),
                   f32([[32.0, 32.0]])),
           outputs=(out(T.TENSOR_FLOAT32, (0, 8), _empty(0, 8)),), skip=_NO_CONSTS),
    OpCase("heatmap_max_keypoint_no_boxes", Op.HEATMAP_MAX_KEYPOINT,
           inputs=(f32(_empty(0, 3, 3, 2)), f32(_empty(0, 4)), bools(False)),
           outputs=(out(T.TENSOR_FLOAT32, (0, 2), _empty(0, 2)),
                    out(T.TENSOR_FLOAT32, (0, 2, 2), _empty(0, 2, 2))), skip=_NO_CONSTS),
    # post_nms_top_n = 0 keeps no proposal (NNAPI's kernel; negative keeps all)
    OpCase("generate_proposals_none_after_nms", Op.GENERATE_PROPOSALS,
           inputs=(f32(np.ones((1, 2, 2, 1))), f32(np.zeros((1, 2, 2, 4))),
                   f32([[0, 0, 4, 4]]), f32([[16.0, 16.0]]), f32s(4.0), f32s(4.0), i32s(-1),
                   i32s(0), f32s(0.5), f32s(1.0), bools(False)),
           outputs=(out(T.TENSOR_FLOAT32, (0,), _empty(0)),
                    out(T.TENSOR_FLOAT32, (0, 4), _empty(0, 4)),
                    out(T.TENSOR_INT32, (0,), _empty(0)))),
]


def _roi_inputs(op: Op, image: Any, rois: Any, batches: Any) -> tuple[Any, ...]:
    sampling = (i32s(2), i32s(2)) if op == Op.ROI_ALIGN else ()
    return (image, rois, batches, i32s(2), i32s(2), f32s(1.0), f32s(1.0), *sampling,
            bools(False))


for _op in (Op.ROI_ALIGN, Op.ROI_POOLING):
    _name = _op.name.lower()
    CASES.append(OpCase(
        f"{_name}_no_rois", _op,
        inputs=_roi_inputs(_op, f32(np.ones((1, 4, 4, 1))), f32(_empty(0, 4)),
                           i32(np.zeros(0, np.int32))),
        outputs=(out(T.TENSOR_FLOAT32, (0, 2, 2, 1), _empty(0, 2, 2, 1)),), skip=_NO_CONSTS))

# ROI_ALIGN's quantised kernel saturates: real inputs of +-255 rescaled to an output scale of
# 0.5 are +-510, beyond either type's range.
_BOX = quant([[0, 0, 32, 32]], T.TENSOR_QUANT16_ASYMM, 0.125)
for _type, _fill, _zero, _limit in ((T.TENSOR_QUANT8_ASYMM, 255, 0, 255),
                                    (T.TENSOR_QUANT8_ASYMM_SIGNED, -128, 127, -128)):
    CASES.append(OpCase(
        f"roi_align_saturates_{'high' if _limit > 0 else 'low'}_{_type.name.lower()}",
        Op.ROI_ALIGN,
        inputs=_roi_inputs(Op.ROI_ALIGN, quant(np.full((1, 4, 4, 1), _fill), _type, 1.0, _zero),
                           _BOX, i32([0])),
        outputs=(out(_type, (1, 2, 2, 1), np.full((1, 2, 2, 1), _limit), scale=0.5),)))
