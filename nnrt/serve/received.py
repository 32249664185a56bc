"""What a client shared with the service (:class:`ReceivedMemory`), and the sweep of a gone
client's blobs (:func:`sweep_when_gone`)."""

from __future__ import annotations

import os

import anyio

from nnrt.memory.mapped import MappedMemory
from nnrt.memory.memory import new_pool_id
from nnrt.memory.sweep import pid_alive, sweep_blobs_of

__all__ = ["SWEEP_PATIENCE", "ReceivedMemory", "sweep_when_gone"]

#: Seconds the service waits, after a client's connection ends, for its process to be gone
#: before sweeping its blobs (a process that runs on keeps them: it unlinks its own).
SWEEP_PATIENCE = 5.0


async def sweep_when_gone(pid: int, patience: float = SWEEP_PATIENCE) -> list[str]:
    """Sweep ``pid``'s nnrt blobs once the process is gone, checking every 20 ms for at most
    ``patience`` seconds; the names removed (none if it still runs then)."""
    deadline = anyio.current_time() + patience
    while pid_alive(pid):
        if anyio.current_time() >= deadline:
            return []
        await anyio.sleep(0.02)
    return sweep_blobs_of(pid)


class ReceivedMemory:
    """A memory a client shared with the service: checked and mapped like a worker does, with a
    duplicate of its fd kept to share it with the workers (under a service-wide id)."""

    def __init__(self, mapped: MappedMemory, fd: int, name: str | None) -> None:
        self.id = new_pool_id()  # service-wide, apart from the service's own memories
        self.mapped = mapped
        self.kind = mapped.kind
        self.size = mapped.size
        self.writable = mapped.writable
        self.file_offset = mapped.file_offset
        self.name = name
        self.closed = False
        self._fd = fd

    def fileno(self) -> int:
        """The kept descriptor (memfd, mmap_fd)."""
        return self._fd

    def close(self) -> None:
        """Close the kept descriptor (idempotent)."""
        if not self.closed:
            self.closed = True
            if self._fd >= 0:
                os.close(self._fd)
