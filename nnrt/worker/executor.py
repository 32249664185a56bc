"""Running the queued execute requests of the worker service, one at a time.

The :class:`Executor` owns the :class:`~nnrt.worker.jobs.JobQueue` and the job that is running.
While a job runs, the driver polls ``should_stop`` between operations; the executor then lets
the service read its sockets (at most every :data:`POLL_INTERVAL`) so that cancels and new
requests arrive, answers queued jobs whose deadline has passed, and tells the driver to stop
once the running job is cancelled, its connection gone, or the service stopping. A prepared
model or device buffer released while it runs is released when the run ends.

Device buffers: inputs are read when the job runs (a buffer written by an earlier execute is
seen), outputs are written after the run; every answer but success leaves the device buffers
the job was to write uninitialised.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from nnrt.errors import BadData, DeadlineMissed, NnrtError, OpFailed
from nnrt.hal.base import Cancelled, PreparedModel
from nnrt.hal.buffers import DeviceBuffer
from nnrt.ipc.messages import DEVICE, Status, encode_error, encode_tensor, encode_written
from nnrt.model.values import dims_compatible
from nnrt.worker.connection import Connection
from nnrt.worker.jobs import Job, JobQueue

__all__ = ["POLL_INTERVAL", "Executor"]

#: Longest time between two socket polls while an execute runs (seconds).
POLL_INTERVAL = 0.001

_log = logging.getLogger("nnrt.worker.service")


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
        self._deferred_buffers: list[DeviceBuffer] = []
        self._next_poll = 0.0
        self._stop_poll = self._should_stop  # one bound method, not one per execute
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

    def run_next(self) -> bool:
        """Run the best queued job (if any) to its end and queue its response; False when
        nothing was waiting."""
        job = self._queue.pop()
        if job is None:
            return False
        now = time.monotonic()
        if job.deadline is not None and now >= job.deadline:
            self._answer(job, *_missed(job))
            return True
        if job.handle not in job.connection.handles:
            self._answer(job, *encode_error(BadData(
                f"request {job.request_id}: handle {job.handle} was released before the "
                "execute ran")))
            return True
        self._running = job
        self._next_poll = now + POLL_INTERVAL
        try:
            status, body = self._run(job)
        finally:
            self._running = None
            while self._deferred:
                release_now(self._deferred.pop())
        self._answer(job, status, body)
        while self._deferred_buffers:
            release_buffer_now(self._deferred_buffers.pop())
        return True

    def _run(self, job: Job) -> tuple[int, dict[str, Any]]:
        """Run ``job``: the response's status and body (its views of the request's memories
        are gone when this returns)."""
        try:
            for pool in job.memories:  # a file or blob may have shrunk since the request came
                pool.check_size(f"request {job.request_id}")
            inputs = job.inputs
            if job.device_inputs:
                inputs = _read_devices(job)
            destinations = job.destinations
            if job.device_outputs:
                destinations = _device_destinations(job, destinations)
            result = job.prepared.execute(inputs, outputs=destinations,
                                          output_sizes=job.output_sizes, deadline=job.deadline,
                                          should_stop=self._stop_poll)
            if job.cancelled:
                return Status.MISSED_DEADLINE, _cancelled()
            if job.device_outputs:
                outputs = _write_devices(job, result.outputs, destinations)
            elif destinations is None:
                outputs = list(map(encode_tensor, result.outputs))
            else:
                outputs = [encode_tensor(output) if where is None else encode_written(output)
                           for output, where in zip(result.outputs, destinations, strict=True)]
            body: dict[str, Any] = {"outputs": outputs}
            if job.measure:
                timing = result.timing
                body["timing"] = [timing.on_device_ns, timing.in_driver_ns]
            return Status.OK, body
        except Cancelled:
            return Status.MISSED_DEADLINE, _cancelled()
        except NnrtError as exc:
            return encode_error(exc)
        except Exception as exc:
            _log.exception("%s: execute request %d failed unexpectedly", job.connection,
                           job.request_id)
            return encode_error(exc)

    def release(self, prepared: PreparedModel) -> None:
        """Release a prepared model now, or once the execute running on it has stopped."""
        running = self._running
        if running is not None and running.prepared is prepared:
            self._deferred.append(prepared)
        else:
            release_now(prepared)

    def release_buffer(self, buffer: DeviceBuffer) -> None:
        """Release a device buffer now, or once the execute running with it has stopped."""
        running = self._running
        if running is not None and any(
                held.buffer is buffer
                for _, held in (*running.device_inputs, *running.device_outputs)):
            self._deferred_buffers.append(buffer)
        else:
            release_buffer_now(buffer)

    def close(self) -> None:
        """Release what waits for a run to end (call after the loop stopped)."""
        while self._deferred:
            release_now(self._deferred.pop())
        while self._deferred_buffers:
            release_buffer_now(self._deferred_buffers.pop())

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
        job.let_go()  # the response may leave at once: the request's mappings go first
        if status != Status.OK:
            for _, held in job.device_outputs:  # a failed execution leaves them undefined
                held.buffer.invalidate()
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


def release_buffer_now(buffer: DeviceBuffer) -> None:
    """Release ``buffer``, logging (never raising) a driver failure."""
    try:
        buffer.release()
    except Exception:
        _log.exception("releasing %r failed", buffer)


def _read_devices(job: Job) -> list[Any]:
    """The job's inputs with each device buffer's contents in its place (checked now: freed,
    uninitialised, dims that do not fit the model input)."""
    inputs = list(job.inputs)
    model = job.prepared.model
    for position, held in job.device_inputs:
        where = f"request {job.request_id}: input {position} (token {held.token})"
        buffer = held.buffer
        if buffer.released:
            raise BadData(f"{where}: the buffer was freed before the execute ran")
        try:
            array = buffer.read()
        except NnrtError as exc:
            raise OpFailed(f"{where}: {exc}") from None
        declared = model.operands[model.inputs[position]].dims
        if not dims_compatible(declared, array.shape):
            raise BadData(f"{where}: the buffer holds shape {list(array.shape)}, model input "
                          f"{position} is declared {list(declared)} (0 = unknown)")
        inputs[position] = array
    return inputs


def _device_destinations(job: Job, destinations: Sequence[Any] | None) -> list[Any] | None:
    """``destinations`` with each device output's storage where the model output's shape is
    static and the buffer can offer storage of it: the driver then computes in place."""
    model = job.prepared.model
    offered: list[Any] = list(destinations) if destinations is not None else [
        None] * len(model.outputs)
    for j, held in job.device_outputs:
        shape = model.operands[model.outputs[j]].dims
        if shape and all(d > 0 for d in shape) and not held.buffer.released:
            offered[j] = held.buffer.destination(shape)
    return offered if any(d is not None for d in offered) else None


def _write_devices(job: Job, results: Sequence[Any],
                   destinations: Sequence[Any] | None) -> list[Any]:
    """Write each device output's result into its buffer; the response's outputs, a device
    one answered ``["device", shape]`` (a result that does not fit is ``OpFailed``)."""
    devices = dict(job.device_outputs)
    outputs: list[Any] = []
    for j, result in enumerate(results):
        held = devices.get(j)
        if held is not None:
            try:
                held.buffer.write(result)
            except NnrtError as exc:
                raise OpFailed(f"request {job.request_id}: outputs[{j}] (token {held.token}): "
                               f"{exc}") from None
            outputs.append([DEVICE, list(result.shape)])
        elif destinations is None or destinations[j] is None:
            outputs.append(encode_tensor(result))
        else:
            outputs.append(encode_written(result))
    return outputs


def _missed(job: Job) -> tuple[int, dict[str, Any]]:
    return encode_error(DeadlineMissed(
        f"request {job.request_id}: the deadline passed while the execute was queued"))
