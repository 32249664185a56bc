"""The batcher: concurrent executes of one compiled model merged into batched executions.

Each ``execute`` of a model compiled with ``batching=`` is checked alone (a bad request fails
alone, before it joins anything), then queued. A dispatcher task forms batches: the requests
whose non-batch dims, dtypes and unbatched inputs agree with the oldest waiting one, up to
``max_batch`` rows, once the oldest has waited ``max_delay`` (sooner when the batch is full,
when a request of higher priority than the model's waits, or when a request with a deadline
has spent half of its slack — its time to the deadline less a batch's running mean duration —
waiting). At most ``max_in_flight`` batched executions run at once; requests
gather for the next meanwhile. A batch's inputs are concatenated along their batch axes
straight into the runtime's shared arena (one copy per request, none more on the way to the
worker), padded up to the batch size the layout asks with copies of the last row; the outputs
come back split along their batch axes, each request a view of its rows (padded rows dropped).

Semantics kept per request: a request waits until its own deadline only (it leaves the queue,
or its rows are dropped, when it passes); a cancelled request leaves the queue or its rows are
dropped; when a batched execution fails on its data (``BadData``, ``OpFailed``), each request
of the batch runs again alone, so only the culprit fails. Requests with device memories,
tensor references or caller output buffers, and requests of more rows than ``max_batch``, run
alone, unbatched.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import math
import time
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import numpy as np

from nnrt.errors import BadData, BadState, DeadlineMissed, NnrtError, OpFailed
from nnrt.model.binding import InputBinder
from nnrt.runtime.backends.framed import running_asyncio
from nnrt.runtime.inline import INLINE_LIMIT
from nnrt.runtime.trials import BATCHED_AT, DIRECT_AT, BatchCosts, ModeTrials

if TYPE_CHECKING:
    from nnrt.model.model import Model
    from nnrt.runtime.arena import Arena, Region
    from nnrt.runtime.batching import BatchLayout

__all__ = ["Batcher"]

Array = np.ndarray[Any, Any]
#: Runs merged inputs unbatched: ``(inputs, timeout, copy) -> outputs``.
Run = Callable[[list[Array], float | None, bool], Awaitable[list[Array]]]
#: Unbatched inputs up to this size join a batch's key by value; larger ones by digest.
_BY_VALUE = 256
#: Longest sleep of an idle dispatcher between looks at ``closed``.
_IDLE = 1.0
#: Weight of the newest batched execution in the running estimate of its duration.
_EWMA = 0.2


class _Request:
    """One queued execute: its checked inputs, rows, key, deadline and outcome."""

    __slots__ = ("arrived", "copy", "deadline", "done", "error", "inputs", "key", "order",
                 "origin", "result", "rows", "started", "urgent")

    def __init__(self, inputs: list[Array], rows: int, key: tuple[Any, ...],
                 deadline: float | None, urgent: bool, copy: bool, order: int,
                 event: Callable[[], Any], origin: Hashable = None) -> None:
        self.inputs = inputs
        #: Who sent it (in shared mode: the client's session), for statistics only.
        self.origin = origin
        self.rows = rows
        self.key = key
        self.deadline = deadline
        self.urgent = urgent
        self.copy = copy
        self.order = order
        self.arrived = time.monotonic()
        #: When its batch was dispatched (None while queued).
        self.started: float | None = None
        self.done = event()
        self.result: list[Array] | None = None
        self.error: BaseException | None = None

    def finish(self, result: list[Array] | None, error: BaseException | None) -> None:
        if not self.done.is_set():
            self.result, self.error = result, error
            self.done.set()


class Batcher:
    """Merges concurrent executes of one compiled model (see the module docstring).

    ``run`` executes merged inputs unbatched; ``arena`` (optional) holds merged inputs large
    enough to travel by reference; ``on_execution(size, waits, seconds)`` is told of each
    execution sent (its rows, each request's queue wait, its duration).
    """

    def __init__(self, model: Model, layout: BatchLayout, run: Run, arena: Arena | None,
                 in_flight: int,
                 on_execution: Callable[[int, list[float], float], None] | None = None) -> None:
        self.layout = layout
        self._binder = InputBinder(model).relaxed(layout.inputs)
        self._run = run
        self._arena = arena
        self._on_execution = on_execution
        self._in_flight_limit = layout.max_in_flight or max(1, in_flight)
        self._queue: list[_Request] = []
        self._order = itertools.count()
        self._wakeup = anyio.Event()
        self._running = 0
        #: Running estimate of a batched execution's seconds (deadline-aware dispatch).
        self._estimate = 0.0
        #: Whether requests are batched or sent straight to a worker each (direct), and while
        #: batched, whether a due batch goes whole to one worker or spread over the free ones:
        #: both decided by trials (:mod:`nnrt.runtime.trials`).
        self._batched = ModeTrials(window_executions=2, window_rows=2 * layout.max_batch)
        self._whole = ModeTrials()
        #: Requests sent straight to a worker (direct mode).
        self.direct = 0
        #: The fastest execution per size, and what it says of batched or direct (True,
        #: False, None: trials decide); whether the caller pinned that decision.
        self._costs = BatchCosts()
        self._verdict: bool | None = True  # batched until executions tell otherwise
        self._batched.fix(True)
        self._pinned = False
        #: Whether a request runs alone to time a small execution (:meth:`_probe_due`).
        self._probing = False
        self.closed = False
        #: Batched executions sent, and the requests they carried (``requests / executions``
        #: is the mean batch).
        self.executions = 0
        self.requests = 0
        #: Batched executions that merged requests of more than one origin (shared mode:
        #: of several clients).
        self.mixed = 0
        self._names = tuple(info.name or str(j) for j, info in enumerate(model.input_info))
        #: Makes a request's completion event: asyncio's own under asyncio (what anyio's
        #: wraps, without the per-call backend lookup), anyio's elsewhere.
        self._event: Callable[[], Any] = asyncio.Event if running_asyncio() else anyio.Event

    # -- requests ------------------------------------------------------------------------------

    def check(self, inputs: Any) -> tuple[list[Array], int, tuple[Any, ...]] | None:
        """The bound inputs, rows and batch key of a request, or None if it runs alone (an
        input that is not a plain array, or more rows than a batch holds); ``BadData`` for a
        request that is wrong by itself."""
        bound = self._binder.bind(inputs)
        rows = -1
        key: list[Any] = []
        for j, (value, axis) in enumerate(zip(bound, self.layout.inputs, strict=True)):
            if not isinstance(value, np.ndarray):
                return None
            if axis is None:
                data = value.tobytes()
                key.append((value.dtype.str, value.shape, data if len(data) <= _BY_VALUE
                            else hashlib.blake2b(data, digest_size=16).digest()))
                continue
            if axis >= value.ndim:
                raise BadData(f"input {self._names[j]!r}: rank {value.ndim} has no batch axis "
                              f"{axis}")
            count = value.shape[axis]
            if rows >= 0 and count != rows:
                raise BadData(f"input {self._names[j]!r} has {count} rows on its batch axis "
                              f"{axis}, an earlier input {rows}: a request's batched inputs "
                              "need the same row count")
            rows = count
            key.append((value.dtype.str, value.shape[:axis] + value.shape[axis + 1:]))
        if rows < 1 or rows > self.layout.max_batch:
            return None
        return bound, rows, tuple(key)

    async def execute(self, bound: list[Array], rows: int, key: tuple[Any, ...],
                      timeout: float | None, copy: bool, urgent: bool,
                      origin: Hashable = None) -> list[Array]:
        """Queue a checked request (:meth:`check`) and wait for its rows of a batch
        (``origin``: who sent it, counted in :attr:`mixed`)."""
        if self.closed:
            raise BadState("this compiled model was released")
        if not self._batched.first:  # batching serves less here: straight on
            return await self._direct(bound, rows, timeout, copy)
        if rows == 1 and self._probe_due():  # one request alone times a small execution
            self._probing = True
            try:
                return await self._direct(bound, rows, timeout, copy)
            finally:
                self._probing = False
        deadline = None if timeout is None else time.monotonic() + timeout
        request = _Request(bound, rows, key, deadline, urgent, copy, next(self._order),
                           self._event, origin)
        self._queue.append(request)
        self._wakeup.set()
        expired = False
        try:
            if timeout is None:
                await request.done.wait()
            else:
                with anyio.move_on_after(timeout) as scope:
                    await request.done.wait()
                expired = scope.cancelled_caught
        finally:
            if not request.done.is_set() and request in self._queue:
                self._queue.remove(request)  # cancelled or past its deadline while queued
        if expired and not request.done.is_set():
            raise DeadlineMissed("the execution did not finish before its deadline"
                                 + (" (it was waiting for a batch)" if request.started is None
                                    else ""))
        if request.error is not None:
            raise request.error
        if request.result is None:
            raise BadState("a batched execute ended without a result")
        return request.result

    def fix_modes(self, *, batched: bool | None = None, whole: bool | None = None) -> None:
        """Pin how requests are served instead of deciding by trials (for benchmarks and
        callers who want a mode that never changes): ``batched`` False sends each request
        straight to a worker, ``whole`` False spreads a due batch over the free workers; None
        goes back to trials."""
        self._pinned = batched is not None
        self._batched.fix(batched if self._pinned else self._verdict)
        self._whole.fix(whole)

    @property
    def batching(self) -> bool:
        """Whether requests are batched now (else sent straight to a worker each)."""
        return self._batched.first

    async def _direct(self, bound: list[Array], rows: int, timeout: float | None,
                      copy: bool) -> list[Array]:
        """Run a request alone at once, as an unbatched model would (direct mode)."""
        started = time.monotonic()
        result = await self._run(bound, timeout, copy)
        now = time.monotonic()
        self.direct += 1
        self._costs.record(rows, now - started)
        self._completed(rows, now)
        if self._on_execution is not None:
            self._on_execution(rows, [0.0], now - started)
        return result

    def _probe_due(self) -> bool:
        """Whether the next single-row request should run alone, one at a time: until a
        small execution is timed beside large ones, the costs cannot tell whether batching
        pays (under load every batch is large)."""
        return not self._probing and not self._pinned and self._costs.needs_small()

    def _completed(self, rows: int, now: float) -> None:
        """Feed the trials an execution of ``rows`` rows completed at ``now``."""
        if not self._pinned:
            ratio = self._costs.ratio()
            verdict = (True if ratio is None else None if BATCHED_AT < ratio < DIRECT_AT
                       else ratio <= BATCHED_AT)
            if verdict != self._verdict:
                self._verdict = verdict
                self._batched.fix(verdict)  # None: back to trials
        batched = self._batched.first
        self._batched.executed(rows, now)
        if not batched:
            return
        if self._batched.first:
            self._whole.executed(rows, now)
        else:  # direct from now on (for a trial or for good): whole-or-spread pauses
            self._whole.pause()

    # -- the dispatcher ------------------------------------------------------------------------

    async def serve(self) -> None:
        """Form and send batches until :meth:`close` (run in the runtime's task group)."""
        try:
            async with anyio.create_task_group() as tg:
                while not self.closed:
                    delay = self._due_in()
                    if delay is None or (delay > 0 and not self._urgent()):
                        await self._sleep(delay)
                        continue
                    if self._running >= self._in_flight_limit and not self._urgent():
                        await self._sleep(None)
                        continue
                    # what is due now: one batch, or spread evenly over the free execution
                    # slots (workers) while the trials find that serves more
                    free = 1 if self._whole.first else max(
                        self._in_flight_limit - self._running, 1)
                    cap = self._share(free)
                    for _ in range(free):
                        batch = self._take(cap)
                        if not batch:
                            break
                        self._running += 1
                        tg.start_soon(self._send, batch)
        finally:
            self.closed = True
            queued, self._queue = self._queue, []
            for request in queued:
                request.finish(None, BadState("the compiled model was released or its runtime "
                                              "closed while the request waited for a batch"))

    def close(self) -> None:
        """Stop the dispatcher; queued requests fail with ``BadState``."""
        self.closed = True
        self._wakeup.set()

    def close_soon(self) -> None:
        """Stop the dispatcher within a second (safe from any thread: a finalizer's)."""
        self.closed = True

    async def _sleep(self, delay: float | None) -> None:
        with anyio.move_on_after(_IDLE if delay is None else min(delay, _IDLE)):
            await self._wakeup.wait()
        self._wakeup = anyio.Event()

    def _urgent(self) -> bool:
        return any(r.urgent for r in self._queue)

    def _due_in(self) -> float | None:
        """Seconds until the next batch should start (None: nothing waits)."""
        queue = self._queue
        if not queue:
            return None
        oldest = queue[0]
        due = oldest.arrived + self.layout.max_delay
        rows = sum(r.rows for r in queue if r.key == oldest.key)
        if rows >= self.layout.max_batch:
            return 0.0
        for request in queue:  # wait at most half the time an execution leaves to spare
            if request.deadline is not None:
                slack = request.deadline - request.arrived - self._estimate
                due = min(due, request.arrived + slack / 2)
        return due - time.monotonic()

    def _share(self, free: int) -> int:
        """Rows per batch when the requests of the first waiting form are spread over
        ``free`` execution slots: an even share, at most ``max_batch`` (a compute-bound
        model keeps every worker busy; others lose little to two half batches at once)."""
        queue = self._queue
        if not queue:
            return self.layout.max_batch
        first = min(queue, key=lambda r: (not r.urgent, r.order))
        rows = sum(r.rows for r in queue if r.key == first.key)
        return min(self.layout.max_batch, max(1, -(-rows // free)))

    def _take(self, cap: int) -> list[_Request]:
        """The next batch of at most ``cap`` rows: the first request (urgent ones first, then
        oldest) and those of its key that fit, in order."""
        queue = self._queue
        if not queue:
            return []
        first = min(queue, key=lambda r: (not r.urgent, r.order))
        batch: list[_Request] = []
        rows = 0
        for request in sorted(queue, key=lambda r: (not r.urgent, r.order)):
            if request.key == first.key and (not batch or rows + request.rows <= cap):
                batch.append(request)
                rows += request.rows
        taken = set(map(id, batch))
        self._queue = [r for r in queue if id(r) not in taken]
        return batch

    async def _send(self, batch: list[_Request]) -> None:
        started = time.monotonic()
        try:
            for request in batch:
                request.started = started
            await self._execute(batch, started)
        finally:
            self._running -= 1
            self._wakeup.set()

    async def _execute(self, batch: list[_Request], started: float) -> None:
        rows = sum(r.rows for r in batch)
        size = self.layout.padded(rows)
        regions: list[Region] = []
        try:
            merged = [self._merge([r.inputs[j] for r in batch], axis, size, regions)
                      if axis is not None else batch[0].inputs[j]
                      for j, axis in enumerate(self.layout.inputs)]
            deadlines = [r.deadline for r in batch]
            timeout = None if None in deadlines else max(
                max(d for d in deadlines if d is not None) - time.monotonic(), 0.0)
            outputs = await self._run(merged, timeout, False)
        except (BadData, OpFailed) as exc:
            self._free(regions)
            if len(batch) == 1:
                batch[0].finish(None, exc)
                return
            for request in batch:  # one culprit must not fail its batch-mates: each alone
                await self._alone(request)
            return
        except NnrtError as exc:
            self._free(regions)
            for request in batch:
                request.finish(None, exc)
            return
        except BaseException:
            self._free(regions)
            for request in batch:
                request.finish(None, BadState("the batched execution was cancelled"))
            raise
        self._free(regions)
        seconds = time.monotonic() - started
        self._estimate += _EWMA * (seconds - self._estimate)
        self._costs.record(size, seconds)
        self._completed(rows, time.monotonic())
        self.executions += 1
        self.requests += len(batch)
        if len({r.origin for r in batch}) > 1:
            self.mixed += 1
        if self._on_execution is not None:
            self._on_execution(rows, [started - r.arrived for r in batch], seconds)
        try:
            parts = self._split(outputs, batch, size)
        except NnrtError as exc:
            for request in batch:
                request.finish(None, exc)
            return
        for request, result in zip(batch, parts, strict=True):
            request.finish(result, None)

    async def _alone(self, request: _Request) -> None:
        if request.done.is_set():
            return
        timeout = None if request.deadline is None else max(
            request.deadline - time.monotonic(), 0.0)
        try:
            request.finish(await self._run(request.inputs, timeout, request.copy), None)
        except NnrtError as exc:
            request.finish(None, exc)

    # -- merging and splitting -----------------------------------------------------------------

    def _merge(self, parts: list[Array], axis: int, size: int, regions: list[Region]) -> Array:
        """``parts`` concatenated along ``axis`` and padded to ``size`` rows with copies of the
        last row — in the arena when large enough to travel by reference."""
        first = parts[0]
        shape = (*first.shape[:axis], size, *first.shape[axis + 1:])
        nbytes = math.prod(shape) * first.dtype.itemsize
        merged: Array | None = None
        if nbytes > INLINE_LIMIT and self._arena is not None:
            region = self._arena.alloc(nbytes)
            if region is not None:
                regions.append(region)
                merged = region.memory.ndarray(first.dtype, shape, region.offset)
        if merged is None:
            merged = np.empty(shape, first.dtype)
        rows = sum(p.shape[axis] for p in parts)
        head = [slice(None)] * len(shape)
        head[axis] = slice(0, rows)
        np.concatenate(parts, axis=axis, out=merged[tuple(head)])
        if size > rows:
            pad = [slice(None)] * len(shape)
            pad[axis] = slice(rows, size)
            last = [slice(None)] * len(shape)
            last[axis] = slice(rows - 1, rows)
            merged[tuple(pad)] = merged[tuple(last)]
        return merged

    def _free(self, regions: list[Region]) -> None:
        if self._arena is not None:
            for region in regions:
                self._arena.free(region)
        regions.clear()

    def _split(self, outputs: Sequence[Array], batch: list[_Request], size: int
               ) -> list[list[Array]]:
        """Each request's rows of every output (whole for an unbatched output)."""
        parts: list[list[Array]] = [[] for _ in batch]
        for j, (value, axis) in enumerate(zip(outputs, self.layout.outputs, strict=True)):
            if axis is None:
                for k in range(len(batch)):
                    parts[k].append(value if k == 0 else value.copy())
                continue
            if value.ndim <= axis or value.shape[axis] != size:
                raise OpFailed(f"batching: output {j} of shape {list(value.shape)} does not "
                               f"carry the batch of {size} on axis {axis}; declare its batch "
                               "axis in Batching(dims=...) (None: not batched)")
            start = 0
            for k, request in enumerate(batch):
                index = [slice(None)] * value.ndim
                index[axis] = slice(start, start + request.rows)
                rows = value[tuple(index)]
                parts[k].append(rows.copy() if request.copy else rows)
                start += request.rows
        return parts
