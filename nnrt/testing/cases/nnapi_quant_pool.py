"""Quantised conformance cases of pooling and resizing, from NNAPI's test specs.

AVERAGE_POOL_2D, MAX_POOL_2D, RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR with
TENSOR_QUANT8_ASYMM and TENSOR_QUANT8_ASYMM_SIGNED inputs, in the format of
:mod:`nnrt.testing.cases.nnapi_quant_conv` (literal V1_0 / V1_3 examples; V1_2 / V1_3 float
examples quantised by their variation exactly as NNAPI's generator does). Input and output share
scale and zero point in every one. ``average_pool_2d_nnrt_*`` cases are nnrt's: hand-computed
rounding of the quantised average (ties away from zero, partial windows at the borders),
compared exactly. The two 100x100-filter AVERAGE_POOL_2D examples run as the base variant only.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from nnrt.model.types import OperationType as Op
from nnrt.testing.cases import nnapi_quant_conv
from nnrt.testing.cases.nnapi_quant_conv import Q, lit, qarg, qout, s8, u8
from nnrt.testing.spec import Arg, OpCase, bools, f32s, i32s

__all__ = ["CASES"]

CASES: list[OpCase] = []
add = partial(nnapi_quant_conv.add, into=CASES)
SAME = 1
AVG, MAX = Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D


def _ints(*params: int) -> list[Arg]:
    return [i32s(p) for p in params]


def _pool(op: Op, name: str, x: tuple[Any, tuple[int, ...]], params: Sequence[int],
          out_dims: tuple[int, ...], expected: Any, q: Q, *, layout: bool = True,
          variants: tuple[str, ...] | None = None) -> None:
    """A V1_2-style pooling example (float values) under ``q``, with its NCHW twin."""
    tail = [*_ints(*params), *([bools(False)] if layout else [])]
    add(name, op, [qarg(*x, q), *tail], qout(expected, out_dims, q),
        layout=len(params) + 1 if layout else None, variants=variants)


def _literal(op: Op, name: str, x: Any, dims: tuple[int, ...], params: Sequence[int],
             out_dims: tuple[int, ...], expected: Sequence[int], q: Q, *,
             exact: bool = False) -> None:
    """A V1_0-style pooling example: literal quantised values, no layout input."""
    add(name, op, [lit(x, dims, q), *_ints(*params)],
        qout(expected, out_dims, q, literal=True), exact=exact)


# -- AVERAGE_POOL_2D --------------------------------------------------------------------------
# V1_0/avg_pool_quant8_4.mod.py (RELU1: [-1, 1] is [0, 2] at scale 0.5) and avg_pool_quant8_5
# (implicit SAME, filter and stride 2).
_literal(AVG, "average_pool_2d_nnapi_avg_pool_quant8_4", range(9), (1, 3, 3, 1),
         (0, 0, 0, 0, 1, 1, 1, 1, 2), (1, 3, 3, 1), [0, 1, 2, 2, 2, 2, 2, 2, 2], u8(0.5, 0))
_literal(AVG, "average_pool_2d_nnapi_avg_pool_quant8_5", [0, 96, 32, 64, 48, 32, 160, 112],
         (1, 2, 4, 1), (SAME, 2, 2, 2, 2, 0), (1, 1, 2, 1), [44, 92], u8(0.0625, 0))
# V1_3/avg_pool_quant8_signed.mod.py's literal examples (V1_0's avg_pool_quant8_1..5, shifted):
# the mean of x % 4 * 2 - 128 over 10x10 windows is -125.4, rounded to -125.
_literal(AVG, "average_pool_2d_nnapi_avg_pool_quant8_signed_1", [-127, -126, -125, -124],
         (1, 2, 2, 1), (0, 0, 0, 0, 1, 1, 1, 1, 0), (1, 2, 2, 1), [-127, -126, -125, -124],
         s8(0.5, -128))
_literal(AVG, "average_pool_2d_nnapi_avg_pool_quant8_signed_2", [127] * (5 * 52 * 60 * 3),
         (5, 52, 60, 3), (5, 5, 5, 5, 5, 5, 10, 10, 0), (5, 11, 13, 3),
         [127] * (5 * 11 * 13 * 3), s8(0.5, -128))
_literal(AVG, "average_pool_2d_nnapi_avg_pool_quant8_signed_3",
         [x % 4 * 2 - 128 for x in range(100 * 100)], (1, 100, 100, 1),
         (0, 0, 0, 0, 4, 4, 10, 10, 0), (1, 23, 23, 1), [-125] * (23 * 23), s8(0.5, -128))
_literal(AVG, "average_pool_2d_nnapi_avg_pool_quant8_signed_4", range(-128, -119),
         (1, 3, 3, 1), (0, 0, 0, 0, 1, 1, 1, 1, 2), (1, 3, 3, 1),
         [-128, -127, -126, -126, -126, -126, -126, -126, -126], s8(0.5, -128))
_literal(AVG, "average_pool_2d_nnapi_avg_pool_quant8_signed_5",
         [-128, -32, -96, -64, -80, -96, 32, -16], (1, 2, 4, 1), (SAME, 2, 2, 2, 2, 0),
         (1, 1, 2, 1), [-84, -36], s8(0.0625, -128))

# V1_2/avg_pool_v1_2.mod.py (quant8) and V1_3/avg_pool_quant8_signed.mod.py (its quant8_signed
# variations of the same five examples), each with its NCHW twin.
_P4 = ([1, 2, 3, 4], (1, 2, 2, 1))
_P8 = ([0, 6, 2, 4, 3, 2, 10, 7], (1, 2, 4, 1))
_BIG = (5, 52, 60, 3)
_BIG_OUT = (5, 11, 13, 3)
for _stem, _variation, _make, _z in (("v1_2", "quant8", u8, 0),
                                     ("quant8_signed", "quant8_signed", s8, -128)):
    _name = f"average_pool_2d_nnapi_avg_pool_{_stem}_nchw_{{}}_{_variation}".format
    _pool(AVG, _name(1), _P4, (0, 0, 0, 0, 1, 1, 1, 1, 0), (1, 2, 2, 1), _P4[0], _make(0.5, _z))
    _pool(AVG, _name(2), (np.ones(_BIG), _BIG), (50, 50, 50, 50, 5, 5, 100, 100, 0), _BIG_OUT,
          np.ones(_BIG_OUT), _make(0.5, _z), variants=("base",))
    _pool(AVG, _name(3), ([x % 2 for x in range(200 * 180)], (1, 200, 180, 1)),
          (0, 0, 0, 0, 2, 2, 10, 10, 0), (1, 96, 86, 1), [0.5] * (96 * 86), _make(0.25, _z))
    _pool(AVG, _name(4), (np.full(_BIG, 10.0), _BIG), (50, 50, 50, 50, 5, 5, 100, 100, 3),
          _BIG_OUT, np.full(_BIG_OUT, 6.0), _make(0.5, _z), variants=("base",))
    _pool(AVG, _name(5), _P8, (SAME, 2, 2, 2, 2, 0), (1, 1, 2, 1), [2.75, 5.75],
          _make(0.25, _z))

# nnrt: rounding of the average. Four 2x2 windows summing to -6, -5, 6 and -2 (signed) or
# 6, 5, 2 and 10 (unsigned): -1.5 -> -2, -1.25 -> -1, 1.5 -> 2, -0.5 -> -1 and 1.5 -> 2,
# 1.25 -> 1, 0.5 -> 1, 2.5 -> 3 (TFLite: (sum +- n/2) / n, truncated).
_literal(AVG, "average_pool_2d_nnrt_rounding_signed",
         [-1, -2, -2, -1, 1, 2, 0, 0, -1, -2, -1, -1, 1, 2, -1, -1], (1, 2, 8, 1),
         (0, 0, 0, 0, 2, 2, 2, 2, 0), (1, 1, 4, 1), [-2, -1, 2, -1], s8(0.5, 0), exact=True)
_literal(AVG, "average_pool_2d_nnrt_rounding_unsigned",
         [1, 2, 2, 1, 0, 1, 3, 2, 1, 2, 1, 1, 0, 1, 2, 3], (1, 2, 8, 1),
         (0, 0, 0, 0, 2, 2, 2, 2, 0), (1, 1, 4, 1), [2, 1, 1, 3], u8(0.5, 0), exact=True)
# Windows clipped by SAME padding average only their 4, 6 or 9 real elements:
# 120/4, 210/6, 160/4, 270/6, 452/9, 332/6, 240/4, 392/6 and 282/4 (70.5 -> 71).
_literal(AVG, "average_pool_2d_nnrt_partial_windows",
         [10, 20, 30, 40, 50, 60, 70, 80, 92], (1, 3, 3, 1), (SAME, 1, 1, 3, 3, 0),
         (1, 3, 3, 1), [30, 35, 40, 45, 50, 55, 60, 65, 71], u8(0.5, 0), exact=True)

# -- MAX_POOL_2D ------------------------------------------------------------------------------
# V1_0/max_pool_quant8_1.mod.py and max_pool_quant8_4.mod.py.
_literal(MAX, "max_pool_2d_nnapi_max_pool_quant8_1", [1, 2, 3, 4], (1, 2, 2, 1),
         (0, 0, 0, 0, 1, 1, 1, 1, 0), (1, 2, 2, 1), [1, 2, 3, 4], u8(0.5, 0))
_literal(MAX, "max_pool_2d_nnapi_max_pool_quant8_4", [0, 96, 32, 64, 48, 32, 160, 112],
         (1, 2, 4, 1), (SAME, 2, 2, 2, 2, 0), (1, 1, 2, 1), [96, 160], u8(0.0625, 0))
# V1_3/max_pool_quant8_signed.mod.py's literal examples (RELU1 clamps to [-2, 2] at 0.5).
_MAX_IN = [x % 20 + 1 for x in range(5 * 50 * 70 * 3)]
_literal(MAX, "max_pool_2d_nnapi_max_pool_quant8_signed_1", [-127, -126, -125, -124],
         (1, 2, 2, 1), (0, 0, 0, 0, 1, 1, 1, 1, 0), (1, 2, 2, 1), [-127, -126, -125, -124],
         s8(0.5, -128))
for _n, _act, _top in ((2, 0, 20), (3, 2, 2)):
    _literal(MAX, f"max_pool_2d_nnapi_max_pool_quant8_signed_{_n}",
             np.subtract(_MAX_IN, 128), (5, 50, 70, 3), (0, 0, 0, 0, 20, 20, 20, 20, _act),
             (5, 2, 3, 3), [_top - 128] * 90, s8(0.5, -128))
_literal(MAX, "max_pool_2d_nnapi_max_pool_quant8_signed_4",
         [-128, -32, -96, -64, -80, -96, 32, -16], (1, 2, 4, 1), (SAME, 2, 2, 2, 2, 0),
         (1, 1, 2, 1), [-32, 32], s8(0.0625, -128))
# V1_2/max_pool_v1_2.mod.py (quant8) and V1_3/max_pool_quant8_signed.mod.py (quant8_signed).
for _stem, _variation, _make, _z in (("v1_2", "quant8", u8, 0),
                                     ("quant8_signed", "quant8_signed", s8, -128)):
    _name = f"max_pool_2d_nnapi_max_pool_{_stem}_nchw_{{}}_{_variation}".format
    _pool(MAX, _name(1), _P4, (0, 0, 0, 0, 1, 1, 1, 1, 0), (1, 2, 2, 1), _P4[0], _make(0.5, _z))
    _pool(MAX, _name(2), (_MAX_IN, (5, 50, 70, 3)), (0, 0, 0, 0, 20, 20, 20, 20, 0),
          (5, 2, 3, 3), [20] * 90, _make(0.5, _z))
    _pool(MAX, _name(3), (_MAX_IN, (5, 50, 70, 3)), (0, 0, 0, 0, 20, 20, 20, 20, 3),
          (5, 2, 3, 3), [6] * 90, _make(0.25, _z))
    _pool(MAX, _name(4), _P8, (SAME, 2, 2, 2, 2, 0), (1, 1, 2, 1), [6, 10], _make(0.25, _z))

# -- RESIZE_BILINEAR --------------------------------------------------------------------------
# V1_2/resize_bilinear_v1_2.mod.py (quant8) and V1_3/resize_quant8_signed.mod.py
# (quant8_signed): tests 1 and 2 by output size and by scale with NCHW twins, test 3 without
# the layout input. 1.666... quantises to 167 (signed: 39); NNAPI computes 166.67 (38.67) and
# truncates: one step, within tolerance.
_RB_1: tuple[Any, tuple[int, ...], Any, tuple[int, ...]] = ([1.0, 1.0, 2.0, 2.0], (1, 2, 2, 1), [1, 1, 1, 5 / 3, 5 / 3, 5 / 3, 2, 2, 2],
         (1, 3, 3, 1))
_RB_2 = ([3, 4, 6, 10, 9, 10, 12, 16], (1, 2, 2, 2),
         [3, 4, 5, 8, 6, 10, 7, 8, 9, 12, 10, 14, 9, 10, 11, 14, 12, 16], (1, 3, 3, 2))
_RB_TESTS = ((1, _RB_1, 1.5, 0.01), (2, _RB_2, 1.6, 0.25), (3, _RB_1, 1.8, 0.01))
for _stem, _variation, _make, _z in (("resize_bilinear_v1_2", "quant8", u8, 0),
                                     ("resize_quant8_signed", "quant8_signed", s8, -128)):
    for _n, (_x, _dims, _y, _out_dims), _scale, _qs in _RB_TESTS:
        _q = _make(_qs, _z)
        for _how, _size in (("shape", (i32s(3), i32s(3))), ("scale", (f32s(_scale),) * 2)):
            add(f"resize_bilinear_nnapi_{_stem}_{_n}_{_how}_{_variation}",
                Op.RESIZE_BILINEAR,
                [qarg(_x, _dims, _q), *_size, *([bools(False)] if _n < 3 else [])],
                qout(_y, _out_dims, _q), layout=3 if _n < 3 else None)

# -- RESIZE_NEAREST_NEIGHBOR ------------------------------------------------------------------
# V1_2/resize_nearest_neighbor.mod.py (quant8) and V1_3/resize_quant8_signed.mod.py
# (quant8_signed): tests 1-8 by output size (width, height) and by scale, NHWC and NCHW.
_RN_TESTS: tuple[tuple[Any, tuple[int, ...], tuple[int, int], tuple[float, float], list[int],
                       tuple[int, ...]], ...] = (
    ([1, 2, 3, 4], (1, 2, 2, 1), (1, 1), (0.5, 0.5), [1], (1, 1, 1, 1)),
    ([1, 2, 3, 4], (1, 2, 2, 1), (3, 3), (1.5, 1.5), [1, 1, 2, 1, 1, 2, 3, 3, 4], (1, 3, 3, 1)),
    (range(1, 10), (1, 3, 3, 1), (2, 2), (0.8, 0.8), [1, 2, 4, 5], (1, 2, 2, 1)),
    ([1, 2, 3, 4], (1, 2, 2, 1), (5, 2), (2.6, 1.1), [1, 1, 1, 2, 2, 3, 3, 3, 4, 4],
     (1, 2, 5, 1)),
    (range(1, 17), (1, 4, 4, 1), (3, 3), (0.9, 0.9), [1, 2, 3, 5, 6, 7, 9, 10, 11],
     (1, 3, 3, 1)),
    ([1, 2, 3, 4], (1, 2, 2, 1), (2, 5), (1.4, 2.8), [1, 2, 1, 2, 1, 2, 3, 4, 3, 4],
     (1, 5, 2, 1)),
    ([1, 2, 3, 4], (1, 2, 2, 1), (4, 4), (2.0, 2.0),
     [1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4], (1, 4, 4, 1)),
    ([1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8], (2, 2, 2, 2), (3, 3), (1.6, 1.8),
     [1, 1, 1, 1, 2, 2, 1, 1, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4,
      5, 5, 5, 5, 6, 6, 5, 5, 5, 5, 6, 6, 7, 7, 7, 7, 8, 8], (2, 3, 3, 2)),
)
#: (scale, zero point) of each test: quant8, then quant8_signed.
_RN_QUANT = (((0.25, 128), (0.25, 0)), ((0.25, 0), (0.25, -128))) + (
    ((0.25, 100), (0.25, -28)),) * 6
for _n, ((_x, _dims, _wh, _scales, _y, _out_dims), _params) in enumerate(
        zip(_RN_TESTS, _RN_QUANT, strict=True), start=1):
    for (_stem, _variation, _make), (_qs, _z) in zip(
            (("resize_nearest_neighbor", "quant8", u8),
             ("resize_quant8_signed", "quant8_signed", s8)), _params, strict=True):
        _q = _make(_qs, _z)
        for _how, _size in (("shape", (i32s(_wh[0]), i32s(_wh[1]))),
                            ("scale", (f32s(_scales[0]), f32s(_scales[1])))):
            add(f"resize_nearest_neighbor_nnapi_{_stem}_{_n}_{_how}_{_variation}",
                Op.RESIZE_NEAREST_NEIGHBOR, [qarg(_x, _dims, _q), *_size, bools(False)],
                qout(_y, _out_dims, _q), layout=3)
