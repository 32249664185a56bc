"""The partitioner: which driver runs each operation, and which operations share a step.

Each operation goes to the best driver among those that support it (by the execution
preference and the drivers' reported performance; ties go to the earlier driver in device
order); operations no driver supports go to the fallback driver. Each driver's operations are
then grouped into the largest partitions that keep the graph of steps acyclic:

1. a greedy topological sweep (Kahn's algorithm that keeps taking ready operations of the
   current kind before switching) gives convex seed groups, each a run of one topological
   order, so the seeds already form an acyclic quotient graph;
2. seeds of the same kind are merged pairwise until no merge applies. Two groups X and Y may
   merge iff no path X -> Z -> ... -> Y (or back) goes through a third group Z, which keeps the
   quotient graph acyclic; ancestor and descendant sets are Python-int bitsets over seed ids,
   updated on every merge.

A kind is a driver and a cut index: a compiler plugin's partition indices keep operations with
different indices (or with an index and without one) apart. Unlike LiteRT, which groups runs
of consecutive selected operations, this neither splits independent work needlessly nor
merges groups around an operation of another driver (a cycle).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nnrt.driver.base import OperationSupport
from nnrt.driver.info import PerformanceInfo
from nnrt.errors import BadData, BadState, OpFailed, Unsupported
from nnrt.model.model import Model
from nnrt.model.types import ExecutionPreference

__all__ = ["DriverSupport", "OpPlacement", "Partition", "Partitioning", "partition_model"]

_Kind = tuple[str, int | None]
_FAST = ExecutionPreference.FAST_SINGLE_ANSWER


@dataclass(frozen=True)
class DriverSupport:
    """What one driver said about one model (``Driver.support()``) and how fast it is.

    ``supported`` has one flag per operation; ``reasons`` says why an operation is not
    supported; ``groups`` gives cut indices (operations with different indices never share a
    partition); ``performance`` is the driver's ``PerformanceInfo`` (lower is better).
    """

    driver: str
    supported: Sequence[bool]
    reasons: Mapping[int, str]
    groups: Mapping[int, int]
    performance: PerformanceInfo

    @classmethod
    def of(cls, driver: str, support: OperationSupport, performance: PerformanceInfo
           ) -> DriverSupport:
        """The record for ``driver`` from its ``Driver.support()`` answer."""
        return cls(driver, tuple(support.supported), dict(support.reasons),
                   dict(support.groups), performance)


@dataclass(frozen=True)
class Partition:
    """Operations of one driver that run as one step, by parent index, in run order."""

    driver: str
    operations: tuple[int, ...]


@dataclass(frozen=True)
class OpPlacement:
    """Where one operation runs and why every other driver does not run it."""

    operation: int
    type_name: str
    driver: str
    partition: int
    rejected: Mapping[str, str]


@dataclass(frozen=True)
class Partitioning:
    """Partitions in a topological order of the step graph, and one placement per operation."""

    partitions: tuple[Partition, ...]
    placement: tuple[OpPlacement, ...]


def partition_model(model: Model, supports: Sequence[DriverSupport],
                    preference: ExecutionPreference | int = _FAST, *,
                    fallback: str | None = "reference") -> Partitioning:
    """Assign each operation of the finished ``model`` to a driver and group them into steps.

    ``supports`` lists the drivers' answers in device order. ``fallback`` (a driver name, not
    necessarily in ``supports``) runs what no driver supports; with ``fallback=None`` such
    operations raise ``Unsupported`` naming every one of them and each driver's reason.
    Raises ``BadState`` for an unfinished model and ``BadData`` for malformed answers.
    """
    if not isinstance(model, Model) or not model.finished:
        raise BadState("partition_model: needs a finished nnrt.Model")
    try:
        pref = ExecutionPreference(int(preference))
    except (TypeError, ValueError):
        raise BadData(f"partition_model: unknown execution preference {preference!r:.40}"
                      ) from None
    if fallback is not None and (not isinstance(fallback, str) or not fallback):
        raise BadData(f"partition_model: fallback must be a driver name or None, got "
                      f"{fallback!r:.40}")
    _check_supports(model, supports)
    drivers, kinds, rejected = _assign(model, supports, pref, fallback)
    succ = _successors(model)
    position = {op: p for p, op in enumerate(model.run_order)}
    seeds = _seed_groups(model.run_order, succ, kinds)
    ordered = _merge_groups(seeds, succ, kinds)
    partitions = []
    part_of = [0] * len(drivers)
    for index, ops in enumerate(ordered):
        for op in ops:
            part_of[op] = index
        partitions.append(Partition(drivers[ops[0]],
                                    tuple(sorted(ops, key=position.__getitem__))))
    placement = tuple(OpPlacement(i, op.type.name, drivers[i], part_of[i], rejected[i])
                      for i, op in enumerate(model.operations))
    return Partitioning(tuple(partitions), placement)


def _check_supports(model: Model, supports: Sequence[DriverSupport]) -> None:
    """``BadData`` naming the first malformed driver answer."""
    given: object = supports
    if isinstance(given, str | bytes) or not isinstance(given, Sequence):
        raise BadData(f"partition_model: supports must be a sequence of DriverSupport, got "
                      f"{type(given).__name__}")
    count = len(model.operations)
    seen: set[str] = set()
    for position, support in enumerate(supports):
        where = f"partition_model: supports[{position}]"
        if not isinstance(support, DriverSupport):
            raise BadData(f"{where}: expected a DriverSupport, got {type(support).__name__}")
        name = support.driver
        if not isinstance(name, str) or not name or name in seen:
            raise BadData(f"{where}: driver name {name!r:.60} is empty or repeated")
        seen.add(name)
        where = f"{where} (driver {name})"
        flags = support.supported
        if not isinstance(flags, Sequence) or len(flags) != count or not all(
                isinstance(f, bool) for f in flags):
            raise BadData(f"{where}: supported must hold {count} bools, one per operation")
        if not isinstance(support.reasons, Mapping) or not isinstance(support.groups, Mapping):
            raise BadData(f"{where}: reasons and groups must be mappings by operation index")
        for op, group in support.groups.items():
            if type(op) is not int or not 0 <= op < count or type(group) is not int or group < 0:
                raise BadData(f"{where}: groups[{op!r:.20}] = {group!r:.20}; expected an "
                              f"operation index below {count} -> a partition index >= 0")
        if not isinstance(support.performance, PerformanceInfo):
            raise BadData(f"{where}: performance must be a PerformanceInfo")


def _reason(support: DriverSupport, op: int) -> str:
    reason = support.reasons.get(op)
    return reason if isinstance(reason, str) and reason else "no reason given"


def _assign(model: Model, supports: Sequence[DriverSupport], preference: ExecutionPreference,
            fallback: str | None) -> tuple[list[str], list[_Kind], list[dict[str, str]]]:
    """Per operation: its driver, its kind (driver, cut index) and the other drivers' reasons."""
    metric = "power_usage" if preference == ExecutionPreference.LOW_POWER else "exec_time"
    scores = [float(getattr(s.performance, metric)) for s in supports]
    drivers: list[str] = []
    kinds: list[_Kind] = []
    rejected: list[dict[str, str]] = []
    missing: list[str] = []
    for i, op in enumerate(model.operations):
        best: int | None = None
        for k, support in enumerate(supports):
            if support.supported[i] and (best is None or scores[k] < scores[best]):
                best = k
        why: dict[str, str] = {}
        if best is None:
            if fallback is None:
                text = "; ".join(f"{s.driver}: {_reason(s, i)}" for s in supports)
                missing.append(f"operation {i} ({op.type.name}): {text or 'no drivers given'}")
                continue
            for support in supports:
                if support.driver != fallback:
                    why[support.driver] = (f"not supported: {_reason(support, i)}; runs on "
                                           "the fallback driver")
            drivers.append(fallback)
            kinds.append((fallback, None))
            rejected.append(why)
            continue
        chosen = supports[best]
        for k, support in enumerate(supports):
            if k == best:
                continue
            if not support.supported[i]:
                why[support.driver] = f"not supported: {_reason(support, i)}"
            elif scores[k] > scores[best]:
                why[support.driver] = (f"supported, but {chosen.driver} is preferred ({metric} "
                                       f"{scores[best]!r} < {scores[k]!r})")
            else:
                why[support.driver] = (f"supported, but {chosen.driver} is preferred ({metric} "
                                       f"{scores[best]!r} = {scores[k]!r}, earlier in device "
                                       "order)")
        drivers.append(chosen.driver)
        kinds.append((chosen.driver, chosen.groups.get(i)))
        rejected.append(why)
    if missing:
        raise Unsupported("no driver can run these operations and fallback is disabled: "
                          + "; ".join(missing))
    return drivers, kinds, rejected


def _successors(model: Model) -> list[list[int]]:
    """Per operation, the operations reading one of its outputs (data edges), sorted."""
    producer = {k: i for i, op in enumerate(model.operations) for k in op.outputs}
    succ: list[set[int]] = [set() for _ in model.operations]
    for i, op in enumerate(model.operations):
        for k in op.inputs:
            p = producer.get(k)
            if p is not None and p != i:
                succ[p].add(i)
    return [sorted(s) for s in succ]


def _seed_groups(order: Sequence[int], succ: Sequence[Sequence[int]],
                 kinds: Sequence[_Kind]) -> list[list[int]]:
    """Convex groups in a topological order: take ready operations of one kind while any are
    ready, then switch to the kind of the earliest ready operation (in run order)."""
    position = {op: p for p, op in enumerate(order)}
    pending = [0] * len(kinds)
    for targets in succ:
        for j in targets:
            pending[j] += 1
    ready = [(position[i], i) for i in range(len(kinds)) if pending[i] == 0]
    heapq.heapify(ready)
    by_kind: dict[_Kind, list[tuple[int, int]]] = {}
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


def _merge_groups(seeds: list[list[int]], succ: Sequence[Sequence[int]],
                  kinds: Sequence[_Kind]) -> list[list[int]]:
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
                 kinds: Sequence[_Kind]) -> None:
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
        self.same: dict[_Kind, int] = {}  # kind -> its live groups
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
