"""The partitioner: which driver runs each operation, and which operations share a step.

Each operation goes to the best driver among those that support it (by the execution
preference and the drivers' reported performance; ties go to the earlier driver in device
order); operations no driver supports go to the fallback driver. Each driver's operations are
then grouped into the largest partitions that keep the graph of steps acyclic (see
:mod:`nnrt.runtime.compile.grouping`).

A kind is a driver and a cut index: a compiler plugin's partition indices keep operations with
different indices (or with an index and without one) apart. Unlike LiteRT, which groups runs
of consecutive selected operations, this neither splits independent work needlessly nor
merges groups around an operation of another driver (a cycle).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nnrt.errors import BadData, BadState, Unsupported
from nnrt.hal.base import OperationSupport
from nnrt.hal.info import PerformanceInfo
from nnrt.model.model import Model
from nnrt.model.operation import operation_name
from nnrt.model.types import ExecutionPreference
from nnrt.runtime.compile.grouping import Kind, merge_groups, seed_groups, successors

__all__ = ["DriverSupport", "OpPlacement", "Partition", "Partitioning", "partition_model"]

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
    succ = successors(model)
    position = {op: p for p, op in enumerate(model.run_order)}
    seeds = seed_groups(model.run_order, succ, kinds)
    ordered = merge_groups(seeds, succ, kinds)
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
