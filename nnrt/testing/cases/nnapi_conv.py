"""Conformance cases transcribed from NNAPI's published test specs (literal expected values).

Every case here is one example of an AOSP ``runtime/test/specs/*/*.mod.py`` file (the spec file
is named in a comment; case names are ``<op>_nnapi_<spec file stem>[_<example>]``). Only the test
vectors are taken: input values, parameters and expected outputs, written in nnrt's case format.
Where a spec uses ``AddNchw`` the NCHW twin comes from :func:`to_nchw`; ``AddAllActivations``
examples are expanded by clamping the spec's (activation NONE) literal output, which is what the
spec generator does; float16 / relaxed variants are nnrt's automatic ones. Quantised variants
and zero-sized (numBatches = 0) examples are out of scope.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import Arg, OpCase, bools, f32, i32, i32s, out, to_nchw

CASES: list[OpCase] = []

SAME, VALID = 1, 2
_CLAMP = {0: (-np.inf, np.inf), 1: (0.0, np.inf), 2: (-1.0, 1.0), 3: (0.0, 6.0)}
_ACT_NAMES = {0: "none", 1: "relu", 2: "relu1", 3: "relu6"}


def _t(values: Sequence[float], dims: Sequence[int]) -> Any:
    """Row-major ``values`` as a float32 array of ``dims``."""
    return np.asarray(values, np.float32).reshape(tuple(dims))


def _add(name: str, op: Op, inputs: Sequence[Arg], dims: Sequence[int],
         expected: Sequence[float], *, layout: int | None = None,
         out_type: T = T.TENSOR_FLOAT32, tolerance: tuple[float, float] | None = None,
         output_shape: int | None = None) -> None:
    """Add the case and, when ``layout`` (the BOOL layout input's slot) is given, its NCHW twin.

    ``output_shape`` is the slot of TRANSPOSE_CONV_2D's output_shape tensor, whose values follow
    the operation's layout (the spec's ``AddNchw`` converts them too).
    """
    value = np.asarray(expected, np.float64).reshape(tuple(dims))
    case = OpCase(name, op, tuple(inputs), (out(out_type, dims, value),), tolerance=tolerance)
    CASES.append(case)
    if layout is None:
        return
    twin = to_nchw(case, layout_input=layout)
    if output_shape is not None:
        args = list(twin.inputs)
        args[output_shape] = i32(np.asarray(args[output_shape].value)[[0, 3, 1, 2]])
        twin = replace(twin, inputs=tuple(args))
    CASES.append(twin)


def _clamped(values: Sequence[float], act: int) -> list[float]:
    low, high = _CLAMP[act]
    return [float(min(max(v, low), high)) for v in values]


def _conv(x: Any, w: Any, b: Sequence[float], *params: int) -> list[Arg]:
    """input, filter, bias, then INT32 scalar parameters."""
    return [f32(x), f32(w), f32(list(b)), *(i32s(p) for p in params)]


_H3W2_I = [
    -0.869931, 0.644628, -0.918393, 0.153672, 0.868562, -0.358177, -0.134931, -0.247565,
    0.22174, -0.259157, -0.284296, -0.538065, 0.765559, 0.41986, -0.556241, 0.658494,
    0.214355, -0.850169, -0.252893, -0.478935, 0.530526, -0.0700663, -0.988729, -0.303061,
    0.150845, 0.829915, 0.476349, 0.406537, -0.355343, 0.757145, -0.356362, 0.800482,
    -0.713861, 0.210483, -0.634303, 0.718236, -0.752038, 0.457547, -0.550769, -0.551178,
    0.446766, -0.227462, 0.216348, -0.852806, -0.351486, 0.55906, -0.668493, -0.303493,
    -0.363763, -0.162837, 0.0701012, 0.756097, -0.142269, 0.329724, -0.656317, -0.998086,
    -0.652949, -0.40316, -0.893682, 0.432744, 0.612362, -0.869588, -0.71327, -0.398092,
    -0.0423559, 0.436576, -0.925272, 0.176549, 0.822904, 0.096833, -0.296802, -0.427195,
    0.031654, -0.254479, 0.244905, 0.0948254, 0.643769, -0.90391, 0.352665, -0.901179,
    0.266159, -0.968068, -0.615401, -0.388975, 0.939052, -0.116289, 0.107523, -0.0582711,
    0.435172, 0.334675, 0.459711, 0.717436, 0.496627, -0.680175, -0.415066, 0.339848,
    0.506004, -0.337808, -0.107218, -0.172496, 0.870638, 0.931872, -0.953884, 0.903042,
    0.760078, 0.209727, -0.285384, -0.45514, 0.113194, 0.0756611, 0.0924435, -0.472863,
    0.960609, -0.160385, -0.839445, 0.457097, 0.163348, 0.344867, -0.131619, 0.688715,
    -0.540827, 0.571259, -0.95587, 0.506164, -0.155839, 0.0789621, 0.756772, -0.662069,
    0.242908, 0.460821, 0.177872, -0.289839, -0.640603, 0.702598, -0.506406, -0.568262,
    -0.0713716, 0.413792, 0.159673, -0.305208, 0.133816, -0.160254, 0.787323, -0.753244,
    0.600721, 0.263186, -0.162387, 0.477962, -0.702951, -0.731036, -0.939481, -0.524519,
    0.934072, -0.511637, -0.503499, 0.106236, -0.323684, 0.534444, -0.843745, 0.364171,
    0.0370358, -0.168801, -0.404559, -0.814178, 0.91745, -0.334276, 0.66925, -0.801201,
    0.156511, -0.427949, 0.379153, 0.818597, -0.649902, 0.427087, -0.586015, -0.559789,
    -0.833923, 0.0892409, -0.621251, 0.213826, 0.465509, 0.4704, 0.380261, 0.413067, 0.180822,
    0.172866, 0.59614, 0.825575, 0.662916, -0.704381, -0.297631, 0.697778,
]

_H3W2_F = [
    -0.966213, -0.467474, -0.82203, -0.579455, 0.0278809, -0.79946, -0.684259, 0.563238,
    0.37289, 0.738216, 0.386045, -0.917775, 0.184325, -0.270568, 0.82236, 0.0973683,
    -0.941308, -0.144706,
]

_H3W2_OS = [
    1.85284, -0.0393656, -0.127353, 1.43115, -0.302294, -1.0402, 0.655023, -0.587614, 1.72003,
    1.55816, 0.667546, 2.23663, 0.0661516, 0.290254, 0.770222, -0.346357, -1.58197, -0.850595,
    -0.484224, 0.949967, -0.577263, -0.871949, 2.34132, -0.104506, -0.135965, -0.985713,
    0.815147, 1.03114, -1.41915, -0.515534, -0.373639, 1.42026, -1.50604, 0.673113, 3.06139,
    -0.388578, -1.76707, -0.315667, -1.03815, -0.343435, 0.432787, -1.41643, 1.12944,
    -0.175806, -0.846415, 1.40095, 0.70832, -1.46717, 2.19562, -2.61266, -0.705383, 1.26124,
    1.46545, -2.35761, 2.04494, 1.23741, -0.527402, -0.39954, -0.0128623, 1.3644, 0.985755,
    -0.718118, -0.1008, 1.24327,
]

_H3W2_OV = [
    1.72003, 1.55816, 0.667546, 2.23663, 0.0661516, 0.290254, 0.770222, -1.58197, -0.850595,
    -0.484224, 0.949967, -0.577263, -0.871949, 2.34132, -0.135965, -0.985713, 0.815147,
    1.03114, -1.41915, -0.515534, -0.373639, -1.50604, 0.673113, 3.06139, -0.388578, -1.76707,
    -0.315667, -1.03815, 0.432787, -1.41643, 1.12944, -0.175806, -0.846415, 1.40095, 0.70832,
    2.19562, -2.61266, -0.705383, 1.26124, 1.46545, -2.35761, 2.04494,
]

# -- CONV_2D ----------------------------------------------------------------------------------
# V1_2/conv2d_v1_2.mod.py (every example also has an NCHW twin there).

_C1_IN = _t([1.0, 1.0, 1.0, 1.0, 0.5, 1.0, 1.0, 1.0, 1.0], (1, 3, 3, 1))
_C1_W = _t([0.25, 0.25, 0.25, 0.25], (1, 2, 2, 1))
_C2_IN = _t(range(1, 13), (1, 3, 4, 1))
_C2_W = _t([1, 4, 7, 2, 5, 8, 3, 6, 9], (1, 3, 3, 1))
_C2_OUT = [0, 0, 0, 0, 35, 112, 157, 0, 0, 34, 61, 0]

_add("conv_2d_nnapi_conv2d_v1_2_nchw_1", Op.CONV_2D,
     [*_conv(_C1_IN, _C1_W, [0], 0, 0, 0, 0, 1, 1, 0), bools(False)],
     (1, 2, 2, 1), [0.875] * 4, layout=10)
# Implicit SAME, 3x3 filter, RELU.
_add("conv_2d_nnapi_conv2d_v1_2_nchw_2", Op.CONV_2D,
     [*_conv(_C2_IN, _C2_W, [-200], SAME, 1, 1, 1), bools(False)],
     (1, 3, 4, 1), _C2_OUT, layout=7)
_add("conv_2d_nnapi_conv2d_v1_2_channel", Op.CONV_2D,
     [*_conv(_t([5, 5, 5], (1, 1, 1, 3)), _t([0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5], (3, 1, 1, 3)),
             [0, 0, 0], 0, 0, 0, 0, 1, 1, 0), bools(False)],
     (1, 1, 1, 3), [15, 37.5, 60], layout=10)
_add("conv_2d_nnapi_conv2d_v1_2_large", Op.CONV_2D,
     [*_conv(_t(range(1, 19), (1, 2, 3, 3)), _t([1, 4, 7, 2, 5, 8, 3, 6, 9], (3, 1, 1, 3)),
             [0, 0, 0], 0, 0, 0, 0, 1, 1, 0), bools(False)],
     (1, 2, 3, 3), [30, 36, 42, 66, 81, 96, 102, 126, 150, 138, 171, 204, 174, 216, 258, 210,
                    261, 312], layout=10)
# CONV_1_H3_W2_SAME / _VALID (first example of each): a 3x2 filter, so SAME pads the height by
# (1, 1) and the width by (0, 1); the VALID output is the SAME one's rows 1..6, columns 0..6.
_add("conv_2d_nnapi_conv2d_v1_2_1_h3_w2_same", Op.CONV_2D,
     [*_conv(_t(_H3W2_I, (1, 8, 8, 3)), _t(_H3W2_F, (1, 3, 2, 3)), [0], SAME, 1, 1, 0),
      bools(False)], (1, 8, 8, 1), _H3W2_OS, layout=7)
_add("conv_2d_nnapi_conv2d_v1_2_1_h3_w2_valid", Op.CONV_2D,
     [*_conv(_t(_H3W2_I, (1, 8, 8, 3)), _t(_H3W2_F, (1, 3, 2, 3)), [0], VALID, 1, 1, 0),
      bools(False)], (1, 6, 7, 1), _H3W2_OV, layout=7)

# V1_2/conv2d_dilation.mod.py.
_DIL9_IN = np.zeros((1, 9, 9, 1), np.float32)
_DIL9_IN[0, 3:6, 3:6, 0] = 1.0
_DIL6_IN = np.zeros((1, 6, 6, 1), np.float32)
_DIL6_IN[0, 2:4, 2:4, 0] = [[4, 3], [2, 1]]
_DIL_W = _t(range(1, 10), (1, 3, 3, 1))

_add("conv_2d_nnapi_conv2d_dilation_1", Op.CONV_2D,
     [*_conv(_C1_IN, _C1_W, [0], 0, 0, 0, 0, 1, 1, 0), bools(False), i32s(1), i32s(1)],
     (1, 2, 2, 1), [0.875] * 4, layout=10)
_add("conv_2d_nnapi_conv2d_dilation_3", Op.CONV_2D,
     [*_conv(_DIL9_IN, _DIL_W, [0], 0, 0, 0, 0, 1, 1, 0), bools(False), i32s(3), i32s(3)],
     (1, 3, 3, 1), [5] * 9, layout=10)
_add("conv_2d_nnapi_conv2d_dilation_valid_padding_1", Op.CONV_2D,
     [*_conv(_C1_IN, _C1_W, [0], VALID, 1, 1, 0), bools(False), i32s(1), i32s(1)],
     (1, 2, 2, 1), [0.875] * 4, layout=7)
_add("conv_2d_nnapi_conv2d_dilation_valid_padding_3", Op.CONV_2D,
     [*_conv(_DIL9_IN, _DIL_W, [0], VALID, 1, 1, 0), bools(False), i32s(3), i32s(3)],
     (1, 3, 3, 1), [5] * 9, layout=7)
# SAME with stride 2 and dilation 3: the padding is computed on the dilated filter size (4).
_add("conv_2d_nnapi_conv2d_dilation_same_stride2", Op.CONV_2D,
     [*_conv(_DIL6_IN, _t([1, 2, 3, 4], (1, 2, 2, 1)), [0], SAME, 2, 2, 0), bools(False),
      i32s(3), i32s(3)],
     (1, 3, 3, 1), [16, 0, 9, 0, 0, 0, 4, 0, 1], layout=7)

# The NNAPI 1.0 signatures (no layout flag): V1_0/conv_float.mod.py (explicit padding) and
# V1_0/conv_float_2.mod.py (implicit SAME, RELU); the same vectors as conv2d_v1_2 above.
_add("conv_2d_nnapi_conv_float", Op.CONV_2D, _conv(_C1_IN, _C1_W, [0], 0, 0, 0, 0, 1, 1, 0),
     (1, 2, 2, 1), [0.875] * 4)
_add("conv_2d_nnapi_conv_float_2", Op.CONV_2D, _conv(_C2_IN, _C2_W, [-200], SAME, 1, 1, 1),
     (1, 3, 4, 1), _C2_OUT)

# -- DEPTHWISE_CONV_2D ------------------------------------------------------------------------
# V1_2/depthwise_conv2d_v1_2.mod.py.

_D1_IN = _t([10, 21, 10, 22, 10, 23, 10, 24, 10, 25, 10, 26, 10, 27, 10, 28, 10, 29],
            (1, 3, 3, 2))
_D1_W = _t([.25, 0, .2, 0, .25, 0, 0, .3, .25, 0, 0, 0, .25, .1, 0, 0], (1, 2, 2, 4))
_D1_OUT = [11, 3, 7.2, 10.6, 11, 3, 7.4, 10.9, 11, 3, 7.8, 11.5, 11, 3, 8.0, 11.8]
_D2_IN = _t([1, 2, 7, 8, 3, 4, 9, 10, 5, 6, 11, 12], (1, 3, 2, 2))
_D2_W = _t([1, 2, 3, 4, -9, 10, -11, 12, 5, 6, 7, 8, 13, -14, 15, -16], (1, 2, 2, 4))
_D2_OUT = [71, -34, 99, -20, 91, -26, 127, -4]

_add("depthwise_conv_2d_nnapi_depthwise_conv2d_v1_2_nchw", Op.DEPTHWISE_CONV_2D,
     [*_conv(_D1_IN, _D1_W, [1, 2, 3, 4], 0, 0, 0, 0, 1, 1, 2, 0), bools(False)],
     (1, 2, 2, 4), _D1_OUT, layout=11)
_add("depthwise_conv_2d_nnapi_depthwise_conv2d_v1_2_nchw_2", Op.DEPTHWISE_CONV_2D,
     [*_conv(_D2_IN, _D2_W, [1, 2, 3, 4], VALID, 1, 1, 2, 0), bools(False)],
     (1, 2, 1, 4), _D2_OUT, layout=8)
_add("depthwise_conv_2d_nnapi_depthwise_conv2d_v1_2_large", Op.DEPTHWISE_CONV_2D,
     [*_conv(_t([10, 21, 10, 22, 10, 23, 10, 24], (1, 2, 2, 2)),
             _t([.25, 0, .25, 1, .25, 0, .25, 1], (1, 2, 2, 2)), [100, 200],
             0, 0, 0, 0, 1, 1, 1, 0), bools(False)],
     (1, 1, 1, 2), [110, 246], layout=11)
_add("depthwise_conv_2d_nnapi_depthwise_conv2d_v1_2_large_2", Op.DEPTHWISE_CONV_2D,
     [*_conv(_t([10, 21, 10, 0, 10, 22, 20, 0, 10, 23, 30, 0, 10, 24, 40, 0], (1, 2, 2, 4)),
             _t([.25, 0, 10, 50, .25, 1, 20, 50, .25, 0, 30, 50, .25, 1, 40, 50], (1, 2, 2, 4)),
             [6000, 7000, 8000, 9000], 0, 0, 0, 0, 1, 1, 1, 0), bools(False)],
     (1, 1, 1, 4), [6010, 7046, 11000, 9000], layout=11)

# V1_2/depthwise_conv2d_dilation.mod.py.
_DD_IN = _t([0, 0, 0, 0, 0, 0, 0, 0,
             0, 0, 0, 1, 1, 0, 0, 0,
             0, 0, 0, 1, 1, 0, 0, 0,
             0, 0, 0, 0, 0, 0, 0, 0], (1, 4, 4, 2))
_DD_W = _t(range(1, 17), (1, 2, 2, 4))
_DD_OUT = [13, 14, 0, 0, 0, 0, 11, 12, 5, 6, 0, 0, 0, 0, 3, 4]
_DS_IN = np.zeros((1, 6, 6, 1), np.float32)
_DS_IN[0, 2:4, 2:4, 0] = 1.0

_add("depthwise_conv_2d_nnapi_depthwise_conv2d_dilation_1", Op.DEPTHWISE_CONV_2D,
     [*_conv(_D1_IN, _D1_W, [1, 2, 3, 4], 0, 0, 0, 0, 1, 1, 2, 0), bools(False), i32s(1),
      i32s(1)], (1, 2, 2, 4), _D1_OUT, layout=11)
_add("depthwise_conv_2d_nnapi_depthwise_conv2d_dilation_2", Op.DEPTHWISE_CONV_2D,
     [*_conv(_DD_IN, _DD_W, [0, 0, 0, 0], 0, 0, 0, 0, 1, 1, 2, 0), bools(False), i32s(2),
      i32s(2)], (1, 2, 2, 4), _DD_OUT, layout=11)
_add("depthwise_conv_2d_nnapi_depthwise_conv2d_dilation_valid_padding_1", Op.DEPTHWISE_CONV_2D,
     [*_conv(_D1_IN, _D1_W, [1, 2, 3, 4], VALID, 1, 1, 2, 0), bools(False), i32s(1), i32s(1)],
     (1, 2, 2, 4), _D1_OUT, layout=8)
_add("depthwise_conv_2d_nnapi_depthwise_conv2d_dilation_valid_padding_2", Op.DEPTHWISE_CONV_2D,
     [*_conv(_DD_IN, _DD_W, [0, 0, 0, 0], VALID, 1, 1, 2, 0), bools(False), i32s(2), i32s(2)],
     (1, 2, 2, 4), _DD_OUT, layout=8)
_add("depthwise_conv_2d_nnapi_depthwise_conv2d_dilation_same_padding_stride_2",
     Op.DEPTHWISE_CONV_2D,
     [*_conv(_DS_IN, _t([1, 2, 3, 4], (1, 2, 2, 1)), [0], SAME, 2, 2, 1, 0), bools(False),
      i32s(3), i32s(3)], (1, 3, 3, 1), [4, 0, 3, 0, 0, 0, 2, 0, 1], layout=8)

# The NNAPI 1.0 signatures (no layout flag): V1_0/depthwise_conv2d_float.mod.py (explicit) and
# V1_0/depthwise_conv2d_float_2.mod.py (implicit VALID); the same vectors as above.
_add("depthwise_conv_2d_nnapi_depthwise_conv2d_float", Op.DEPTHWISE_CONV_2D,
     _conv(_D1_IN, _D1_W, [1, 2, 3, 4], 0, 0, 0, 0, 1, 1, 2, 0), (1, 2, 2, 4), _D1_OUT)
_add("depthwise_conv_2d_nnapi_depthwise_conv2d_float_2", Op.DEPTHWISE_CONV_2D,
     _conv(_D2_IN, _D2_W, [1, 2, 3, 4], VALID, 1, 1, 2, 0), (1, 2, 1, 4), _D2_OUT)

# -- GROUPED_CONV_2D --------------------------------------------------------------------------
# V1_2/grouped_conv2d.mod.py.

_G1_OUT = [33, -0.5, 33, 7.5, 31, 4.5, 27, -9.5]
for _act in range(4):
    _add(f"grouped_conv_2d_nnapi_grouped_conv2d_{_ACT_NAMES[_act]}", Op.GROUPED_CONV_2D,
         [*_conv(_t([1, 2, 3, 4, 5, 6, 6, 5, 4, 3, 2, 1, 2, 3, 3, 3, 3, 3], (1, 3, 3, 2)),
                 _t([1, 2, 2, 1, 4, 3, 2, 1], (2, 2, 2, 1)), [10, -33.5],
                 0, 0, 0, 0, 1, 1, 2, _act), bools(False)],
         (1, 2, 2, 2), _clamped(_G1_OUT, _act), layout=11)
_add("grouped_conv_2d_nnapi_grouped_conv2d_large", Op.GROUPED_CONV_2D,
     [*_conv(_t([1, 2, 3, 4, 4, 3, 2, 1, 2, 3, 3, 3], (1, 3, 2, 2)),
             _t([100, 20, 1, 200, 10, 2, 200, 30, 1, 100, 20, 3], (2, 2, 3, 1)), [500, -1000],
             SAME, 1, 1, 2, 0), bools(False)],
     (1, 3, 2, 2), [567, -873, 1480, -160, 608, -840, 1370, -10, 543, -907, 760, -310],
     layout=8)
_add("grouped_conv_2d_nnapi_grouped_conv2d_channel", Op.GROUPED_CONV_2D,
     [*_conv(_t([1, 2, 3, 4, 55, 4, 3, 2, 1, 5, 4, 3, 2, 11, 2, 3, 4, 5,
                 2, 3, 2, 3, 22, 3, 2, 3, 2, 1, 0, 2, 1, 33, 1, 2, 0, 1], (1, 2, 2, 9)),
             _t([1, 2, 3, 2, 1, 0, 2, 3, 3, 6, 6, 6, 9, 8, 5, 2, 1, 1], (6, 1, 1, 3)),
             [10, -20, 30, -40, 50, -60], SAME, 1, 1, 3, 0), bools(False)],
     (1, 2, 2, 6), [24, -16, 215, 338, 98, -51, 32, -6, 73, 50, 134, -45,
                    24, -13, 111, 128, 102, -51, 17, -18, 134, 170, 73, -55], layout=8)

# -- TRANSPOSE_CONV_2D ------------------------------------------------------------------------
# V1_2/transpose_conv2d.mod.py. Implicit padding: input, filter, bias, output_shape, padding
# code, strides, activation, layout (slot 8); explicit: 4 paddings, strides, activation, layout.

_T1_OUT = [-0.5, 0, 1.5, 2, 5.5, 8, 4.5, 6, 8.5, 10,
           5.5, 6, 7.5, 8, 23.5, 26, 16.5, 18, 20.5, 22,
           14.5, 18, 22.5, 26, 60.5, 70, 40.5, 46, 52.5, 58,
           19.5, 22, 25.5, 28, 59.5, 66, 34.5, 38, 42.5, 46,
           37.5, 40, 43.5, 46, 101.5, 108, 58.5, 62, 66.5, 70]
_T_IN = _t(range(1, 33), (1, 4, 4, 2))
_T_W = _t(range(1, 19), (1, 3, 3, 2))


def _transpose(x: Any, w: Any, b: Sequence[float], shape: Sequence[int], code: int,
               stride: int, act: int) -> list[Arg]:
    return [f32(x), f32(w), f32(list(b)), i32(list(shape)), i32s(code), i32s(stride),
            i32s(stride), i32s(act), bools(False)]


for _act in range(4):
    _add(f"transpose_conv_2d_nnapi_transpose_conv2d_{_ACT_NAMES[_act]}", Op.TRANSPOSE_CONV_2D,
         _transpose(_t([1, 2, 3, 4], (1, 2, 2, 1)),
                    _t([1, 3, 5, 7, 9, 11, 13, 15, 17, 2, 4, 6, 8, 10, 12, 14, 16, 18],
                       (2, 3, 3, 1)), [-1.5, -2], [1, 5, 5, 2], VALID, 2, _act),
         (1, 5, 5, 2), _clamped(_T1_OUT, _act), layout=8, output_shape=3)
_add("transpose_conv_2d_nnapi_transpose_conv2d_large", Op.TRANSPOSE_CONV_2D,
     _transpose(_t([300, 500], (1, 1, 2, 1)), _t([9, 5, 6, 9, 8, 5, 3, 1, 4], (1, 3, 3, 1)),
                [-1000], [1, 3, 4, 1], SAME, 3, 1),
     (1, 3, 4, 1), [500, 800, 3500, 1500, 1400, 500, 3500, 3000, 0, 200, 500, 0], layout=8,
     output_shape=3)
_add("transpose_conv_2d_nnapi_transpose_conv2d_same", Op.TRANSPOSE_CONV_2D,
     _transpose(_T_IN, _T_W, [0], [1, 4, 4, 1], SAME, 1, 0),
     (1, 4, 4, 1), [184, 412, 568, 528, 678, 1347, 1689, 1434, 1494, 2715, 3057, 2442, 1968,
                    3352, 3652, 2760], layout=8, output_shape=3)
_add("transpose_conv_2d_nnapi_transpose_conv2d_valid", Op.TRANSPOSE_CONV_2D,
     _transpose(_T_IN, _T_W, [0], [1, 6, 6, 1], VALID, 1, 0),
     (1, 6, 6, 1), [5, 22, 59, 101, 114, 83, 52, 184, 412, 568, 528, 344,
                    237, 678, 1347, 1689, 1434, 879, 597, 1494, 2715, 3057, 2442, 1431,
                    856, 1968, 3352, 3652, 2760, 1548, 689, 1534, 2543, 2729, 2010, 1103],
     layout=8, output_shape=3)
_add("transpose_conv_2d_nnapi_transpose_conv2d_explicit", Op.TRANSPOSE_CONV_2D,
     [*_conv(_T_IN, _T_W, [0], 1, 2, 2, 1, 1, 1, 0), bools(False)],
     (1, 3, 3, 1), [678, 1347, 1689, 1494, 2715, 3057, 1968, 3352, 3652], layout=10)
# SAME with a 1x1 filter, stride 2 and an even output: the tail padding is -1.
_add("transpose_conv_2d_nnapi_transpose_conv2d_same_stride2", Op.TRANSPOSE_CONV_2D,
     _transpose(_t([1, 2, 3, 4], (1, 2, 2, 1)), _t([2], (1, 1, 1, 1)), [0], [1, 4, 4, 1],
                SAME, 2, 0),
     (1, 4, 4, 1), [2, 0, 4, 0, 0, 0, 0, 0, 6, 0, 8, 0, 0, 0, 0, 0], layout=8, output_shape=3)
# V1_2/transpose_conv2d_large.mod.py (its float vector; the spec itself only runs the quantised
# variants): SAME with stride 32 and a 1x1 filter, so the tail padding is -31 and each image's
# only tap lands on its first pixel.
_T32_OUT = np.zeros((25, 32, 32, 16))
_T32_OUT[:, 0, 0, :] = 1.0
_add("transpose_conv_2d_nnapi_transpose_conv2d_large_stride32", Op.TRANSPOSE_CONV_2D,
     _transpose(np.ones((25, 1, 1, 1), np.float32), np.ones((16, 1, 1, 1), np.float32),
                [0.0] * 16, [25, 32, 32, 16], SAME, 32, 0),
     (25, 32, 32, 16), _T32_OUT.ravel().tolist())

# -- AVERAGE_POOL_2D / MAX_POOL_2D / L2_POOL_2D -----------------------------------------------
# Explicit: input, paddings (l, r, t, b), strides (w, h), filter (w, h), activation, layout
# (slot 10); implicit: input, padding code, strides, filter, activation, layout (slot 7).


def _pool(x: Any, *params: int) -> list[Arg]:
    return [f32(x), *(i32s(p) for p in params), bools(False)]


_P4 = _t([1, 2, 3, 4], (1, 2, 2, 1))
_P8 = _t([0, 6, 2, 4, 3, 2, 10, 7], (1, 2, 4, 1))

# V1_2/avg_pool_v1_2.mod.py.
_add("average_pool_2d_nnapi_avg_pool_v1_2_nchw_1", Op.AVERAGE_POOL_2D,
     _pool(_P4, 0, 0, 0, 0, 1, 1, 1, 1, 0), (1, 2, 2, 1), [1, 2, 3, 4], layout=10)
# Padding 50 on every side of a 52x60 input with a 100x100 filter: windows average only the
# real elements (all 1).
_add("average_pool_2d_nnapi_avg_pool_v1_2_nchw_2", Op.AVERAGE_POOL_2D,
     _pool(np.ones((5, 52, 60, 3), np.float32), 50, 50, 50, 50, 5, 5, 100, 100, 0),
     (5, 11, 13, 3), [1.0] * (5 * 11 * 13 * 3), layout=10)
_add("average_pool_2d_nnapi_avg_pool_v1_2_nchw_3", Op.AVERAGE_POOL_2D,
     _pool(_t([k % 2 for k in range(200 * 180)], (1, 200, 180, 1)), 0, 0, 0, 0, 2, 2, 10, 10,
           0), (1, 96, 86, 1), [0.5] * (96 * 86), layout=10)
_add("average_pool_2d_nnapi_avg_pool_v1_2_nchw_4", Op.AVERAGE_POOL_2D,
     _pool(np.full((5, 52, 60, 3), 10.0, np.float32), 50, 50, 50, 50, 5, 5, 100, 100, 3),
     (5, 11, 13, 3), [6.0] * (5 * 11 * 13 * 3), layout=10)
_add("average_pool_2d_nnapi_avg_pool_v1_2_nchw_5", Op.AVERAGE_POOL_2D,
     _pool(_P8, SAME, 2, 2, 2, 2, 0), (1, 1, 2, 1), [2.75, 5.75], layout=7)
# The NNAPI 1.0 signatures: V1_0/avg_pool_float_1.mod.py and avg_pool_float_5.mod.py.
_add("average_pool_2d_nnapi_avg_pool_float_1", Op.AVERAGE_POOL_2D,
     _pool(_P4, 0, 0, 0, 0, 1, 1, 1, 1, 0)[:-1], (1, 2, 2, 1), [1, 2, 3, 4])
_add("average_pool_2d_nnapi_avg_pool_float_5", Op.AVERAGE_POOL_2D,
     _pool(_P8, SAME, 2, 2, 2, 2, 0)[:-1], (1, 1, 2, 1), [2.75, 5.75])

# V1_2/max_pool_v1_2.mod.py. Inputs k % 20 + 1: every 20x20 window holds a 20.
_MAX_IN = _t([k % 20 + 1 for k in range(5 * 50 * 70 * 3)], (5, 50, 70, 3))
_add("max_pool_2d_nnapi_max_pool_v1_2_nchw_1", Op.MAX_POOL_2D,
     _pool(_P4, 0, 0, 0, 0, 1, 1, 1, 1, 0), (1, 2, 2, 1), [1, 2, 3, 4], layout=10)
_add("max_pool_2d_nnapi_max_pool_v1_2_nchw_2", Op.MAX_POOL_2D,
     _pool(_MAX_IN, 0, 0, 0, 0, 20, 20, 20, 20, 0), (5, 2, 3, 3), [20.0] * 90, layout=10)
_add("max_pool_2d_nnapi_max_pool_v1_2_nchw_3", Op.MAX_POOL_2D,
     _pool(_MAX_IN, 0, 0, 0, 0, 20, 20, 20, 20, 3), (5, 2, 3, 3), [6.0] * 90, layout=10)
_add("max_pool_2d_nnapi_max_pool_v1_2_nchw_4", Op.MAX_POOL_2D,
     _pool(_P8, SAME, 2, 2, 2, 2, 0), (1, 1, 2, 1), [6, 10], layout=7)
# The NNAPI 1.0 signature: V1_0/max_pool_float_4.mod.py (implicit SAME).
_add("max_pool_2d_nnapi_max_pool_float_4", Op.MAX_POOL_2D,
     _pool(_P8, SAME, 2, 2, 2, 2, 0)[:-1], (1, 1, 2, 1), [6, 10])

# V1_2/l2_pool_v1_2.mod.py.
_add("l2_pool_2d_nnapi_l2_pool_v1_2_nchw_1", Op.L2_POOL_2D,
     _pool(_P4, 0, 0, 0, 0, 1, 1, 1, 1, 0), (1, 2, 2, 1), [1, 2, 3, 4], layout=10)
_add("l2_pool_2d_nnapi_l2_pool_v1_2_nchw_2", Op.L2_POOL_2D,
     _pool(_P8, SAME, 2, 2, 2, 2, 0), (1, 1, 2, 1), [3.5, 6.5], layout=7)
_add("l2_pool_2d_nnapi_l2_pool_v1_2_large", Op.L2_POOL_2D,
     _pool(_t(range(1, 13), (1, 2, 2, 3)), 0, 0, 0, 0, 1, 1, 2, 2, 0), (1, 1, 1, 3),
     [6.442049503326416, 7.3143692016601562, 8.2158384323120117], layout=10)
# The NNAPI 1.0 signature: V1_0/l2_pool_float_large.mod.py.
_add("l2_pool_2d_nnapi_l2_pool_float_large", Op.L2_POOL_2D,
     _pool(_t(range(1, 13), (1, 2, 2, 3)), 0, 0, 0, 0, 1, 1, 2, 2, 0)[:-1], (1, 1, 1, 3),
     [6.442049503326416, 7.3143692016601562, 8.2158384323120117])

# -- FULLY_CONNECTED --------------------------------------------------------------------------

# V1_2/fully_connected_v1_2.mod.py.
_add("fully_connected_nnapi_fully_connected_v1_2", Op.FULLY_CONNECTED,
     [f32(_t([2, 32, 16], (3, 1))), f32(_t([2], (1, 1))), f32([4.0]), i32s(0)],
     (3, 1), [8, 68, 36])
# V1_0/fully_connected_float_4d_simple.mod.py: a [4, 1, 5, 1] input is read as 2 rows of 10.
_add("fully_connected_nnapi_fully_connected_float_4d_simple", Op.FULLY_CONNECTED,
     [f32(_t([1, 2, 3, 4, 5, 6, 7, 8, -9, -10, 1, 2, 3, 4, 5, 6, 7, -8, 9, -10], (4, 1, 5, 1))),
      f32(_t(list(range(1, 11)) * 3, (3, 10))), f32([1.0, 2.0, 3.0]), i32s(0)],
     (2, 3), [24, 25, 26, 58, 59, 60])
# V1_0/fully_connected_float_large.mod.py.
_add("fully_connected_nnapi_fully_connected_float_large", Op.FULLY_CONNECTED,
     [f32(_t([1, 10, 100, 500, 1000], (1, 5))), f32(_t([2, 3, 4, 5, 6], (1, 5))),
      f32([900.0]), i32s(0)], (1, 1), [9832])

# -- BATCH_MATMUL -----------------------------------------------------------------------------
# AIDL_V2/batch_matmul.mod.py (float32, with the spec's "int32" variation written out).

_BM_A = [1, 2, 3, 4, 5, 6]
_BM_B = [7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18]
_BM_OUT = [74, 80, 86, 92, 173, 188, 203, 218]
_BATCH_MATMUL = (
    ("simple", _BM_A, (1, 2, 3), _BM_B, (1, 3, 4), False, False, _BM_OUT, (1, 2, 4)),
    ("rhs_adjoint", _BM_A, (1, 2, 3), [7, 11, 15, 8, 12, 16, 9, 13, 17, 10, 14, 18],
     (1, 4, 3), False, True, _BM_OUT, (1, 2, 4)),
    ("lhs_adjoint", [1, 4, 2, 5, 3, 6], (1, 3, 2), _BM_B, (1, 3, 4), True, False, _BM_OUT,
     (1, 2, 4)),
    ("two_batch_size", _BM_A * 2, (2, 2, 3), _BM_B * 2, (2, 3, 4), False, False, _BM_OUT * 2,
     (2, 2, 4)),
)
for _name, _a, _ad, _b, _bd, _adj_x, _adj_y, _out, _od in _BATCH_MATMUL:
    for _suffix, _type in (("", T.TENSOR_FLOAT32), ("_int32", T.TENSOR_INT32)):
        _make = f32 if _type == T.TENSOR_FLOAT32 else i32
        _add(f"batch_matmul_nnapi_batch_matmul_{_name}{_suffix}", Op.BATCH_MATMUL,
             [_make(np.reshape(_a, _ad)), _make(np.reshape(_b, _bd)), bools(_adj_x),
              bools(_adj_y)], _od, _out, out_type=_type)
