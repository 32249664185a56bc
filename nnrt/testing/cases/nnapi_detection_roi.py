"""ROI_ALIGN, ROI_POOLING and HEATMAP_MAX_KEYPOINT cases from NNAPI's published test specs.

Transcribed as in :mod:`nnrt.testing.cases.nnapi_detection` (which appends these): float
examples with their NCHW twins (``AddNchw``), the spec's quant8 ``DataTypeConverter`` variation
and the V1_3 ``*_quant8_signed`` one. The specs' ``zero_sized`` examples chain
BOX_WITH_NMS_LIMIT into ROI_ALIGN / ROI_POOLING: two-operation models, tested in
``tests/unit/ops/test_detection_zero_sized.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.cases.converter import Conversion, quantised, signed
from nnrt.testing.spec import Arg, OpCase, bools, f32, f32s, i32, i32s, out, to_nchw

CASES: list[OpCase] = []


def _t(values: Sequence[float], *dims: int) -> Any:
    return np.asarray(values, np.float64).reshape(dims)


def _add(case: OpCase, layout: int, conversion: Conversion | None, *,
         outputs: Sequence[int] = (0,), with_float: bool = True) -> None:
    """The NHWC case, its NCHW twin, and their quant8 / quant8_signed variations."""
    for variant in (case, to_nchw(case, layout_input=layout, outputs=outputs)):
        if with_float:
            CASES.append(variant)
        if conversion is not None:
            CASES.append(quantised(variant, conversion))
            CASES.append(quantised(variant, signed(conversion), "quant8_signed"))


def _image_quant(in_scale: float, in_zero: int, out_scale: float, out_zero: int) -> Conversion:
    return {"i0": (T.TENSOR_QUANT8_ASYMM, in_scale, in_zero),
            "i1": (T.TENSOR_QUANT16_ASYMM, 0.125, 0),
            "o0": (T.TENSOR_QUANT8_ASYMM, out_scale, out_zero)}


_SMALL = [-10, -1, 4, -5, -8, -2, 9, 1, 7, -2, 3, -7, -2, 10, -3, 5]
_WIDE_A = [
    8.84, 8.88, 7.41, 5.60, 9.95, 4.37, 0.10, 7.64, 6.50, 9.47, 7.55, 3.00, 0.89, 3.01, 6.30, 4.40,
    1.64, 6.74, 6.16, 8.60, 5.85, 3.17, 7.12, 6.79, 5.77, 6.62, 5.13, 8.44, 5.08, 7.12, 2.84, 1.19,
    8.37, 0.90, 7.86, 9.69, 1.97, 1.31, 4.42, 9.89, 0.18, 9.00, 9.30, 0.44, 5.05, 6.47, 1.09, 9.50,
    1.30, 2.18, 2.05, 7.74, 7.66, 0.65, 4.18, 7.14, 5.35, 7.90, 1.04, 1.47, 9.01, 0.95, 4.07, 0.65]
_WIDE_B = [
    5.47, 2.64, 0.86, 4.86, 2.38, 2.45, 8.77, 0.06, 3.60, 9.28, 5.84, 8.97, 6.89, 1.43, 3.90, 5.91,
    7.40, 9.25, 3.12, 4.92, 1.87, 3.22, 9.50, 6.73, 2.07, 7.30, 3.07, 4.97, 0.24, 8.91, 1.09, 0.27,
    7.29, 6.94, 2.31, 6.88, 4.33, 1.37, 0.86, 0.46, 6.07, 3.81, 0.86, 6.99, 4.36, 1.92, 8.19, 3.57,
    7.90, 6.78, 4.64, 6.82, 6.18, 9.63, 2.63, 2.33, 1.36, 2.70, 9.99, 9.85, 8.06, 4.80, 7.80, 5.43]
_ZEROS_64 = [0.0] * 64
_WIDE_4 = _t(_WIDE_A + _ZEROS_64 + _ZEROS_64 + _WIDE_B, 4, 4, 8, 2)
_SMALL_4 = _t([0.0] * 32 + _SMALL + [0.0] * 16, 4, 4, 4, 1)


# -- ROI_ALIGN (V1_2/roi_align.mod.py) -----------------------------------------------------------

def _align(name: str, x: Any, rois: Sequence[float], batches: Sequence[int], params: Sequence[Any],
           expected: Sequence[float], conversion: Conversion) -> None:
    n = len(batches)
    out_h, out_w, stride_h, stride_w, ratio_h, ratio_w = params
    dims = (n, out_h, out_w, x.shape[3])
    case = OpCase(f"roi_align_nnapi_roi_align_{name}", Op.ROI_ALIGN,
                  inputs=(f32(x), f32(_t(rois, n, 4)), i32(list(batches)), i32s(out_h),
                          i32s(out_w), f32s(stride_h), f32s(stride_w), i32s(ratio_h),
                          i32s(ratio_w), bools(False)),
                  outputs=(out(T.TENSOR_FLOAT32, dims, _t(expected, *dims)),))
    _add(case, 9, conversion)


_align("1", _t(_SMALL, 1, 4, 4, 1), [2, 2, 4, 4, 0, 0, 8, 8, 2, 0, 4, 8, 0, 2, 8, 4],
       [0, 0, 0, 0], (2, 2, 2.0, 2.0, 4, 4),
       [0.375, 5.125, -0.375, 2.875, -0.5, -0.3125, 3.1875, 1.125, 0.25, 4.25, 4.875, 0.625,
        -0.1875, 1.125, 0.9375, -2.625], _image_quant(0.25, 128, 0.0625, 128))
_ALIGN_ROIS = [4, 4, 28, 12, 4, 4, 32, 16, 7, 1, 29, 15, 1, 7, 9, 11]
_align("2", _WIDE_4, _ALIGN_ROIS, [0, 0, 3, 3], (2, 3, 4.0, 4.0, 4, 4), [
    5.150000, 5.491250, 4.733750, 7.100000, 4.827500, 5.843750, 4.721250, 4.797500, 3.750000,
    6.592500, 5.452500, 3.362500, 4.899396, 5.861696, 4.941504, 5.979741, 3.182904, 6.111551,
    5.141833, 4.631891, 3.903325, 4.627793, 5.537240, 1.356019, 4.845915, 3.618338, 3.301958,
    6.250566, 2.930461, 4.269676, 3.642174, 4.201423, 5.008657, 5.735293, 7.426004, 4.819665,
    4.518229, 6.887344, 2.952656, 5.565781, 3.952786, 2.552812, 5.191667, 6.854167, 3.920000,
    6.512500, 4.886250, 5.497708], _image_quant(0.04, 0, 0.03125, 10))
_align("3", _t(_WIDE_A + _WIDE_B, 2, 4, 8, 2), _ALIGN_ROIS, [0, 0, 1, 1],
       (2, 3, 4.0, 4.0, 0, 0), [
    5.150000, 5.491250, 4.733750, 7.100000, 4.827500, 5.843750, 4.721250, 4.797500, 3.750000,
    6.592500, 5.452500, 3.362500, 4.869884, 5.908148, 4.941701, 5.955718, 3.113403, 6.341898,
    5.156389, 4.604016, 3.881782, 4.616123, 5.690694, 1.237153, 5.028047, 3.560944, 3.157656,
    6.395469, 2.896243, 4.336576, 3.563021, 4.057767, 5.053437, 6.028906, 7.396966, 4.668906,
    4.385000, 6.905000, 2.815000, 5.502500, 4.161667, 1.829167, 5.191667, 6.854167, 3.920000,
    6.512500, 5.106667, 5.612500], _image_quant(0.04, 0, 0.03125, 10))
_align("4", _SMALL_4, [1, 2, 2, 4, 0, 0, 4, 8, 1, 0, 2, 8, 0, 2, 4, 4, 0, 0, 0, 0],
       [2, 2, 2, 2, 2], (2, 2, 2.0, 1.0, 0, 4), [
    0.375, 5.125, -0.375, 2.875, -0.5, -0.3125, 3.1875, 1.125, 0.25, 4.25, 4.875, 0.625,
    -0.1875, 1.125, 0.9375, -2.625, -7.4375, -3.3125, -6.8125, -3.4375],
       _image_quant(0.25, 128, 0.0625, 128))
_align("6", _t([0.0] * (512 * 8), 1, 512, 8, 1), [450, 500, 466, 508], [0],
       (128, 4, 1.0, 64.0, 10, 10), [0.0] * (128 * 4), _image_quant(0.25, 128, 0.0625, 128))


# -- ROI_POOLING (V1_2/roi_pooling.mod.py) -------------------------------------------------------

def _pool(name: str, x: Any, rois: Sequence[float], batches: Sequence[int],
          params: Sequence[Any], expected: Sequence[float], scale: float, zero: int) -> None:
    n = len(batches)
    out_h, out_w, stride_h, stride_w = params
    dims = (n, out_h, out_w, x.shape[3])
    case = OpCase(f"roi_pooling_nnapi_roi_pooling_{name}", Op.ROI_POOLING,
                  inputs=(f32(x), f32(_t(rois, n, 4)), i32(list(batches)), i32s(out_h),
                          i32s(out_w), f32s(stride_h), f32s(stride_w), bools(False)),
                  outputs=(out(T.TENSOR_FLOAT32, dims, _t(expected, *dims)),))
    _add(case, 7, _image_quant(scale, zero, scale, zero))


_pool("1", _t(_SMALL, 1, 4, 4, 1), [2, 2, 4, 4, 0, 0, 6, 6, 2, 0, 4, 6, 0, 2, 6, 4, 8, 8, 8, 8],
      [0] * 5, (2, 2, 2.0, 2.0),
      [-2, 9, -2, 3, -1, 9, 10, 5, -1, 9, 10, 3, -2, 9, 7, 3, 0, 0, 0, 0], 0.25, 128)
_pool("2", _WIDE_4, [4, 4, 24, 8, 4, 4, 28, 12, 7, 1, 25, 11, 1, 7, 5, 11], [0, 0, 3, 3],
      (2, 3, 4.0, 4.0), [
    6.16, 8.60, 7.12, 6.79, 5.13, 8.44, 7.86, 9.69, 4.42, 9.89, 9.30, 6.47,
    7.86, 9.89, 9.30, 9.89, 9.30, 9.50, 7.86, 9.89, 9.30, 9.89, 9.30, 9.50,
    9.50, 6.73, 9.50, 9.28, 6.89, 8.97, 6.18, 9.63, 9.99, 9.85, 9.99, 9.85,
    7.29, 6.94, 7.29, 6.94, 2.31, 6.88, 7.90, 6.78, 7.90, 6.82, 4.64, 6.82], 0.04, 0)
_pool("3", _SMALL_4, [1, 2, 2, 4, 0, 0, 3, 6, 1, 0, 2, 6, 0, 2, 3, 4, 0, 0, 0, 0], [2] * 5,
      (2, 2, 2.0, 1.0),
      [-2, 9, -2, 3, -1, 9, 10, 5, -1, 9, 10, 3, -2, 9, 7, 3, -10, -10, -10, -10], 0.25, 128)


# -- HEATMAP_MAX_KEYPOINT (V1_2/heatmap_max_keypoint.mod.py) -------------------------------------

def _keypoints(name: str, heatmap: Any, boxes: Sequence[float], scores: Sequence[float],
               points: Sequence[float], conversion: Conversion | None = None, *,
               with_float: bool = True) -> None:
    n, keypoints = heatmap.shape[0], heatmap.shape[3]
    inputs: tuple[Arg, ...] = (f32(heatmap), f32(_t(boxes, n, 4)), bools(False))
    case = OpCase(f"heatmap_max_keypoint_nnapi_heatmap_max_keypoint_{name}",
                  Op.HEATMAP_MAX_KEYPOINT, inputs=inputs,
                  outputs=(out(T.TENSOR_FLOAT32, (n, keypoints), _t(scores, n, keypoints)),
                           out(T.TENSOR_FLOAT32, (n, keypoints, 2),
                               _t(points, n, keypoints, 2))))
    _add(case, 2, conversion, outputs=(), with_float=with_float)


_HEAT = [
    -10, -1, 4, -5, -8, -2, 9, 1, 7, -2, 3, -7, -2, 2, -3, 5,
    -10, -1, 4, -5, -8, -2, 9, 1, 7, -2, 3, -7, -2, 10, -3, 5,
    -10, -1, 4, -5, -8, -2, 4, 1, 7, -2, 3, -7, -2, 2, -3, 5,
    -10, -1, 4, 10, -8, -2, 4, 1, 7, -2, 3, -7, -2, 2, -3, 5,
    -10, -56, 4, -5, -8, -2, 9, 1, 7, -2, 3, -7, -2, 2, -3, 5,
    -10, -57.827329175, 4, -5, -8, -2, 9, 1, 7, -2, 3, -7, -2, 2, -3, 5]
_HEAT_BOXES = [5, 2, 10, 20, 1, 7, 30, 10, 8, 3, 15, 13, 6, 5, 19, 12, 5, 2, 10, 20, 5, 2, 10, 20]
_HEAT_SCORES = [9.071493, 10.00500, 7.187500, 10.00000, 10.689667, 9.000000]
_HEAT_POINTS = [8.224462, 8.537316, 11.73000, 9.625000, 8.875000, 9.562500, 17.37500, 5.875000,
                9.569672, 2.000000, 8.125000, 8.750000]
_keypoints("1", _t(_HEAT, 6, 4, 4, 1), _HEAT_BOXES, _HEAT_SCORES, _HEAT_POINTS)
_keypoints("2", _t([
    0.19, 0.61, 0.49, 0.01, 0.98, 0.65, 0.64, 0.70, 0.76, 0.55, 0.83, 0.19, 0.46, 0.03, 0.67,
    0.71, 0.17, 0.23, 0.89, 0.08, 0.96, 0.65, 0.52, 0.40, 0.36, 0.80, 0.55, 0.89, 0.58, 0.29,
    0.27, 0.69, 0.66, 0.06, 0.51, 0.26, 0.96, 0.38, 0.41, 0.89, 0.88, 0.46, 0.96, 0.73, 0.54,
    0.64, 0.84, 0.74, 0.51, 0.41, 0.13, 0.19, 0.52, 0.21, 0.50, 0.75, 0.89, 0.89, 0.20, 0.58,
    0.70, 0.13, 0.29, 0.39, 0.91, 0.06, 0.93, 0.34, 0.80, 0.87, 0.59, 0.67, 0.57, 0.85, 0.24,
    0.25, 0.76, 0.34, 0.37, 0.11, 0.00, 0.29, 0.30, 0.77, 0.34, 0.57, 0.48, 0.76, 0.93, 0.18,
    0.64, 0.12, 0.67, 0.47, 0.56, 0.50, 0.48, 0.99, 0.46, 0.66, 0.98, 0.06, 0.10, 0.66, 0.66,
    0.91, 0.67, 0.23, 0.40, 0.37, 0.17, 0.35, 0.48, 0.98, 0.47, 0.49, 0.56, 0.18, 0.75, 0.29,
    0.04, 0.23, 0.42, 0.55, 0.38, 0.07, 0.71, 0.80], 2, 4, 4, 4),
    [5, 2, 10, 20, 1, 7, 30, 10],
    [1.020210, 0.890556, 1.007110, 0.945129, 0.987798, 1.073820, 0.930000, 0.800000],
    [7.227723, 4.250000, 8.090278, 17.750000, 8.523379, 12.589181, 8.365580, 10.122508,
     12.431603, 8.934225, 4.625000, 9.239437, 4.625000, 7.375000, 26.375000, 9.625000],
    {"i0": (T.TENSOR_QUANT8_ASYMM, 0.01, 128), "i1": (T.TENSOR_QUANT16_ASYMM, 0.125, 0),
     "o0": (T.TENSOR_QUANT8_ASYMM, 0.01, 0), "o1": (T.TENSOR_QUANT16_ASYMM, 0.125, 0)})
_keypoints("3", _t(_HEAT[:80], 5, 4, 4, 1), _HEAT_BOXES[:20], _HEAT_SCORES[:5],
           _HEAT_POINTS[:10],
           {"i0": (T.TENSOR_QUANT8_ASYMM, 0.5, 128), "i1": (T.TENSOR_QUANT16_ASYMM, 0.125, 0),
            "o0": (T.TENSOR_QUANT8_ASYMM, 0.1, 10), "o1": (T.TENSOR_QUANT16_ASYMM, 0.125, 0)},
           with_float=False)
