"""Worker pools: one per driver, N worker processes, bounded in-flight, priority dispatch.

A slot supervises one worker process: it spawns it, says hello, serves requests through a
``RequestClient``, and when the worker dies (even by SIGKILL) it fails that worker's in-flight
requests with ``UnavailableDevice``, reaps it and starts a new one. Prepared models are
(re-)prepared on a worker lazily, the first time a request for them is routed there.

Routing: a request goes to the least-loaded worker with room, except while the pool *packs*
light traffic onto its first worker (:mod:`nnrt.runtime.backends.steering`, which the pool's
steering task keeps deciding by trying both): then the first worker takes every request whose wait
there stays short, as its load reports (:mod:`nnrt.worker.load`) tell.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import time
from collections.abc import Callable
from typing import Any

import anyio
from anyio.abc import TaskGroup

from nnrt.errors import (
    BadData,
    CacheError,
    DeadlineMissed,
    NnrtError,
    ResourceExhausted,
    UnavailableDevice,
)
from nnrt.hal.base import MAX_CACHE_FILES, DriverInfo
from nnrt.ipc.messages import PROTOCOL_VERSION
from nnrt.memory.source import MemorySource
from nnrt.runtime.backends.base import PreparedKey
from nnrt.runtime.backends.channel import FramedSocket, RequestClient
from nnrt.runtime.backends.process import WorkerProcess
from nnrt.runtime.backends.sharing import MemorySharing
from nnrt.runtime.backends.steering import MIN_COMPLETIONS, SETTLE, WINDOW, Steering, pack_limit
from nnrt.runtime.compile.caching import StepCache

__all__ = ["DEFAULT_MAX_IN_FLIGHT", "DEFAULT_MAX_QUEUE", "PreparedKey", "WorkerPool",
           "WorkerSlot"]

log = logging.getLogger("nnrt.runtime")

#: Failed starts in a row, on every slot, after which requests fail instead of waiting.
MAX_START_FAILURES = 3

#: Requests that may wait for a worker of one driver (beyond: ``ResourceExhausted``).
DEFAULT_MAX_QUEUE = 10_000

#: Requests sent to one worker and not yet answered, at most, by default. Requests beyond it
#: wait in the pool's priority queue, which costs the client a task switch each: with 64 tiny
#: requests in flight on one worker, a bound of 16 gave ~70k executes/s and 64 ~125k.
DEFAULT_MAX_IN_FLIGHT = 64

#: A compiled model as the pool knows it: (key, prepare request body, the pools holding its
#: constants — mapped on a worker before the model is prepared there).


class WorkerSlot:
    """One worker position of a pool; survives its worker process across restarts."""

    def __init__(self, pool: WorkerPool, index: int) -> None:
        self.pool = pool
        self.index = index
        self.client: RequestClient | None = None
        self.process: WorkerProcess | None = None
        self.info: DriverInfo | None = None
        #: How many (model, data) cache files the driver wants (from its hello).
        self.cache_files: tuple[int, int] = (0, 0)
        self.in_flight = 0
        self.restarts = 0
        #: Consecutive failed attempts to start a worker (0 while one is serving).
        self.failures = 0
        self._handles: dict[int, int] = {}
        self._preparing: dict[int, anyio.Event] = {}
        #: The pools shared with the current worker.
        self.sharing = MemorySharing()
        #: CPU seconds per execute in the worker's last load report that ran executes (0: no
        #: report yet), and how many requests in flight it may hold and take one more while the
        #: pool packs (:func:`~nnrt.runtime.backends.steering.pack_limit`).
        self.service_time = 0.0
        self.pack_limit = 0
        #: Executes this slot's workers said they ran (load reports; all workers so far).
        self.executes = 0

    def on_load_report(self, span: float, busy: float, executes: int) -> None:
        """Take a load report of this slot's worker (``RequestClient.on_load_report``)."""
        if executes:
            self.executes += executes
            self.service_time = busy / executes
            self.pack_limit = pack_limit(self.service_time, self.pool.max_in_flight)

    @property
    def alive(self) -> bool:
        """Whether a worker is connected and ready."""
        return self.client is not None and self.client.lost is None

    @property
    def load(self) -> int:
        """Requests the worker is busy with: in flight plus abandoned but not yet stopped."""
        client = self.client
        return self.in_flight + (len(client.abandoned) if client is not None else 0)

    def stuck_since(self) -> float | None:
        """When the oldest request the worker has not stopped after a cancel was abandoned."""
        client = self.client
        if client is None or not client.abandoned:
            return None
        return min(client.abandoned.values())

    async def supervise(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        """Run workers for this slot until the pool closes, restarting them when they die."""
        started: list[bool] = []  # set once task_status.started() ran: from then on, never raise

        def on_started() -> None:
            if not started:
                started.append(True)
                task_status.started()

        while not self.pool.closing:
            try:
                await self._serve_one(on_started)
                self.failures = 0
            except Exception as exc:
                if not started:  # the first worker could not start: the runtime says so
                    raise
                self.failures += 1
                log.warning("worker %s[%d] failed to start: %s", self.pool.driver, self.index,
                            _root_cause(exc))
                self.pool.wake()  # waiting requests fail if no worker can be started
                await anyio.sleep(min(0.05 * 2**self.failures, 2.0))
            if not self.pool.closing:
                self.restarts += 1
                self.pool.restarts += 1

    async def _serve_one(self, on_started: Callable[[], None]) -> None:
        process = await WorkerProcess.spawn(self.pool.driver, self.pool.poll_window,
                                            self.pool.threads)
        client = RequestClient(FramedSocket(process.sock))
        client.on_load_report = self.on_load_report
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.run)
                hello = await client.request(
                    "hello", {"protocol": PROTOCOL_VERSION, "client": "nnrt", "pid": os.getpid(),
                              "load_reports": True})
                self.info = DriverInfo.from_wire(hello.get("driver"))
                self.cache_files = _cache_files(hello.get("cache_files"), self.info.name)
                self._handles.clear()
                self.process, self.client = process, client
                self.pool.wake()
                on_started()
        finally:
            self.client = None
            self.in_flight_lost()
            await process.aclose()

    def in_flight_lost(self) -> None:
        """Forget per-worker state after the worker is gone (its successor has reported
        nothing yet: no packing onto it until it does)."""
        self._handles.clear()
        self.service_time, self.pack_limit = 0.0, 0
        self.sharing.reset()
        for event in self._preparing.values():
            event.set()
        self._preparing.clear()

    async def ensure_mapped(self, pool: MemorySource) -> None:
        """Share ``pool`` with this slot's worker unless it has it already (once per worker)."""
        await self.sharing.ensure(self.require_client(), pool)

    def unmap(self, pool_id: int) -> None:
        """Tell the worker to let go of ``pool_id`` (no reply awaited); no-op if not shared."""
        self.sharing.unmap(self.client, pool_id)

    async def ensure_prepared(self, key: PreparedKey) -> int:
        """The worker-side handle of ``key``, preparing it on this worker first if needed."""
        model_key, body, pools, cache = key
        while True:
            handle = self._handles.get(model_key)
            if handle is not None:
                return handle
            event = self._preparing.get(model_key)
            if event is None:
                break
            await event.wait()
        for pool in pools:
            await self.ensure_mapped(pool)
        client = self.require_client()
        event = anyio.Event()
        self._preparing[model_key] = event
        try:
            if cache is not None and self.pool.cache_files != (0, 0):
                reply = await self._prepare_cached(client, body, cache)
            else:
                reply = await client.request("prepare", body)
            handle = reply.get("handle")
            if not isinstance(handle, int) or isinstance(handle, bool):
                raise UnavailableDevice("worker returned no handle for prepare")
            if self.client is client:
                self._handles[model_key] = handle
            return handle
        finally:
            self._preparing.pop(model_key, None)
            event.set()

    async def _prepare_cached(self, client: RequestClient, body: dict[str, Any],
                              cache: StepCache) -> dict[str, Any]:
        """Prepare with the compilation cache: a hit loads it, a miss (or a load the driver
        rejects: counted and logged, never a compile failure) compiles and saves it.

        The entry's file lock is taken, and its files committed, in a worker thread: another
        process compiling the same step must not freeze this event loop. A cache that cannot
        be opened (busy past the lock timeout, unwritable) is skipped: a plain prepare."""
        pool = self.pool
        counts = pool.cache_files
        for attempt in ("load", "save"):
            try:
                entry = await anyio.to_thread.run_sync(cache.open, counts, pool.info)
            except CacheError as exc:
                log.warning("%s: compilation cache unavailable (%s); compiling without it",
                            pool.driver, exc)
                return await client.request("prepare", body)
            try:
                if entry.hit and attempt == "load":
                    try:
                        reply = await client.request(
                            "prepare", cache.body(body, entry, hit=True), entry.files.all)
                    except UnavailableDevice:
                        raise
                    except NnrtError as exc:
                        pool.cache_load_failures += 1
                        log.warning("%s: the compilation cache for token %s… was rejected "
                                    "(%s); compiling again", pool.driver,
                                    cache.token.hex()[:12], exc)
                        await anyio.to_thread.run_sync(entry.discard)
                        continue
                    await anyio.to_thread.run_sync(entry.touch)
                    pool.cache_hits += 1
                    return reply
                if entry.hit:  # saved by another process meanwhile: compile, do not clobber
                    return await client.request("prepare", body)
                reply = await client.request("prepare", cache.body(body, entry, hit=False),
                                             entry.files.all)
                await anyio.to_thread.run_sync(entry.commit)
                pool.cache_misses += 1
                return reply
            finally:
                entry.close()
        raise AssertionError("unreachable")  # pragma: no cover

    async def request(self, verb: str, body: dict[str, Any]) -> dict[str, Any]:
        """A request to this slot's current worker."""
        return await self.require_client().request(verb, body)

    def handle_of(self, model_key: int) -> int | None:
        """This worker's handle for ``model_key`` if it is prepared here already."""
        return self._handles.get(model_key)

    def forget(self, model_key: int) -> int | None:
        """Drop and return this worker's handle for ``model_key``, if any."""
        return self._handles.pop(model_key, None)

    def require_client(self) -> RequestClient:
        """This slot's worker connection (``UnavailableDevice`` while it restarts)."""
        client = self.client
        if client is None or client.lost is not None:
            raise UnavailableDevice(f"worker {self.pool.driver}[{self.index}] is restarting")
        return client

    def kill(self) -> None:
        """SIGKILL this slot's worker (tests, fault injection)."""
        if self.process is not None:
            self.process.kill()


def _cache_files(value: Any, driver: str) -> tuple[int, int]:
    """A hello's ``cache_files``: two ints from 0 to 32 (a driver wanting more is refused)."""
    if value is None:
        return (0, 0)
    if not (isinstance(value, list) and len(value) == 2 and all(
            v.__class__ is int and 0 <= v <= MAX_CACHE_FILES for v in value)):
        raise UnavailableDevice(f"driver {driver}: cache_files_needed must be two ints from 0 "
                                f"to {MAX_CACHE_FILES}, got {value!r:.80}")
    return (value[0], value[1])


def _root_cause(exc: BaseException) -> BaseException:
    """The first leaf of an exception group (task groups wrap what their tasks raise)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


class _Waiter:
    __slots__ = ("cancelled", "event", "slot")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.slot: WorkerSlot | None = None
        self.cancelled = False


class WorkerPool:
    """The workers of one driver and the priority queue of requests waiting for them.

    At most ``max_queue`` requests wait at once; one more is refused at once with
    ``ResourceExhausted`` (transient) rather than queued: memory stays bounded under a flood.
    """

    def __init__(self, driver: str, workers: int, *,
                 max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
                 cancel_grace: float = 5.0, max_queue: int = DEFAULT_MAX_QUEUE,
                 poll_window: float | None = None, threads: int | None = None) -> None:
        self.driver = driver
        #: The workers' polling window in seconds (None: the service's default).
        self.poll_window = poll_window
        #: Threads each worker's kernels may use (None: one, or the environment's setting).
        self.threads = threads
        self.slots = [WorkerSlot(self, i) for i in range(workers)]
        self.max_in_flight = max_in_flight
        self._max_queue = 0
        self.max_queue = max_queue
        #: Requests waiting in :meth:`acquire` right now.
        self.waiting = 0
        #: Requests refused because the queue was full.
        self.queue_full = 0
        #: Seconds a worker may take to stop a cancelled execution before it is killed.
        self.cancel_grace = cancel_grace
        self.closing = False
        self._naps: set[anyio.CancelScope] = set()
        self.restarts = 0
        self.completed = 0
        self.failed = 0
        #: Allocations the driver refused, served from shared memory instead.
        self.allocate_fallbacks = 0
        self.cache_hits = 0
        self.cache_misses = 0
        self.cache_load_failures = 0
        #: Models prepared (one per step compiled onto this driver).
        self.prepared = 0
        self._waiters: list[tuple[int, int, _Waiter]] = []
        self._seq = itertools.count()
        self._listeners: list[Callable[[], None]] = []
        #: Whether light traffic is packed onto the first worker, decided by trying.
        self.steering = Steering()
        #: The slot that takes the requests packing allows (None: none, spread by load).
        self.packed: WorkerSlot | None = None
        self._pack(self.steering.packing)

    @property
    def max_queue(self) -> int:
        """How many requests may wait for a worker at once (at least 1)."""
        return self._max_queue

    @max_queue.setter
    def max_queue(self, value: int) -> None:
        if value.__class__ is not int or value < 1:
            raise BadData(f"max_queue must be an int of at least 1, got {value!r:.40}")
        self._max_queue = value

    @property
    def info(self) -> DriverInfo | None:
        """The driver's info, from the first worker that said hello."""
        return next((s.info for s in self.slots if s.info is not None), None)

    @property
    def cache_files(self) -> tuple[int, int]:
        """How many (model, data) cache files the driver wants."""
        return next((s.cache_files for s in self.slots if s.info is not None), (0, 0))

    @property
    def queue_depth(self) -> int:
        """Requests waiting for a worker."""
        return sum(1 for _, _, w in self._waiters if not w.cancelled)

    @property
    def in_flight(self) -> int:
        """Requests sent to workers and not yet answered."""
        return sum(s.in_flight for s in self.slots)

    async def start(self, tg: TaskGroup) -> None:
        """Start every worker; returns once all said hello (raises if one cannot start)."""
        async with anyio.create_task_group() as starting:
            for slot in self.slots:
                starting.start_soon(self._start_slot, tg, slot)
        tg.start_soon(self._watchdog)
        if len(self.slots) > 1:
            tg.start_soon(self._steer)

    async def _steer(self) -> None:
        """Keep deciding whether to pack (see :mod:`nnrt.runtime.backends.steering`): windows of the
        current mode, now and then one of the other between two of the current."""
        steering, idle = self.steering, WINDOW
        while not self.closing:
            before = await self._rate()
            if before is None:  # too little traffic to compare anything: look again later
                idle = min(idle * 2, 1.0)
                await self._nap(idle)
                continue
            idle = WINDOW
            if not steering.trial_due(time.monotonic()) or self.slots[0].pack_limit == 0:
                continue  # (a model packing never applies to: nothing to try)
            self._pack(not steering.packing)
            try:
                await self._nap(SETTLE)  # what was sent in the other mode finishes first
                trial = await self._rate()
            finally:
                self._pack(steering.packing)
            await self._nap(SETTLE)
            after = await self._rate()
            if trial is not None and after is not None:
                steering.decide(before, trial, after, time.monotonic())
                self._pack(steering.packing)

    async def _rate(self) -> float | None:
        """Requests finished per second over one window (None: fewer than can be compared)."""
        count, start = self.completed + self.failed, time.monotonic()
        await self._nap(WINDOW)
        count = self.completed + self.failed - count
        return count / (time.monotonic() - start) if count >= MIN_COMPLETIONS else None

    async def _nap(self, seconds: float) -> None:
        """Sleep ``seconds`` between two looks of a background loop; :meth:`close` ends the nap
        at once, so closing a runtime does not wait out the watchdog's or the steering's."""
        with anyio.CancelScope() as scope:
            self._naps.add(scope)
            try:
                if not self.closing:
                    await anyio.sleep(seconds)
            finally:
                self._naps.discard(scope)

    def _pack(self, packing: bool) -> None:
        self.packed = self.slots[0] if packing and len(self.slots) > 1 else None

    def fix_packing(self, packing: bool | None) -> None:
        """Always pack light traffic (True), never (False), or decide by trying (None, the
        default): for benchmarks and for callers who want routing that never changes."""
        self.steering.fix(packing)
        self._pack(self.steering.packing)

    async def _watchdog(self) -> None:
        """Kill a worker stuck inside one operation long after its execution was cancelled.

        Cancellation stops an execution at the next operation boundary; a single operation
        that runs on and on would keep the worker (and what is queued on it) busy. Killing it
        fails only what it holds, and the slot restarts it.
        """
        period = min(max(self.cancel_grace / 4, 0.02), 0.5)
        while not self.closing:
            await self._nap(period)
            now = time.monotonic()
            for slot in self.slots:
                since = slot.stuck_since()
                if since is not None and now - since > self.cancel_grace:
                    log.warning("worker %s[%d] did not stop a cancelled execution within "
                                "%.1f s: restarting it", self.driver, slot.index,
                                self.cancel_grace)
                    slot.kill()

    async def _start_slot(self, tg: TaskGroup, slot: WorkerSlot) -> None:
        await tg.start(slot.supervise)

    @property
    def broken(self) -> bool:
        """No worker is alive and every slot failed to start one several times in a row."""
        return all(not s.alive and s.failures >= MAX_START_FAILURES for s in self.slots)

    def wake(self) -> None:
        """Hand free capacity to waiting requests, highest priority first.

        If the pool is broken, waiting requests are woken without a slot and fail with
        ``UnavailableDevice`` rather than wait for a worker that cannot start.
        """
        if not self._waiters:
            return
        if self.broken:
            waiters, self._waiters = self._waiters, []
            for _, _, waiter in waiters:
                waiter.event.set()
            return
        while self._waiters:
            slot = self._free_slot()
            if slot is None:
                return
            _, _, waiter = heapq.heappop(self._waiters)
            if waiter.cancelled:
                continue
            slot.in_flight += 1
            waiter.slot = slot
            waiter.event.set()

    def _free_slot(self) -> WorkerSlot | None:
        """The packed slot while the wait there stays short (see :meth:`_steer`), else the
        least-loaded live slot with room (``alive`` and ``load`` inlined: per request)."""
        packed = self.packed
        if packed is not None and (client := packed.client) is not None and client.lost is None \
                and packed.in_flight + len(client.abandoned) < packed.pack_limit:
            return packed
        best: WorkerSlot | None = None
        best_load = self.max_in_flight
        for slot in self.slots:
            client = slot.client
            if client is None or client.lost is not None:
                continue
            load = slot.in_flight + len(client.abandoned)
            if load < best_load:
                best, best_load = slot, load
        return best

    def home(self) -> WorkerSlot:
        """The worker holding this driver's device buffers: always the first slot (a memory
        domain is one device, so requests naming several buffers find them together — even
        after a restart, which loses the buffers it held). While it restarts, allocating is
        ``UnavailableDevice`` (transient)."""
        slot = self.slots[0]
        if not slot.alive:
            raise UnavailableDevice(f"the {self.driver} worker that holds device memories is "
                                    "restarting; retry")
        return slot

    def try_acquire(self) -> WorkerSlot | None:
        """A slot with capacity right now (nobody waiting before us), or None."""
        if self._waiters:
            return None
        slot = self._free_slot()  # a live worker with room: the pool is not broken
        if slot is not None:
            slot.in_flight += 1
        return slot

    async def acquire(self, priority: int, deadline: float | None) -> WorkerSlot:
        """A worker slot with capacity; waits in priority order (higher first, then FIFO)."""
        if self.broken:
            raise UnavailableDevice(f"no {self.driver} worker can be started (see the log)")
        slot = self.try_acquire()
        if slot is not None:
            return slot
        if self.waiting >= self._max_queue:
            self.queue_full += 1
            raise ResourceExhausted(
                f"{self.driver}: {self.waiting} requests already wait for a worker (max_queue="
                f"{self._max_queue}); transient: retry later, or send fewer at once")
        if len(self._waiters) > 2 * self.waiting + 64:  # drop cancelled entries: bounded heap
            self._waiters = [entry for entry in self._waiters if not entry[2].cancelled]
            heapq.heapify(self._waiters)
        waiter = _Waiter()
        heapq.heappush(self._waiters, (-priority, next(self._seq), waiter))
        self.waiting += 1
        try:
            if deadline is None:
                await waiter.event.wait()
            else:
                with anyio.fail_after(max(deadline - time.monotonic(), 0)):
                    await waiter.event.wait()
        except TimeoutError:
            raise DeadlineMissed(f"no {self.driver} worker became free before the deadline"
                                 ) from None
        finally:
            self.waiting -= 1
            if waiter.slot is None:
                waiter.cancelled = True
        if waiter.slot is None:  # woken without a slot: the pool broke
            raise UnavailableDevice(f"no {self.driver} worker can be started (see the log)")
        return waiter.slot

    def release(self, slot: WorkerSlot, *, ok: bool) -> None:
        """Return capacity taken by :meth:`acquire`; count the request's outcome."""
        slot.in_flight -= 1
        if ok:
            self.completed += 1
        else:
            self.failed += 1
        if self._waiters:
            self.wake()

    def close(self) -> None:
        """Stop restarting workers; the runtime's task group tears the workers down."""
        self.closing = True
        for nap in list(self._naps):
            nap.cancel()
        for slot in self.slots:
            if slot.client is not None:
                slot.client.close()
