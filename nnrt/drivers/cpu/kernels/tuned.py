"""The kernel variants the stage-2 autotuner may pick, and :data:`VARIANTS`, what each replaces.

Each variant computes what the stage-1 kernel it replaces computes, with the same arguments,
by another numpy route whose speed depends on the shapes and the machine (see
:mod:`nnrt.drivers.cpu.autotune`):

* ``fc_dot``: FULLY_CONNECTED as ``np.dot(out=)`` instead of ``np.matmul(out=)``;
* ``fc_nt``: FULLY_CONNECTED with weights kept ``[units, in]`` (pre-transposed back), read
  through a transposed view: BLAS gets a transposed operand;
* ``batch_matmul_dot``: BATCH_MATMUL as one ``np.dot(out=)`` per matrix of the batch;
* ``batch_matmul_bt``: BATCH_MATMUL with a constant right-hand side stored with its last two
  axes swapped, read through a swapped view;
* ``conv_window``: CONV_2D as a ``tensordot`` over a strided sliding-window view of the
  (padded) input — no im2col matrix;
* ``conv_taps``: CONV_2D as one GEMM per filter tap, accumulated.

The conv variants take the same arguments as ``conv`` but need no ``cols`` buffer (None).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from nnrt.drivers.cpu.kernels.base import activate
from nnrt.drivers.cpu.kernels.nn import Geo, finish_output, pad_input, window_taps

__all__ = ["TUNED_KERNELS", "VARIANTS"]

Array = np.ndarray[Any, Any]


def fc_dot(out: Array, x: Array, wt: Array, bias: Array, act: int) -> None:
    """FULLY_CONNECTED (weights ``[in, units]``) with ``np.dot`` into ``out``."""
    x2 = x.reshape(out.shape[0], wt.shape[0])
    if out.flags.c_contiguous:
        np.dot(x2, wt, out=out)
    else:
        np.matmul(x2, wt, out=out)
    out += bias
    activate(out, act)


def fc_nt(out: Array, x: Array, w: Array, bias: Array, act: int) -> None:
    """FULLY_CONNECTED with weights ``[units, in]`` read transposed."""
    np.matmul(x.reshape(out.shape[0], w.shape[1]), w.T, out=out)
    out += bias
    activate(out, act)


def batch_matmul_dot(out: Array, a: Array, b: Array, adj_x: bool, adj_y: bool) -> None:
    """BATCH_MATMUL as one ``np.dot`` per matrix (``np.matmul`` when batches broadcast)."""
    lhs = np.swapaxes(a, -1, -2) if adj_x else a
    rhs = np.swapaxes(b, -1, -2) if adj_y else b
    lead = out.shape[:-2]
    if lhs.shape[:-2] != lead or rhs.shape[:-2] != lead or not out.flags.c_contiguous:
        np.matmul(lhs, rhs, out=out)
        return
    for index in np.ndindex(*lead):
        np.dot(lhs[index], rhs[index], out=out[index])


def batch_matmul_bt(out: Array, a: Array, bt: Array, adj_x: bool, adj_y: bool) -> None:
    """BATCH_MATMUL whose right-hand side is stored with its last two axes swapped."""
    lhs = np.swapaxes(a, -1, -2) if adj_x else a
    rhs = bt if adj_y else np.swapaxes(bt, -1, -2)
    np.matmul(lhs, rhs, out=out)


def conv_window(out: Array, x: Array, wm: Array, bias: Array, padded: Array | None,
                cols: Array | None, result: Array | None, geo: Geo, act: int,
                nchw: bool) -> None:
    """CONV_2D as a ``tensordot`` of a sliding-window view with the filter."""
    if nchw:
        x = x.transpose(0, 2, 3, 1)
    x = pad_input(x, padded, geo, 0.0)
    y = result if nchw and result is not None else out
    _, oh, ow, depth_out = y.shape
    sh, sw, kh, kw = geo[4:]
    windows = sliding_window_view(x, (kh, kw), axis=(1, 2))[:, :(oh - 1) * sh + 1:sh,
                                                            :(ow - 1) * sw + 1:sw]
    filters = wm.reshape(kh, kw, x.shape[3], depth_out)
    np.copyto(y, np.tensordot(windows, filters, axes=([4, 5, 3], [0, 1, 2])))
    finish_output(out, y, bias, act, nchw)


def conv_taps(out: Array, x: Array, wm: Array, bias: Array, padded: Array | None,
              cols: Array | None, result: Array | None, geo: Geo, act: int,
              nchw: bool) -> None:
    """CONV_2D as one GEMM per filter tap, accumulated in ``out``."""
    if nchw:
        x = x.transpose(0, 2, 3, 1)
    x = pad_input(x, padded, geo, 0.0)
    y = result if nchw and result is not None else out
    depth_in = x.shape[3]
    for t, tap in enumerate(window_taps(x, geo, y.shape[1], y.shape[2])):
        part = np.tensordot(tap, wm[t * depth_in:(t + 1) * depth_in], axes=1)
        if t == 0:
            np.copyto(y, part)
        else:
            y += part
    finish_output(out, y, bias, act, nchw)


#: Stage-1 kernel -> the variants the autotuner may replace it with.
VARIANTS: dict[str, tuple[str, ...]] = {
    "fc": ("fc_dot", "fc_nt"),
    "batch_matmul": ("batch_matmul_dot", "batch_matmul_bt"),
    "conv": ("conv_window", "conv_taps"),
}

#: The variants, by name (merged into the cpu kernel table: stage-2 code may call them).
TUNED_KERNELS: dict[str, Callable[..., Any]] = {
    "fc_dot": fc_dot, "fc_nt": fc_nt,
    "batch_matmul_dot": batch_matmul_dot, "batch_matmul_bt": batch_matmul_bt,
    "conv_window": conv_window, "conv_taps": conv_taps,
}
