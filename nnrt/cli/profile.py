"""Per-operation time profile of a model (``nnrt run --profile``), measured in this process.

The runtime times no single operation: a step of the execution plan runs in a worker as one
request. The profile therefore replays the runtime's placement here, step by step, on the same
inputs, each step's outputs feeding the next:

* a step placed on the ``cpu`` driver is compiled by the cpu driver's compiler (stage 1: the
  code a worker runs until the background optimiser swaps in stage 2) and its generated
  function runs with every kernel call timed; each call's time goes to the model operations it
  implements (several once fused); operations the compiler folded or elided take none;
* a step on any other driver runs on the reference interpreter, timed per operation (through
  the hook the interpreter calls between two operations).

Times are means over ``runs`` runs after one warm-up. They leave out what the runtime adds per
execution — dispatch to the worker, shared-memory transfers, one round trip per step — which is
the difference between their sum and the latency ``nnrt run --bench`` measures.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from nnrt.errors import OpFailed
from nnrt.model.binding import InputBinder
from nnrt.model.operation import operation_name
from nnrt.model.subgraph import outline
from nnrt.reference.interpreter import ExecutionPlan

if TYPE_CHECKING:
    from nnrt.model.model import Model
    from nnrt.runtime.compile.placement import PlacementReport

__all__ = ["Entry", "Profile", "StepTime", "profile_model"]

Array = np.ndarray[Any, Any]
_ENTRY = "profiled"
#: The cpu-code helper binding arena slots: not a kernel call of a node.
#: Kernels that only hand out scratch-arena views (not operations).


@dataclass(frozen=True)
class Entry:
    """One timed unit: a cpu kernel call or a reference operation, and its mean time."""

    step: int
    driver: str
    #: Model operation indices it implements (several for a fused cpu kernel call).
    operations: tuple[int, ...]
    #: Their types joined by ``+``, e.g. ``CONV_2D+RELU``.
    types: str
    #: The cpu kernel's name, or the operation type on the reference interpreter.
    kernel: str
    seconds: float


@dataclass(frozen=True)
class StepTime:
    """One step of the plan: its driver, operation count and mean time."""

    step: int
    driver: str
    operations: int
    seconds: float
    #: Operations of the step with no time of their own (folded, elided or fused away).
    untimed: int


@dataclass(frozen=True)
class Profile:
    """The timed units of every step, and the steps."""

    entries: tuple[Entry, ...]
    steps: tuple[StepTime, ...]
    runs: int

    @property
    def seconds(self) -> float:
        """Mean time of one run of the whole model (sum of the steps)."""
        return sum(s.seconds for s in self.steps)

    def by_type(self) -> list[tuple[str, int, float]]:
        """``(types, count, seconds)`` per operation type (fused groups as one), slowest first."""
        totals: dict[str, tuple[int, float]] = {}
        for e in self.entries:
            count, seconds = totals.get(e.types, (0, 0.0))
            totals[e.types] = (count + 1, seconds + e.seconds)
        return sorted(((t, c, s) for t, (c, s) in totals.items()), key=lambda r: -r[2])

    def render(self, top: int = 25) -> str:
        """The profile as text: steps, the ``top`` slowest units, and totals per type."""
        total = self.seconds or 1e-12
        lines = [f"profile: mean of {self.runs} runs after a warm-up, in this process (litert "
                 "steps: the step's flatbuffer in LiteRT, timed whole; cpu steps: the cpu "
                 "driver's stage-1 code, each kernel call timed — --bench runs its optimised "
                 "stage 2 once 32 executions have passed; other steps: reference kernels, per "
                 "operation); the runtime adds dispatch and transfers",
                 f"  {'step':>4}  {'driver':<12} {'ops':>5} {'ms/run':>9} {'%':>6}"]
        for s in self.steps:
            note = f"  ({s.untimed} folded or fused away)" if s.untimed else ""
            lines.append(f"  {s.step:>4}  {s.driver:<12} {s.operations:>5} "
                         f"{s.seconds * 1e3:>9.3f} {100 * s.seconds / total:>6.1f}{note}")
        lines.append(f"  total {self.seconds * 1e3:.3f} ms per run")
        slowest = sorted(self.entries, key=lambda e: -e.seconds)[:top]
        lines.append(f"slowest {len(slowest)} of {len(self.entries)} kernel calls / operations:")
        lines.append(f"  {'ms/run':>9} {'%':>6} {'step':>4}  {'driver':<10} {'kernel':<22} "
                     "operations")
        for e in slowest:
            ops = ", ".join(str(i) for i in e.operations)
            lines.append(f"  {e.seconds * 1e3:>9.3f} {100 * e.seconds / total:>6.1f} "
                         f"{e.step:>4}  {e.driver:<10} {e.kernel:<22} {e.types} [{ops}]")
        lines.append("by operation type:")
        for types, count, seconds in self.by_type():
            lines.append(f"  {seconds * 1e3:>9.3f} {100 * seconds / total:>6.1f}  {count:>4} x "
                         f"{types}")
        return "\n".join(lines)


def profile_model(model: Model, inputs: Sequence[Any], placement: PlacementReport, *,
                  runs: int = 10) -> Profile:
    """Profile ``model`` on ``inputs`` (in model input order) as placed by ``placement``."""
    values: dict[int, Array] = dict(zip(model.inputs, InputBinder(model).bind(list(inputs)),
                                        strict=True))
    entries: list[Entry] = []
    steps: list[StepTime] = []
    for step in placement.steps:
        part = outline(model, step.operations)
        timer: _StepTimer
        if step.driver == "cpu":
            timer = _CpuStep(part.model)
        elif step.driver == "litert":
            timer = _LitertStep(part.model)
        else:
            timer = _ReferenceStep(part.model)
        step_inputs = [values[i] for i in part.inputs]
        outputs = timer.run(step_inputs)  # warm-up
        timer.reset()
        started = time.perf_counter()
        for _ in range(runs):
            timer.run(step_inputs)
        elapsed = (time.perf_counter() - started) / runs
        values.update(zip(part.outputs, outputs, strict=True))
        timed: set[int] = set()
        for sub_ops, kernel, seconds in timer.units():
            parents = tuple(part.operations[i] for i in sub_ops)
            timed.update(parents)
            types = "+".join(operation_name(model.operations[i].type) for i in parents)
            entries.append(Entry(step.index, step.driver, parents, types, kernel,
                                 seconds / runs))
        steps.append(StepTime(step.index, step.driver, len(step.operations), elapsed,
                              len(set(step.operations) - timed)))
    return Profile(tuple(entries), tuple(steps), runs)


class _StepTimer:
    """Runs one outlined step and accumulates time per unit."""

    def run(self, inputs: list[Array]) -> list[Array]:
        raise NotImplementedError

    def reset(self) -> None:
        raise NotImplementedError

    def units(self) -> list[tuple[tuple[int, ...], str, float]]:
        """``(step operation indices, kernel, total seconds)`` per unit since :meth:`reset`."""
        raise NotImplementedError


class _ReferenceStep(_StepTimer):
    """The reference interpreter, timed between the calls of its per-operation hook."""

    def __init__(self, model: Model) -> None:
        self._plan = ExecutionPlan(model)
        self._order = model.run_order
        self._names = [operation_name(model.operations[i].type) for i in self._order]
        self._totals = [0.0] * len(self._order)
        self._marks: list[float] = []

    def run(self, inputs: list[Array]) -> list[Array]:
        marks = self._marks
        marks.clear()
        arrays = self._plan.binder.bind(inputs)
        marks.append(time.perf_counter())  # the hook runs between operations: first mark here
        outputs = self._plan.execute(arrays, check=lambda: marks.append(time.perf_counter()))
        marks.append(time.perf_counter())
        for k in range(len(self._order)):
            self._totals[k] += marks[k + 1] - marks[k]
        return outputs

    def reset(self) -> None:
        self._totals = [0.0] * len(self._order)

    def units(self) -> list[tuple[tuple[int, ...], str, float]]:
        return [((op,), name, seconds) for op, name, seconds
                in zip(self._order, self._names, self._totals, strict=True)]


class _LitertStep(_StepTimer):
    """The step's flatbuffer run by LiteRT in this process, timed whole (LiteRT reports no
    time per operation)."""

    def __init__(self, model: Model) -> None:
        from nnrt.drivers.litert.dispatch import LitertDispatch  # noqa: PLC0415
        from nnrt.drivers.litert.flatbuffer import write_partition  # noqa: PLC0415
        from nnrt.model.operand import dtype_of  # noqa: PLC0415

        self._dispatch = LitertDispatch()
        self._executable = self._dispatch.load(write_partition(model), "main")
        inferred = model.inferred_dims
        self._outputs = [(inferred[i], dtype_of(model.operands[i].type)) for i in model.outputs]
        self._operations = tuple(model.run_order)
        self._total = 0.0

    def run(self, inputs: list[Array]) -> list[Array]:
        outputs = [np.empty(dims, dtype) for dims, dtype in self._outputs]
        started = time.perf_counter()
        self._dispatch.invoke(self._executable, inputs, outputs)
        self._total += time.perf_counter() - started
        return outputs

    def reset(self) -> None:
        self._total = 0.0

    def units(self) -> list[tuple[tuple[int, ...], str, float]]:
        return [(self._operations, "LiteRT (whole step)", self._total)]


class _CpuStep(_StepTimer):
    """The cpu driver's stage-1 code for the step, run with every kernel call timed."""

    def __init__(self, model: Model) -> None:
        from nnrt.drivers.cpu.compiler import compile_partition  # noqa: PLC0415
        from nnrt.drivers.cpu.dispatch import CpuDispatch, CpuExecutable  # noqa: PLC0415
        from nnrt.drivers.cpu.module import Module  # noqa: PLC0415
        from nnrt.model.operand import dtype_of  # noqa: PLC0415

        part = compile_partition(model, _ENTRY)
        self._nodes = part.graph.nodes
        #: ``view`` calls the code makes before the first node (outputs stored in place).
        self._leading_views = sum(v.stored_in is not None for v in part.graph.values)
        self._dispatch = CpuDispatch()
        loaded = self._dispatch.load(Module({_ENTRY: part.program}, (_ENTRY,), part.tensors,
                                            {_ENTRY: part.scratch}), _ENTRY)
        self._calls: list[tuple[str, float]] = []
        self._executable = CpuExecutable(_ENTRY, loaded.program.with_kernels(self._timed),
                                         loaded.scratch_elements)
        inferred = model.inferred_dims
        self._outputs = [(inferred[i], dtype_of(model.operands[i].type)) for i in model.outputs]
        self._totals = [0.0] * len(self._nodes)

    def _timed(self, name: str, kernel: Callable[..., Any]) -> Callable[..., Any]:
        calls = self._calls

        def call(*args: Any) -> Any:
            started = time.perf_counter()
            result = kernel(*args)
            calls.append((name, time.perf_counter() - started))
            return result
        return call

    def run(self, inputs: list[Array]) -> list[Array]:
        outputs = [np.empty(dims, dtype) for dims, dtype in self._outputs]
        self._calls.clear()
        self._dispatch.invoke(self._executable, inputs, outputs)
        calls = [c for c in self._calls if c[0] != "pack"][self._leading_views:]
        if [name for name, _ in calls] != [node.kernel for node in self._nodes]:
            raise OpFailed("profile: the cpu code's kernel calls do not match its graph's "
                           f"nodes ({len(calls)} calls, {len(self._nodes)} nodes)")
        for k, (_, seconds) in enumerate(calls):
            self._totals[k] += seconds
        return outputs

    def reset(self) -> None:
        self._totals = [0.0] * len(self._nodes)

    def units(self) -> list[tuple[tuple[int, ...], str, float]]:
        return [(tuple(node.ops), node.kernel, seconds)
                for node, seconds in zip(self._nodes, self._totals, strict=True)
                if node.ops]
