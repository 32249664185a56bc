"""Running the queued execute requests of the worker service, one at a time.

The :class:`Executor` owns the :class:`~nnrt.driver.jobs.JobQueue` and the job that is running.
While a job runs, the driver polls ``should_stop`` between operations; the executor then lets
the service read its sockets (at most every :data:`POLL_INTERVAL`) so that cancels and new
requests arrive, answers queued jobs whose deadline has passed, and tells the driver to stop
once the running job is cancelled, its connection gone, or the service stopping. A prepared
model released while it runs is released when the run ends.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from nnrt.driver.base import Cancelled, PreparedModel
from nnrt.driver.connection import Connection
from nnrt.driver.jobs import Job, JobQueue
from nnrt.errors import BadData, DeadlineMissed, NnrtError
from nnrt.ipc.messages import Status, encode_error, encode_tensor, encode_written

__all__ = ["POLL_INTERVAL", "Executor"]

#: Longest time between two socket polls while an execute runs (seconds).
POLL_INTERVAL = 0.001

_log = logging.getLogger("nnrt.driver.service")


def _cancelled() -> dict[str, Any]:
    return {"message": "cancelled"}


class Executor:
    """The execute queue of one service and the job running from it.

    ``poll`` reads the sockets without blocking (called from ``should_stop``); ``answered`` is
    told about every connection that got a response, so the service flushes it.
    """

    def __init__(self, poll: Callable[[], None], answered: Callable[[Connection], None]) -> None:
        self._poll = poll
        self._answered = answered
        self._queue = JobQueue()
        self._running: Job | None = None
        self._deferred: list[PreparedModel] = []
        self._next_poll = 0.0
        #: Set by the service when it is shutting down: the running job stops.
        self.stopping = False

    @property
    def pending(self) -> int:
        """How many jobs wait to run."""
        return len(self._queue)

    def enqueue(self, job: Job) -> None:
        """Queue an execute request behind those of the same or higher priority."""
        job.connection.jobs[job.request_id] = job
        self._queue.push(job)

    def cancel(self, conn: Connection, target: int) -> None:
        """Answer ``target`` (queued or running on ``conn``) as cancelled; ignore unknown ids."""
        job = conn.jobs.get(target)
        if job is None:
            return
        if job is self._running:
            job.cancelled = True  # answered once the driver stops at the next operation
            return
        self._queue.discard(job)
        self._answer(job, Status.MISSED_DEADLINE, _cancelled())

    def forget(self, conn: Connection) -> None:
        """Drop the queued jobs of a closing connection and stop its running one."""
        for job in conn.jobs.values():
            if job is self._running:
                job.cancelled = True
            else:
                self._queue.discard(job)
        conn.jobs.clear()

    def run_next(self) -> None:
        """Run the best queued job (if any) to its end and queue its response."""
        job = self._queue.pop()
        if job is None:
            return
        now = time.monotonic()
        if job.deadline is not None and now >= job.deadline:
            self._answer(job, *_missed(job))
            return
        if job.handle not in job.connection.handles:
            self._answer(job, *encode_error(BadData(
                f"request {job.request_id}: handle {job.handle} was released before the "
                "execute ran")))
            return
        self._running = job
        self._next_poll = now + POLL_INTERVAL
        status: int
        body: dict[str, Any]
        try:
            for pool in job.pools:  # a file or blob may have shrunk since the request came
                pool.check_size(f"request {job.request_id}")
            destinations = job.destinations
            result = job.prepared.execute(job.inputs, outputs=destinations,
                                          output_sizes=job.output_sizes, deadline=job.deadline,
                                          should_stop=self._should_stop)
            if job.cancelled:
                status, body = Status.MISSED_DEADLINE, _cancelled()
            else:
                timing = result.timing
                if destinations is None:
                    outputs = [encode_tensor(output) for output in result.outputs]
                else:
                    outputs = [encode_tensor(output) if where is None else encode_written(output)
                               for output, where in zip(result.outputs, destinations,
                                                        strict=True)]
                status, body = Status.OK, {
                    "outputs": outputs, "timing": [timing.on_device_ns, timing.in_driver_ns]}
        except Cancelled:
            status, body = Status.MISSED_DEADLINE, _cancelled()
        except NnrtError as exc:
            status, body = encode_error(exc)
        except Exception as exc:
            _log.exception("%s: execute request %d failed unexpectedly", job.connection,
                           job.request_id)
            status, body = encode_error(exc)
        finally:
            self._running = None
            while self._deferred:
                release_now(self._deferred.pop())
        self._answer(job, status, body)

    def release(self, prepared: PreparedModel) -> None:
        """Release a prepared model now, or once the execute running on it has stopped."""
        running = self._running
        if running is not None and running.prepared is prepared:
            self._deferred.append(prepared)
        else:
            release_now(prepared)

    def close(self) -> None:
        """Release what waits for a run to end (call after the loop stopped)."""
        while self._deferred:
            release_now(self._deferred.pop())

    def _should_stop(self) -> bool:
        """Polled by the driver between operations: read the sockets now and then; stop?"""
        now = time.monotonic()
        if now >= self._next_poll:
            self._next_poll = now + POLL_INTERVAL
            for late in self._queue.expired(now):
                self._answer(late, *_missed(late))
            self._poll()
        running = self._running
        return self.stopping or running is None or running.cancelled

    def _answer(self, job: Job, status: int, body: dict[str, Any]) -> None:
        conn = job.connection
        if conn.jobs.pop(job.request_id, None) is None or conn.closed:
            return
        conn.respond(job.request_id, status, body)
        self._answered(conn)


def release_now(prepared: PreparedModel) -> None:
    """Release ``prepared``, logging (never raising) a driver failure."""
    try:
        prepared.release()
    except Exception:
        _log.exception("releasing %r failed", prepared)


def _missed(job: Job) -> tuple[int, dict[str, Any]]:
    return encode_error(DeadlineMissed(
        f"request {job.request_id}: the deadline passed while the execute was queued"))
