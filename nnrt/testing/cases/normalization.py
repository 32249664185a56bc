"""Conformance cases for L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION and
INSTANCE_NORMALIZATION (float64 references written independently, with explicit loops)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import OpCase, bools, f32, f32s, i32s, omitted, out, to_nchw

CASES: list[OpCase] = []

_SPEC_IN = np.array([-1.1, 0.6, 0.7, 1.2, -0.7, 0.1], np.float32).reshape(1, 1, 1, 6)


def _slices(shape: tuple[int, ...], axis: int) -> list[tuple[Any, ...]]:
    """Index tuples selecting every 1-D slice along ``axis`` (a ``slice(None)`` at ``axis``)."""
    others = [range(n) if k != axis % len(shape) else [slice(None)]
              for k, n in enumerate(shape)]
    result: list[tuple[Any, ...]] = [()]
    for choices in others:
        result = [(*prefix, c) for prefix in result for c in choices]
    return result


# -- L2_NORMALIZATION --------------------------------------------------------------------------

def _l2_ref(x: Any, axis: int | None = None) -> list[Any]:
    axis = -1 if axis is None else axis
    y = np.zeros(x.shape)
    for index in _slices(x.shape, axis):
        vec = x[index]
        norm = math.sqrt(sum(float(v) ** 2 for v in vec))
        y[index] = [float(v) / norm for v in vec] if norm > 0 else 0.0
    return [y]


_L3 = np.array([[[3.0, -4.0, 0.5], [1.0, 2.0, -2.0]],
                [[0.0, 0.0, 6.0], [-1.5, 0.25, 8.0]]], np.float32)  # [2, 2, 3]
CASES += [
    # NNAPI's published example (l2_normalization): rank 4, default (last) axis.
    OpCase("l2_normalization_spec_example", Op.L2_NORMALIZATION, (f32(_SPEC_IN),),
           (out(T.TENSOR_FLOAT32, (1, 1, 1, 6),
                np.array([-0.55, 0.3, 0.35, 0.6, -0.35, 0.05]).reshape(1, 1, 1, 6)),)),
    OpCase("l2_normalization_rank1", Op.L2_NORMALIZATION, (f32([3.0, 4.0]),),
           (out(T.TENSOR_FLOAT32, (2,), [0.6, 0.8]),)),
    OpCase("l2_normalization_rank3_axis0", Op.L2_NORMALIZATION, (f32(_L3), i32s(0)),
           (out(T.TENSOR_FLOAT32, (2, 2, 3)),), reference=_l2_ref),
    OpCase("l2_normalization_rank3_axis_neg2", Op.L2_NORMALIZATION, (f32(_L3), i32s(-2)),
           (out(T.TENSOR_FLOAT32, (2, 2, 3)),), reference=_l2_ref),
    OpCase("l2_normalization_rank3_last", Op.L2_NORMALIZATION, (f32(_L3), i32s(2)),
           (out(T.TENSOR_FLOAT32, (2, 2, 3)),), reference=_l2_ref),
    OpCase("l2_normalization_axis_omitted", Op.L2_NORMALIZATION,
           (f32(_L3), omitted(T.INT32)),
           (out(T.TENSOR_FLOAT32, (2, 2, 3)),), reference=_l2_ref),
    OpCase("l2_normalization_rank4_axis1", Op.L2_NORMALIZATION,
           (f32(np.linspace(-2.0, 3.0, 24, dtype=np.float32).reshape(1, 3, 2, 4)), i32s(1)),
           (out(T.TENSOR_FLOAT32, (1, 3, 2, 4)),), reference=_l2_ref),
    # Since NNAPI feature level 4 an all-zero slice normalises to zeros.
    OpCase("l2_normalization_zero_vector", Op.L2_NORMALIZATION,
           (f32([[0.0, 0.0, 0.0], [1.0, -2.0, 2.0]]),),
           (out(T.TENSOR_FLOAT32, (2, 3), [[0.0, 0.0, 0.0],
                                           [1 / 3, -2 / 3, 2 / 3]]),)),
]


# -- LOCAL_RESPONSE_NORMALIZATION --------------------------------------------------------------

def _lrn_ref(x: Any, radius: int, bias: float, alpha: float, beta: float,
             axis: int | None = None) -> list[Any]:
    # (positional: the case runner passes the operation's inputs in order)
    axis = -1 if axis is None else axis
    y = np.zeros(x.shape)
    for index in _slices(x.shape, axis):
        vec = [float(v) for v in x[index]]
        out_vec = []
        for d, v in enumerate(vec):
            window = vec[max(0, d - radius): d + radius + 1]
            sqr_sum = sum(w * w for w in window)
            out_vec.append(v / (bias + alpha * sqr_sum) ** beta)
        y[index] = out_vec
    return [y]


_LRN4 = np.linspace(-1.5, 2.0, 30, dtype=np.float32).reshape(1, 2, 3, 5)
CASES += [
    # NNAPI's published example (local_response_norm_float_1): the window covers all depth.
    OpCase("local_response_normalization_spec_example", Op.LOCAL_RESPONSE_NORMALIZATION,
           (f32(_SPEC_IN), i32s(20), f32s(9.0), f32s(4.0), f32s(0.5)),
           (out(T.TENSOR_FLOAT32, (1, 1, 1, 6),
                np.array([-0.22, 0.12, 0.14, 0.24, -0.14, 0.02]).reshape(1, 1, 1, 6)),)),
    OpCase("local_response_normalization_radius1", Op.LOCAL_RESPONSE_NORMALIZATION,
           (f32(_LRN4), i32s(1), f32s(1.0), f32s(0.5), f32s(0.75)),
           (out(T.TENSOR_FLOAT32, (1, 2, 3, 5)),), reference=_lrn_ref),
    OpCase("local_response_normalization_radius0", Op.LOCAL_RESPONSE_NORMALIZATION,
           (f32(_LRN4), i32s(0), f32s(2.0), f32s(1.0), f32s(1.0)),
           (out(T.TENSOR_FLOAT32, (1, 2, 3, 5)),), reference=_lrn_ref),
    OpCase("local_response_normalization_axis1", Op.LOCAL_RESPONSE_NORMALIZATION,
           (f32(_LRN4), i32s(2), f32s(1.5), f32s(0.25), f32s(0.5), i32s(1)),
           (out(T.TENSOR_FLOAT32, (1, 2, 3, 5)),), reference=_lrn_ref),
    OpCase("local_response_normalization_rank2_axis_neg2", Op.LOCAL_RESPONSE_NORMALIZATION,
           (f32(_LRN4.reshape(6, 5)), i32s(1), f32s(0.5), f32s(1.0), f32s(0.5), i32s(-2)),
           (out(T.TENSOR_FLOAT32, (6, 5)),), reference=_lrn_ref),
    OpCase("local_response_normalization_rank1_axis_omitted",
           Op.LOCAL_RESPONSE_NORMALIZATION,
           (f32([1.0, -2.0, 0.5, 3.0]), i32s(1), f32s(1.0), f32s(0.5), f32s(0.5),
            omitted(T.INT32)),
           (out(T.TENSOR_FLOAT32, (4,)),), reference=_lrn_ref),
]


# -- INSTANCE_NORMALIZATION --------------------------------------------------------------------

def _instance_norm_ref(x: Any, gamma: float, beta: float, epsilon: float,
                       nchw: bool) -> list[Any]:
    if nchw:  # to_nchw hands the reference NHWC data
        raise ValueError("this reference computes NHWC; wrap the case with to_nchw")
    batches, height, width, channels = x.shape
    y = np.zeros(x.shape)
    for b in range(batches):
        for c in range(channels):
            plane = [float(x[b, h, w, c]) for h in range(height) for w in range(width)]
            mean = sum(plane) / len(plane)
            var = sum((v - mean) ** 2 for v in plane) / len(plane)
            for h in range(height):
                for w in range(width):
                    y[b, h, w, c] = (x[b, h, w, c] - mean) * gamma / math.sqrt(var + epsilon) + beta
    return [y]


_IN4 = (np.linspace(-2.0, 2.0, 2 * 3 * 2 * 3, dtype=np.float32).reshape(2, 3, 2, 3)
        * np.array([1.0, -0.5, 2.0], np.float32))
_IN_CONST = np.array([[[[1.0, 2.0]], [[1.0, -2.0]]]], np.float32)  # channel 0 is constant
_INSTANCE_BASE = [
    OpCase("instance_normalization_basic", Op.INSTANCE_NORMALIZATION,
           (f32(_IN4), f32s(1.0), f32s(0.0), f32s(1e-4), bools(False)),
           (out(T.TENSOR_FLOAT32, _IN4.shape),), reference=_instance_norm_ref),
    OpCase("instance_normalization_gamma_beta", Op.INSTANCE_NORMALIZATION,
           (f32(_IN4), f32s(2.0), f32s(-0.5), f32s(0.01), bools(False)),
           (out(T.TENSOR_FLOAT32, _IN4.shape),), reference=_instance_norm_ref),
    # A constant plane has zero variance: the output is beta (epsilon keeps it finite).
    OpCase("instance_normalization_constant_plane", Op.INSTANCE_NORMALIZATION,
           (f32(_IN_CONST), f32s(1.5), f32s(0.25), f32s(1.0), bools(False)),
           (out(T.TENSOR_FLOAT32, (1, 2, 1, 2)),), reference=_instance_norm_ref),
]
CASES += _INSTANCE_BASE
CASES += [to_nchw(case, layout_input=4) for case in _INSTANCE_BASE]
