"""The arena: reusable shared memory that carries plain ndarrays to and from workers.

A plain ``execute([ndarray])`` of large tensors copies each input once into the arena (one
``memfd`` shared with every worker once) and lets the worker write outputs there; small tensors
travel inline in the request instead, where a copy into the frame is cheaper than allocating.
The arena grows by replacing its memory with a larger one (up to ``limit`` bytes); the old one
is closed — and unmapped from the workers — once its last region is freed. Fresh pages are
touched once when a memory is created, so executions never pay first-touch page faults.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from nnrt.errors import BadData
from nnrt.memory import ArenaAllocator, Memory

__all__ = ["DEFAULT_ARENA_LIMIT", "Arena", "Region"]

#: Largest arena (bytes) unless the runtime says otherwise.
DEFAULT_ARENA_LIMIT = 1 << 30
_INITIAL = 1 << 22
_PAGE = 4096


@dataclass(eq=False)
class Region:
    """``nbytes`` bytes at ``offset`` of an arena memory, allocated for one request."""

    memory: Memory
    offset: int
    nbytes: int
    allocator: ArenaAllocator
    freed: bool = False


class Arena:
    """Shared memory regions for the tensors of in-flight requests; owned by one runtime."""

    def __init__(self, limit: int = DEFAULT_ARENA_LIMIT) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise BadData(f"arena limit must be a byte count >= 0, got {limit!r}")
        self.limit = limit
        self._memory: Memory | None = None
        self._allocator: ArenaAllocator | None = None
        #: Replaced memories waiting for their last region to be freed.
        self._retired: dict[int, tuple[Memory, ArenaAllocator]] = {}
        self._lock = threading.Lock()
        self.closed = False

    @property
    def capacity(self) -> int:
        """Size of the current arena memory (0 before the first allocation)."""
        return 0 if self._memory is None else self._memory.size

    def alloc(self, nbytes: int) -> Region | None:
        """A region of ``nbytes`` bytes, or None when the arena cannot hold it (use inline)."""
        if self.closed or nbytes > self.limit:
            return None
        with self._lock:
            return self._alloc(nbytes)

    def _alloc(self, nbytes: int) -> Region | None:
        if self._allocator is not None and self._memory is not None:
            offset = self._allocator.alloc(nbytes)
            if offset is not None:
                return Region(self._memory, offset, nbytes, self._allocator)
        memory = self._grow(nbytes)
        if memory is None or self._allocator is None:
            return None
        offset = self._allocator.alloc(nbytes)
        return None if offset is None else Region(memory, offset, nbytes, self._allocator)

    def free(self, region: Region) -> None:
        """Give ``region`` back (idempotent); closes a retired memory with its last region."""
        with self._lock:  # views handed out may be collected on any thread
            if region.freed:
                return
            region.freed = True
            region.allocator.free(region.offset)
            retired = self._retired.get(region.memory.id)
            if retired is None or retired[1].used:
                return
            del self._retired[region.memory.id]
        retired[0].close()

    def close(self) -> None:
        """Close every arena memory (regions still out become invalid; idempotent)."""
        with self._lock:
            self.closed = True
            memories = [m for m, _ in self._retired.values()]
            if self._memory is not None:
                memories.append(self._memory)
            self._memory = self._allocator = None
            self._retired.clear()
        for memory in memories:
            memory.close()

    def _grow(self, nbytes: int) -> Memory | None:
        current = self.capacity
        size = max(_INITIAL, 2 * current)
        while size < 2 * nbytes + _PAGE:
            size *= 2
        size = min(size, self.limit)
        if size < nbytes + 64 or size <= current:
            return None
        memory = Memory.create(size, name="nnrt-arena")
        memory.ndarray(np.uint8, (size,))[::_PAGE] = 0  # first touch now, not per execution
        old, old_allocator = self._memory, self._allocator
        self._memory, self._allocator = memory, ArenaAllocator(size)
        if old is not None and old_allocator is not None:
            if old_allocator.used == 0:
                old.close()
            else:
                self._retired[old.id] = (old, old_allocator)
        return memory
