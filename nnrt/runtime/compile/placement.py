"""The placement report of a compiled model: which driver runs each operation, and why."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["OperationReport", "PlacementReport", "StepReport", "index_ranges"]


def index_ranges(indices: Iterable[int]) -> str:
    """``0-12, 14, 20-299``: sorted indices with runs folded (``-`` for none)."""
    ordered = sorted(set(indices))
    parts: list[str] = []
    start = 0
    for k in range(1, len(ordered) + 1):
        if k == len(ordered) or ordered[k] != ordered[k - 1] + 1:
            first, last = ordered[start], ordered[k - 1]
            parts.append(str(first) if first == last else f"{first}-{last}")
            start = k
    return ", ".join(parts) or "-"


@dataclass(frozen=True)
class OperationReport:
    """Where one operation runs: its driver and step, and why each other driver does not."""

    operation: int
    type_name: str
    driver: str
    step: int
    rejected: Mapping[str, str]


@dataclass(frozen=True)
class StepReport:
    """One step of the execution plan.

    ``source`` says how its driver got the step: ``"compiled"`` (prepared from the graph) or
    ``"aot"`` (bytecode from the model file, no compile step); ``note`` why it runs where it
    does when that is not where the partitioner put it (a failed compile, stale bytecode).
    """

    index: int
    driver: str
    operations: tuple[int, ...]
    source: str
    note: str | None = None


@dataclass(frozen=True)
class PlacementReport:
    """Per operation and per step, where a compiled model runs (``compiled.placement()``)."""

    operations: tuple[OperationReport, ...]
    steps: tuple[StepReport, ...]

    def drivers(self) -> list[str]:
        """The drivers the model runs on, in step order, each once."""
        return list(dict.fromkeys(step.driver for step in self.steps))

    def __str__(self) -> str:
        """The steps (operation ranges) and, grouped with counts, why operations are not
        where another driver would have run them; :meth:`describe` ``(verbose=True)`` adds a
        line per operation."""
        return self.describe()

    def describe(self, *, verbose: bool = False) -> str:
        """The report as text: steps with their operations as ranges, the reasons operations
        did not go to a driver (grouped by operation type and reason, with counts), and with
        ``verbose`` one line per operation."""
        lines = [f"{len(self.steps)} step(s) on {', '.join(self.drivers())}"]
        for step in self.steps:
            note = f" ({step.note})" if step.note else ""
            lines.append(f"  step {step.index}: {step.driver} [{step.source}] "
                         f"{len(step.operations)} operation(s): "
                         f"{index_ranges(step.operations)}{note}")
        reasons: Counter[tuple[str, str, str]] = Counter(
            (driver, op.type_name, why) for op in self.operations
            for driver, why in op.rejected.items() if "is preferred" not in why)
        for (driver, type_name, why), count in sorted(reasons.items()):
            lines.append(f"  not on {driver}: {count} x {type_name}: {why}")
        if verbose:
            for op in self.operations:
                why = "; ".join(f"{d}: {r}" for d, r in op.rejected.items())
                lines.append(f"  operation {op.operation} ({op.type_name}) -> {op.driver}, "
                             f"step {op.step}" + (f" — {why}" if why else ""))
        return "\n".join(lines)
