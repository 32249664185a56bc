"""Conformance cases for RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR.

References loop over output pixels in float64 with exact rational scales (``Fraction``): a
source coordinate is clamped to the input and interpolated (bilinear) or rounded (nearest
neighbour: floor, or round-half-up with align_corners). Sizes are chosen so that NNAPI's float32
coordinate arithmetic lands on the same pixels as the exact one.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import OpCase, bools, f32, f32s, i32s, omitted, out, to_nchw

CASES: list[OpCase] = []


def _scale(in_size: int, out_size: int, align: bool) -> Fraction:
    if align and out_size > 1:
        return Fraction(in_size - 1, out_size - 1)
    return Fraction(in_size, out_size)


def _bilinear_ref(x: np.ndarray[Any, Any], out_h: int, out_w: int, align: bool,
                  half: bool) -> np.ndarray[Any, Any]:
    n, in_h, in_w, c = x.shape
    result = np.zeros((n, out_h, out_w, c))

    def source(i: int, in_size: int, out_size: int) -> tuple[int, int, float]:
        s = _scale(in_size, out_size, align)
        pos = (i + Fraction(1, 2)) * s - Fraction(1, 2) if half else i * s
        pos = min(max(pos, Fraction(0)), Fraction(in_size - 1))
        lo = math.floor(pos)
        return lo, min(lo + 1, in_size - 1), float(pos - lo)

    for oy in range(out_h):
        y0, y1, ty = source(oy, in_h, out_h)
        for ox in range(out_w):
            x0, x1, tx = source(ox, in_w, out_w)
            top = x[:, y0, x0] + (x[:, y0, x1] - x[:, y0, x0]) * tx
            bottom = x[:, y1, x0] + (x[:, y1, x1] - x[:, y1, x0]) * tx
            result[:, oy, ox] = top + (bottom - top) * ty
    return result


def _nearest_ref(x: np.ndarray[Any, Any], out_h: int, out_w: int, align: bool,
                 half: bool) -> np.ndarray[Any, Any]:
    n, in_h, in_w, c = x.shape

    def source(i: int, in_size: int, out_size: int) -> int:
        pos = (i + Fraction(1, 2) if half else Fraction(i)) * _scale(in_size, out_size, align)
        k = math.floor(pos + Fraction(1, 2)) if align else math.floor(pos)
        return min(max(k, 0), in_size - 1)

    result = np.zeros((n, out_h, out_w, c))
    for oy in range(out_h):
        for ox in range(out_w):
            result[:, oy, ox] = x[:, source(oy, in_h, out_h), source(ox, in_w, out_w)]
    return result


_REFS = {Op.RESIZE_BILINEAR: _bilinear_ref, Op.RESIZE_NEAREST_NEIGHBOR: _nearest_ref}


def _size_of(in_size: int, arg: Any) -> int:
    """Output size from an INT32 size or a float scale (floor(size * scale))."""
    return arg if isinstance(arg, int) else math.floor(in_size * arg)


def _case(op: Op, name: str, x: np.ndarray[Any, Any], size_wh: tuple[Any, Any],
          flags: tuple[Any, ...] = (), *, nchw: bool = False, **kw: Any) -> None:
    """An NHWC case (plus its NCHW twin when ``nchw``): ``size_wh`` holds the output width and
    height (ints) or scales (floats); ``flags`` are inputs 3.. ."""
    width, height = size_wh
    size = i32s if isinstance(width, int) else f32s
    _, in_h, in_w, c = x.shape
    out_dims = (x.shape[0], _size_of(in_h, height), _size_of(in_w, width), c)

    def reference(inp: Any, w: Any, h: Any, *rest: Any) -> list[Any]:
        layout, align, half = [*rest, None, None, None][:3]
        if layout:
            raise ValueError("this reference computes NHWC; wrap it with to_nchw")
        return [_REFS[op](inp, _size_of(inp.shape[1], h), _size_of(inp.shape[2], w),
                          bool(align), bool(half))]

    case = OpCase(f"{op.name.lower()}_{name}", op,
                  inputs=(f32(x), size(width), size(height), *flags),
                  outputs=(out(T.TENSOR_FLOAT32, out_dims),), reference=reference, **kw)
    CASES.append(case)
    if nchw:
        CASES.append(to_nchw(case, layout_input=3))


_X22 = np.array([1.0, 2.0, 3.0, 4.0], np.float32).reshape(1, 2, 2, 1)
_X34 = (np.linspace(-3.0, 4.0, 2 * 3 * 4 * 2, dtype=np.float32) ** 2 / 4 - 1).reshape(2, 3, 4, 2)
_X23 = np.array([[0.5, -1.25, 2.0], [3.5, 1.0, -2.5]], np.float32).reshape(1, 2, 3, 1)
_X33 = np.arange(18, dtype=np.float32).reshape(1, 3, 3, 2) * 0.5 - 3.0
_X44 = np.array([[1, -2, 3, 0.5], [4, 2.5, -1, 6], [-3, 0, 7, 1.5], [2, 5, -4, 3]],
                np.float32).reshape(1, 4, 4, 1)
_X46 = np.linspace(-4.0, 4.5, 4 * 6 * 3, dtype=np.float32).reshape(1, 4, 6, 3)

_B = Op.RESIZE_BILINEAR
# NNAPI's spec example: 2x2 -> 3x3, the 3-input (feature level 1) signature.
CASES.append(OpCase(
    "resize_bilinear_spec_example", _B, inputs=(f32(_X22), i32s(3), i32s(3)),
    outputs=(out(T.TENSOR_FLOAT32, (1, 3, 3, 1),
                 np.array([1, 5 / 3, 2, 7 / 3, 3, 10 / 3, 3, 11 / 3, 4]).reshape(1, 3, 3, 1)),)))
_case(_B, "size_3inputs", _X34, (3, 5))
_case(_B, "size_layout", _X34, (6, 2), (bools(False),), nchw=True)
_case(_B, "scale", _X23, (1.5, 2.0), (bools(False),), nchw=True)
_case(_B, "scale_down", _X46, (0.5, 0.75), (bools(False),))
_case(_B, "align_corners", _X33, (4, 5), (bools(False), bools(True)), nchw=True)
_case(_B, "align_corners_to_1", _X33, (1, 2), (bools(False), bools(True)))
_case(_B, "align_false_half_false", _X23, (5, 3), (bools(False), bools(False), bools(False)))
_case(_B, "half_pixel", _X23, (5, 3), (bools(False), bools(False), bools(True)), nchw=True)
_case(_B, "half_pixel_down", _X44, (2, 3), (bools(False), bools(False), bools(True)))
_case(_B, "half_pixel_scale", _X33, (1.5, 0.5), (bools(False), bools(False), bools(True)),
      nchw=True)
_case(_B, "flags_omitted", _X23, (4, 3), (bools(False), omitted(T.BOOL), omitted(T.BOOL)))
# Zero batches (feature level 3). A constant needs fully specified dims, so no consts variant.
_case(_B, "zero_batches", np.zeros((0, 2, 2, 1), np.float32), (3, 3), (bools(False),),
      skip=("consts",))

_N = Op.RESIZE_NEAREST_NEIGHBOR
_case(_N, "size", _X22, (3, 3), (bools(False),), nchw=True)
_case(_N, "size_batches", _X34, (7, 2), (bools(False),), nchw=True)
_case(_N, "scale_down", _X46, (0.5, 0.75), (bools(False),), nchw=True)
_case(_N, "scale_up", _X23, (2.0, 1.5), (bools(False),))
_case(_N, "align_corners", _X33, (5, 5), (bools(False), bools(True)), nchw=True)
_case(_N, "align_corners_down", _X46, (4, 3), (bools(False), bools(True), bools(False)))
_case(_N, "half_pixel", _X22, (3, 3), (bools(False), bools(False), bools(True)), nchw=True)
_case(_N, "half_pixel_down", _X44, (3, 2), (bools(False), bools(False), bools(True)))
_case(_N, "half_pixel_scale", _X46, (1.5, 0.5), (bools(False), bools(False), bools(True)))
_case(_N, "flags_omitted", _X33, (2, 4), (bools(False), omitted(T.BOOL), omitted(T.BOOL)))
