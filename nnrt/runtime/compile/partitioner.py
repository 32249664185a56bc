"""The partitioner: which driver runs each operation, and which operations share a step.

Each operation goes to the best driver among those that support it (by the execution
preference and the drivers' reported performance; ties go to the earlier driver in device
order); operations no driver supports go to the fallback driver. Each driver's operations are
then grouped into the largest partitions that keep the graph of steps acyclic (see
:mod:`nnrt.runtime.compile.grouping`).

Then every step is weighed against its cost (:func:`consolidate`): a step costs a round trip
to a worker and a hand-over of its tensors, so a partition whose operations another driver
also takes moves there when the steps it saves outweigh what the faster driver gains — a model
does not fragment into dozens of alternating partitions when fewer, larger ones are possible.

A kind is a driver and a cut index: a compiler plugin's partition indices keep operations with
different indices (or with an index and without one) apart. Unlike LiteRT, which groups runs
of consecutive selected operations, this neither splits independent work needlessly nor
merges groups around an operation of another driver (a cycle).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nnrt.errors import BadData, BadState, Unsupported
from nnrt.hal.base import OperationSupport
from nnrt.hal.info import PerformanceInfo
from nnrt.model.model import Model
from nnrt.model.operation import operation_name
from nnrt.model.types import ExecutionPreference
from nnrt.runtime.compile.grouping import Kind, merge_groups, seed_groups, successors

__all__ = ["ELEMENT_COST", "OPERATION_COST", "STEP_COST", "DriverSupport", "OpPlacement",
           "Partition", "Partitioning", "check_step_cost", "consolidate", "partition_model"]

_FAST = ExecutionPreference.FAST_SINGLE_ANSWER
#: The placement cost model, in microseconds of the reference driver (a driver's cost is its
#: ``PerformanceInfo`` ratio times these): one more step (a round trip to a worker and the
#: hand-over of its tensors), one operation, and one output element of an operation.
STEP_COST = 50.0
OPERATION_COST = 5.0
ELEMENT_COST = 0.01


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
                    fallback: str | None = "reference", step_cost: float = STEP_COST
                    ) -> Partitioning:
    """Assign each operation of the finished ``model`` to a driver and group them into steps.

    ``supports`` lists the drivers' answers in device order. ``fallback`` (a driver name, not
    necessarily in ``supports``) runs what no driver supports; with ``fallback=None`` such
    operations raise ``Unsupported`` naming every one of them and each driver's reason.
    ``step_cost`` is the cost model's price of one step (:func:`consolidate`; 0: every
    operation stays on its fastest driver).
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
    step_cost = check_step_cost(step_cost)
    drivers, kinds, rejected = _assign(model, supports, pref, fallback)
    succ = successors(model)
    position = {op: p for p, op in enumerate(model.run_order)}
    ordered = consolidate(model, supports, pref, drivers, kinds, rejected, succ, step_cost)
    partitions = []
    part_of = [0] * len(drivers)
    for index, ops in enumerate(ordered):
        for op in ops:
            part_of[op] = index
        partitions.append(Partition(drivers[ops[0]],
                                    tuple(sorted(ops, key=position.__getitem__))))
    placement = tuple(OpPlacement(i, operation_name(op.type), drivers[i], part_of[i], rejected[i])
                      for i, op in enumerate(model.operations))
    return Partitioning(tuple(partitions), placement)


def check_step_cost(value: object) -> float:
    """``value`` as a step cost in microseconds (``BadData`` unless a finite number >= 0)."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not (
            0 <= value < math.inf):
        raise BadData(f"step_cost must be a finite number of microseconds >= 0, got "
                      f"{value!r:.40}")
    return float(value)


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
            fallback: str | None) -> tuple[list[str], list[Kind], list[dict[str, str]]]:
    """Per operation: its driver, its kind (driver, cut index) and the other drivers' reasons."""
    metric = "power_usage" if preference == ExecutionPreference.LOW_POWER else "exec_time"
    scores = [float(getattr(s.performance, metric)) for s in supports]
    drivers: list[str] = []
    kinds: list[Kind] = []
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
                missing.append(f"operation {i} ({operation_name(op.type)}): "
                               f"{text or 'no drivers given'}")
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


def _group(model: Model, succ: Sequence[Sequence[int]], kinds: Sequence[Kind]
           ) -> list[list[int]]:
    return merge_groups(seed_groups(model.run_order, succ, kinds), succ, kinds)


def consolidate(model: Model, supports: Sequence[DriverSupport], preference: ExecutionPreference,
                drivers: list[str], kinds: list[Kind], rejected: list[dict[str, str]],
                succ: Sequence[Sequence[int]], step_cost: float = STEP_COST
                ) -> list[list[int]]:
    """The partitions (operation lists in a topological order of the steps) once every step
    pays for itself; ``drivers``, ``kinds`` and ``rejected`` are updated for the operations
    that moved.

    The cost of a placement is ``step_cost`` per step plus, per operation,
    ``(OPERATION_COST + ELEMENT_COST * output elements)`` times its driver's performance
    ratio. Partitions are visited cheapest first; one moves, whole, to the driver of one of
    its neighbouring steps that takes all its operations when that lowers the total cost (the
    steps it merges with pay for the slower driver). A move is tried only when the steps it
    could save can outweigh its extra operation cost, so most partitions cost no regrouping.
    """
    metric = "power_usage" if preference == ExecutionPreference.LOW_POWER else "exec_time"
    ratio = {s.driver: float(getattr(s.performance, metric)) for s in supports}
    work = [OPERATION_COST + ELEMENT_COST * sum(
        math.prod(max(int(d), 1) for d in model.inferred_dims[k]) for k in op.outputs)
        for op in model.operations]
    near = [set(targets) for targets in succ]  # data edges, both ways
    for op, targets in enumerate(succ):
        for target in targets:
            near[target].add(op)
    groups = _group(model, succ, kinds)
    if step_cost <= 0:
        return groups
    visited: set[int] = set()
    while True:
        group_of = {op: g for g, ops in enumerate(groups) for op in ops}
        moved = False
        for g in sorted(range(len(groups)), key=lambda g: sum(work[op] for op in groups[g])):
            ops = groups[g]
            if ops[0] in visited:
                continue
            visited.add(ops[0])
            best = _best_move(model, supports, ratio, work, succ, near, kinds, drivers,
                              groups, group_of, ops, step_cost)
            if best is not None:
                support, saved, groups = best
                _move(supports, support, ops, saved, metric, drivers, kinds, rejected)
                moved = True
                break
        if not moved:
            return groups


def _best_move(model: Model, supports: Sequence[DriverSupport], ratio: Mapping[str, float],
               work: Sequence[float], succ: Sequence[Sequence[int]], near: Sequence[set[int]],
               kinds: list[Kind], drivers: Sequence[str], groups: list[list[int]],
               group_of: Mapping[int, int], ops: Sequence[int], step_cost: float
               ) -> tuple[DriverSupport, float, list[list[int]]] | None:
    """The cheapest move of partition ``ops`` to a neighbouring step's driver: that driver,
    the microseconds it saves and the partitions after it (None: no move saves time)."""
    current = drivers[ops[0]]
    if current not in ratio:  # the fallback, run because no driver takes these operations
        return None
    inside = set(ops)
    neighbours: dict[str, set[int]] = {}  # driver -> its adjacent partitions
    for op in ops:
        for other in near[op] - inside:
            neighbours.setdefault(drivers[other], set()).add(group_of[other])
    best: tuple[DriverSupport, float, list[list[int]]] | None = None
    for support in supports:
        name = support.driver
        if name == current or name not in neighbours or not all(
                support.supported[op] for op in ops):
            continue
        extra = sum(work[op] for op in ops) * (ratio[name] - ratio[current])
        if extra >= step_cost * len(neighbours[name]):
            continue
        trial = list(kinds)
        for op in ops:
            trial[op] = (name, support.groups.get(op))
        regrouped = _group(model, succ, trial)
        saved = step_cost * (len(groups) - len(regrouped)) - extra
        if saved > 0 and (best is None or saved > best[1]):
            best = (support, saved, regrouped)
    return best


def _move(supports: Sequence[DriverSupport], support: DriverSupport, ops: Sequence[int],
          saved: float, metric: str, drivers: list[str], kinds: list[Kind],
          rejected: list[dict[str, str]]) -> None:
    """Record that partition ``ops`` moved to ``support``'s driver, saving ``saved`` µs."""
    target = support.driver
    for op in ops:
        source = drivers[op]
        why = rejected[op]
        why.pop(target, None)
        why[source] = (f"supported, but the operations around it run on {target}: a step of "
                       f"its own on {source} would cost more than its {metric} saves (about "
                       f"{saved:.0f} µs more by the placement cost model)")
        drivers[op] = target
        kinds[op] = (target, support.groups.get(op))
