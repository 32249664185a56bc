"""Grouping each driver's operations into the largest partitions that keep the plan acyclic.

1. :func:`seed_groups`: a greedy topological sweep (Kahn's algorithm that keeps taking ready
   operations of the current kind before switching) gives convex seed groups, each a run of one
   topological order, so the seeds already form an acyclic quotient graph;
2. :func:`merge_groups`: seeds of the same kind merge pairwise until no merge applies. Two
   groups X and Y may merge iff no path X -> Z -> ... -> Y (or back) goes through a third group
   Z, which keeps the quotient graph acyclic; ancestor and descendant sets are Python-int
   bitsets over seed ids, updated on every merge.

A kind is a driver and a cut index (see :mod:`nnrt.runtime.compile.partitioner`).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from nnrt.errors import OpFailed
from nnrt.model.model import Model

__all__ = ["Kind", "merge_groups", "seed_groups", "successors"]

#: A driver and a cut index (None: no index).
Kind = tuple[str, int | None]


def successors(model: Model) -> list[list[int]]:
    """Per operation, the operations reading one of its outputs (data edges), sorted."""
    producer = {k: i for i, op in enumerate(model.operations) for k in op.outputs}
    succ: list[set[int]] = [set() for _ in model.operations]
    for i, op in enumerate(model.operations):
        for k in op.inputs:
            p = producer.get(k)
            if p is not None and p != i:
                succ[p].add(i)
    return [sorted(s) for s in succ]


def seed_groups(order: Sequence[int], succ: Sequence[Sequence[int]],
                 kinds: Sequence[Kind]) -> list[list[int]]:
    """Convex groups in a topological order: take ready operations of one kind while any are
    ready, then switch to the kind of the earliest ready operation (in run order)."""
    position = {op: p for p, op in enumerate(order)}
    pending = [0] * len(kinds)
    for targets in succ:
        for j in targets:
            pending[j] += 1
    ready = [(position[i], i) for i in range(len(kinds)) if pending[i] == 0]
    heapq.heapify(ready)
    by_kind: dict[Kind, list[tuple[int, int]]] = {}
    for entry in ready:
        heapq.heappush(by_kind.setdefault(kinds[entry[1]], []), entry)
    done = [False] * len(kinds)
    groups: list[list[int]] = []
    while ready:
        _, first = heapq.heappop(ready)
        if done[first]:
            continue
        queue = by_kind[kinds[first]]
        group: list[int] = []
        while queue:
            _, i = heapq.heappop(queue)
            done[i] = True
            group.append(i)
            for j in succ[i]:
                pending[j] -= 1
                if pending[j] == 0:
                    entry = (position[j], j)
                    heapq.heappush(ready, entry)
                    heapq.heappush(by_kind.setdefault(kinds[j], []), entry)
        groups.append(group)
    return groups


def merge_groups(seeds: list[list[int]], succ: Sequence[Sequence[int]],
                  kinds: Sequence[Kind]) -> list[list[int]]:
    """Merge seed groups of the same kind until no pair can merge (see :class:`_Quotient`);
    the groups in a topological order."""
    quotient = _Quotient(seeds, succ, kinds)
    changed = True
    while changed:
        changed = False
        for x in range(len(seeds)):
            while x in quotient.live:
                y = quotient.partner(x)
                if y is None:
                    break
                quotient.merge(x, y)
                changed = True
    return [[op for g in _bits(quotient.members[x]) for op in seeds[g]]
            for x in quotient.topological()]


def _bits(value: int) -> list[int]:
    """The positions of the set bits of ``value``, lowest first."""
    found = []
    while value:
        low = value & -value
        found.append(low.bit_length() - 1)
        value ^= low
    return found


class _Quotient:
    """The graph of groups while seeds merge. Seeds come in a topological order; bit ``g`` of
    a bitset stands for seed ``g``; a group is named by one of its seeds (the one that absorbed
    the others), and ``members`` holds its seeds.

    X and Y may merge iff no path X -> Z -> ... -> Y (or back) runs through a third group Z:
    such paths start with a direct successor Z of X, so Y is blocked iff it descends from a
    direct successor of X or is an ancestor of a direct predecessor.
    """

    def __init__(self, seeds: list[list[int]], succ: Sequence[Sequence[int]],
                 kinds: Sequence[Kind]) -> None:
        count = len(seeds)
        seed_of = [0] * len(kinds)
        for g, ops in enumerate(seeds):
            for op in ops:
                seed_of[op] = g
        self.succ: list[set[int]] = [set() for _ in range(count)]  # direct edges, live groups
        self.pred: list[set[int]] = [set() for _ in range(count)]
        for i, targets in enumerate(succ):
            for j in targets:
                a, b = seed_of[i], seed_of[j]
                if a != b:
                    self.succ[a].add(b)
                    self.pred[b].add(a)
        self.down = [0] * count  # descendants of each live group
        self.up = [0] * count  # ancestors
        for g in reversed(range(count)):
            for h in self.succ[g]:
                self.down[g] |= (1 << h) | self.down[h]
        for g in range(count):
            for h in self.pred[g]:
                self.up[g] |= (1 << h) | self.up[h]
        self.members = [1 << g for g in range(count)]
        self.live = set(range(count))
        self.kind = [kinds[ops[0]] for ops in seeds]
        self.same: dict[Kind, int] = {}  # kind -> its live groups
        for g in range(count):
            self.same[self.kind[g]] = self.same.get(self.kind[g], 0) | 1 << g

    def partner(self, x: int) -> int | None:
        """The first group X can merge with, if any."""
        blocked = self.members[x]
        for z in self.succ[x]:
            blocked |= self.down[z]
        for z in self.pred[x]:
            blocked |= self.up[z]
        free = self.same[self.kind[x]] & ~blocked
        return (free & -free).bit_length() - 1 if free else None

    def merge(self, x: int, y: int) -> None:
        """Merge group Y into group X (the caller checked that no cycle results)."""
        mem = self.members[x] | self.members[y]
        self.members[x] = mem
        self.live.discard(y)
        self.same[self.kind[x]] &= ~(1 << y)
        down = self.down[x] = (self.down[x] | self.down[y]) & ~mem
        up = self.up[x] = (self.up[x] | self.up[y]) & ~mem
        for edges, back in ((self.succ, self.pred), (self.pred, self.succ)):
            edges[x] = (edges[x] | edges[y]) - {x, y}
            for r in edges[y]:
                back[r].discard(y)
                if r != x:
                    back[r].add(x)
            edges[y] = set()
        below, above = down | mem, up | mem
        for r in self.live:
            if up >> r & 1:
                self.down[r] |= below
            elif down >> r & 1:
                self.up[r] |= above

    def topological(self) -> list[int]:
        """The live groups in a topological order (Kahn's; the lowest ready name first)."""
        pending = {x: len(self.pred[x]) for x in self.live}
        ready = [x for x, n in pending.items() if n == 0]
        heapq.heapify(ready)
        ordered: list[int] = []
        while ready:
            x = heapq.heappop(ready)
            ordered.append(x)
            for y in self.succ[x]:
                pending[y] -= 1
                if pending[y] == 0:
                    heapq.heappush(ready, y)
        if len(ordered) != len(self.live):
            raise OpFailed("partition_model: internal error: the step graph has a cycle")
        return ordered
