"""Conformance cases for AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D.

Every case runs for all three operations. Expected values come from a float64 reference that
walks the output positions one by one and gathers the real (non-padding) input elements of each
window explicitly, independently of nnrt's kernels.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import Arg, OpCase, bools, f32, i32s, out, to_nchw

CASES: list[OpCase] = []

_SAME, _VALID = 1, 2

_ACT: dict[int, Callable[[float], float]] = {
    0: lambda v: v,
    1: lambda v: max(v, 0.0),
    2: lambda v: min(max(v, -1.0), 1.0),
    3: lambda v: min(max(v, 0.0), 6.0),
}


def _reduce(op: Op, values: list[float]) -> float:
    if op == Op.MAX_POOL_2D:
        return max(values)
    if op == Op.AVERAGE_POOL_2D:
        return sum(values) / len(values)
    return math.sqrt(sum(v * v for v in values) / len(values))


def _positions(size: int, head: int, tail: int, filt: int, stride: int) -> list[int]:
    """Window starts (in padded coordinates) that fit inside the padded extent."""
    starts = []
    start = 0
    while start + filt <= size + head + tail:
        starts.append(start)
        start += stride
    return starts


def _same_pads(size: int, filt: int, stride: int) -> tuple[int, int]:
    needed = (math.ceil(size / stride) - 1) * stride + filt - size
    needed = max(needed, 0)
    return needed // 2, needed - needed // 2


def _pool(op: Op, x: Any, *, pads: tuple[int, int, int, int], strides: tuple[int, int],
          filters: tuple[int, int], act: int) -> np.ndarray[Any, Any]:
    """NHWC pooling by explicit loops; ``pads`` = (left, right, top, bottom)."""
    left, right, top, bottom = pads
    sw, sh = strides
    fw, fh = filters
    n, h, w, c = x.shape
    rows = _positions(h, top, bottom, fh, sh)
    cols = _positions(w, left, right, fw, sw)
    result = np.zeros((n, len(rows), len(cols), c))
    for b in range(n):
        for i, r0 in enumerate(rows):
            for j, c0 in enumerate(cols):
                for ch in range(c):
                    window = [float(x[b, r - top, q - left, ch])
                              for r in range(r0, r0 + fh) for q in range(c0, c0 + fw)
                              if 0 <= r - top < h and 0 <= q - left < w]
                    result[b, i, j, ch] = _ACT[act](_reduce(op, window))
    return result


def _explicit_ref(op: Op) -> Callable[..., list[Any]]:
    def ref(x: Any, *params: Any) -> list[Any]:
        left, right, top, bottom, sw, sh, fw, fh, act = params[:9]  # params[9]: NHWC layout
        return [_pool(op, x, pads=(left, right, top, bottom), strides=(sw, sh),
                      filters=(fw, fh), act=act)]
    return ref


def _implicit_ref(op: Op) -> Callable[..., list[Any]]:
    def ref(x: Any, *params: Any) -> list[Any]:
        scheme, sw, sh, fw, fh, act = params[:6]  # params[6]: NHWC layout
        _, h, w, _ = x.shape
        top, bottom = _same_pads(h, fh, sh) if scheme == _SAME else (0, 0)
        left, right = _same_pads(w, fw, sw) if scheme == _SAME else (0, 0)
        return [_pool(op, x, pads=(left, right, top, bottom), strides=(sw, sh),
                      filters=(fw, fh), act=act)]
    return ref


def _data(shape: tuple[int, ...], seed: int) -> np.ndarray[Any, Any]:
    """Moderate values on a 1/8 grid in [-4, 4], so float16 holds them exactly."""
    rng = np.random.default_rng(seed)
    return (rng.integers(-32, 33, size=shape) / 8.0).astype(np.float32)


def _explicit(op: Op, name: str, shape: tuple[int, ...], *, pads: tuple[int, int, int, int],
              strides: tuple[int, int], filters: tuple[int, int], act: int,
              out_hw: tuple[int, int], layout: bool | None = None, seed: int = 0) -> OpCase:
    args: list[Arg] = [f32(_data(shape, seed)), *(i32s(v) for v in pads),
                       *(i32s(v) for v in strides), *(i32s(v) for v in filters), i32s(act)]
    if layout is not None:
        args.append(bools(layout))
    dims = (shape[0], *out_hw, shape[3])
    return OpCase(f"{op.name.lower()}_{name}", op, tuple(args), (out(T.TENSOR_FLOAT32, dims),),
                  reference=_explicit_ref(op))


def _implicit(op: Op, name: str, shape: tuple[int, ...], *, scheme: int,
              strides: tuple[int, int], filters: tuple[int, int], act: int,
              out_hw: tuple[int, int], layout: bool | None = None, seed: int = 0) -> OpCase:
    args: list[Arg] = [f32(_data(shape, seed)), i32s(scheme), *(i32s(v) for v in strides),
                       *(i32s(v) for v in filters), i32s(act)]
    if layout is not None:
        args.append(bools(layout))
    dims = (shape[0], *out_hw, shape[3])
    return OpCase(f"{op.name.lower()}_{name}", op, tuple(args), (out(T.TENSOR_FLOAT32, dims),),
                  reference=_implicit_ref(op))


for _op in (Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D, Op.L2_POOL_2D):
    # Explicit padding, 10 inputs (no layout flag): symmetric padding, 3x3 filter, stride 2.
    CASES.append(_explicit(_op, "explicit", (1, 4, 4, 2), pads=(1, 1, 1, 1), strides=(2, 2),
                           filters=(3, 3), act=0, out_hw=(2, 2), seed=1))
    # Explicit padding, 11 inputs: asymmetric padding, different strides / filters per axis.
    _case = _explicit(_op, "explicit_layout", (2, 5, 4, 3), pads=(1, 0, 0, 2), strides=(1, 2),
                      filters=(2, 3), act=1, out_hw=(3, 4), layout=False, seed=2)
    CASES += [_case, to_nchw(_case, layout_input=10)]
    # Window bigger than the input, covered thanks to padding (filter > padding per side).
    _case = _explicit(_op, "explicit_window_exceeds_input", (1, 2, 3, 1), pads=(2, 2, 1, 1),
                      strides=(1, 1), filters=(4, 3), act=3, out_hw=(2, 4), layout=False, seed=3)
    CASES += [_case, to_nchw(_case, layout_input=10)]
    # Implicit SAME, 7 inputs: odd sizes, stride 2 (padding split head / tail).
    CASES.append(_implicit(_op, "implicit_same", (1, 5, 5, 1), scheme=_SAME, strides=(2, 2),
                           filters=(3, 3), act=3, out_hw=(3, 3), seed=4))
    # Implicit SAME with even sizes, 8 inputs (layout flag), RELU1; plus its NCHW twin.
    _case = _implicit(_op, "implicit_same_layout", (2, 4, 6, 2), scheme=_SAME, strides=(3, 2),
                      filters=(2, 3), act=2, out_hw=(2, 2), layout=False, seed=5)
    CASES += [_case, to_nchw(_case, layout_input=7)]
    # Implicit SAME where the filter is larger than the input.
    _case = _implicit(_op, "implicit_same_filter_exceeds_input", (1, 2, 2, 3), scheme=_SAME,
                      strides=(1, 1), filters=(3, 3), act=0, out_hw=(2, 2), layout=False, seed=6)
    CASES += [_case, to_nchw(_case, layout_input=7)]
    # Implicit VALID with strides larger than the filter (skipped elements), RELU.
    _case = _implicit(_op, "implicit_valid_stride_gt_filter", (2, 7, 8, 2), scheme=_VALID,
                      strides=(3, 3), filters=(2, 1), act=1, out_hw=(3, 3), layout=False, seed=7)
    CASES += [_case, to_nchw(_case, layout_input=7)]
    # Implicit VALID, 7 inputs, global pooling over the whole image.
    CASES.append(_implicit(_op, "implicit_valid_global", (2, 3, 4, 2), scheme=_VALID,
                           strides=(1, 1), filters=(4, 3), act=0, out_hw=(1, 1), seed=8))
    # Size-1 everything.
    CASES.append(_explicit(_op, "single_element", (1, 1, 1, 1), pads=(0, 0, 0, 0),
                           strides=(1, 1), filters=(1, 1), act=2, out_hw=(1, 1), seed=9))

# Published NNAPI examples (avg_pool_float_1 / max_pool_float_1 / l2_pool_float: 1x2x2x1 input,
# 1x1 filter, VALID, stride 1 is the identity for AVERAGE and MAX; L2 over a 2x2 window).
CASES += [
    OpCase("average_pool_2d_spec_identity", Op.AVERAGE_POOL_2D,
           (f32([[[[1.0], [2.0]], [[3.0], [4.0]]]]), i32s(_VALID), i32s(1), i32s(1), i32s(1),
            i32s(1), i32s(0)),
           (out(T.TENSOR_FLOAT32, (1, 2, 2, 1), [[[[1.0], [2.0]], [[3.0], [4.0]]]]),)),
    OpCase("max_pool_2d_spec_identity", Op.MAX_POOL_2D,
           (f32([[[[1.0], [2.0]], [[3.0], [4.0]]]]), i32s(_VALID), i32s(1), i32s(1), i32s(1),
            i32s(1), i32s(0)),
           (out(T.TENSOR_FLOAT32, (1, 2, 2, 1), [[[[1.0], [2.0]], [[3.0], [4.0]]]]),)),
    # sqrt((1 + 36 + 9 + 16) / 4) = sqrt(15.5); window [[1, 6], [3, 4]] over a 2x2 VALID pool.
    OpCase("l2_pool_2d_spec_window", Op.L2_POOL_2D,
           (f32([[[[1.0], [6.0]], [[3.0], [4.0]]]]), i32s(_VALID), i32s(1), i32s(1), i32s(2),
            i32s(2), i32s(0)),
           (out(T.TENSOR_FLOAT32, (1, 1, 1, 1), [[[[math.sqrt(15.5)]]]]),)),
]
