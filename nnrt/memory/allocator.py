"""``ArenaAllocator``: first-fit sub-allocation of byte ranges inside one memory.

The allocator only does bookkeeping (offsets in ``[0, capacity)``); it never touches memory. Free
space is a sorted list of disjoint, non-adjacent ranges: allocation takes the first range that
fits, freeing merges the range with its free neighbours. Every allocation starts at a multiple of
``alignment`` and reserves a multiple of it (a 0-byte allocation reserves one ``alignment`` slot,
so every allocation has its own offset); only a range ending at ``capacity`` may be cut short by
the end of the arena. Operations are O(number of free ranges).
"""

from __future__ import annotations

import bisect

from nnrt.errors import BadData, BadState
from nnrt.memory.ranges import as_count

__all__ = ["ArenaAllocator"]


class ArenaAllocator:
    """First-fit allocator over ``capacity`` bytes with coalescing on free (not thread-safe)."""

    __slots__ = ("_alignment", "_allocated", "_capacity", "_ends", "_starts", "_used")

    def __init__(self, capacity: int, alignment: int = 64) -> None:
        self._capacity = as_count(capacity, "ArenaAllocator: capacity")
        self._alignment = as_count(alignment, "ArenaAllocator: alignment", minimum=1)
        if self._alignment & (self._alignment - 1):
            raise BadData(f"ArenaAllocator: alignment must be a power of two, got {alignment}")
        # free ranges [start, end), sorted, disjoint and never adjacent (always coalesced)
        self._starts: list[int] = [0] if self._capacity else []
        self._ends: list[int] = [self._capacity] if self._capacity else []
        self._allocated: dict[int, int] = {}  # offset -> bytes reserved
        self._used = 0

    @property
    def capacity(self) -> int:
        """The arena's size in bytes."""
        return self._capacity

    @property
    def alignment(self) -> int:
        """Every allocation's offset is a multiple of this (a power of two)."""
        return self._alignment

    @property
    def used(self) -> int:
        """Bytes reserved by live allocations (sizes rounded up to the alignment)."""
        return self._used

    @property
    def largest_free(self) -> int:
        """The largest free range in bytes (an allocation up to this size succeeds)."""
        return max((e - s for s, e in zip(self._starts, self._ends, strict=True)), default=0)

    def __len__(self) -> int:
        """The number of live allocations."""
        return len(self._allocated)

    def alloc(self, nbytes: int) -> int | None:
        """The offset of ``nbytes`` newly reserved bytes (first fit), or None when none fit."""
        count = as_count(nbytes, "ArenaAllocator.alloc: nbytes")
        align = self._alignment
        want = -(-count // align) * align if count else align
        for i, (start, end) in enumerate(zip(self._starts, self._ends, strict=True)):
            room = end - start
            if want <= room:
                take = want
            elif end == self._capacity and max(count, 1) <= room:
                take = room  # the arena's unaligned tail: the request fits, the padding does not
            else:
                continue
            if take == room:
                del self._starts[i], self._ends[i]
            else:
                self._starts[i] = start + take
            self._allocated[start] = take
            self._used += take
            return start
        return None

    def free(self, offset: int) -> None:
        """Release the allocation at ``offset``; ``BadState`` if there is none (or it was freed)."""
        size = self._allocated.pop(offset, None) if isinstance(offset, int) else None
        if size is None:
            raise BadState(f"ArenaAllocator.free: no allocation at offset {offset!r:.40} "
                           "(never allocated or already freed)")
        self._used -= size
        start, end = offset, offset + size
        i = bisect.bisect_left(self._starts, start)
        merge_before = i > 0 and self._ends[i - 1] == start
        merge_after = i < len(self._starts) and self._starts[i] == end
        if merge_before and merge_after:
            self._ends[i - 1] = self._ends[i]
            del self._starts[i], self._ends[i]
        elif merge_before:
            self._ends[i - 1] = end
        elif merge_after:
            self._starts[i] = start
        else:
            self._starts.insert(i, start)
            self._ends.insert(i, end)

    def free_ranges(self) -> list[tuple[int, int]]:
        """The free ranges as ``(start, end)`` pairs, in address order (for statistics, tests)."""
        return list(zip(self._starts, self._ends, strict=True))

    def __repr__(self) -> str:
        return (f"<ArenaAllocator capacity={self._capacity} alignment={self._alignment} "
                f"used={self._used} allocations={len(self._allocated)} "
                f"largest_free={self.largest_free}>")
