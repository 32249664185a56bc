"""``rt.memory``: shared memories tied to a runtime, and unsharing them when they close.

Any live :class:`~nnrt.memory.Memory` can be used with any runtime; the first time a runtime
sends one to a worker it watches the memory, and when the memory closes every worker that mapped
it is told to let go (``unmap``). Memories created through ``rt.memory`` are also closed when the
runtime closes. ``close()`` may be called from any thread: the unmapping then happens on the
runtime's event loop (at once under asyncio, before the next request otherwise).
"""

from __future__ import annotations

import asyncio
import mmap
import threading
from collections.abc import Callable

from nnrt.memory import Memory

__all__ = ["MemoryManager"]


class MemoryManager:
    """Creates memories owned by one runtime and keeps its workers' mappings in step."""

    def __init__(self) -> None:
        self._owned: dict[int, Memory] = {}
        self._watched: set[int] = set()
        #: Ids of memories closed since the last :meth:`flush` (their unmap notes are due).
        self.pending: list[int] = []
        self._unmap: Callable[[int], None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: int | None = None
        self._lock = threading.Lock()

    # -- creating ----------------------------------------------------------------------------

    def create(self, size: int) -> Memory:
        """A new sealed ``memfd`` memory of ``size`` bytes (the NNAPI ashmem analogue)."""
        return self._own(Memory.create(size))

    def from_fd(self, fd: int, offset: int, size: int, prot: int = mmap.PROT_READ) -> Memory:
        """``size`` bytes of the file open as ``fd`` from ``offset`` (the fd is duplicated)."""
        return self._own(Memory.from_fd(fd, offset, size, prot))

    def create_blob(self, size: int, name: str | None = None) -> Memory:
        """A new POSIX shared-memory blob other processes can open by its ``name``."""
        return self._own(Memory.create_blob(size, name))

    def open_blob(self, name: str, *, writable: bool = True) -> Memory:
        """An existing blob created by another process (never unlinked by this runtime)."""
        return self._own(Memory.open_blob(name, writable=writable))

    def _own(self, memory: Memory) -> Memory:
        self._owned[memory.id] = memory
        self.watch(memory)
        return memory

    # -- sharing with workers ----------------------------------------------------------------

    def attach(self, unmap: Callable[[int], None] | None, *,
               loop: asyncio.AbstractEventLoop | None) -> None:
        """Connect to a running backend (``unmap(pool_id)`` runs on the loop thread)."""
        self._unmap = unmap
        self._loop = loop
        self._thread = threading.get_ident() if unmap is not None else None

    def watch(self, memory: Memory) -> None:
        """Unmap ``memory`` from the workers when it closes (once per memory)."""
        if memory.id not in self._watched:
            self._watched.add(memory.id)
            memory.add_close_callback(self._closed)

    def _closed(self, memory: Memory) -> None:
        self._owned.pop(memory.id, None)
        with self._lock:
            self._watched.discard(memory.id)
            self.pending.append(memory.id)
        if threading.get_ident() == self._thread:
            self.flush()
        elif self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.flush)

    def flush(self) -> None:
        """Send the ``unmap`` notes of memories closed since the last flush (loop thread)."""
        if not self.pending:
            return
        with self._lock:
            released, self.pending = self.pending, []
        if self._unmap is not None:
            for pool_id in released:
                self._unmap(pool_id)

    def close(self) -> None:
        """Close every memory this runtime created (at runtime exit)."""
        for memory in list(self._owned.values()):
            memory.close()
        self._owned.clear()
        with self._lock:
            self.pending.clear()
