"""Worker pools: one per driver, N worker processes, bounded in-flight, priority dispatch.

Each worker is a slot (:mod:`nnrt.runtime.backends.slot`): it supervises one worker process
and prepares models there lazily, the first time a request for them is routed there — or in
the background, when another worker that has the model takes the request meanwhile.

Routing: a request goes to the least-loaded worker with room, except while the pool *packs*
light traffic onto its first worker (:mod:`nnrt.runtime.backends.steering`, which the pool's
steering task keeps deciding by trying both): then the first worker takes every request whose wait
there stays short, as its load reports (:mod:`nnrt.worker.load`) tell.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import time
from collections.abc import Callable

import anyio
from anyio.abc import TaskGroup

from nnrt.errors import (
    BadData,
    DeadlineMissed,
    NnrtError,
    ResourceExhausted,
    UnavailableDevice,
)
from nnrt.hal.base import DriverInfo
from nnrt.runtime.backends.base import PreparedKey
from nnrt.runtime.backends.slot import MAX_START_FAILURES, WorkerSlot
from nnrt.runtime.backends.steering import MIN_COMPLETIONS, SETTLE, WINDOW, Steering

__all__ = ["DEFAULT_MAX_IN_FLIGHT", "DEFAULT_MAX_QUEUE", "PreparedKey", "WorkerPool",
           "WorkerSlot"]

log = logging.getLogger("nnrt.runtime")

#: Requests that may wait for a worker of one driver (beyond: ``ResourceExhausted``).
DEFAULT_MAX_QUEUE = 10_000

#: Requests sent to one worker and not yet answered, at most, by default. Requests beyond it
#: wait in the pool's priority queue, which costs the client a task switch each: with 64 tiny
#: requests in flight on one worker, a bound of 16 gave ~70k executes/s and 64 ~125k.
DEFAULT_MAX_IN_FLIGHT = 64

#: Models whose prepare time a pool remembers at most (then it starts afresh).
_PREPARE_TIMES = 4096

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
        #: The runtime's task group (set by :meth:`start`): background prepares run there.
        self._tg: TaskGroup | None = None
        #: Seconds the latest prepare of each model took (what waiting for a worker that has
        #: the model is weighed against).
        self._prepare_seconds: dict[int, float] = {}
        #: The pool's background sleeps (watchdog, steering), cut short when it closes.
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

    def prepared_in(self, model_key: int, seconds: float) -> None:
        """Record that preparing ``model_key`` on a worker took ``seconds`` (the latest)."""
        if len(self._prepare_seconds) >= _PREPARE_TIMES:  # bounded: models come and go
            self._prepare_seconds.clear()
        self._prepare_seconds[model_key] = seconds

    def ready_slot(self, model_key: int, instead_of: WorkerSlot) -> WorkerSlot | None:
        """For a request given ``instead_of`` (a slot without ``model_key`` prepared): the
        least-loaded live slot that has it and room, now holding the request instead — when
        the wait there (its requests in flight times its mean service time) is shorter than
        preparing the model took — else None. ``instead_of`` then prepares the model in the
        background, so a worker never keeps requests waiting behind a prepare another worker
        has already done."""
        best: WorkerSlot | None = None
        best_load = self.max_in_flight
        for slot in self.slots:
            client = slot.client
            if slot is instead_of or client is None or client.lost is not None or (
                    slot.handle_of(model_key) is None):
                continue
            load = slot.in_flight + len(client.abandoned)
            if load < best_load:
                best, best_load = slot, load
        if best is None or best_load * best.service_time >= self._prepare_seconds.get(
                model_key, 0.0):
            return None
        instead_of.in_flight -= 1
        best.in_flight += 1
        return best

    def prepare_soon(self, slot: WorkerSlot, key: PreparedKey) -> None:
        """Prepare ``key`` on ``slot`` in the background (once; failures are logged: the
        model runs on the workers that have it, and a request sent here prepares again)."""
        if self._tg is None or slot.preparing(key[0]):
            return

        async def prepare() -> None:
            try:
                await slot.ensure_prepared(key)
            except NnrtError as exc:
                log.info("%s[%d]: preparing a model in the background failed: %s",
                         self.driver, slot.index, exc)

        self._tg.start_soon(prepare)

    async def start(self, tg: TaskGroup) -> None:
        """Start every worker; returns once all said hello (raises if one cannot start)."""
        self._tg = tg
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

    def give_back(self, slot: WorkerSlot) -> None:
        """Return capacity :meth:`try_acquire` took for a request that was not sent."""
        slot.in_flight -= 1
        if self._waiters:
            self.wake()

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
