"""Queued execute requests of the worker service, run one at a time by (priority, arrival).

A :class:`Job` is one decoded ``execute`` request waiting for (or in) its turn; the
:class:`JobQueue` orders them by priority (highest first), then arrival. Cancelled jobs are
marked and skipped when they reach the head (lazy deletion keeps cancel O(1)).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from nnrt.hal.base import PreparedModel
    from nnrt.memory.mapped import MappedMemory
    from nnrt.worker.connection import Connection, HeldBuffer

__all__ = ["DeviceArgs", "Job", "JobQueue"]

#: ``(position, buffer)`` of each execute input or output that is a device buffer.
DeviceArgs = tuple[tuple[int, "HeldBuffer"], ...]


class Job:
    """One execute request: who asked, for which prepared model, with what inputs and limits.

    ``destinations`` holds, per model output, the writable view of the pool bytes the output
    goes to (None: answered inline), or is None when every output is answered inline;
    ``memories`` are the shared memories the inputs and destinations refer to (re-checked before
    the run). The job
    holds these views, and so the mappings, until it is answered or dropped.
    ``device_inputs`` / ``device_outputs`` are the device buffers read (when the job runs:
    ``inputs`` holds a placeholder there) and written (after the run) by position. ``measure``:
    the response reports the execution's timing (NNAPI ``MeasureTiming``).
    """

    __slots__ = (
        "cancelled",
        "connection",
        "deadline",
        "destinations",
        "device_inputs",
        "device_outputs",
        "done",
        "handle",
        "inputs",
        "measure",
        "memories",
        "output_sizes",
        "prepared",
        "priority",
        "request_id",
        "seq",
    )

    def __init__(self, connection: Connection, request_id: int, handle: int,
                 prepared: PreparedModel, inputs: list[np.ndarray[Any, Any]], priority: int,
                 deadline: float | None, output_sizes: Sequence[int] | None,
                 destinations: list[np.ndarray[Any, Any] | None] | None = None,
                 memories: tuple[MappedMemory, ...] = (), device_inputs: DeviceArgs = (),
                 device_outputs: DeviceArgs = (), measure: bool = False) -> None:
        self.connection = connection
        self.request_id = request_id
        self.handle = handle
        self.prepared = prepared
        self.inputs = inputs
        self.priority = priority
        self.deadline = deadline
        self.output_sizes = output_sizes
        self.destinations = destinations
        self.memories = memories
        self.device_inputs = device_inputs
        self.device_outputs = device_outputs
        self.measure = measure
        self.seq = 0
        #: Set when a queued job is dropped (cancelled, connection gone): it never runs.
        self.done = False
        #: Set when a cancel (or the connection's end) reaches the job while it runs.
        self.cancelled = False

    def let_go(self) -> None:
        """Drop the views of the request's memories (it is answered: a pool unmapped
        meanwhile goes now, before the client reads the answer)."""
        self.inputs = []
        self.destinations = None
        self.memories = ()

    def __lt__(self, other: Job) -> bool:
        if self.priority != other.priority:
            return self.priority > other.priority
        return self.seq < other.seq


# Heap entries are (-priority, seq, job): compared in C, never reaching Job.__lt__ (seq unique).
_Entry = tuple[int, int, Job]


class JobQueue:
    """Pending jobs, highest priority first, then first come first served."""

    def __init__(self) -> None:
        self._heap: list[_Entry] = []
        self._seq = 0
        self._live = 0
        self._earliest = float("inf")

    def __len__(self) -> int:
        """Jobs still waiting to run (cancelled ones excluded)."""
        return self._live

    def push(self, job: Job) -> None:
        """Queue ``job`` behind every job of the same or higher priority."""
        self._seq += 1
        job.seq = self._seq
        heapq.heappush(self._heap, (-job.priority, job.seq, job))
        self._live += 1
        if job.deadline is not None and job.deadline < self._earliest:
            self._earliest = job.deadline

    def discard(self, job: Job) -> None:
        """Mark a queued ``job`` done so it never runs, and let go of its inputs and memories.

        Done jobs leave the heap when they reach its head, or all at once when they outnumber
        the live ones (so that queueing and cancelling in a loop cannot grow it without bound).
        """
        if job.done:
            return
        job.done = True
        job.inputs = []
        job.destinations = None
        job.memories = ()
        job.device_inputs = ()
        self._live -= 1
        if len(self._heap) > 2 * self._live + 64:
            self._heap = [entry for entry in self._heap if not entry[2].done]
            heapq.heapify(self._heap)

    def pop(self) -> Job | None:
        """The next job to run, or None when nothing is waiting."""
        heap = self._heap
        while heap:
            job = heapq.heappop(heap)[2]
            if not job.done:
                self._live -= 1
                return job
        self._earliest = float("inf")
        return None

    def expired(self, now: float) -> list[Job]:
        """Drop and return the queued jobs whose deadline is at or before ``now``."""
        if now < self._earliest:
            return []
        expired = []
        earliest = float("inf")
        for _, _, job in list(self._heap):  # discard() may compact the heap
            if job.done or job.deadline is None:
                continue
            if job.deadline <= now:
                self.discard(job)
                expired.append(job)
            elif job.deadline < earliest:
                earliest = job.deadline
        self._earliest = earliest
        expired.sort()
        return expired
