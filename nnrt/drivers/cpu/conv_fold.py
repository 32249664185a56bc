"""Folding per-channel affine constants into convolutions (how imported BatchNormalization
disappears).

An ONNX BatchNormalization after a convolution imports as ``CONV_2D -> MUL by s -> ADD t``
with ``s`` and ``t`` constant per output channel. When the convolution has no fused activation
and its result is read only by the MUL (and the MUL's only by the ADD), the pair folds into the
convolution's packed filter and bias::

    conv(x, W, b) * s + t  ==  conv(x, W * s, b * s + t)

(exact in real arithmetic; in float32 the results differ by rounding). A MUL or an ADD alone
folds the same way. The folded call takes over the last folded operation's output and fused
activation, so a following RELU still fuses into it. New constants are made for the folded
filter and bias: a constant read by other calls keeps its contents.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.drivers.cpu.graph import Graph, Node, Ref, Value

__all__ = ["fold_channel_affine"]

Array = np.ndarray[Any, Any]

#: Convolution kernels: the argument positions of their filter, bias, fused activation and
#: layout flag.
_CONVS = {"conv": (1, 2, 7, 8), "depthwise": (1, 2, 8, 9)}
#: The foldable element-wise kernels (``kernel(out, a, b, act)``) and their activation slot.
_AFFINE = {"mul": 2, "add": 2}


def fold_channel_affine(graph: Graph) -> int:
    """Fold per-channel MUL / ADD constants into the convolutions producing their operand;
    returns how many calls were folded away."""
    counts = graph.use_counts()
    producer = graph.producer()
    removed: set[int] = set()
    for position, node in enumerate(graph.nodes):
        if node.kernel not in _AFFINE or node.view:
            continue
        for source, other in ((node.args[0], node.args[1]), (node.args[1], node.args[0])):
            if isinstance(source, Ref) and source.value in producer:
                conv = graph.nodes[producer[source.value]]
                vector = _channel_vector(graph, conv, source.value, other, counts)
                if vector is not None:
                    _fold(graph, conv, node, vector)
                    producer[node.out] = producer[source.value]
                    removed.add(position)
                    break
    graph.nodes = [n for i, n in enumerate(graph.nodes) if i not in removed]
    return len(removed)


def _channel_vector(graph: Graph, conv: Node, value: int, other: Any,
                    counts: dict[int, int]) -> Array | None:
    """The per-output-channel vector of ``other`` if the call reading ``value`` (``conv``'s
    result) with ``other`` can fold into ``conv``; None if it cannot."""
    slots = _CONVS.get(conv.kernel)
    if slots is None or conv.view:
        return None
    weights, bias, act, layout = slots
    if conv.args[act] != 0:
        return None
    result = graph.values[value]
    if (counts.get(value) != 1 or result.output is not None or result.input is not None
            or result.temp or result.dtype != "float32"):
        return None
    if not all(_const(graph, conv.args[k]) is not None for k in (weights, bias)):
        return None
    factor = _const(graph, other)
    shape = result.shape
    if factor is None or len(shape) != 4 or factor.ndim > 4:
        return None
    channel = 1 if conv.args[layout] else 3
    full = (1,) * (4 - factor.ndim) + factor.shape
    if any(d != 1 for axis, d in enumerate(full) if axis != channel) or full[channel] not in (
            1, shape[channel]):
        return None
    vector: Array = np.broadcast_to(factor.reshape(full[channel]), (shape[channel],))
    return vector


def _const(graph: Graph, arg: Any) -> Array | None:
    """The compile-time float32 contents of argument ``arg``, if it has any."""
    if not isinstance(arg, Ref):
        return None
    v = graph.values[arg.value]
    return v.const if v.dtype == "float32" else None


def _fold(graph: Graph, conv: Node, node: Node, vector: Array) -> None:
    """Fold ``node`` (MUL or ADD by ``vector`` per channel) into ``conv``."""
    weights, bias, act, _ = _CONVS[conv.kernel]
    w = np.asarray(_const(graph, conv.args[weights]), np.float64)
    b = np.asarray(_const(graph, conv.args[bias]), np.float64)
    v = vector.astype(np.float64)
    if node.kernel == "mul":
        conv.args[weights] = _constant(graph, w * v)
        conv.args[bias] = _constant(graph, b * v)
    else:
        conv.args[bias] = _constant(graph, b + v)
    conv.args[act] = node.args[_AFFINE[node.kernel]]
    conv.out = node.out
    conv.ops = conv.ops + node.ops


def _constant(graph: Graph, array: Array) -> Ref:
    arr = np.ascontiguousarray(array, np.float32)
    return Ref(graph.add(Value(tuple(arr.shape), const=arr)))
