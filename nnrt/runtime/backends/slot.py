"""One worker of a pool: its process, its connection, the models prepared and the memories
mapped on it (:class:`WorkerSlot`, one of a :class:`~nnrt.runtime.backends.pool.WorkerPool`).

A slot spawns its worker, says hello, serves requests through a ``RequestClient``, and when
the worker dies (even by SIGKILL) it fails that worker's in-flight requests with
``UnavailableDevice``, reaps it and starts a new one. Prepared models are (re-)prepared on a
worker lazily, the first time a request for them is routed there, or in the background when
another worker serves them meanwhile.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from nnrt.errors import CacheError, NnrtError, UnavailableDevice
from nnrt.hal.base import MAX_CACHE_FILES, DriverInfo
from nnrt.ipc.messages import PROTOCOL_VERSION
from nnrt.memory.source import MemorySource
from nnrt.runtime.backends.base import PreparedKey
from nnrt.runtime.backends.channel import RequestClient
from nnrt.runtime.backends.framed import FramedSocket
from nnrt.runtime.backends.process import WorkerProcess
from nnrt.runtime.backends.sharing import MemorySharing
from nnrt.runtime.backends.steering import pack_limit
from nnrt.runtime.compile.caching import StepCache

if TYPE_CHECKING:
    from nnrt.runtime.backends.pool import WorkerPool

__all__ = ["MAX_START_FAILURES", "WorkerSlot"]

log = logging.getLogger("nnrt.runtime")

#: Failed starts in a row, on every slot, after which requests fail instead of waiting.
MAX_START_FAILURES = 3

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
        #: busy / span of the latest load report, and when it came (monotonic; 0: none yet).
        self.busy_fraction = 0.0
        self.reported_at = 0.0

    def on_load_report(self, span: float, busy: float, executes: int) -> None:
        """Take a load report of this slot's worker (``RequestClient.on_load_report``)."""
        self.busy_fraction, self.reported_at = busy / span, time.monotonic()
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
        client = RequestClient(FramedSocket(process.sock), poll_window=self.pool.poll_window or 0.0)
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
                if self.pool.closing:  # closed while this worker started: its close missed it
                    client.close()
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
        event = anyio.Event()  # registered before the first await: one prepare per model
        self._preparing[model_key] = event
        started = time.monotonic()
        try:
            for pool in pools:
                await self.ensure_mapped(pool)
            client = self.require_client()
            if cache is not None and self.pool.cache_files != (0, 0):
                reply = await self._prepare_cached(client, body, cache)
            else:
                reply = await client.request("prepare", body)
            handle = reply.get("handle")
            if not isinstance(handle, int) or isinstance(handle, bool):
                raise UnavailableDevice("worker returned no handle for prepare")
            if self.client is client:
                self._handles[model_key] = handle
            self.pool.prepared_in(model_key, time.monotonic() - started)
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

    def preparing(self, model_key: int) -> bool:
        """Whether ``model_key`` is being prepared on this worker now."""
        return model_key in self._preparing

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


