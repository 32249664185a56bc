"""Convolutions: Conv and ConvTranspose; and the window geometry pooling shares.

ONNX tensors are NCHW, and every NNAPI operation here gets its layout flag set (true = NCHW).
``Conv`` becomes CONV_2D (group 1), DEPTHWISE_CONV_2D (one group per input channel) or
GROUPED_CONV_2D, with the filter moved from ONNX's ``[out, in / group, kh, kw]`` to NNAPI's
layout (in numpy for known weights, a TRANSPOSE otherwise); a grouped dilated convolution —
which GROUPED_CONV_2D cannot express — is split into one CONV_2D per group. ``ConvTranspose``
becomes TRANSPOSE_CONV_2D (filter ``[in, out, kh, kw]`` -> ``[out, kh, kw, in]``), one per group.
1-D operators run as 2-D ones over a height of 1.

Padding is explicit where the input's spatial dims are known: ``auto_pad`` is resolved here
from them as onnxruntime does (SAME_UPPER puts the odd element at the end, SAME_LOWER at the
start). Where they are unknown, SAME_UPPER becomes NNAPI's implicit padding scheme SAME, which is
the same rule (``ceil(size / stride)`` outputs, total padding ``max(0, (out - 1) * stride +
effective_filter - size)``, the smaller half ``total // 2`` at the start); SAME_LOWER has no
implicit equivalent and is reported. NNAPI wants each padding smaller than the (dilated) filter;
larger paddings go into a PAD first. ConvTranspose's explicit pads do not depend on the input
size (NNAPI's tail crop is ``pad_end - output_padding``), so only its SAME and ``output_shape``
forms need known spatial dims.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnrt.model.types import OperationType as Op
from nnrt.model.types import PaddingCode
from nnrt.onnx.graph import Value
from nnrt.onnx.node import NodeContext, converter
from nnrt.onnx.ops.linear import require_float, reshape, transpose
from nnrt.onnx.qparams import QParams

__all__ = ["Window", "as_2d", "conv", "conv_transpose", "convolution", "from_2d", "read_window"]

Array = np.ndarray[Any, Any]

_AUTO_PADS = ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER")


@dataclass(frozen=True)
class Window:
    """A convolution or pooling window over the spatial dims (ONNX order: height, width)."""

    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    #: (begin, end) padding per spatial dim (zeros when ``same``).
    pads: tuple[tuple[int, int], ...]
    #: Padded by NNAPI's implicit scheme SAME (ONNX SAME_UPPER on unknown spatial dims).
    same: bool = False

    def nnapi_args(self) -> list[int]:
        """NNAPI's explicit ``pad_left, pad_right, pad_top, pad_bottom, stride_w, stride_h``
        of a 2-D window, or the implicit ``PaddingCode.SAME, stride_w, stride_h``."""
        if self.same:
            return [int(PaddingCode.SAME), self.strides[1], self.strides[0]]
        (top, bottom), (left, right) = self.pads
        return [left, right, top, bottom, self.strides[1], self.strides[0]]

    def effective(self, i: int) -> int:
        """The span of the dilated kernel along spatial dim ``i``."""
        return (self.kernel[i] - 1) * self.dilations[i] + 1


def _ints(n: NodeContext, name: str, count: int, default: int) -> tuple[int, ...]:
    value = n.attr(name)
    if value is None:
        return (default,) * count
    values = tuple(int(v) for v in value)
    if len(values) != count:
        n.fail(f"attribute {name} has {len(values)} values, expected {count}")
    return values


def read_window(n: NodeContext, spatial: Sequence[int], kernel: Sequence[int]) -> Window:
    """The window of ``n`` (attributes strides, dilations, pads, auto_pad) over an input of
    ``spatial`` dims (0 = unknown: SAME_UPPER is then NNAPI's implicit SAME, SAME_LOWER is
    reported)."""
    rank = len(kernel)
    strides = _ints(n, "strides", rank, 1)
    dilations = _ints(n, "dilations", rank, 1)
    if min(strides + dilations) < 1:
        n.fail(f"strides {list(strides)} and dilations {list(dilations)} must be positive")
    auto_pad = n.attr("auto_pad", "NOTSET")
    if auto_pad not in _AUTO_PADS:
        n.fail(f"auto_pad {auto_pad!r} is not one of {', '.join(_AUTO_PADS)}")
    flat = _ints(n, "pads", 2 * rank, 0)
    if auto_pad == "NOTSET":
        if min(flat) < 0:
            n.fail(f"negative pads {list(flat)} are not supported")
        pads = tuple((flat[i], flat[i + rank]) for i in range(rank))
    elif auto_pad == "VALID":
        pads = ((0, 0),) * rank
    elif not all(d > 0 for d in spatial):
        if auto_pad == "SAME_LOWER":
            n.fail(f"auto_pad SAME_LOWER on the dynamic spatial dims {list(spatial)} has no "
                   "NNAPI equivalent (implicit SAME pads the odd element at the end); pass "
                   "input_shapes= to nnrt.onnx.load")
        return Window(tuple(int(k) for k in kernel), strides, dilations, ((0, 0),) * rank,
                      same=True)
    else:
        pads = tuple(_same_pads(size, s, (k - 1) * d + 1, auto_pad == "SAME_LOWER")
                     for size, s, k, d in zip(spatial, strides, kernel, dilations, strict=True))
    return Window(tuple(int(k) for k in kernel), strides, dilations, pads)


def _same_pads(size: int, stride: int, effective: int, lower: bool) -> tuple[int, int]:
    """SAME padding: ``ceil(size / stride)`` outputs, the odd element at the end (UPPER) or
    the start (LOWER)."""
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + effective - size)
    head = total - total // 2 if lower else total // 2
    return head, total - head


def as_2d(n: NodeContext, x: Value) -> Value:
    """A 3-D ``[N, C, L]`` tensor as ``[N, C, 1, L]`` (4-D tensors pass through)."""
    if x.rank == 4:
        return x
    if x.const is not None:
        return reshape(n, x, (x.shape[0], x.shape[1], 1, x.shape[2]))
    return n.graph.op(Op.EXPAND_DIMS, x, 2)


def from_2d(n: NodeContext, y: Value, rank: int) -> Value:
    """Undo :func:`as_2d` on a result for an input of ``rank``."""
    if rank == 4:
        return y
    if y.const is not None:
        return reshape(n, y, (y.shape[0], y.shape[1], y.shape[3]))
    return n.graph.op(Op.SQUEEZE, y, np.asarray([2], np.int32))


def _window_2d(window: Window) -> Window:
    """A 1-D window as the 2-D one over a height of 1."""
    if len(window.kernel) == 2:
        return window
    return Window((1, *window.kernel), (1, *window.strides), (1, *window.dilations),
                  ((0, 0), *window.pads), window.same)


def _spatial_rank(n: NodeContext, x: Value) -> int:
    if x.rank not in (3, 4):
        n.fail(f"only 1-D and 2-D {n.op_type} are supported (NNAPI's are 2-D), got an input "
               f"of rank {x.rank}")
    return x.rank - 2


def _kernel(n: NodeContext, w: Value, spatial: int) -> tuple[int, ...]:
    if w.rank != spatial + 2:
        n.fail(f"weights of rank {w.rank} do not fit a {spatial}-D input")
    kernel = n.static_shape(w, "weights")[2:]
    given = n.attr("kernel_shape")
    if given is not None and tuple(int(k) for k in given) != kernel:
        n.fail(f"kernel_shape {list(given)} differs from the weights' {list(kernel)}")
    return kernel


def _bias(n: NodeContext, x: Value, index: int, channels: int) -> Value:
    if n.has_input(index):
        return n.input(index)
    return Value("", x.dtype, (channels,), const=np.zeros(channels, x.dtype))


def _split(n: NodeContext, v: Value, axis: int, parts: int) -> list[Value]:
    """``v`` cut into ``parts`` equal slices along ``axis`` (numpy when known, SPLIT otherwise)."""
    if v.const is None:
        return n.graph.ops(Op.SPLIT, v, axis, parts, outputs=parts)
    return [Value("", v.dtype, piece.shape, const=np.ascontiguousarray(piece))
            for piece in np.split(v.const, parts, axis=axis)]


def _per_group(n: NodeContext, x: Value, groups: int, fn: Callable[[Value, int], Value]
               ) -> Value:
    """``fn(slice, g)`` on each of ``groups`` channel slices of NCHW ``x``, results joined on
    the channel axis."""
    outs = [fn(part, g) for g, part in enumerate(_split(n, x, 1, groups))]
    return n.graph.op(Op.CONCATENATION, *outs, 1)


# -- Conv ------------------------------------------------------------------------------------


@converter("Conv")
def conv(n: NodeContext) -> list[Value]:
    """Conv (1-D, 2-D): CONV_2D / DEPTHWISE_CONV_2D / GROUPED_CONV_2D, NCHW."""
    x, w = n.input(0), n.input(1)
    require_float(n, x, w)
    return [convolution(n, x, w, n.input(2) if n.has_input(2) else None)]


def convolution(n: NodeContext, x: Value, w: Value, bias: Value | None,
                quant: QParams | None = None) -> Value:
    """Conv ``n`` of ``x`` by ``w`` (ONNX's layouts) plus ``bias`` (None: zeros) as NNAPI's
    convolutions; with ``quant``, quantised ones: ``x`` and ``w`` quantised (``w`` a known
    per-axis one along its output channels, or of ``x``'s type), ``bias`` an int32 one of scale
    ``x_scale * w_scale``, the result quantised with ``quant``."""
    spatial = _spatial_rank(n, x)
    kernel = _kernel(n, w, spatial)
    window = _window_2d(read_window(n, x.shape[2:], kernel))
    groups = int(n.attr("group", 1))
    out_channels, group_in = w.shape[0], w.shape[1]
    channels = x.shape[1] or group_in * groups
    if groups < 1 or channels != group_in * groups or out_channels % groups:
        n.fail(f"group {groups} does not fit input channels {channels} and weights "
               f"{list(w.shape)}")
    if bias is None:
        bias = Value("", x.dtype, (out_channels,), const=np.zeros(out_channels, x.dtype))
    x4 = as_2d(n, x)
    w4 = w if spatial == 2 else reshape(n, w, (out_channels, group_in, 1, kernel[0]))
    x4, window = _pad_beyond_filter(n, x4, window)
    dilated = window.dilations != (1, 1)
    tail = [0, True, window.dilations[1], window.dilations[0]] if dilated else [0, True]
    if groups == 1:
        filt = transpose(n, w4, (0, 2, 3, 1))
        y = n.graph.op(Op.CONV_2D, x4, filt, bias, *window.nnapi_args(), *tail, quant=quant)
    elif groups == channels:
        filt = transpose(n, w4, (1, 2, 3, 0))
        y = n.graph.op(Op.DEPTHWISE_CONV_2D, x4, filt, bias, *window.nnapi_args(),
                       out_channels // channels, *tail, quant=quant)
    elif not dilated:
        filt = transpose(n, w4, (0, 2, 3, 1))
        y = n.graph.op(Op.GROUPED_CONV_2D, x4, filt, bias, *window.nnapi_args(), groups, 0,
                       True, quant=quant)
    elif quant is not None:
        n.fail("a quantised grouped dilated convolution is not supported")
    else:
        y = _dilated_groups(n, x4, w4, bias, window, groups)
    return from_2d(n, y, x.rank)


def _dilated_groups(n: NodeContext, x: Value, w: Value, bias: Value, window: Window,
                    groups: int) -> Value:
    """A grouped dilated convolution as one dilated CONV_2D per group (GROUPED_CONV_2D has no
    dilation)."""
    filters, biases = _split(n, w, 0, groups), _split(n, bias, 0, groups)
    args = [*window.nnapi_args(), 0, True, window.dilations[1], window.dilations[0]]
    return _per_group(n, x, groups, lambda part, g: n.graph.op(
        Op.CONV_2D, part, transpose(n, filters[g], (0, 2, 3, 1)), biases[g], *args))


def _pad_beyond_filter(n: NodeContext, x: Value, window: Window) -> tuple[Value, Window]:
    """Move the padding into a PAD when some side is not smaller than the dilated filter."""
    if window.same or all(max(p) < window.effective(i) for i, p in enumerate(window.pads)):
        return x, window
    paddings = np.asarray([(0, 0), (0, 0), *window.pads], np.int32)
    padded = n.graph.op(Op.PAD, x, paddings)
    return padded, Window(window.kernel, window.strides, window.dilations, ((0, 0), (0, 0)))


# -- ConvTranspose ---------------------------------------------------------------------------


@converter("ConvTranspose")
def conv_transpose(n: NodeContext) -> list[Value]:
    """ConvTranspose (1-D, 2-D; no dilation): TRANSPOSE_CONV_2D per group, NCHW."""
    x, w = n.input(0), n.input(1)
    require_float(n, x, w)
    spatial = _spatial_rank(n, x)
    kernel = _kernel(n, w, spatial)
    if _ints(n, "dilations", spatial, 1) != (1,) * spatial:
        n.fail(f"dilations {n.attr('dilations')} are not supported (TRANSPOSE_CONV_2D has no "
               "dilation)")
    groups = int(n.attr("group", 1))
    in_channels, group_out = w.shape[0], w.shape[1]
    sizes = x.shape[2:]
    if not all(d > 0 for d in sizes) and (
            n.attr("output_shape") is not None or n.attr("auto_pad", "NOTSET") in (
                "SAME_UPPER", "SAME_LOWER")):
        n.fail(f"output_shape / auto_pad SAME on the dynamic spatial dims {list(sizes)} needs "
               "them known; pass input_shapes= to nnrt.onnx.load")
    if groups < 1 or x.shape[1] not in (0, in_channels) or in_channels % groups:
        n.fail(f"group {groups} does not fit input channels {x.shape[1]} and weights "
               f"{list(w.shape)}")
    strides = _ints(n, "strides", spatial, 1)
    pads = _transpose_pads(n, sizes, kernel, strides)
    if spatial == 1:
        kernel, strides, pads = (1, *kernel), (1, *strides), ((0, 0), *pads)
    x4 = as_2d(n, x)
    w4 = w if spatial == 2 else reshape(n, w, (in_channels, group_out, 1, kernel[1]))
    bias = _bias(n, x, 2, group_out * groups)
    (top, bottom), (left, right) = pads
    args = [left, right, top, bottom, strides[1], strides[0], 0, True]
    if groups == 1:
        y = n.graph.op(Op.TRANSPOSE_CONV_2D, x4, transpose(n, w4, (1, 2, 3, 0)), bias, *args)
    else:
        filters, biases = _split(n, w4, 0, groups), _split(n, bias, 0, groups)
        y = _per_group(n, x4, groups, lambda part, g: n.graph.op(
            Op.TRANSPOSE_CONV_2D, part, transpose(n, filters[g], (1, 2, 3, 0)), biases[g],
            *args))
    return [from_2d(n, y, x.rank)]


def _transpose_pads(n: NodeContext, sizes: Sequence[int], kernel: Sequence[int],
                    strides: Sequence[int]) -> tuple[tuple[int, int], ...]:
    """NNAPI's (head, tail) cropping per spatial dim giving ONNX's output size.

    The full output is ``(size - 1) * stride + kernel``; ONNX crops ``pads`` from it and adds
    ``output_padding`` at the end, or derives the cropping from ``output_shape`` / SAME
    (onnxruntime's split: SAME_UPPER crops the odd element at the end, otherwise at the start).
    NNAPI's tail is whatever yields the output size, negative where the output grows.
    """
    rank = len(sizes)
    adjust = _ints(n, "output_padding", rank, 0)
    auto_pad = n.attr("auto_pad", "NOTSET")
    if auto_pad not in _AUTO_PADS:
        n.fail(f"auto_pad {auto_pad!r} is not one of {', '.join(_AUTO_PADS)}")
    flat = _ints(n, "pads", 2 * rank, 0)
    if min(flat) < 0:
        n.fail(f"negative pads {list(flat)} are not supported")
    shape = n.attr("output_shape")
    if shape is not None:
        shape = [int(d) for d in shape][-rank:]
        if len(shape) != rank:
            n.fail(f"output_shape {shape} does not give {rank} spatial dims")
    result = []
    for i, (size, k, s) in enumerate(zip(sizes, kernel, strides, strict=True)):
        if not size:  # explicit pads crop the same whatever the size: NNAPI's tail is fixed
            head = 0 if auto_pad == "VALID" else flat[i]
            tail = (0 if auto_pad == "VALID" else flat[i + rank]) - adjust[i]
            result.append((head, tail))
            continue
        full = (size - 1) * s + k
        if shape is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            out = shape[i] if shape is not None else size * s
            total = max(0, full + adjust[i] - out)
            head = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
        elif auto_pad == "VALID":
            head, out = 0, full + adjust[i]
        else:
            head, out = flat[i], full + adjust[i] - flat[i] - flat[i + rank]
        if out < 1:
            n.fail(f"the output would be empty along spatial dim {i} (size {out})")
        result.append((head, full - head - out))
    return tuple(result)
