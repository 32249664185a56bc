"""Conformance cases of the detection operations, transcribed from NNAPI's published test specs.

Every case is one example of an AOSP ``runtime/test/specs/V1_2/*.mod.py`` file (named in a
comment; case names ``<op>_nnapi_<spec stem>[_<example>][_nchw][_<variation>]``): the float
vectors as written, the ``quant8`` variation quantised as the spec's ``DataTypeConverter`` says
(:mod:`nnrt.testing.cases.converter`), and the ``quant8_signed`` variation of the V1_3
``*_quant8_signed`` spec (the same vectors, zero points lowered by 128). float16 and relaxed are
nnrt's automatic variants. ROI_ALIGN, ROI_POOLING and HEATMAP_MAX_KEYPOINT are in
:mod:`nnrt.testing.cases.nnapi_detection_roi`, appended below.

The quant8 scales of box_with_nms_limit_gaussian / _linear are those of box_with_nms_limit_hard
(the three specs share their vectors); GENERATE_PROPOSALS' quant8 scales are those of its V1_3
signed spec with the zero points raised by 128.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.cases import nnapi_detection_roi
from nnrt.testing.cases.converter import Conversion, quantised, signed
from nnrt.testing.spec import Arg, OpCase, bools, f32, f32s, i32, i32s, out, to_nchw

CASES: list[OpCase] = []


def _t(values: Sequence[float], *dims: int) -> Any:
    return np.asarray(values, np.float64).reshape(dims)


def _add(case: OpCase, conversion: Conversion | None = None) -> None:
    """The float case and, given a conversion, its quant8 and quant8_signed variations."""
    CASES.append(case)
    if conversion is not None:
        CASES.append(quantised(case, conversion))
        CASES.append(quantised(case, signed(conversion), "quant8_signed"))


# -- AXIS_ALIGNED_BBOX_TRANSFORM (V1_2/axis_aligned_bbox_transform.mod.py) ----------------------

_BBOX_ROI = [100, 150, 400, 430, 120, 60, 122, 61, 10, 20, 20, 50, 50, 120, 150, 250,
             400, 100, 1000, 2000]
_BBOX_DELTAS = [
    0.2, 0.2, 0.1, 0.1, 0.3, -0.1, -0.2, 0.1, -0.5, 0.2, 0.2, -0.5, -0.1, -0.1, 2.5, 3,
    -0.5, -0.5, 1, 1, 0.5, 0.5, -1.5, -1.2, 0.2, 0.2, -3, -4, 1, -0.5, 0.3, 0.5,
    0.3, -0.2, 1.1, -0.8, 0.1, 0.05, -0.5, -0.5]
_BBOX_OUT = [
    144.224350, 191.276062, 475.775635, 500.723938, 217.190384, 107.276062, 462.809631,
    416.723938, 118.778594, 60.396736, 121.221406, 61.003266, 108.617508, 50.357232,
    132.982498, 70.442772, 0.000000, 0.000000, 23.59140714, 60.77422571, 18.88435,
    45.48208571, 21.11565, 54.51791429, 117.51063714, 209.80948286, 122.48935143,
    212.19050857, 132.50705143, 12.83312286, 255.99999571, 227.16685714, 0.0, 243.1374815,
    512.0, 1024.0, 512.0, 568.7958375, 512.0, 1024.0]
_BBOX_QUANT = {"i0": (T.TENSOR_QUANT16_ASYMM, 0.125, 0), "i1": (T.TENSOR_QUANT8_ASYMM, 0.05, 128),
               "i3": (T.TENSOR_QUANT16_ASYMM, 0.125, 0), "o0": (T.TENSOR_QUANT16_ASYMM, 0.125, 0)}

for _name, _batches, _info in (
        ("1", [0, 1, 2, 2, 3], [512, 512, 128, 256, 256, 256, 1024, 512]),
        ("zero_batch", [0, 2, 5, 5, 6],
         [512, 512, 32, 32, 128, 256, 32, 32, 32, 32, 256, 256, 1024, 512])):
    _add(OpCase(
        f"axis_aligned_bbox_transform_nnapi_axis_aligned_bbox_transform_{_name}",
        Op.AXIS_ALIGNED_BBOX_TRANSFORM,
        inputs=(f32(_t(_BBOX_ROI, 5, 4)), f32(_t(_BBOX_DELTAS, 5, 8)), i32(_batches),
                f32(_t(_info, len(_info) // 2, 2))),
        outputs=(out(T.TENSOR_FLOAT32, (5, 8), _t(_BBOX_OUT, 5, 8)),)), _BBOX_QUANT)


# -- BOX_WITH_NMS_LIMIT (V1_2/box_with_nms_limit_{hard,linear,gaussian}.mod.py) -----------------

_NMS_SCORES = [
    0.90, 0.95, 0.75, 0.80, 0.70, 0.85, 0.60, 0.90, 0.95, 0.90, 0.65, 0.90, 0.80, 0.85, 0.80,
    0.60, 0.60, 0.20, 0.60, 0.80, 0.40, 0.90, 0.55, 0.60, 0.90, 0.75, 0.70, 0.80, 0.70, 0.85,
    0.90, 0.95, 0.75, 0.80, 0.85, 0.80, 0.60, 0.90, 0.95, 0.60, 0.60, 0.20, 0.50, 0.90, 0.80,
    0.90, 0.75, 0.70, 0.90, 0.65, 0.90, 0.90, 0.55, 0.60, 0.60, 0.80, 0.40]
#: Per box, the (low, high) corners of its three class boxes, each ``(low, low, high, high)``.
_NMS_CORNERS = [(1, 10, 0, 10, 0, 10), (2, 11, 1, 11, 1, 11), (3, 12, 2, 12, 2, 12),
                (4, 13, 3, 13, 3, 13), (5, 14, 4, 14, 4, 14), (6, 15, 5, 15, 5, 15),
                (7, 16, 6, 16, 6, 16), (8, 17, 7, 17, 7, 17), (9, 18, 8, 18, 8, 18),
                (2, 11, 2, 12, 2, 12), (1, 10, 1, 11, 1, 11), (5, 14, 5, 15, 5, 15),
                (3, 12, 3, 13, 3, 13), (6, 15, 6, 16, 6, 16), (0, 1, 0, 2, 0, 2),
                (9, 18, 9, 19, 9, 19), (4, 13, 4, 14, 4, 14), (8, 17, 8, 18, 8, 18),
                (7, 16, 7, 17, 7, 17)]
_NMS_ROI = [v for a, b, c, d, e, f in _NMS_CORNERS for v in (a, a, b, b, c, c, d, d, e, e, f, f)]


def _squares(*corners: int) -> Any:
    """Boxes ``(k, k, m, m)`` for the ``(k, m)`` pairs given flat."""
    pairs = np.asarray(corners, np.float64).reshape(-1, 2)
    return np.stack([pairs[:, 0], pairs[:, 0], pairs[:, 1], pairs[:, 1]], axis=1)


def _nms(name: str, batches: Sequence[int], params: Sequence[float], scores: Sequence[float],
         boxes: Any, classes: Sequence[int], batch_out: Sequence[int], zero_point: int) -> None:
    n = len(scores)
    score_threshold, limit, kernel, iou, sigma, nms_score = params
    _add(OpCase(
        f"box_with_nms_limit_nnapi_{name}", Op.BOX_WITH_NMS_LIMIT,
        inputs=(f32(_t(_NMS_SCORES, 19, 3)), f32(_t(_NMS_ROI, 19, 12)), i32(list(batches)),
                f32s(score_threshold), i32s(int(limit)), i32s(int(kernel)), f32s(iou),
                f32s(sigma), f32s(nms_score)),
        outputs=(out(T.TENSOR_FLOAT32, (n,), list(scores)), out(T.TENSOR_FLOAT32, (n, 4), boxes),
                 out(T.TENSOR_INT32, (n,), list(classes)),
                 out(T.TENSOR_INT32, (n,), list(batch_out)))),
        {"i0": (T.TENSOR_QUANT8_ASYMM, 0.01, zero_point), "i1": (T.TENSOR_QUANT16_ASYMM, 0.125, 0),
         "o0": (T.TENSOR_QUANT8_ASYMM, 0.01, zero_point),
         "o1": (T.TENSOR_QUANT16_ASYMM, 0.125, 0)})


_SPLIT_1 = [0] * 9 + [1] * 10
_SPLIT_2 = [1] * 9 + [3] * 10
_nms("box_with_nms_limit_hard_1", _SPLIT_1, (0.3, -1, 0, 0.4, 1.0, 0.3),
     [0.95, 0.85, 0.75, 0.95, 0.7, 0.95, 0.9, 0.85, 0.75, 0.95, 0.8, 0.7],
     _squares(0, 10, 4, 14, 8, 18, 2, 12, 8, 18, 1, 11, 0, 2, 5, 15, 9, 19, 3, 13, 0, 2, 9, 19),
     [1, 1, 1, 2, 2, 1, 1, 1, 1, 2, 2, 2], [0] * 5 + [1] * 7, 0)
_nms("box_with_nms_limit_hard_2", _SPLIT_2, (0.3, 5, 0, 0.4, 0.5, 0.3),
     [0.95, 0.85, 0.75, 0.95, 0.7, 0.95, 0.9, 0.85, 0.95, 0.8],
     _squares(0, 10, 4, 14, 8, 18, 2, 12, 8, 18, 1, 11, 0, 2, 5, 15, 3, 13, 0, 2),
     [1, 1, 1, 2, 2, 1, 1, 1, 2, 2], [1] * 5 + [3] * 5, 128)
_LINEAR_BOXES = (0, 10, 4, 14, 8, 18, 2, 12, 8, 18, 4, 14, 0, 10, 1, 11, 0, 2, 5, 15, 9, 19,
                 3, 13, 0, 2, 9, 19, 5, 15, 1, 11)
_LINEAR_SCORES = [0.95, 0.85, 0.75, 0.95, 0.7, 0.42352945, 0.39705884, 0.95, 0.9, 0.85, 0.75,
                  0.95, 0.8, 0.7, 0.42352945, 0.39705884]
_LINEAR_CLASSES = [1, 1, 1, 2, 2, 2, 2, 1, 1, 1, 1, 2, 2, 2, 2, 2]
_nms("box_with_nms_limit_linear_1", _SPLIT_1, (0.3, -1, 1, 0.4, 1.0, 0.3), _LINEAR_SCORES,
     _squares(*_LINEAR_BOXES), _LINEAR_CLASSES, [0] * 7 + [1] * 9, 0)
_nms("box_with_nms_limit_linear_2", _SPLIT_2, (0.3, 8, 1, 0.4, 0.5, 0.3), _LINEAR_SCORES[:15],
     _squares(*_LINEAR_BOXES[:30]), _LINEAR_CLASSES[:15], [1] * 7 + [3] * 8, 128)
_nms("box_with_nms_limit_gaussian_1", _SPLIT_1, (0.3, -1, 2, 0.4, 0.5, 0.3),
     [0.95, 0.7879927, 0.52485234, 0.47400165, 0.95, 0.6894936, 0.4812244, 0.42367333,
      0.95, 0.89983034, 0.7879927, 0.52485234, 0.47400165, 0.95, 0.8, 0.6894936, 0.4811337,
      0.42367333],
     _squares(0, 10, 6, 16, 2, 12, 8, 18, 2, 12, 8, 18, 0, 10, 4, 14, 1, 11, 0, 2, 7, 17,
              3, 13, 9, 19, 3, 13, 0, 2, 9, 19, 1, 11, 5, 15),
     [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2], [0] * 8 + [1] * 10, 0)
_nms("box_with_nms_limit_gaussian_2", _SPLIT_2, (0.3, 5, 2, 0.4, 0.5, 0.3),
     [0.95, 0.7879927, 0.52485234, 0.95, 0.6894936, 0.95, 0.89983034, 0.7879927, 0.95, 0.8],
     _squares(0, 10, 6, 16, 2, 12, 2, 12, 8, 18, 1, 11, 0, 2, 7, 17, 3, 13, 0, 2),
     [1, 1, 1, 2, 2, 1, 1, 1, 2, 2], [1] * 5 + [3] * 5, 128)


# -- DETECTION_POSTPROCESSING (V1_2/detection_postprocess.mod.py) --------------------------------

_SSD_SCORES = [0., .9, .8, 0., .75, .72, 0., .6, .5, 0., .93, .95, 0., .5, .4, 0., .3, .2]
_SSD_DELTAS = [0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0,
               0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
_SSD_ANCHORS = [0.5, 0.5, 1.0, 1.0, 0.5, 0.5, 1.0, 1.0, 0.5, 0.5, 1.0, 1.0,
                0.5, 10.5, 1.0, 1.0, 0.5, 10.5, 1.0, 1.0, 0.5, 100.5, 1.0, 1.0]
_SSD_FAST_BOXES = [0.0, 10.0, 1.0, 11.0, 0.0, 0.0, 1.0, 1.0, 0.0, 100.0, 1.0, 101.0]


def _ssd(name: str, deltas: Any, regular: bool, bg_in_label: bool, scores: Sequence[float],
         boxes: Sequence[float], classes: Sequence[int], found: int) -> None:
    CASES.append(OpCase(
        f"detection_postprocessing_nnapi_detection_postprocess_{name}",
        Op.DETECTION_POSTPROCESSING,
        inputs=(f32(_t(_SSD_SCORES, 1, 6, 3)), f32(deltas), f32(_t(_SSD_ANCHORS, 6, 4)),
                f32s(10.0), f32s(10.0), f32s(5.0), f32s(5.0), bools(regular), i32s(3),
                i32s(1), i32s(1), f32s(0.0), f32s(0.5), bools(bg_in_label)),
        outputs=(out(T.TENSOR_FLOAT32, (1, 3), [list(scores)]),
                 out(T.TENSOR_FLOAT32, (1, 3, 4), _t(boxes, 1, 3, 4)),
                 out(T.TENSOR_INT32, (1, 3), [list(classes)]), out(T.TENSOR_INT32, (1,), [found]))))


_SSD_DELTAS_7 = np.concatenate([_t(_SSD_DELTAS, 1, 6, 4), np.tile([1.0, 2.0, 3.0], (1, 6, 1))],
                               axis=2)
_ssd("regular", _t(_SSD_DELTAS, 1, 6, 4), True, False, [0.95, 0.93, 0.0],
     [0.0, 10.0, 1.0, 11.0, 0.0, 10.0, 1.0, 11.0, 0.0, 0.0, 0.0, 0.0], [1, 0, 0], 2)
_ssd("fast", _t(_SSD_DELTAS, 1, 6, 4), False, False, [0.95, 0.9, 0.3], _SSD_FAST_BOXES,
     [1, 0, 0], 3)
_ssd("fast_encoding_7", _SSD_DELTAS_7, False, False, [0.95, 0.9, 0.3], _SSD_FAST_BOXES,
     [1, 0, 0], 3)
_ssd("fast_bg_in_label", _SSD_DELTAS_7, False, True, [0.95, 0.9, 0.3], _SSD_FAST_BOXES,
     [2, 1, 1], 3)


# -- GENERATE_PROPOSALS (V1_2/generate_proposals.mod.py) ----------------------------------------

def _proposals(name: str, inputs: Sequence[Arg], scores: Sequence[float], rois: Sequence[float],
               batches: Sequence[int], conversion: Conversion) -> None:
    n = len(scores)
    case = OpCase(f"generate_proposals_nnapi_generate_proposals_{name}", Op.GENERATE_PROPOSALS,
                  inputs=(*inputs, bools(False)),
                  outputs=(out(T.TENSOR_FLOAT32, (n,), list(scores)),
                           out(T.TENSOR_FLOAT32, (n, 4), _t(rois, n, 4)),
                           out(T.TENSOR_INT32, (n,), list(batches))))
    for layout in (case, to_nchw(case, layout_input=10, tensors=(0, 1), outputs=())):
        _add(layout, conversion)


def _proposal_quant(scores: float, scores_zero: int, deltas: float) -> Conversion:
    return {"i0": (T.TENSOR_QUANT8_ASYMM, scores, scores_zero),
            "i1": (T.TENSOR_QUANT8_ASYMM, deltas, 128), "i2": (T.TENSOR_QUANT16_SYMM, 0.125, 0),
            "i3": (T.TENSOR_QUANT16_ASYMM, 0.125, 0),
            "o0": (T.TENSOR_QUANT8_ASYMM, scores, scores_zero),
            "o1": (T.TENSOR_QUANT16_ASYMM, 0.125, 0)}


_proposals("1", (
    f32(_t([0.8, 0.9, 0.85, 0.85, 0.75, 0.8, 0.9, 0.95], 1, 2, 2, 2)),
    f32(_t([0.5, 0.1, 0.1, 0.1, 0.5, 0.1, 0.5, 0.1, -0.25, 0.1, -0.1, -0.1, -0.25, 0.1, 0.2, 0.1,
            0.4, -0.1, -0.2, 0.2, 0.4, -0.1, -0.2, 0.2, -0.2, -0.2, 0.2, 0.2, -0.2, -0.2, 0.2,
            0.2], 1, 2, 2, 8)),
    f32(_t([0, 1, 4, 3, 1, 0, 3, 4], 2, 4)), f32(_t([32, 32], 1, 2)),
    f32s(4.0), f32s(4.0), i32s(-1), i32s(-1), f32s(0.30), f32s(1.0)),
    [0.95, 0.9, 0.85, 0.8],
    [4.3785973, 2.7571943, 6.8214025, 7.642805, 1.3512788, 0.18965816, 4.648721, 4.610342,
     3.1903253, 1.2951627, 6.8096747, 3.1048374, 1.9812691, 3.1571944, 3.6187308, 8.042806],
    [0, 0, 0, 0], _proposal_quant(0.01, 100, 0.05))

_GP2_SCORES = [
    0.885, 0.21, 0.78, 0.57, 0.795, 0.66, 0.915, 0.615, 0.27, 0.69, 0.645, 0.945,
    0.465, 0.345, 0.855, 0.555, 0.48, 0.6, 0.735, 0.63, 0.495, 0.03, 0.12, 0.225,
    0.24, 0.285, 0.51, 0.315, 0.435, 0.255, 0.585, 0.06, 0.9, 0.75, 0.18, 0.45,
    0.36, 0.09, 0.405, 0.15, 0., 0.195, 0.075, 0.81, 0.87, 0.93, 0.39, 0.165,
    0.825, 0.525, 0.765, 0.105, 0.54, 0.705, 0.675, 0.3, 0.42, 0.045, 0.33, 0.015,
    0.84, 0.135, 0.72, 0.375, 0.495, 0.315, 0.195, 0.24, 0.21, 0.54, 0.78, 0.72,
    0.045, 0.93, 0.27, 0.735, 0.135, 0.09, 0.81, 0.705, 0.39, 0.885, 0.42, 0.945,
    0.9, 0.225, 0.75, 0.3, 0.375, 0.63, 0.825, 0.675, 0.015, 0.48, 0.645, 0.615,
    0.33, 0.465, 0.66, 0.6, 0.075, 0.84, 0.285, 0.57, 0.585, 0.165, 0.06, 0.36,
    0.795, 0.855, 0.105, 0.45, 0., 0.87, 0.525, 0.255, 0.69, 0.555, 0.15, 0.345,
    0.03, 0.915, 0.405, 0.435, 0.765, 0.12, 0.51, 0.18]
_GP2_DELTAS = [
    -1.9, 0.4, 1.4, 0.5, -1.5, -0.2, 0.3, 1.2, 0., -0.6, 0.4, -1.3, 0.8, 0.9, -0.2, 0.8,
    -0.2, 0., 0.4, 0.1, -0.2, -1.6, -0.6, -0.1, -1., 0.6, 0.5, -0.2, -1.7, -1.4, 0.5, -0.1,
    -1.5, 1.3, -0.7, -0.9, 0.9, 0.2, -0.2, 0., -0.7, 0.3, -0.4, -0.3, -0.5, -0.3, 1., -0.7,
    1.2, -0.3, 0., 0.3, -0.7, 1., -0.2, -0.6, -1.3, 0., 0.3, 0.1, 0.4, 0.2, 2.4, 0.,
    0.1, 0., 0.7, -0.9, 0.1, -0.4, 0.3, -0.3, -0.7, 0.1, 0.7, 0., -0.3, 1.6, 0., 1.1,
    0.4, -0.7, -0.9, 0., 0., 0.4, -0.6, 0.4, -1.9, -1.2, 0., -0.3, 0.2, 0., 0.1, 0.8,
    0., 0.9, -1.7, 0.3, 0.7, -0.7, 0.7, 1.2, -0.4, -0.1, -0.6, 0.6, -0.4, -0.2, 0.3, -0.5,
    0., 1., -0.1, -0.3, -0.8, 0.1, -1.2, -2.4, 0.1, 1.4, 0.4, 0.1, -1.1, 0.4, -0.4, -0.2,
    0.1, 0., 0.7, 0.1, -1.3, 0.1, -0.4, -0.2, 0.2, 0.1, -0.8, 0., -1.4, 2., -0.6, -0.5,
    0., 1., -1.4, -1.1, 0.6, -0.7, 0.4, 1.1, -1.1, 1.6, -0.3, 0., -0.7, 0.3, -1.3, 0.,
    0., 0., -0.3, 0., -1.1, -1.5, 0.9, -1.4, -0.7, 0.1, -1.4, 0.9, 0.1, 0.2, -0.1, -1.7,
    0.2, -0.3, -0.9, 1.1, 0.1, 1., 1., -0.9, 0.7, 0., -0.3, 0.2, -0.8, -0.5, 0.6, -1.2,
    1., 0.6, 0., -1.6, 0.1, -1.2, 0.7, 0.8, 0.5, -0.2, -0.8, -1.3, -0.3, 0., 0., 0.3,
    -0.6, -0.3, 1.3, 0.1, 2.2, 1.2, -1.1, 0.1, 1.2, 1.2, 1.3, -0.9, 0.1, -0.5, 0.1, -0.7,
    -1.3, 1.3, 0.1, 2., 0., 0.2, 0.6, 0., -0.1, -0.4, -0.5, 0.1, -0.6, -0.3, 0.2, -0.4,
    -0.4, -0.7, -1.8, 0.4, -0.7, 0.4, 1.4, -0.3, 0.8, 0., 0.4, -0.1, -1., 0.2, 0.5, -0.6,
    -1.1, 0.2, 1.6, -0.2, -0.4, -0.9, 0., 0.3, 0., 0.3, -0.3, 0.3, 0.3, 1.9, 0.3, -0.5,
    -0.8, -1.3, -0.8, 0.2, 0.2, -0.4, -0.3, 0.6, 0.2, -0.2, 1.2, 0., 0., -0.3, 0.3, -1.5,
    -1., -0.3, -0.7, -0.3, -0.4, -1., -0.6, -0.7, -0.2, 0.6, -0.3, 0.5, -0.2, 0.3, -0.5, -1.7,
    0., -0.7, -0.1, -1.5, -0.9, 0.6, 0.3, -0.1, 0.2, 0.5, 0.6, -0.8, -0.3, 0.6, 0.9, -0.3,
    0.1, -1.7, -1.5, 0., -0.1, -0.3, 0.7, -0.3, -0.4, 0., -0.4, -0.3, 0.1, 1.1, 1.8, -0.9,
    0.6, 0.5, 0.2, -0.7, 0.2, 0.1, 1.2, 2.2, 0.3, 0.6, 0.4, 0.1, 0.2, 0., -1.1, -0.2,
    -0.7, 0., -1.2, 0.6, -0.6, -0.2, -0.4, 0., 0.7, -1.2, 0.8, 0., -0.3, 0.2, 0.6, -1.,
    -0.1, -0.1, 0., -0.4, -0.2, 0.4, -1.4, 0.3, 0.1, 1.3, -0.2, -0.7, 0.6, 0.7, 0.6, 0.1,
    -0.4, 0.1, -0.2, -0.8, 0., -1.3, 1.2, 1.4, 1.1, 0.5, 0.3, 0., 0.1, -0.4, 0.5, -0.1,
    -0.5, 0.3, -0.7, 0.9, -0.1, -0.4, 0.2, -0.8, 1., 1., 0.1, 0.1, -0.2, 0., -0.4, -0.3,
    -0.8, 0.7, -0.9, -0.3, -0.3, -2.8, 1., 1.4, 0., -2.6, 1.1, -1.1, 0.5, 0.1, -0.4, -1.5,
    0., 0.3, -0.3, -0.2, 0.7, -0.8, -0.1, 0.5, 0.7, 1.4, -1.2, -1., -0.6, 0.2, 1.1, -0.9,
    0.7, -0.4, 0., 0., -0.2, -0.2, 0.1, 0., 0., -0.7, -0.7, -1.4, -0.9, -0.5, -0.6, 0.4,
    0.3, 0., 0.9, -0.2, 0.7, 1.2, 0.5, 0.8, -0.5, 1., 0.2, -0.5, 1.3, -0.5, 0.3, 1.2,
    -0.3, -0.1, 1.3, 0.2, 0.6, -1.4, -0.1, -0.2, -0.4, -0.9, 1.2, -0.9, -0.2, -1.2, -1., -0.2,
    -1.6, 2.1, -0.6, -0.2, -0.3, 0.5, 0.9, -0.4, 0., -0.1, 0.1, -0.6, -1., -0.7, 0.2, -0.2]
_GP2_ROIS = [
    16.845154, 2.5170734, 33.154846, 7.4829264, 32.96344, 40.747444, 43.836563, 47.252556,
    0., 9.143808, 16.243607, 14.056192, 0., 25.789658, 25.710022, 30.210342,
    37.947445, 20.791668, 44.452557, 32.80833, 30.277609, 32.21635, 32.92239, 38.18365,
    25.885489, 29.086582, 31.314512, 30.913418, 2.8654022, 5.789658, 26.734598, 10.210342,
    0.5408764, 3.5824041, 15.459124, 5.217595, 10.753355, 35.982403, 15.246645, 37.617596,
    1.4593601, 23.050154, 4.1406403, 36.149845, 0., 15.6, 11.068764, 21.6,
    38.54088, 35.28549, 53.45912, 40.71451, 26.134256, 48.358635, 27.465742, 64.,
    29.96254, 3.1999998, 33.23746, 19.2, 11.653517, 43.980293, 48.34648, 46.41971,
    0., 26.967152, 26.748941, 31.032848, 28.590324, 9.050154, 32., 22.149847,
    17.828777, 19.00683, 32., 20.99317, 3.5724945, 7.273454, 11.627505, 19.126545,
    4.989658, 26.8, 9.410341, 32., 15.157195, 18.00537, 20.042807, 25.194632,
    30.889404, 9.652013, 32., 12.347987, 3.399414, 3.8000002, 32., 9.8,
    24.980408, 10.086582, 28.61959, 11.913418, 13.950423, 3.884349, 22.049576, 6.115651,
    24.259361, 6.8, 26.94064, 22.8, 3.6538367, 19.475813, 13.546164, 28.524187,
    11.947443, 29.318363, 18.452557, 32., 17.318363, 0., 20.281635, 16.17695]
_proposals("2", (
    f32(_t(_GP2_SCORES, 2, 4, 4, 4)), f32(_t(_GP2_DELTAS, 2, 4, 4, 16)),
    f32(_t([0, 6, 16, 10, 6, 0, 10, 16, 3, 5, 13, 11, 5, 3, 11, 13], 4, 4)),
    f32(_t([64, 64, 32, 32], 2, 2)),
    f32s(10.0), f32s(10.0), i32s(32), i32s(16), f32s(0.20), f32s(1.0)),
    [0.945, 0.93, 0.915, 0.9, 0.87, 0.84, 0.81, 0.795, 0.78, 0.765, 0.75, 0.735,
     0.72, 0.705, 0.69, 0.675, 0.945, 0.915, 0.9, 0.885, 0.87, 0.84, 0.81, 0.78,
     0.735, 0.72, 0.63, 0.6, 0.585, 0.54],
    _GP2_ROIS, [0] * 16 + [1] * 14, _proposal_quant(0.005, 0, 0.1))

CASES.extend(nnapi_detection_roi.CASES)
