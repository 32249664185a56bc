"""Window kernels: CONV_2D (im2col + one GEMM), DEPTHWISE_CONV_2D, MAX / AVERAGE pooling.

``geo`` is ``(pad_top, pad_bottom, pad_left, pad_right, stride_h, stride_w, filter_h,
filter_w)``. Inputs in NCHW are read through a transposed view; the NHWC result is then computed
into ``result`` (a scratch buffer) and transposed into ``out``. Scratch buffers the compiler
planned are passed in (None when a kernel does not need one): ``padded`` holds the input with
its border (only the border is filled each call), ``cols`` the im2col matrix, ``tmp`` a product.
All in float32.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nnrt.drivers.cpu.kernels.base import activate

__all__ = ["NN_KERNELS", "Geo", "finish_output", "pack_conv", "pad_input", "window_taps"]

Array = np.ndarray[Any, Any]
Geo = tuple[int, int, int, int, int, int, int, int]


def pad_input(x: Array, padded: Array | None, geo: Geo, fill: float) -> Array:
    """``x`` (NHWC) inside ``padded`` with the border set to ``fill``; ``x`` if no buffer."""
    if padded is None:
        return x
    top, _, left, _ = geo[:4]
    _, h, w, _ = x.shape
    padded[:, :top] = fill
    padded[:, top + h:] = fill
    padded[:, top:top + h, :left] = fill
    padded[:, top:top + h, left + w:] = fill
    padded[:, top:top + h, left:left + w] = x
    return padded


def window_taps(x: Array, geo: Geo, oh: int, ow: int) -> list[Array]:
    """Each filter tap's strided view of ``x`` at every output position, row-major taps."""
    sh, sw, kh, kw = geo[4:]
    rows, cols = (oh - 1) * sh + 1, (ow - 1) * sw + 1
    return [x[:, i:i + rows:sh, j:j + cols:sw] for i in range(kh) for j in range(kw)]


def finish_output(out: Array, y: Array, bias: Array | None, act: int, nchw: bool) -> None:
    if bias is not None:
        y += bias
    activate(y, act)
    if nchw:
        np.copyto(out, y.transpose(0, 3, 1, 2))


def conv(out: Array, x: Array, wm: Array, bias: Array, padded: Array | None,
         cols: Array | None, result: Array | None, geo: Geo, act: int, nchw: bool) -> None:
    """CONV_2D with a filter packed as the GEMM matrix ``wm`` ``[kh * kw * depth_in, out]``.

    ``cols`` is ``[n, oh, ow, kh, kw, depth_in]``; None for a 1x1, stride-1, unpadded filter.
    """
    if nchw:
        x = x.transpose(0, 2, 3, 1)
    x = pad_input(x, padded, geo, 0.0)
    y = result if nchw and result is not None else out
    n, oh, ow, depth_out = y.shape
    if cols is None:
        src = x.reshape(n * oh * ow, x.shape[3])
    else:
        kw = geo[7]
        for t, tap in enumerate(window_taps(x, geo, oh, ow)):
            cols[:, :, :, t // kw, t % kw] = tap
        src = cols.reshape(n * oh * ow, wm.shape[0])
    np.matmul(src, wm, out=y.reshape(n * oh * ow, depth_out))
    finish_output(out, y, bias, act, nchw)


def depthwise(out: Array, x: Array, wt: Array, bias: Array, padded: Array | None,
              tmp: Array, result: Array | None, geo: Geo, multiplier: int, act: int,
              nchw: bool) -> None:
    """DEPTHWISE_CONV_2D with the filter packed per tap: ``wt`` ``[kh * kw, depth_out]``."""
    if nchw:
        x = x.transpose(0, 2, 3, 1)
    if multiplier > 1:
        x = np.repeat(x, multiplier, axis=3)
    x = pad_input(x, padded, geo, 0.0)
    y = result if nchw and result is not None else out
    taps = window_taps(x, geo, y.shape[1], y.shape[2])
    np.multiply(taps[0], wt[0], out=y)
    for t in range(1, len(taps)):
        np.multiply(taps[t], wt[t], out=tmp)
        y += tmp
    finish_output(out, y, bias, act, nchw)


def max_pool(out: Array, x: Array, padded: Array | None, result: Array | None, geo: Geo,
             act: int, nchw: bool) -> None:
    """MAX_POOL_2D (padding never wins: it is -inf)."""
    if nchw:
        x = x.transpose(0, 2, 3, 1)
    x = pad_input(x, padded, geo, -np.inf)
    y = result if nchw and result is not None else out
    taps = window_taps(x, geo, y.shape[1], y.shape[2])
    np.copyto(y, taps[0])
    for tap in taps[1:]:
        np.maximum(y, tap, out=y)
    finish_output(out, y, None, act, nchw)


def avg_pool(out: Array, x: Array, padded: Array | None, result: Array | None,
             counts: Array | float, geo: Geo, act: int, nchw: bool) -> None:
    """AVERAGE_POOL_2D; ``counts`` holds each window's number of real (unpadded) elements."""
    if nchw:
        x = x.transpose(0, 2, 3, 1)
    x = pad_input(x, padded, geo, 0.0)
    y = result if nchw and result is not None else out
    taps = window_taps(x, geo, y.shape[1], y.shape[2])
    np.copyto(y, taps[0])
    for tap in taps[1:]:
        y += tap
    y /= counts
    finish_output(out, y, None, act, nchw)


def pack_conv(out: Array, w: Array) -> None:
    """A CONV_2D filter ``[depth_out, kh, kw, depth_in]`` as ``[kh * kw * depth_in, out]``."""
    np.copyto(out, w.reshape(w.shape[0], -1).T)


#: The kernels of this module, by name (merged into the cpu kernel table).
NN_KERNELS: dict[str, Callable[..., Any]] = {
    "conv": conv, "depthwise": depthwise, "max_pool": max_pool, "avg_pool": avg_pool,
    "pack_conv": pack_conv,
}
