"""Embedded backend: worker pools in this process's runtime; compile and execute on them."""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.abc import TaskGroup

from nnrt.errors import (
    BadData,
    DeadlineMissed,
    NnrtError,
    UnavailableDevice,
    Unsupported,
    first_error,
)
from nnrt.memory.source import MemorySource
from nnrt.runtime.backends.base import CompiledRef, PreparedKey, execute_body
from nnrt.runtime.backends.channel import ReplyHandler, RequestClient
from nnrt.runtime.backends.pool import WorkerPool, WorkerSlot
from nnrt.runtime.compile.caching import StepCache
from nnrt.runtime.stats import LOAD_REPORT_STALE, PoolStatistics, RuntimeStatistics

__all__ = ["BufferHandle", "EmbeddedBackend"]


@dataclass(frozen=True)
class BufferHandle:
    """Where a device buffer lives: the worker slot, the connection it was made on, its token.

    The buffer dies with that connection: once the slot's worker restarted it is gone.
    """

    slot: WorkerSlot
    client: RequestClient
    token: int

    def require_live(self) -> None:
        """Raise ``UnavailableDevice`` if the worker holding the buffer is gone."""
        if self.slot.client is not self.client or self.client.lost is not None:
            raise UnavailableDevice("the worker holding this device memory stopped; its "
                                    "contents are lost (allocate a new one)")


class EmbeddedBackend:
    """Worker pools per driver, scheduling compile and execute requests onto them."""

    def __init__(self, drivers: Sequence[str], workers: dict[str, int], max_in_flight: int,
                 cancel_grace: float = 5.0, poll_window: float | None = None,
                 threads: int | None = None) -> None:
        self.pools = {name: WorkerPool(name, workers[name], max_in_flight=max_in_flight,
                                       cancel_grace=cancel_grace, poll_window=poll_window,
                                       threads=threads)
                      for name in drivers}
        self._keys = itertools.count(1)

    async def start(self, tg: TaskGroup) -> None:
        """Start all pools' workers; a worker that cannot start raises its own error (e.g.
        ``UnavailableDevice``), not the task groups' exception groups around it."""
        try:
            async with anyio.create_task_group() as starting:
                for pool in self.pools.values():
                    starting.start_soon(pool.start, tg)
        except BaseExceptionGroup as group:
            raise first_error(group) from group

    def close(self) -> None:
        """Stop every pool (workers are reaped by their supervisors)."""
        for pool in self.pools.values():
            pool.close()

    def _pools_for(self, devices: Sequence[str] | None) -> list[WorkerPool]:
        if devices is None:
            return list(self.pools.values())
        unknown = [d for d in devices if d not in self.pools]
        if unknown:
            raise BadData(f"unknown devices {unknown}; this runtime has {list(self.pools)}")
        return [self.pools[d] for d in devices]

    async def support(self, driver: str, wire_model: dict[str, Any], priority: int,
                      deadline: float | None, memories: Sequence[MemorySource] = ()
                      ) -> dict[str, Any]:
        """``driver``'s ``supported`` answer for a model (flags, reasons, partition indices)."""
        pool = self._pools_for([driver])[0]
        slot = await pool.acquire(priority, deadline)
        ok = False
        try:
            for memory in memories:
                await slot.ensure_mapped(memory)
            reply = await slot.request("supported", {"model": wire_model})
            ok = True
            return reply
        finally:
            pool.release(slot, ok=ok)

    async def compile(self, wire_model: dict[str, Any], preference: int, priority: int,
                      devices: Sequence[str] | None, deadline: float | None,
                      memories: Sequence[MemorySource] = (), *,
                      compiled: list[Any] | None = None,
                      cache: StepCache | None = None, name: str | None = None) -> CompiledRef:
        """Prepare on the first device whose driver supports every operation.

        ``memories`` hold the model's constants by reference; each worker maps them before it
        prepares the model. ``compiled`` is ahead-of-time bytecode (``[[pool, offset, length],
        entry point, stamp]``) for the driver to load instead of compiling. ``name`` (the
        compiled model's, for a service's metrics) is not needed here.
        """
        body = {"model": wire_model, "preference": preference, "priority": priority}
        if compiled is not None:
            body["compiled"] = compiled
        reasons = []
        pools_for = self._pools_for(devices)
        for pool in pools_for:
            slot = await pool.acquire(priority, deadline)
            ok = False
            try:
                key: PreparedKey = (next(self._keys), body, tuple(memories), cache)
                await slot.ensure_prepared(key)  # the driver refuses what it cannot run
                ok = True
                pool.prepared += 1
                return CompiledRef(pool.driver, key,
                                   source="aot" if compiled is not None else "compiled")
            except Unsupported as exc:
                ok = True  # answered properly; try the next device
                if len(pools_for) == 1:
                    raise
                reasons.append(f"{pool.driver}: {exc}")
            finally:
                pool.release(slot, ok=ok)
        raise Unsupported("no device can run the whole model: " + "; ".join(reasons))

    async def execute(self, ref: CompiledRef, inputs: list[Any], output_sizes: list[int] | None,
                      priority: int, deadline: float | None, *,
                      outputs: list[Any] | None = None,
                      memories: Collection[MemorySource] = (),
                      buffer: BufferHandle | None = None) -> dict[str, Any]:
        """Run one execution of ``ref`` on the least-loaded worker of its driver.

        ``outputs`` are the output references of the request (None: all inline); ``memories``
        the memories its references name, mapped on the chosen worker first. A request naming
        a device memory (``device``) runs on the worker holding it.
        """
        pool = self.pools[ref.driver]
        if buffer is not None:
            buffer.require_live()
            slot = buffer.slot
            slot.in_flight += 1  # affinity: that worker, whatever its load
        else:
            slot = pool.try_acquire() or await pool.acquire(priority, deadline)
        ok = False
        try:
            handle = slot.handle_of(ref.key[0])
            if handle is None and buffer is None:  # another worker may have it already
                ready = pool.ready_slot(ref.key[0], slot)
                if ready is not None:
                    pool.prepare_soon(slot, ref.key)
                    slot = ready
                    handle = slot.handle_of(ref.key[0])
            if handle is None:
                handle = await slot.ensure_prepared(ref.key)
            for memory in memories:
                await slot.ensure_mapped(memory)
            body = execute_body(handle, inputs, priority, deadline, output_sizes, outputs)
            client = slot.require_client()
            if deadline is None:
                reply = await client.request("execute", body)
            else:
                try:
                    with anyio.fail_after(max(deadline - time.monotonic(), 0)):
                        reply = await client.request("execute", body)
                except TimeoutError:
                    raise DeadlineMissed("the execution did not finish before its deadline"
                                         ) from None
            ok = True
            return reply
        finally:
            pool.release(slot, ok=ok)

    def execute_now(self, ref: CompiledRef, inputs: list[Any], output_sizes: list[int] | None,
                    priority: int, deadline: float | None, outputs: list[Any] | None,
                    memories: Collection[MemorySource], handler: ReplyHandler
                    ) -> tuple[WorkerSlot, int] | None:
        """Send one execution of ``ref`` to a worker without waiting for anything, its reply
        to go to ``handler``: when a worker of its driver has room right now, has the model
        prepared and every one of ``memories`` mapped (asyncio only). The worker drops it if
        it comes to it after ``deadline``; answering it at the deadline is the caller's.
        Returns the slot, whose capacity the request holds until :meth:`WorkerPool.release`,
        and the request's id on its connection; None when something must be awaited first
        (use :meth:`execute`)."""
        pool = self.pools[ref.driver]
        slot = pool.try_acquire()
        if slot is None:
            return None
        handle = slot.handle_of(ref.key[0])
        client = slot.client
        if handle is None or client is None or any(m.id not in slot.sharing for m in memories):
            pool.give_back(slot)
            return None
        body = execute_body(handle, inputs, priority, deadline, output_sizes, outputs)
        request_id = client.send_now("execute", body, handler)
        if request_id is None:
            pool.give_back(slot)
            return None
        return slot, request_id

    # -- device memories -----------------------------------------------------------------------

    async def allocate(self, driver: str, dims: tuple[int, ...] | None,
                       roles: Sequence[tuple[CompiledRef, str, int, float]]) -> BufferHandle:
        """Allocate a device buffer on ``driver``'s home worker (where all its buffers live).

        The roles' models are prepared there first. A refusal by the driver is ``OpFailed``.
        """
        slot = self.pools[driver].home()
        client = slot.client
        if client is None or client.lost is not None:
            raise UnavailableDevice(f"no {driver} worker is running")
        wire_roles = []
        for ref, io, index, frequency in roles:
            handle = slot.handle_of(ref.key[0]) or await slot.ensure_prepared(ref.key)
            wire_roles.append([handle, io, index, float(frequency)])
        body: dict[str, Any] = {"roles": wire_roles}
        if dims is not None:
            body["dims"] = list(dims)
        reply = await client.request("allocate", body)
        token = reply.get("token")
        if token.__class__ is not int:
            raise UnavailableDevice("malformed allocate reply from the worker")
        return BufferHandle(slot, client, token)

    async def buffer_request(self, buffer: BufferHandle, verb: str, body: dict[str, Any],
                             memories: Collection[MemorySource] = ()) -> dict[str, Any]:
        """A ``copy_from`` / ``copy_to`` / ``free`` on the worker holding ``buffer``."""
        buffer.require_live()
        for memory in memories:
            await buffer.slot.ensure_mapped(memory)
        return await buffer.client.request(verb, {"token": buffer.token, **body})

    def count_fallback(self, driver: str) -> None:
        """Record an allocation the driver refused and shared memory served instead."""
        self.pools[driver].allocate_fallbacks += 1

    def unmap(self, pool_id: int) -> None:
        """Make every worker that mapped ``pool_id`` let go of it (no reply awaited)."""
        for pool in self.pools.values():
            for slot in pool.slots:
                slot.unmap(pool_id)

    async def release(self, ref: CompiledRef) -> None:
        """Free ``ref`` on every worker that prepared it."""
        if ref.released:
            return
        ref.released = True
        pool = self.pools[ref.driver]
        for slot in pool.slots:
            handle = slot.forget(ref.key[0])
            if handle is not None and slot.alive:
                with contextlib.suppress(NnrtError):  # a worker that went away frees nothing
                    await slot.request("release", {"handle": handle})

    async def refresh_statistics(self) -> RuntimeStatistics:
        """The statistics (in this process they are always fresh)."""
        return self.statistics()

    def statistics(self) -> RuntimeStatistics:
        """A snapshot of every pool."""
        now = time.monotonic()
        return RuntimeStatistics({
            name: PoolStatistics(name, len(p.slots), sum(s.alive for s in p.slots),
                                 p.queue_depth, p.in_flight, p.completed, p.failed, p.restarts,
                                 p.allocate_fallbacks, p.cache_hits, p.cache_misses,
                                 p.cache_load_failures, p.prepared, p.packed is not None,
                                 tuple(_worker_load(s, now) for s in p.slots),
                                 tuple(s.in_flight for s in p.slots))
            for name, p in self.pools.items()})

    def device_names(self) -> list[str]:
        """The pools' names (what ``devices=`` names), in order."""
        return list(self.pools)

    def device_info(self, device: str) -> Any:
        """The driver info of the pool named ``device`` (None if unknown or not started)."""
        pool = self.pools.get(device)
        return pool.info if pool is not None else None

    def devices(self) -> list[Any]:
        """Driver info of every pool."""
        return [p.info for p in self.pools.values() if p.info is not None]


def _worker_load(slot: WorkerSlot, now: float) -> float:
    """The CPUs ``slot``'s worker keeps busy (see ``PoolStatistics.worker_load``)."""
    if now - slot.reported_at <= LOAD_REPORT_STALE:
        return slot.busy_fraction
    return 1.0 if slot.load else 0.0  # idle (no reports), or inside one long execute
