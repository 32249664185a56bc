"""Conformance cases for TRANSPOSE_CONV_2D.

The reference gathers instead of scattering: each output pixel ``(y, x)`` sums, over filter
taps ``(i, j)``, the input pixel ``((y + top - i) / stride_h, (x + left - j) / stride_w)`` when
that division is exact and lands inside the input. Implicit SAME padding is worked out here from
NNAPI's definition (computed on output_shape; the tail makes the last stride fit exactly and may
be negative).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import Arg, OpCase, bools, f32, i32, i32s, out, to_nchw

CASES: list[OpCase] = []

Array = np.ndarray[Any, Any]
_ACT: dict[int, Callable[[Array], Array]] = {
    0: lambda v: v, 1: lambda v: np.maximum(v, 0.0), 2: lambda v: np.clip(v, -1.0, 1.0),
    3: lambda v: np.clip(v, 0.0, 6.0)}
SAME, VALID = 1, 2
_OP = Op.TRANSPOSE_CONV_2D


def _data(shape: tuple[int, ...], seed: int, scale: float = 1.0) -> Array:
    rng = np.random.default_rng(seed)
    return (rng.integers(-16, 17, size=shape) / 8.0 * scale).astype(np.float32)


def _same_pads(out_size: int, k: int, stride: int) -> tuple[int, int]:
    """Transpose SAME: as a SAME convolution of ``out_size``, tail fitted to the last stride."""
    steps = (out_size + stride - 1) // stride
    total = (steps - 1) * stride + k - out_size
    head = total // 2 if total > 0 else 0
    return head, total - head


def _transpose_loops(x: Array, w: Array, b: Array, pads: tuple[int, int, int, int],
                     strides: tuple[int, int]) -> Array:
    """NHWC reference; ``pads`` (top, bottom, left, right), ``strides`` (height, width)."""
    n, h, wd, _ = x.shape
    cout, kh, kw, _ = w.shape
    top, bottom, left, right = pads
    oh = h * strides[0] + kh - strides[0] - top - bottom
    ow = wd * strides[1] + kw - strides[1] - left - right
    result = np.zeros((n, oh, ow, cout))
    for bi in range(n):
        for oy in range(oh):
            for ox in range(ow):
                for k in range(cout):
                    acc = float(b[k])
                    for i in range(kh):
                        for j in range(kw):
                            sy, sx = oy + top - i, ox + left - j
                            if sy % strides[0] or sx % strides[1]:
                                continue
                            iy, ix = sy // strides[0], sx // strides[1]
                            if 0 <= iy < h and 0 <= ix < wd:
                                acc += float(np.dot(x[bi, iy, ix, :], w[k, i, j, :]))
                    result[bi, oy, ox, k] = acc
    return result


def _case(name: str, x: Array, w: Array, b: Array, *,
          pads: tuple[int, int, int, int] | None = None,
          target: tuple[int, int] | None = None, code: int = SAME,
          stride: tuple[int, int] = (1, 1), act: int = 0, nchw_twin: bool = False) -> None:
    """Add a case (and its NCHW twin). ``pads`` (left, right, top, bottom) selects explicit
    padding; otherwise ``target`` is output_shape's (height, width) with padding ``code``.
    ``stride`` is (width, height) as NNAPI orders it."""
    args: list[Arg] = [f32(x), f32(w), f32(b)]
    if pads is not None:
        args += [i32s(p) for p in pads]
    else:
        if target is None:
            raise ValueError("an implicit-padding case needs an output_shape target")
        args += [i32([x.shape[0], target[0], target[1], w.shape[0]]), i32s(code)]
    args += [i32s(stride[0]), i32s(stride[1]), i32s(act), bools(False)]
    act_slot, layout_slot = len(args) - 2, len(args) - 1

    def reference(*a: Any) -> list[Array]:
        xin, win = a[0], a[1]
        if pads is not None:
            geometry = (pads[2], pads[3], pads[0], pads[1])
        elif a[4] == SAME and target is not None:
            geometry = (*_same_pads(target[0], win.shape[1], stride[1]),
                        *_same_pads(target[1], win.shape[2], stride[0]))
        else:
            geometry = (0, 0, 0, 0)
        y = _transpose_loops(xin, win, a[2], geometry, (stride[1], stride[0]))
        return [_ACT[a[act_slot]](y)]

    shape = reference(*[np.asarray(arg.value, np.float64) if not arg.scalar else arg.value
                        for arg in args])[0].shape
    case = OpCase(name, _OP, tuple(args), (out(T.TENSOR_FLOAT32, shape),), reference=reference)
    CASES.append(case)
    if nchw_twin:
        twin = to_nchw(case, layout_input=layout_slot)
        if pads is None:  # output_shape is given in the operation's layout
            nhwc = np.asarray(args[3].value)
            inputs = list(twin.inputs)
            inputs[3] = i32(nhwc[[0, 3, 1, 2]])
            twin = replace(twin, inputs=tuple(inputs))
        CASES.append(twin)


# Hand-worked: stride 2 with a 2x2 all-ones filter copies each input pixel into its own 2x2
# block (VALID: output 2*2 + 2 - 2 = 4 per side), then the bias adds 0.5.
_HAND_IN = np.array([1, 2, 3, 4], np.float32).reshape(1, 2, 2, 1)
_HAND_OUT = np.kron(np.array([[1, 2], [3, 4]]), np.ones((2, 2))).reshape(1, 4, 4, 1) + 0.5
CASES.append(OpCase(
    "transpose_conv_2d_hand_blocks", _OP,
    (f32(_HAND_IN), f32(np.ones((1, 2, 2, 1), np.float32)), f32([0.5]),
     i32([1, 4, 4, 1]), i32s(VALID), i32s(2), i32s(2), i32s(0), bools(False)),
    (out(T.TENSOR_FLOAT32, (1, 4, 4, 1), _HAND_OUT),)))

_X = _data((1, 3, 3, 2), 1)
_W = _data((3, 3, 3, 2), 2, 0.5)
_B = np.array([0.5, -0.25, 1.0], np.float32)

_case("transpose_conv_2d_explicit_stride2", _X, _W, _B, pads=(0, 0, 0, 0), stride=(2, 2),
      nchw_twin=True)
_case("transpose_conv_2d_explicit_asym_relu", _data((2, 3, 2, 2), 3), _W, _B,
      pads=(1, 0, 0, 2), stride=(1, 2), act=1, nchw_twin=True)
# Negative right / bottom padding extends the output past the last tap (bias only there).
_case("transpose_conv_2d_explicit_negative_tail", _X, _data((2, 2, 2, 2), 4), _B[:2],
      pads=(1, -1, 0, -2), stride=(2, 1), act=2)
_case("transpose_conv_2d_implicit_same_stride2", _X, _W, _B, target=(6, 6), code=SAME,
      stride=(2, 2), act=0, nchw_twin=True)
# Odd target: SAME on 5 (and 3) with stride 2 and 2 taps needs padding 1, all of it at the tail.
_case("transpose_conv_2d_implicit_same_odd", _data((1, 3, 2, 3), 5), _data((2, 2, 3, 3), 6),
      _data((2,), 7), target=(5, 3), code=SAME, stride=(2, 2), act=1, nchw_twin=True)
# A 1x1 filter with stride 2 and an even target: SAME's tail is -1 (one bias-only row / column).
_case("transpose_conv_2d_implicit_same_negative_tail", _data((1, 3, 2, 2), 13),
      _data((3, 1, 1, 2), 14), _data((3,), 15), target=(6, 4), code=SAME, stride=(2, 2),
      nchw_twin=True)
_case("transpose_conv_2d_implicit_valid_relu6", _data((1, 2, 3, 1), 8),
      _data((2, 3, 2, 1), 9, 4.0), _data((2,), 10), target=(4, 4), code=VALID, stride=(1, 1),
      act=3)
_case("transpose_conv_2d_size1", _data((1, 1, 1, 3), 11), _data((2, 1, 1, 3), 12),
      np.array([0.25, -1.0], np.float32), pads=(0, 0, 0, 0))
