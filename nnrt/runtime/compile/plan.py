"""Execution plans: a partitioned model as steps, each an outlined sub-model on one driver.

:func:`build_plan` outlines every partition (``nnrt.model.subgraph.outline``) and records where
each step input comes from (a model input or an earlier step's output) and where each model
output comes from. :meth:`Plan.run` runs the steps one after another in this process, through
one callable per step; the runtime's scheduler runs the same structure across workers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnrt.errors import BadData, BadState, OpFailed
from nnrt.model.model import Model
from nnrt.model.subgraph import Outlined, outline
from nnrt.runtime.compile.partitioner import Partitioning

__all__ = ["Plan", "Runner", "Source", "Step", "build_plan"]

Array = np.ndarray[Any, Any]
#: Runs one step: its inputs (in ``step.outlined.model`` input order) -> its outputs.
Runner = Callable[[list[Array]], Sequence[Array]]


@dataclass(frozen=True)
class Source:
    """Where a step input or a model output comes from.

    ``step`` is None for a model input (``index`` is then its position among the model
    inputs), else the producing step (``index`` is the position among its outputs).
    """

    step: int | None
    index: int


@dataclass(frozen=True)
class Step:
    """One partition made a model of its own, with the sources of its inputs.

    ``sources[k]`` feeds ``outlined.model`` input ``k``; ``depends`` are the steps it waits for
    (sorted, unique).
    """

    index: int
    driver: str
    outlined: Outlined
    sources: tuple[Source, ...]
    depends: tuple[int, ...]


@dataclass(frozen=True)
class Plan:
    """Steps in a topological order and the source of each model output.

    ``input_count`` is the number of model inputs :meth:`run` expects (None: not checked).
    """

    steps: tuple[Step, ...]
    outputs: tuple[Source, ...]
    input_count: int | None = None

    def run(self, inputs: Sequence[Array], runners: Mapping[int, Runner]) -> list[Array]:
        """Run the steps in order in this process: ``runners[step.index](step_inputs)`` returns
        that step's outputs. Returns the model outputs.

        Raises ``BadData`` for a wrong number of inputs or a missing runner, and ``OpFailed``
        when a runner returns the wrong number of outputs; a runner's own errors propagate.
        """
        if self.input_count is not None and len(inputs) != self.input_count:
            raise BadData(f"plan: expected {self.input_count} inputs, got {len(inputs)}")
        missing = [s.index for s in self.steps if s.index not in runners]
        if missing:
            raise BadData(f"plan: no runner for steps {missing}")
        last_use = self._last_uses()
        results: dict[int, list[Array]] = {}
        for position, step in enumerate(self.steps):
            step_inputs = [self._value(src, inputs, results) for src in step.sources]
            produced = list(runners[step.index](step_inputs))
            expected = len(step.outlined.outputs)
            if len(produced) != expected:
                raise OpFailed(f"plan: step {step.index} (driver {step.driver}) returned "
                               f"{len(produced)} outputs, expected {expected}")
            results[step.index] = produced
            for done in last_use.get(position, ()):
                del results[done]  # no later step reads it: free it early
        return [self._value(src, inputs, results) for src in self.outputs]

    def _last_uses(self) -> dict[int, list[int]]:
        """Position of each step's last reader -> steps whose results can go after it
        (model outputs keep theirs to the end)."""
        last: dict[int, int] = {}
        for position, step in enumerate(self.steps):
            for s in step.depends:
                last[s] = position
        keep = {src.step for src in self.outputs}
        freed: dict[int, list[int]] = {}
        for s, position in last.items():
            if s not in keep:
                freed.setdefault(position, []).append(s)
        return freed

    @staticmethod
    def _value(source: Source, inputs: Sequence[Array], results: Mapping[int, list[Array]]
               ) -> Array:
        if source.step is None:
            if not 0 <= source.index < len(inputs):
                raise BadData(f"plan: model input {source.index} is missing ({len(inputs)} "
                              "given)")
            return inputs[source.index]
        produced = results.get(source.step)
        if produced is None:
            raise BadState(f"plan: step {source.step} has not run (or its results were freed) "
                           "when its output is read")
        return produced[source.index]


def build_plan(model: Model, partitioning: Partitioning) -> Plan:
    """The execution plan of the finished ``model`` partitioned as ``partitioning``.

    Raises ``BadState`` for an unfinished model and ``BadData`` if the partitions do not cover
    every operation exactly once, are not in a topological order, or a model output has no
    source (a constant, or an operand nothing writes).
    """
    if not isinstance(model, Model) or not model.finished:
        raise BadState("build_plan: needs a finished nnrt.Model")
    count = len(model.operations)
    seen = [False] * count
    for p, partition in enumerate(partitioning.partitions):
        for op in partition.operations:
            if not (type(op) is int and 0 <= op < count) or seen[op]:
                raise BadData(f"build_plan: partition {p} ({partition.driver}) lists operation "
                              f"{op!r:.20}, outside 0..{count - 1} or already placed")
            seen[op] = True
    if not all(seen):
        raise BadData(f"build_plan: operations {[i for i in range(count) if not seen[i]]} are "
                      "in no partition")
    input_position = {k: p for p, k in enumerate(model.inputs)}
    produced_by: dict[int, Source] = {}  # parent operand -> step output
    steps = []
    for index, partition in enumerate(partitioning.partitions):
        outlined = outline(model, partition.operations)
        sources = []
        for k in outlined.inputs:
            source = produced_by.get(k)
            if source is None:
                if k not in input_position:
                    raise BadData(f"build_plan: step {index} ({partition.driver}) reads operand "
                                  f"{k}, which is neither a model input nor produced by an "
                                  "earlier step: the partitions are not in a topological order")
                source = Source(None, input_position[k])
            sources.append(source)
        depends = tuple(sorted({s.step for s in sources if s.step is not None}))
        steps.append(Step(index, partition.driver, outlined, tuple(sources), depends))
        for position, k in enumerate(outlined.outputs):
            produced_by[k] = Source(index, position)
    outputs = []
    for position, k in enumerate(model.outputs):
        source = produced_by.get(k)
        if source is None:
            if k not in input_position:
                raise BadData(f"build_plan: model output {position} (operand {k}, "
                              f"{model.operands[k].lifetime.name}) is produced by no operation")
            source = Source(None, input_position[k])
        outputs.append(source)
    return Plan(tuple(steps), tuple(outputs), len(model.inputs))
