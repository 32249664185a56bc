"""NNAPI spec vectors of SOFTMAX, LOG_SOFTMAX and the normalisations (literal expected values).

Part of :mod:`nnrt.testing.cases.nnapi_elementwise` (which re-exports ``CASES``); see there for
the sources. Several specs write a 4-D example once and let the test generator derive every
rank and axis from it (``AddAllDimsAndAxis``, ``AddDims``): the spec's last axis is moved to
the target position and the leading dimensions are dropped by taking their index 0.
:func:`dims_and_axis` repeats that data transformation on the literal inputs and outputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import Arg, OpCase, bools, f32, f32s, i32s, out, to_nchw

CASES: list[OpCase] = []

Array = np.ndarray[Any, Any]


def dims_and_axis(data4d: Array, rank: int, axis: int) -> Array:
    """The generator's rank-``rank`` version of 4-D spec data with its last axis at ``axis``."""
    drop = 4 - rank
    moved = np.moveaxis(data4d, -1, axis % rank + drop)
    return np.asarray(moved[(0,) * drop])


#: (rank, axis) pairs: every rank and position, written negative for every other one.
RANK_AXES = [(r, a if (r + a) % 2 == 0 else a - r) for r in range(1, 5) for a in range(r)]


def _all_dims_and_axis(name: str, op: Op, x4: Array, y4: Array,
                       params: Callable[[int | None], Sequence[Arg]],
                       pairs: Sequence[tuple[int, int | None]] = tuple(RANK_AXES)) -> None:
    """One case per (rank, axis); axis None means the axis input left out (last axis)."""
    for rank, axis in pairs:
        x = dims_and_axis(x4, rank, -1 if axis is None else axis)
        y = dims_and_axis(y4, rank, -1 if axis is None else axis)
        tag = "noaxis" if axis is None else f"axis{axis}".replace("-", "m")
        CASES.append(OpCase(f"{name}_rank{rank}_{tag}", op, (f32(x), *params(axis)),
                            (out(T.TENSOR_FLOAT32, y.shape, y),)))


# -- SOFTMAX ----------------------------------------------------------------------------------

# softmax_v1_2.mod.py (V1_2): {2, 2, 2, 5}; TEST 1 without the axis input at ranks 1, 3 and 4,
# TEST 2 with it at every rank and axis. Example 1 (beta 1): each row is a shift of
# [17, 16, 15, 14, 1]; example 2 (beta 1e-6): nearly uniform.
_SM_X1 = np.reshape([17., 16., 15., 14., 1., -1., -2., -3., -4., -17.] * 4, (2, 2, 2, 5))
_SM_Y1 = np.reshape([0.643914213228014, 0.236882800924671, 0.087144312427294,
                     0.032058600957022, 7.246299848982885e-08] * 8, (2, 2, 2, 5))
_SM_X2 = np.reshape([1., 2., 3., 4., 5., -1., -2., -3., -4., -5.] * 4, (2, 2, 2, 5))
_SM_Y2 = np.full((2, 2, 2, 5), 0.2)
for _suffix, _x, _y, _beta in (("", _SM_X1, _SM_Y1, 1.0), ("_2", _SM_X2, _SM_Y2, 0.000001)):
    def _sm_params(axis: int | None, beta: float = _beta) -> list[Arg]:
        return [f32s(beta)] if axis is None else [f32s(beta), i32s(axis)]

    _all_dims_and_axis(f"softmax_nnapi_softmax_v1_2{_suffix}", Op.SOFTMAX, _x, _y, _sm_params,
                       [(1, None), (3, None), (4, None), *RANK_AXES])

# log_softmax.mod.py (V1_3): rank-5 inputs (derived from TF Lite's activations_test.cc).
for _suffix, _lsm_dims, _lsm_x, _lsm_beta, _lsm_axis, _lsm_y in (
        ("1", (1, 1, 1, 2, 4), [0, -6, 2, 4, 3, -2, 10, 1], 1.0, 4,
         [-4.14297, -10.14297, -2.14297, -.142971, -7.00104, -12.00104, -.00104087, -9.00104]),
        ("2", (1, 1, 1, 4, 2), [0, -6, 2, 4, 3, -2, 10, 1], 1.0, -1,
         [-.00247565, -6.00247, -2.12692, -.126928, -.00671534, -5.00671, -.000123374,
          -9.00012]),
        ("3", (1, 1, 2, 4, 1), [0, 2, 3, 10, -6, 4, -2, 1], 1.0, -3,
         [-.00247565, -2.12692, -.00671534, -.000123374, -6.00247, -.126928, -5.00671,
          -9.00012]),
        ("4", (1, 1, 1, 2, 4), [0, -.6, .2, .4, .3, -.2, 1, .1], 10.0, 4,
         [-4.14297, -10.14297, -2.14297, -.142971, -7.00104, -12.00104, -.00104087,
          -9.00104])):
    CASES.append(OpCase(
        f"log_softmax_nnapi_log_softmax_{_suffix}", Op.LOG_SOFTMAX,
        (f32(np.reshape(_lsm_x, _lsm_dims)), f32s(_lsm_beta), i32s(_lsm_axis)),
        (out(T.TENSOR_FLOAT32, _lsm_dims, np.reshape(_lsm_y, _lsm_dims)),)))

# -- L2_NORMALIZATION -------------------------------------------------------------------------

# l2_normalization_v1_2.mod.py / l2_normalization_axis.mod.py (V1_2): {2, 2, 2, 3} of
# Pythagorean triples; without the axis input at ranks 1..3, with it at every rank and axis.
_L2_X = np.reshape([0, 3, 4, 3, 0, 4, 8, 6, 0, 12, 0, 9, 9, 12, 20, 12, 15, 16, 20, 9, 12,
                    16, 15, 12], (2, 2, 2, 3)).astype(np.float64)
_L2_Y = np.reshape([0.00, 0.60, 0.80, 0.60, 0.00, 0.80, 0.80, 0.60, 0.00, 0.80, 0.00, 0.60,
                    0.36, 0.48, 0.80, 0.48, 0.60, 0.64, 0.80, 0.36, 0.48, 0.64, 0.60, 0.48],
                   (2, 2, 2, 3))
_all_dims_and_axis("l2_normalization_nnapi_l2_normalization_v1_2", Op.L2_NORMALIZATION, _L2_X,
                   _L2_Y, lambda axis: [] if axis is None else [i32s(axis)],
                   [(1, None), (2, None), (3, None)])
_all_dims_and_axis("l2_normalization_nnapi_l2_normalization_axis", Op.L2_NORMALIZATION, _L2_X,
                   _L2_Y, lambda axis: [] if axis is None else [i32s(axis)])

# -- LOCAL_RESPONSE_NORMALIZATION -------------------------------------------------------------

# local_response_normalization_v1_2.mod.py (V1_2): {2, 2, 2, 6} rows of
# [-1.1, .6, .7, 1.2, -.7, .1] (sum of squares 4). TEST 1 uses bias 0, which NNAPI's CPU
# implementation and CTS accept although the operation reference says "must not be zero".
_LRN_X = np.reshape([-1.1, .6, .7, 1.2, -.7, .1] * 8, (2, 2, 2, 6))
for _suffix, _radius, _bias, _alpha, _beta, _row, _pairs in (
        ("radius20_bias0", 20, 0.0, 1.0, 0.5, [-.55, .3, .35, .6, -.35, .05],
         [(4, a) for a in (0, -3, 2, -1)]),
        ("radius20_bias9", 20, 9.0, 4.0, 0.5, [-.22, .12, .14, .24, -.14, .02],
         [(4, a) for a in (-4, 1, -2, 3)]),
        ("radius2", 2, 9.0, 4.0, 0.5,
         [-.26492569, .12510864, .14011213, .26726127, -.16178755, .0244266],
         [(1, None), (2, None), (3, None), *RANK_AXES])):
    def _lrn_params(axis: int | None, p: tuple[int, float, float, float] = (
            _radius, _bias, _alpha, _beta)) -> list[Arg]:
        scalars = [i32s(p[0]), f32s(p[1]), f32s(p[2]), f32s(p[3])]
        return scalars if axis is None else [*scalars, i32s(axis)]

    _all_dims_and_axis(f"local_response_normalization_nnapi_lrn_v1_2_{_suffix}",
                       Op.LOCAL_RESPONSE_NORMALIZATION, _LRN_X,
                       np.reshape(_row * 8, (2, 2, 2, 6)), _lrn_params, _pairs)

# -- INSTANCE_NORMALIZATION -------------------------------------------------------------------

# instance_normalization.mod.py (V1_2): {2, 2, 2, 2} NHWC plus the AddNchw twin; epsilon 1e-4.
_IN_X = np.reshape([0, 0, 0, -2, 0, -2, 0, 4, 1, -1, -1, 2, -1, -2, 1, 1], (2, 2, 2, 2))
for _suffix, _gamma, _in_beta, _in_y in (
        ("gamma1_beta0", 1.0, 0.0,
         [0., 0., 0., -0.8164898, 0., -0.8164898, 0., 1.6329796, 0.99995005, -0.6324429,
          -0.99995005, 1.2648858, -0.99995005, -1.2648858, 0.99995005, 0.6324429]),
        ("gamma2_beta10", 2.0, 10.0,
         [10., 10., 10., 8.367021, 10., 8.367021, 10., 13.265959, 11.9999, 8.735114, 8.0001,
          12.529772, 8.0001, 7.470228, 11.9999, 11.264886])):
    _case = OpCase(
        f"instance_normalization_nnapi_instance_normalization_{_suffix}",
        Op.INSTANCE_NORMALIZATION,
        (f32(_IN_X.astype(np.float64)), f32s(_gamma), f32s(_in_beta), f32s(0.0001), bools(False)),
        (out(T.TENSOR_FLOAT32, (2, 2, 2, 2), np.reshape(_in_y, (2, 2, 2, 2))),))
    CASES.extend([_case, to_nchw(_case, layout_input=4)])
