"""Conformance cases for CONV_2D, DEPTHWISE_CONV_2D and GROUPED_CONV_2D.

References are written independently of nnrt's kernels: explicit Python loops over output
positions and filter taps (gathering input pixels), with SAME padding worked out here from
NNAPI's definition. Every signature variant is covered: explicit / implicit padding, with and
without the layout flag (NHWC and NCHW twins), with and without dilation factors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import Arg, OpCase, bools, f32, i32s, out, to_nchw

CASES: list[OpCase] = []

Array = np.ndarray[Any, Any]
_ACT: dict[int, Callable[[Array], Array]] = {
    0: lambda v: v, 1: lambda v: np.maximum(v, 0.0), 2: lambda v: np.clip(v, -1.0, 1.0),
    3: lambda v: np.clip(v, 0.0, 6.0)}
SAME, VALID = 1, 2


def _same_pads(size: int, k: int, stride: int, dilation: int) -> tuple[int, int]:
    """SAME: keep ceil(size / stride) outputs; the smaller half of the padding goes first."""
    outputs = (size + stride - 1) // stride
    needed = max(0, (outputs - 1) * stride + (k - 1) * dilation + 1 - size)
    return needed // 2, needed - needed // 2


def _data(shape: tuple[int, ...], seed: int, scale: float = 1.0) -> Array:
    """Deterministic moderate values (multiples of 1/8 in [-2, 2] times ``scale``)."""
    rng = np.random.default_rng(seed)
    return (rng.integers(-16, 17, size=shape) / 8.0 * scale).astype(np.float32)


def _conv_loops(x: Array, w: Array, b: Array, *, pads: tuple[int, int, int, int],
                strides: tuple[int, int], dil: tuple[int, int], groups: int,
                depthwise: bool) -> Array:
    """NHWC reference: every output pixel and channel summed tap by tap.

    ``pads`` is (top, bottom, left, right), ``strides`` / ``dil`` are (height, width).
    Depthwise: filter [1, kh, kw, C*M], output channel k reads input channel k // M.
    Otherwise: filter [Cout, kh, kw, C/groups], output channel k is in group k // (Cout/groups).
    """
    n, h, wd, c = x.shape
    kh, kw = w.shape[1], w.shape[2]
    cout = w.shape[3] if depthwise else w.shape[0]
    top, bottom, left, right = pads
    oh = (h + top + bottom - ((kh - 1) * dil[0] + 1)) // strides[0] + 1
    ow = (wd + left + right - ((kw - 1) * dil[1] + 1)) // strides[1] + 1
    result = np.zeros((n, oh, ow, cout))
    for bi in range(n):
        for oy in range(oh):
            for ox in range(ow):
                for k in range(cout):
                    acc = float(b[k])
                    for i in range(kh):
                        for j in range(kw):
                            iy = oy * strides[0] - top + i * dil[0]
                            ix = ox * strides[1] - left + j * dil[1]
                            if not (0 <= iy < h and 0 <= ix < wd):
                                continue
                            if depthwise:
                                acc += x[bi, iy, ix, k // (cout // c)] * w[0, i, j, k]
                            else:
                                per = w.shape[3]
                                g = k // (cout // groups)
                                acc += float(np.dot(x[bi, iy, ix, g * per:(g + 1) * per],
                                                    w[k, i, j, :]))
                    result[bi, oy, ox, k] = acc
    return result


def _case(name: str, op: Op, x: Array, w: Array, b: Array, *,
          pads: tuple[int, int, int, int] | None = None, code: int | None = None,
          stride: tuple[int, int] = (1, 1), dil: tuple[int, int] | None = None,
          extra: int | None = None, act: int = 0, layout: bool | None = None,
          nchw_twin: bool = False) -> None:
    """Add a case (and its NCHW twin). ``pads`` (left, right, top, bottom) selects explicit
    padding, ``code`` implicit; ``stride`` / ``dil`` are (width, height) as NNAPI orders them."""
    args: list[Arg] = [f32(x), f32(w), f32(b)]
    if pads is not None:
        args += [i32s(p) for p in pads]
    else:
        args.append(i32s(code or SAME))
    args += [i32s(stride[0]), i32s(stride[1])]
    if extra is not None:
        args.append(i32s(extra))
    act_slot = len(args)
    args.append(i32s(act))
    layout_slot = len(args)
    if layout is not None or dil is not None or nchw_twin:
        args.append(bools(bool(layout)))
    if dil is not None:
        args += [i32s(dil[0]), i32s(dil[1])]
    dil_hw = (dil[1], dil[0]) if dil is not None else (1, 1)
    groups = extra if op == Op.GROUPED_CONV_2D and extra else 1

    def reference(*a: Any) -> list[Array]:
        xin, win = a[0], a[1]
        if pads is not None:
            geometry = (pads[2], pads[3], pads[0], pads[1])
        elif a[3] == SAME:
            geometry = (*_same_pads(xin.shape[1], win.shape[1], stride[1], dil_hw[0]),
                        *_same_pads(xin.shape[2], win.shape[2], stride[0], dil_hw[1]))
        else:
            geometry = (0, 0, 0, 0)
        y = _conv_loops(xin, win, a[2], pads=geometry, strides=(stride[1], stride[0]),
                        dil=dil_hw, groups=groups, depthwise=op == Op.DEPTHWISE_CONV_2D)
        return [_ACT[a[act_slot]](y)]

    shape = reference(*[np.asarray(arg.value, np.float64) if not arg.scalar else arg.value
                        for arg in args])[0].shape
    case = OpCase(name, op, tuple(args), (out(T.TENSOR_FLOAT32, shape),), reference=reference)
    CASES.append(case)
    if nchw_twin:
        CASES.append(to_nchw(case, layout_input=layout_slot))


# -- CONV_2D ----------------------------------------------------------------------------------

_X = _data((1, 4, 4, 2), 1)
_W = _data((3, 3, 3, 2), 2, 0.5)
_B = np.array([0.5, -0.25, 1.0], np.float32)

# NNAPI's own example (conv_float): a 2x2 averaging filter over a 3x3 image with a 0.5 centre.
CASES.append(OpCase(
    "conv_2d_spec_example", Op.CONV_2D,
    (f32(np.array([1, 1, 1, 1, 0.5, 1, 1, 1, 1], np.float32).reshape(1, 3, 3, 1)),
     f32(np.full((1, 2, 2, 1), 0.25, np.float32)), f32([0.0]),
     i32s(VALID), i32s(1), i32s(1), i32s(0)),
    (out(T.TENSOR_FLOAT32, (1, 2, 2, 1), np.full((1, 2, 2, 1), 0.875)),)))
_case("conv_2d_explicit", Op.CONV_2D, _X, _W, _B, pads=(1, 1, 1, 1))
_case("conv_2d_explicit_stride_asym_relu", Op.CONV_2D, _data((2, 5, 4, 2), 3), _W, _B,
      pads=(0, 1, 2, 0), stride=(2, 1), act=1)
_case("conv_2d_explicit_layout", Op.CONV_2D, _X, _W, _B, pads=(1, 0, 0, 1), stride=(1, 2),
      act=2, nchw_twin=True)
_case("conv_2d_explicit_dilated", Op.CONV_2D, _data((1, 5, 6, 2), 4), _W, _B,
      pads=(1, 2, 0, 1), dil=(2, 1), act=3, nchw_twin=True)
_case("conv_2d_implicit_same_stride2_relu1", Op.CONV_2D, _data((1, 5, 5, 2), 5), _W, _B,
      code=SAME, stride=(2, 2), act=2)
_case("conv_2d_implicit_valid", Op.CONV_2D, _X, _data((2, 2, 3, 2), 6), _B[:2], code=VALID)
_case("conv_2d_implicit_layout_same", Op.CONV_2D, _X, _W, _B, code=SAME, stride=(2, 1),
      act=1, nchw_twin=True)
_case("conv_2d_implicit_dilated_same", Op.CONV_2D, _data((1, 6, 5, 2), 7), _W, _B, code=SAME,
      dil=(1, 2), act=0, nchw_twin=True)
_case("conv_2d_size1", Op.CONV_2D, _data((1, 1, 1, 3), 8), _data((2, 1, 1, 3), 9),
      np.array([0.25, -1.0], np.float32), pads=(0, 0, 0, 0))
_case("conv_2d_batches_1x1_filter", Op.CONV_2D, _data((3, 2, 3, 4), 10),
      _data((5, 1, 1, 4), 11), _data((5,), 12), code=VALID, act=3)

# -- DEPTHWISE_CONV_2D ------------------------------------------------------------------------

_DX = _data((1, 4, 5, 2), 20)
_DW = _data((1, 3, 3, 4), 21)  # depth_multiplier 2
_DB = np.array([0.25, 0.5, -0.5, 1.0], np.float32)

# Hand-worked: one 2x2 window per channel, channel 0 x [1, 2, 3, 4] . [1, 0, 0, 1] = 5 (+1),
# channel 1 x [10, 20, 30, 40] . [0.5, 0.5, 0.5, 0.5] = 50 (-50).
CASES.append(OpCase(
    "depthwise_conv_2d_hand", Op.DEPTHWISE_CONV_2D,
    (f32(np.array([1, 10, 2, 20, 3, 30, 4, 40], np.float32).reshape(1, 2, 2, 2)),
     f32(np.array([1, 0.5, 0, 0.5, 0, 0.5, 1, 0.5], np.float32).reshape(1, 2, 2, 2)),
     f32([1.0, -50.0]), i32s(VALID), i32s(1), i32s(1), i32s(1), i32s(0)),
    (out(T.TENSOR_FLOAT32, (1, 1, 1, 2), [[[[6.0, 0.0]]]]),)))
_case("depthwise_conv_2d_explicit_mult2", Op.DEPTHWISE_CONV_2D, _DX, _DW, _DB,
      pads=(1, 1, 1, 1), extra=2)
_case("depthwise_conv_2d_explicit_layout", Op.DEPTHWISE_CONV_2D, _DX, _DW, _DB,
      pads=(0, 2, 1, 0), stride=(2, 1), extra=2, act=1, nchw_twin=True)
_case("depthwise_conv_2d_explicit_dilated", Op.DEPTHWISE_CONV_2D, _data((2, 5, 5, 2), 22),
      _DW, _DB, pads=(1, 0, 2, 1), dil=(2, 2), extra=2, act=3, nchw_twin=True)
_case("depthwise_conv_2d_implicit_same_stride2", Op.DEPTHWISE_CONV_2D,
      _data((1, 5, 4, 3), 23), _data((1, 2, 3, 3), 24), _data((3,), 25), code=SAME,
      stride=(2, 2), extra=1, act=2)
_case("depthwise_conv_2d_implicit_layout_valid", Op.DEPTHWISE_CONV_2D, _DX, _DW, _DB,
      code=VALID, extra=2, nchw_twin=True)
_case("depthwise_conv_2d_implicit_dilated_same", Op.DEPTHWISE_CONV_2D,
      _data((1, 6, 6, 1), 26), _data((1, 3, 2, 3), 27), _data((3,), 28), code=SAME,
      stride=(1, 2), dil=(2, 3), extra=3, act=1, nchw_twin=True)

# -- GROUPED_CONV_2D --------------------------------------------------------------------------

_GX = _data((1, 4, 4, 4), 40)
_GW = _data((6, 2, 3, 2), 41, 0.5)  # 2 groups of 3 output channels, 2 input channels each
_GB = _data((6,), 42)

_case("grouped_conv_2d_explicit", Op.GROUPED_CONV_2D, _GX, _GW, _GB, pads=(1, 1, 0, 1),
      extra=2, act=0, nchw_twin=True)
_case("grouped_conv_2d_explicit_stride_relu6", Op.GROUPED_CONV_2D, _data((2, 5, 4, 4), 43),
      _GW, _GB, pads=(2, 0, 1, 0), stride=(1, 2), extra=2, act=3, nchw_twin=True)
_case("grouped_conv_2d_implicit_same_3groups", Op.GROUPED_CONV_2D, _data((1, 5, 5, 6), 44),
      _data((3, 3, 3, 2), 45, 0.5), _data((3,), 46), code=SAME, stride=(2, 2), extra=3,
      act=1, nchw_twin=True)
_case("grouped_conv_2d_implicit_valid_1group", Op.GROUPED_CONV_2D, _GX,
      _data((2, 2, 2, 4), 47, 0.5), _data((2,), 48), code=VALID, extra=1, act=2,
      layout=False)
_case("grouped_conv_2d_implicit_per_channel_groups", Op.GROUPED_CONV_2D, _GX,
      _data((8, 3, 3, 1), 49), _data((8,), 50), code=SAME, extra=4, layout=False)
