"""Pooling: MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool.

MaxPool and AveragePool become NNAPI MAX_POOL_2D / AVERAGE_POOL_2D with explicit padding and
the NCHW layout flag (1-D pools run over a height of 1). ``ceil_mode`` is onnxruntime's: the
output count rounds up, except that a last window starting past the input and its start
padding is dropped; the windows it adds get extra end padding, which MAX ignores and NNAPI's
AVERAGE leaves out of the count, as onnxruntime does. NNAPI's AVERAGE only counts real
elements, which is ``count_include_pad = 0``; with ``count_include_pad = 1`` the padding goes
into an explicit zero PAD first, so it is counted (the ceil-mode extra still is not, as in
onnxruntime). The global pools are MEAN / REDUCE_MAX over the spatial axes, keeping them.

On unknown spatial dims the NNAPI pool is the same operation: explicit pads do not depend on
the input size, and SAME_UPPER is NNAPI's implicit SAME (see :mod:`nnrt.onnx.ops.conv`).
What needs the size is reported: ``ceil_mode`` with a stride above 1 (its extra padding),
dilation (per-tap slices), ``count_include_pad`` with SAME padding.
"""

from __future__ import annotations

import itertools

import numpy as np

from nnrt.model.types import OperationType as Op
from nnrt.onnx.graph import Value
from nnrt.onnx.node import NodeContext, converter
from nnrt.onnx.ops.conv import Window, as_2d, from_2d, read_window
from nnrt.onnx.ops.linear import require_float

__all__ = ["global_pool", "pool"]

#: The highest rank NNAPI's tensors take.
_MAX_RANK = 4


@converter("MaxPool", "AveragePool")
def pool(n: NodeContext) -> list[Value]:
    """MaxPool / AveragePool (1-D, 2-D): MAX_POOL_2D / AVERAGE_POOL_2D (NCHW), or strided
    slices per window tap when dilated."""
    x = n.input(0)
    require_float(n, x)
    if x.rank not in (3, 4):
        n.fail(f"only 1-D and 2-D pooling is supported (NNAPI tensors have rank ≤ 4), got an "
               f"input of rank {x.rank}")
    if len(n.node.output) > 1 and n.node.output[1]:
        n.fail("the Indices output is not supported")
    n.attr("storage_order")  # only shapes the Indices output
    kernel = n.attr("kernel_shape")
    if kernel is None or len(kernel) != x.rank - 2:
        n.fail(f"kernel_shape {kernel} does not give {x.rank - 2} spatial dims")
    sizes = x.shape[2:]
    window = read_window(n, sizes, kernel)
    ceil_mode = bool(n.attr("ceil_mode", 0)) and set(window.strides) != {1}  # 1: floor = ceil
    include_pad = n.op_type == "AveragePool" and bool(n.attr("count_include_pad", 0))
    if not all(d > 0 for d in sizes):
        needs = ("ceil_mode with strides above 1" if ceil_mode else
                 "dilations" if set(window.dilations) != {1} else
                 "count_include_pad with auto_pad SAME" if include_pad and window.same else None)
        if needs is not None:
            n.fail(f"{needs} needs the spatial dims, which are dynamic ({list(x.shape)}); pass "
                   "input_shapes= to nnrt.onnx.load")
    extra = tuple(_ceil_extra(size, window.effective(i), s, p) if ceil_mode else 0
                  for i, (size, s, p) in enumerate(zip(sizes, window.strides, window.pads,
                                                       strict=True)))
    for (head, tail), k in zip(window.pads, window.kernel, strict=True):
        if max(head, tail) >= k:
            n.fail(f"pads {[list(p) for p in window.pads]} must be smaller than the kernel "
                   f"{list(window.kernel)}")
    if set(window.dilations) != {1}:
        return [_tap_pool(n, x, window, extra, include_pad)]
    return [_nnapi_pool(n, x, window, extra, include_pad)]


def _nnapi_pool(n: NodeContext, x: Value, window: Window, extra: tuple[int, ...],
                include_pad: bool) -> Value:
    """A 1-D or 2-D undilated pool as one MAX_POOL_2D / AVERAGE_POOL_2D."""
    x4 = as_2d(n, x)
    if x.rank == 3:
        window = Window((1, *window.kernel), (1, *window.strides), (1, 1),
                        ((0, 0), *window.pads), window.same)
        extra = (0, *extra)
    pads = window.pads
    if include_pad and any(max(p) for p in pads):
        x4 = n.graph.op(Op.PAD, x4, np.asarray([(0, 0), (0, 0), *pads], np.int32))
        pads = ((0, 0), (0, 0))
    pads = tuple((head, tail + more) for (head, tail), more in zip(pads, extra, strict=True))
    window = Window(window.kernel, window.strides, window.dilations, pads, window.same)
    op = Op.MAX_POOL_2D if n.op_type == "MaxPool" else Op.AVERAGE_POOL_2D
    y = n.graph.op(op, x4, *window.nnapi_args(), window.kernel[1], window.kernel[0], 0, True)
    return from_2d(n, y, x.rank)


def _tap_pool(n: NodeContext, x: Value, window: Window, extra: tuple[int, ...],
              include_pad: bool) -> Value:
    """A dilated pool: the input padded (with -inf for max), one STRIDED_SLICE per kernel
    tap, and their MAXIMUM — or their sum divided by each window's count of real (with
    ``count_include_pad``: real and padding) elements, the ceil-mode extra never counted."""
    g = n.graph
    spatial = x.shape[2:]
    pads = [(head, tail + more) for (head, tail), more in zip(window.pads, extra, strict=True)]
    padded_dims = [d + h + t for d, (h, t) in zip(spatial, pads, strict=True)]
    out = [(p - window.effective(i)) // s + 1
           for i, (p, s) in enumerate(zip(padded_dims, window.strides, strict=True))]
    maximum = n.op_type == "MaxPool"
    paddings = np.asarray([(0, 0), (0, 0), *pads], np.int32)
    padded = (g.op(Op.PAD_V2, x, paddings, float("-inf")) if maximum
              else g.op(Op.PAD, x, paddings))
    counted = np.zeros(padded_dims)  # 1 where an element counts towards the average
    counted[tuple(slice(0, d + h + t - e) if include_pad else slice(h, h + d)
                  for d, (h, t), e in zip(spatial, pads, extra, strict=True))] = 1
    count = np.zeros(out)
    total: Value | None = None
    for tap in itertools.product(*(range(k) for k in window.kernel)):
        begin = [t * d for t, d in zip(tap, window.dilations, strict=True)]
        stop = [b + (o - 1) * s + 1 for b, o, s in zip(begin, out, window.strides,
                                                        strict=True)]
        count += counted[tuple(slice(b, e, s) for b, e, s in zip(begin, stop, window.strides,
                                                                 strict=True))]
        part = g.op(Op.STRIDED_SLICE, padded, np.asarray([0, 0, *begin], np.int32),
                    np.asarray([0, 0, *stop], np.int32),
                    np.asarray([1, 1, *window.strides], np.int32), 0, 0b11, 0)  # all N, C
        if total is None:
            total = part
        elif maximum:
            total = g.op(Op.MAXIMUM, total, part)
        else:
            total = g.op(Op.ADD, total, part, 0)
    if total is None:
        n.fail("the pooling window has no taps")
    if maximum:
        return total
    return g.op(Op.DIV, total, Value("", x.dtype, tuple(out), const=count.astype(x.dtype)), 0)


def _ceil_extra(size: int, kernel: int, stride: int, pads: tuple[int, int]) -> int:
    """End padding beyond ``pads`` that ceil_mode's last window needs (onnxruntime's rule: a
    window starting past the input and its start padding is dropped)."""
    head, tail = pads
    span = size + head + tail - kernel
    if span < 0:
        return 0
    out = -(-span // stride) + 1
    if (out - 1) * stride >= size + head:
        out -= 1
    return max(0, (out - 1) * stride + kernel - (size + head + tail))


@converter("GlobalAveragePool", "GlobalMaxPool")
def global_pool(n: NodeContext) -> list[Value]:
    """GlobalAveragePool / GlobalMaxPool: MEAN / REDUCE_MAX over the spatial axes, kept."""
    x = n.input(0)
    require_float(n, x)
    if not 3 <= x.rank <= _MAX_RANK:
        n.fail(f"the input must have rank 3 or 4 (N, C, spatial; NNAPI tensors have rank ≤ "
               f"4), got {x.rank}")
    average = n.op_type == "GlobalAveragePool"
    op, keep = (Op.MEAN, 1) if average else (Op.REDUCE_MAX, True)
    return [n.graph.op(op, x, np.arange(2, x.rank, dtype=np.int32), keep)]
