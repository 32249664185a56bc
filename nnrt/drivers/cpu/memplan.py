"""Static memory planning: every intermediate gets a slot of one scratch arena.

Storage belongs to root values (see :meth:`~nnrt.drivers.cpu.graph.Graph.root`): model inputs
and constants have their own, a root written in place by a chain that ends in a model output is
that output's array (so is a root ``stored_in`` an output it is a reshape of), and every other
root written by a kernel (or a kernel's temporary) needs arena space. A root is live from the
call that writes it to the last call reading it or any value sharing its storage (views,
in-place successors); live ranges are closed, so a call's result never shares memory with its
operands or temporaries.

Slots are placed greedily, largest first, at the lowest offset that overlaps no already placed
buffer live at the same time; a slot is thus reused once its value is dead. Offsets and sizes
are in float32 elements, aligned to 64 bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from nnrt.drivers.cpu.graph import Graph

__all__ = ["ALIGN", "Buffer", "MemoryPlan", "output_roots", "plan_memory"]

#: Slot alignment in float32 elements (64 bytes).
ALIGN = 16


@dataclass(frozen=True)
class Buffer:
    """One arena slot: the root value it holds, its size, live range and offset."""

    root: int
    size: int
    start: int
    end: int
    offset: int


@dataclass(frozen=True)
class MemoryPlan:
    """Where each arena root lives, and the arena's size in elements."""

    buffers: tuple[Buffer, ...]
    size: int

    def offset(self, root: int) -> int | None:
        """The arena offset of ``root``, or None if it is not in the arena."""
        for buffer in self.buffers:
            if buffer.root == root:
                return buffer.offset
        return None


def output_roots(graph: Graph) -> dict[int, int]:
    """Root value -> model output position, for roots stored in the caller's outputs."""
    roots: dict[int, int] = {}
    for value in graph.outputs:
        output = graph.values[value].output
        if output is not None:
            roots.setdefault(graph.root(value), output)
    return roots


def _live_ranges(graph: Graph) -> dict[int, tuple[int, int]]:
    """Closed live range ``(first, last)`` node positions of every root needing arena space."""
    outputs = output_roots(graph)
    ranges: dict[int, tuple[int, int]] = {}
    for position, node in enumerate(graph.nodes):
        written = [] if node.view else [node.out]
        for value in (*written, *node.temps):
            root = graph.root(value)
            v = graph.values[root]
            if (root in outputs or v.input is not None or v.const is not None
                    or v.stored_in is not None):
                continue
            first, last = ranges.get(root, (position, position))
            ranges[root] = (min(first, position), max(last, position))
    for position, node in enumerate(graph.nodes):
        for value in graph.reads(node) + ([node.out] if node.view else []):
            root = graph.root(value)
            if root in ranges:
                first, last = ranges[root]
                ranges[root] = (first, max(last, position))
    return ranges


def _aligned(size: int) -> int:
    return -(-max(size, 1) // ALIGN) * ALIGN


def plan_memory(graph: Graph) -> MemoryPlan:
    """The arena layout of ``graph``'s intermediates."""
    ranges = _live_ranges(graph)
    sizes = {}
    for root in ranges:
        count = 1
        for d in graph.values[root].shape:
            count *= d
        if graph.values[root].dtype in ("bool", "uint8", "int8"):  # one byte: a quarter
            count = -(-count // 4)
        sizes[root] = _aligned(count)
    order = sorted(ranges, key=lambda r: (-sizes[r], ranges[r][0], r))
    placed: list[Buffer] = []
    for root in order:
        start, end = ranges[root]
        busy = sorted((b.offset, b.offset + b.size) for b in placed
                      if b.start <= end and start <= b.end)
        offset = 0
        for low, high in busy:
            if offset + sizes[root] <= low:
                break
            offset = max(offset, high)
        placed.append(Buffer(root, sizes[root], start, end, offset))
    size = max((b.offset + b.size for b in placed), default=0)
    return MemoryPlan(tuple(sorted(placed, key=lambda b: (b.start, b.root))), size)
