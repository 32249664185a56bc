"""Fusion passes over the compiler graph.

* :func:`fuse_activations`: a RELU / RELU1 / RELU6 call reading the only use of a result whose
  kernel takes a fused activation (FULLY_CONNECTED, CONV_2D, pooling, ADD ...) disappears into
  that kernel's activation code: FC + bias + relu, conv + bias + act, ADD-then-RELU are one call.
* :func:`fuse_in_place`: an element-wise call whose operand is the only use of an earlier
  result of the same shape computes in place over it, so chains such as MUL-then-ADD-then-RSQRT
  run as one in-place sequence over a single buffer (the memory plan then gives the whole chain
  one slot, or the caller's output array when the chain ends in a model output).
* :func:`elide_output_copies`: a model output that is a reshaped view of a result (a final
  RESHAPE) is not copied: the result is computed straight into the output array, viewed with
  the result's shape.

A value read twice, or that is a model output, is never fused away: its contents stay
observable. Both passes return how many calls they merged.
"""

from __future__ import annotations

from nnrt.drivers.cpu.graph import Graph, Ref

__all__ = ["elide_output_copies", "fuse_activations", "fuse_in_place"]

#: Activation kernels and the fused-activation code that replaces them.
_ACTIVATIONS = {"relu": 1, "relu1": 2, "relu6": 3}


def _fusable(graph: Graph, value: int, counts: dict[int, int]) -> bool:
    """Whether ``value`` is a plain result read exactly once (nobody else can observe it)."""
    v = graph.values[value]
    return (counts.get(value) == 1 and v.output is None and v.const is None and v.input is None
            and not v.temp)


def fuse_activations(graph: Graph) -> int:
    """Fold activation calls into their producers' fused activation codes."""
    counts = graph.use_counts()
    producer = graph.producer()
    removed: set[int] = set()
    for position, node in enumerate(graph.nodes):
        code = _ACTIVATIONS.get(node.kernel)
        source = node.args[0] if node.args else None
        if code is None or not isinstance(source, Ref) or source.value not in producer:
            continue
        feeding = graph.nodes[producer[source.value]]
        if (feeding.view or feeding.act_slot is None or feeding.args[feeding.act_slot] != 0
                or not _fusable(graph, source.value, counts)):
            continue
        feeding.args[feeding.act_slot] = code
        feeding.out = node.out
        feeding.ops = feeding.ops + node.ops
        producer[node.out] = producer[source.value]
        removed.add(position)
    graph.nodes = [n for i, n in enumerate(graph.nodes) if i not in removed]
    return len(removed)


def fuse_in_place(graph: Graph) -> int:
    """Let element-wise calls overwrite a dying operand of their own shape."""
    counts = graph.use_counts()
    producer = graph.producer()
    merged = 0
    for node in graph.nodes:
        if not node.elementwise or node.view:
            continue
        out = graph.values[node.out]
        for arg in node.args:
            if not isinstance(arg, Ref) or arg.value not in producer:
                continue
            if graph.nodes[producer[arg.value]].view or not _fusable(graph, arg.value, counts):
                continue
            if (graph.values[arg.value].shape, graph.values[arg.value].dtype) != (
                    out.shape, out.dtype):
                continue
            out.alias = arg.value
            merged += 1
            break
    return merged


def elide_output_copies(graph: Graph) -> int:
    """Drop ``copy`` calls into model outputs by storing their source in the output array."""
    counts = graph.use_counts()
    producer = graph.producer()
    removed: set[int] = set()
    for position, node in enumerate(graph.nodes):
        output = graph.values[node.out].output
        source = node.args[0] if node.args else None
        if node.kernel != "copy" or output is None or not isinstance(source, Ref):
            continue
        root = graph.root(source.value)
        if (not _fusable(graph, source.value, counts) or root not in producer
                or graph.nodes[producer[root]].view or graph.values[root].stored_in is not None
                or (root != source.value and not _fusable(graph, root, counts))):
            continue
        graph.values[root].stored_in = output
        removed.add(position)
    graph.nodes = [n for i, n in enumerate(graph.nodes) if i not in removed]
    return len(removed)
