"""Running a multi-step execution plan: steps in dependency order, independent ones at once.

Each step (:class:`~nnrt.runtime.step.Step`) is a model prepared on its driver's workers. A
step starts as soon as the steps it reads from are done, so independent steps run concurrently
on different workers.
Intermediates pass between steps the way any tensor travels: large ones are written by the
producing worker into the runtime's shared arena and read from there by the consuming worker
(zero-copy: the client only hands over the reference); small ones (up to 64 KiB) inline. The
first failure — a worker dying mid-plan, a deadline — cancels the steps still running and is
raised as it is (e.g. ``UnavailableDevice``); nothing waits forever.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio
import numpy as np

from nnrt.errors import BadData, DeadlineMissed
from nnrt.runtime.buffers import DeviceMemory
from nnrt.runtime.transfer import deliver

if TYPE_CHECKING:
    from nnrt.model.binding import InputBinder, Inputs
    from nnrt.runtime.compile.plan import Plan
    from nnrt.runtime.step import Step

__all__ = ["PlanRunner", "run_plan"]

Array = np.ndarray[Any, Any]


class PlanRunner:
    """Executes a plan's steps (what a compiled model split across drivers runs)."""

    __slots__ = ("binder", "plan", "steps")

    def __init__(self, plan: Plan, steps: Sequence[Step], binder: InputBinder) -> None:
        self.plan = plan
        self.steps = steps
        self.binder = binder

    async def execute(self, inputs: Inputs, outputs: Sequence[Any] | None = None,
                      timeout: float | None = None, copy: bool = False) -> list[Array]:
        """Run the plan once (see :meth:`nnrt.CompiledModel.execute` for the arguments)."""
        return await run_plan(self.plan, self.steps, self.binder, inputs, outputs, timeout,
                              copy)


async def run_plan(plan: Plan, steps: Sequence[Step], binder: InputBinder, inputs: Inputs,
                   outputs: Sequence[Any] | None, timeout: float | None,
                   copy: bool) -> list[Array]:
    """Execute ``plan`` (prepared as ``steps``) once; returns the model outputs.

    ``binder`` checks the inputs against the whole model's input operands.
    """
    values = _values(inputs) if isinstance(inputs, list | tuple) else None
    if _has_buffer(values if values is not None else inputs, outputs):
        raise BadData("device memories cannot be used with a model split into several steps "
                      "(see compiled.placement()); use shared memory or a one-driver compile")
    arrays = binder.bind(inputs)
    deadline = None if timeout is None else time.monotonic() + max(float(timeout), 0.0)
    results: dict[tuple[int, int], Array] = {}
    done = {step.index: anyio.Event() for step in plan.steps}
    failures: list[BaseException] = []

    async def run(index: int) -> None:
        step = plan.steps[index]
        feed: list[Any] = []
        try:
            for dependency in step.depends:
                await done[dependency].wait()
            feed = [arrays[s.index] if s.step is None else results[(s.step, s.index)]
                    for s in step.sources]
            remaining = None
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise DeadlineMissed("the execution did not finish before its deadline "
                                         f"(step {index} of {len(plan.steps)} not started)")
            out = await steps[index].execute(feed, timeout=remaining)
            for j, value in enumerate(out):
                results[(index, j)] = value
            done[index].set()
        except Exception as exc:
            failures.append(exc)
            tg.cancel_scope.cancel()
        finally:
            feed.clear()  # the traceback keeps this frame: let go of shared-memory views now

    async with anyio.create_task_group() as tg:
        for step in plan.steps:
            tg.start_soon(run, step.index)
    if failures:
        results.clear()
        error = failures[0]
        failures.clear()  # no cycle failures -> error -> traceback -> frame -> failures
        try:
            raise error
        finally:
            del error
    final = [arrays[s.index] if s.step is None else results[(s.step, s.index)]
             for s in plan.outputs]
    if outputs is not None:
        return _deliver(final, outputs)
    return [np.array(a) for a in final] if copy else final


def _values(inputs: Sequence[Any]) -> list[Any]:
    return list(inputs)


def _has_buffer(inputs: Any, outputs: Sequence[Any] | None) -> bool:
    given = inputs.values() if isinstance(inputs, dict) else inputs
    return any(isinstance(v, DeviceMemory) for v in given) or (
        outputs is not None and any(isinstance(v, DeviceMemory) for v in outputs))


def _deliver(final: list[Array], outputs: Sequence[Any]) -> list[Array]:
    """Copy each result into the caller's buffer for it (None: return the result as it is)."""
    if not isinstance(outputs, list | tuple) or len(outputs) != len(final):
        raise BadData(f"outputs must be a list of {len(final)} buffers (None for an output to "
                      "return)")
    shapes = [value.shape for value in final]
    return [value if target is None else deliver(value, target, f"output {j}", shapes=shapes)
            for j, (target, value) in enumerate(zip(outputs, final, strict=True))]
