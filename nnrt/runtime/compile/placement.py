"""The placement report of a compiled model: which driver runs each operation, and why."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["OperationReport", "PlacementReport", "StepReport"]


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
        lines = [f"{len(self.steps)} step(s) on {', '.join(self.drivers())}"]
        for step in self.steps:
            note = f" ({step.note})" if step.note else ""
            lines.append(f"  step {step.index}: {step.driver} [{step.source}] operations "
                         f"{list(step.operations)}{note}")
        for op in self.operations:
            why = "; ".join(f"{d}: {r}" for d, r in op.rejected.items())
            lines.append(f"  operation {op.operation} ({op.type_name}) -> {op.driver}, step "
                         f"{op.step}" + (f" — {why}" if why else ""))
        return "\n".join(lines)
