"""The live-mapping registry: which :class:`~nnrt.memory.Memory` holds a given address range.

Each open memory registers its usable range ``[start, start + size)`` once, when it is opened, and
removes it when it closes. Live mappings never overlap in the address space, so a lookup is a
binary search over the sorted start addresses. Entries hold the memory weakly: the registry never
keeps a memory alive.
"""

from __future__ import annotations

import bisect
import threading
import weakref
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nnrt.memory.memory import Memory

__all__ = ["MappingRegistry", "REGISTRY"]


class MappingRegistry:
    """Sorted, non-overlapping address ranges of live memories (thread-safe)."""

    __slots__ = ("_ends", "_lock", "_memories", "_starts")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._starts: list[int] = []
        self._ends: list[int] = []
        self._memories: list[weakref.ref[Memory]] = []

    def __len__(self) -> int:
        return len(self._starts)

    def add(self, start: int, size: int, memory: Memory) -> None:
        """Register ``memory``'s usable range ``[start, start + size)``."""
        with self._lock:
            i = bisect.bisect_right(self._starts, start)
            self._starts.insert(i, start)
            self._ends.insert(i, start + size)
            self._memories.insert(i, weakref.ref(memory))

    def remove(self, start: int, memory: Memory) -> None:
        """Forget the range ``memory`` registered at ``start`` (no-op if it is not there)."""
        with self._lock:
            i = bisect.bisect_left(self._starts, start)
            while i < len(self._starts) and self._starts[i] == start:
                if self._memories[i]() in (memory, None):
                    del self._starts[i], self._ends[i], self._memories[i]
                    return
                i += 1

    def find(self, low: int, high: int) -> tuple[Memory, int] | None:
        """The live memory whose range holds ``[low, high)`` whole, and its start address.

        ``low == high`` (an empty array) matches a memory whose range holds ``low`` or ends there.
        """
        with self._lock:
            i = bisect.bisect_right(self._starts, low) - 1
            if i < 0 or high > self._ends[i]:
                return None
            memory = self._memories[i]()
            start = self._starts[i]
        if memory is None or memory.closed:
            return None
        return memory, start


#: The process-wide registry every :class:`~nnrt.memory.Memory` registers in.
REGISTRY = MappingRegistry()
