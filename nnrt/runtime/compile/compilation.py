"""Compiling a model across drivers: ask, partition, outline, prepare each step, fall back.

``compile_model`` asks every candidate driver which operations it supports (the ``supported``
verb, answered by a worker), lets the partitioner assign operations and group them into the
largest acyclic partitions, and prepares each partition (outlined into a model of its own) on
its driver, concurrently. A partition whose prepare fails falls back alone: ahead-of-time
bytecode that does not load is compiled instead, and a partition its driver cannot compile runs
on the fallback driver — the rest of the model stays where it was placed. A model that lands
in one partition is prepared whole (a one-step plan goes straight through).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from nnrt.cache.directory import CacheDirectory
from nnrt.errors import NnrtError, OpFailed, Unsupported
from nnrt.hal.info import PerformanceInfo
from nnrt.memory import Memory
from nnrt.model.aot import DispatchRecord
from nnrt.model.model import Model
from nnrt.model.operation import operation_name
from nnrt.model.wire import model_to_wire
from nnrt.runtime.backends.base import CompiledRef
from nnrt.runtime.compile.caching import StepCache, step_token
from nnrt.runtime.compile.constants import PlacedConstants
from nnrt.runtime.compile.partitioner import (
    STEP_COST,
    DriverSupport,
    Partitioning,
    partition_model,
)
from nnrt.runtime.compile.placement import OperationReport, PlacementReport, StepReport
from nnrt.runtime.compile.plan import Plan, build_plan

if TYPE_CHECKING:
    from nnrt.runtime.backends.base import Backend

__all__ = ["FALLBACK_DRIVER", "MANY_PARTITIONS", "Compilation", "PartitionWarning",
           "compile_model"]

log = logging.getLogger("nnrt.runtime")

#: The driver that runs every operation no other driver takes.
FALLBACK_DRIVER = "reference"
#: More partitions than this draw a :class:`PartitionWarning`.
MANY_PARTITIONS = 8


class PartitionWarning(UserWarning):
    """A model split into many partitions: every boundary costs a round trip."""


@dataclass
class Compilation:
    """What ``compile_model`` made: one ref per step (a single ref: no plan) and the report."""

    refs: list[CompiledRef]
    plan: Plan | None
    report: PlacementReport


@dataclass(frozen=True)
class _Request:
    backend: Backend
    model: Model
    placed: PlacedConstants
    preference: int
    priority: int
    deadline: float | None
    fallback: str | None
    infos: dict[str, Any]
    cache: tuple[CacheDirectory, bytes] | None = None
    step_cost: float = STEP_COST
    #: The compiled model's name, sent to a shared service (its metrics name the model so).
    name: str | None = None

    def step_cache(self, driver: str, operations: Sequence[int]) -> StepCache | None:
        """The cache of a step on ``driver`` (None without cache info)."""
        if self.cache is None:
            return None
        directory, app_token = self.cache
        info = self.infos.get(driver)
        name, version = (info.name, info.version) if info is not None else (driver, "")
        token = step_token(app_token, operations, name, version, self.preference,
                           self.priority)
        return StepCache(directory, token, {"operations": len(operations)})


async def compile_model(backend: Backend, model: Model, placed: PlacedConstants, *,
                        preference: int, priority: int, devices: Sequence[str],
                        deadline: float | None, allow_fallback: bool,
                        cache: tuple[CacheDirectory, bytes] | None = None,
                        step_cost: float = STEP_COST, name: str | None = None) -> Compilation:
    """Partition ``model`` over ``devices`` (in order of preference for ties) and prepare it.

    ``cache`` (a directory and the app token) caches every step's compiled model;
    ``step_cost`` is the placement cost model's price of a step (see
    :func:`~nnrt.runtime.compile.partitioner.consolidate`); ``name`` is the compiled model's,
    for a shared service's metrics (a step's is ``name/step<i>``).
    """
    infos = _infos(backend, [*devices, FALLBACK_DRIVER])
    fallback = FALLBACK_DRIVER if allow_fallback else None
    request = _Request(backend, model, placed, preference, priority, deadline, fallback, infos,
                       cache, step_cost, name)
    records = _usable_records(model, devices, infos)
    if list(devices) == [FALLBACK_DRIVER] and not records:
        ref = await _prepare_whole(request, FALLBACK_DRIVER)
        ops = tuple(model.run_order)
        report = PlacementReport(
            tuple(OperationReport(i, operation_name(model.operations[i].type),
                                  FALLBACK_DRIVER, 0, {})
                  for i in range(len(model.operations))),
            (StepReport(0, FALLBACK_DRIVER, ops, ref.source),))
        return Compilation([ref], None, report)
    supports = await _supports(request, devices)
    supports = _pin_records(model, supports, records)
    partitioning = partition_model(model, supports, request.preference, fallback=fallback,
                                   step_cost=request.step_cost)
    count = len(partitioning.partitions)
    if count > MANY_PARTITIONS:
        warnings.warn(f"the model splits into {count} partitions over "
                      f"{len({p.driver for p in partitioning.partitions})} drivers; every "
                      "boundary between them costs a round trip (see compiled.placement())",
                      PartitionWarning, stacklevel=3)
    if count == 1 and not records:
        driver = partitioning.partitions[0].driver
        notes: list[str | None] = [None]
        try:
            refs = [await _prepare_whole(request, driver)]
        except (Unsupported, OpFailed) as exc:
            if fallback is None or driver == fallback:
                raise
            log.warning("compile on %s failed (%s); falling back to %s", driver, exc, fallback)
            refs = [await _prepare_whole(request, fallback)]
            notes = [f"{driver} failed to compile it: {exc}"]
        return Compilation(refs, None, _report(partitioning, refs, notes))
    plan = build_plan(model, partitioning)
    refs_or_none: list[CompiledRef | None] = [None] * len(plan.steps)
    notes = [None] * len(plan.steps)
    failures: list[BaseException] = []

    async def prepare(index: int) -> None:
        try:
            refs_or_none[index], notes[index] = await _prepare_step(request, plan, index,
                                                                    records)
        except Exception as exc:
            failures.append(exc)
            tg.cancel_scope.cancel()

    async with anyio.create_task_group() as tg:
        for index in range(len(plan.steps)):
            tg.start_soon(prepare, index)
    refs = [r for r in refs_or_none if r is not None]
    if failures or len(refs) != len(plan.steps):
        for ref in refs:
            await backend.release(ref)
        if failures:
            _raise_first(failures)
        raise OpFailed("compile: a step was not prepared")  # pragma: no cover - cancelled
    return Compilation(refs, plan, _report(partitioning, refs, notes))


def _infos(backend: Backend, devices: Sequence[str]) -> dict[str, Any]:
    """Device name -> its driver's info (a device named ``module:factory`` has another name
    in its info than in the runtime)."""
    found = {}
    for device in devices:
        info = backend.device_info(device)
        if info is not None:
            found[device] = info
    return found


async def _supports(request: _Request, devices: Sequence[str]) -> list[DriverSupport]:
    """Every device's answer, asked concurrently."""
    wire = model_to_wire(request.model, request.placed.place)
    answers: dict[str, DriverSupport] = {}
    count = len(request.model.operations)

    failures: list[BaseException] = []

    async def ask(device: str) -> None:
        try:
            reply = await request.backend.support(device, wire, request.priority,
                                                  request.deadline, request.placed.memories)
            info = request.infos.get(device)
            performance = info.performance if info is not None else PerformanceInfo()
            answers[device] = _parse_support(device, reply, count, performance)
        except Exception as exc:  # the first failure is raised as it is, not in a group
            failures.append(exc)
            tg.cancel_scope.cancel()

    async with anyio.create_task_group() as tg:
        for device in devices:
            tg.start_soon(ask, device)
    if failures:
        _raise_first(failures)
    return [answers[d] for d in devices]


def _raise_first(failures: list[BaseException]) -> None:
    """Raise the first of ``failures`` (and let go of the list: no reference cycle through
    the traceback's frames)."""
    error = failures[0]
    failures.clear()
    try:
        raise error
    finally:
        del error


def _parse_support(device: str, reply: dict[str, Any], count: int,
                   performance: PerformanceInfo) -> DriverSupport:
    """A worker's ``supported`` reply, checked (it comes from another process)."""
    flags, reasons, groups = reply.get("supported"), reply.get("reasons", []), reply.get(
        "groups", [])
    if not (isinstance(flags, list) and len(flags) == count
            and all(f.__class__ is bool for f in flags)
            and isinstance(reasons, list) and isinstance(groups, list)
            and all(isinstance(r, list) and len(r) == 2 and r[0].__class__ is int
                    and 0 <= r[0] < count and isinstance(r[1], str) for r in reasons)
            and all(isinstance(g, list) and len(g) == 2 and g[0].__class__ is int
                    and 0 <= g[0] < count and g[1].__class__ is int and g[1] >= 0
                    for g in groups)):
        raise OpFailed(f"driver {device}: malformed supported reply")
    return DriverSupport(device, flags, dict((i, r) for i, r in reasons),
                         dict((i, g) for i, g in groups), performance)


def _usable_records(model: Model, devices: Sequence[str], infos: dict[str, Any]
                    ) -> list[tuple[str, DispatchRecord]]:
    """The model's ahead-of-time partitions whose driver is among ``devices``, each with the
    device that runs it."""
    aot = model.aot
    if aot is None:
        return []
    by_name: dict[str, str] = {}
    for device in devices:
        if device in infos:
            by_name.setdefault(infos[device].name, device)
    usable = []
    for record in aot.dispatches:
        runner = by_name.get(record.driver)
        if runner is not None:
            usable.append((runner, record))
        else:
            log.info("AOT partition for %s: driver not available here; its operations are "
                     "placed like any others", record.driver)
    return usable


#: Partition indices given to ahead-of-time partitions (above any a plugin would use).
_AOT_GROUP = 1 << 30


def _pin_records(model: Model, supports: list[DriverSupport],
                 records: Sequence[tuple[str, DispatchRecord]]) -> list[DriverSupport]:
    """Supports where each AOT partition's operations go to its device, as one group."""
    if not records:
        return supports
    owner: dict[int, tuple[int, str]] = {}
    for r, (device, record) in enumerate(records):
        for op in record.operations:
            owner[op] = (r, device)
    aot_devices = {device for device, _ in records}
    pinned = []
    for support in supports:
        flags = list(support.supported)
        reasons = dict(support.reasons)
        groups = dict(support.groups)
        for op, (r, device) in owner.items():
            if support.driver == device:
                flags[op] = True
                groups[op] = _AOT_GROUP + r
            else:
                flags[op] = False
                reasons[op] = f"compiled ahead of time for {device}"
        for op in range(len(flags)):  # the AOT driver runs only its AOT partitions
            if op not in owner and support.driver in aot_devices and flags[op]:
                flags[op] = False
                reasons[op] = "not in this driver's ahead-of-time partitions"
        pinned.append(DriverSupport(support.driver, flags, reasons, groups,
                                    support.performance))
    return pinned


async def _prepare_whole(request: _Request, driver: str) -> CompiledRef:
    wire = model_to_wire(request.model, request.placed.place)
    cache = request.step_cache(driver, range(len(request.model.operations)))
    return await request.backend.compile(wire, request.preference, request.priority, [driver],
                                         request.deadline, request.placed.memories, cache=cache,
                                         name=request.name)


async def _prepare_step(request: _Request, plan: Plan, index: int,
                        records: Sequence[tuple[str, DispatchRecord]]
                        ) -> tuple[CompiledRef, str | None]:
    """Prepare step ``index``: its AOT bytecode, else compiled, else on the fallback driver."""
    step = plan.steps[index]
    outlined = step.outlined
    placed = request.placed

    def place(k: int) -> tuple[int, int, int] | None:
        return placed.refs.get(outlined.operands[k])

    wire = model_to_wire(outlined.model, place)
    backend = request.backend
    memories: list[Any] = list(placed.memories)
    ops = set(outlined.operations)
    record = next((r for d, r in records if d == step.driver and set(r.operations) == ops),
                  None)
    note = None
    name = None if request.name is None else f"{request.name}/step{index}"
    if record is not None:
        compiled, memory = _compiled_field(request.model, record)
        try:
            ref = await backend.compile(wire, request.preference, request.priority,
                                        [step.driver], request.deadline, [*memories, memory],
                                        compiled=compiled, name=name)
            return ref, None
        except (Unsupported, OpFailed) as exc:
            note = f"ahead-of-time bytecode not loaded ({exc}); compiled instead"
            log.warning("step %d on %s: %s", index, step.driver, note)
    try:
        ref = await backend.compile(wire, request.preference, request.priority, [step.driver],
                                    request.deadline, memories,
                                    cache=request.step_cache(step.driver, outlined.operations),
                                    name=name)
        return ref, note
    except (Unsupported, OpFailed) as exc:
        fallback = request.fallback
        if fallback is None or step.driver == fallback:
            raise
        note = f"{step.driver} failed to compile it ({exc}); runs on {fallback}"
        log.warning("step %d: %s", index, note)
    ref = await backend.compile(wire, request.preference, request.priority, [fallback],
                                request.deadline, memories,
                                cache=request.step_cache(fallback, outlined.operations),
                                name=name)
    return ref, note


def _compiled_field(model: Model, record: DispatchRecord) -> tuple[list[Any], Memory]:
    """The prepare request's ``compiled`` field for an AOT record, and the pool it names."""
    aot = model.aot
    if aot is None:  # pragma: no cover - records come from model.aot
        raise NnrtError("no AOT information")
    location = aot.modules[record.module]
    memory = location.memory
    if not isinstance(memory, Memory):
        raise OpFailed("AOT bytecode must live in an nnrt.Memory (load the file with "
                       "nnrt.load)")
    return ([[memory.id, location.offset, location.length], record.entry_point,
             record.stamp.to_wire()], memory)


def _report(partitioning: Partitioning, refs: Sequence[CompiledRef],
            notes: Sequence[str | None]) -> PlacementReport:
    """The placement report, with the drivers steps actually ended up on."""
    steps = []
    for index, (partition, ref) in enumerate(zip(partitioning.partitions, refs, strict=True)):
        steps.append(StepReport(index, ref.driver, partition.operations, ref.source,
                                notes[index]))
    operations = []
    for placement in partitioning.placement:
        step = steps[placement.partition]
        rejected = dict(placement.rejected)
        if step.driver != placement.driver:
            rejected[placement.driver] = step.note or "failed to compile"
        operations.append(OperationReport(placement.operation, placement.type_name,
                                          step.driver, placement.partition, rejected))
    return PlacementReport(tuple(operations), tuple(steps))
