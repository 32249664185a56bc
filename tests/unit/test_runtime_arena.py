"""The runtime's arena: regions in shared memory, growth, retirement of outgrown memories."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import nnrt
from nnrt.runtime.arena import Arena


def test_regions_are_disjoint_and_reused() -> None:
    arena = Arena(limit=1 << 24)
    try:
        a, b = arena.alloc(1000), arena.alloc(5000)
        assert a is not None and b is not None and a.memory is b.memory
        assert a.offset + 1000 <= b.offset or b.offset + 5000 <= a.offset
        a.memory.ndarray(np.uint8, (1000,), a.offset)[:] = 1
        b.memory.ndarray(np.uint8, (5000,), b.offset)[:] = 2
        assert a.memory.ndarray(np.uint8, (1000,), a.offset).max() == 1
        arena.free(a)
        arena.free(a)  # idempotent
        c = arena.alloc(1000)
        assert c is not None and c.offset == a.offset
    finally:
        arena.close()


def test_growth_retires_the_old_memory_when_its_last_region_goes() -> None:
    arena = Arena(limit=1 << 26)
    try:
        first = arena.alloc(1 << 20)
        assert first is not None
        small_capacity = arena.capacity
        big = arena.alloc(small_capacity)  # does not fit: a larger memory replaces the first
        assert big is not None and big.memory is not first.memory
        assert arena.capacity > small_capacity and not first.memory.closed
        arena.free(first)
        assert first.memory.closed  # retired and empty: closed (and unshared from workers)
        arena.free(big)
        assert not big.memory.closed  # the current memory stays for reuse
    finally:
        arena.close()
    assert big.memory.closed


def test_limits() -> None:
    arena = Arena(limit=1 << 20)
    try:
        assert arena.alloc((1 << 20) + 1) is None  # larger than the limit: travels inline
        regions = [arena.alloc(1 << 18) for _ in range(8)]
        assert None in regions  # the arena does not grow past its limit
    finally:
        arena.close()
    assert arena.alloc(16) is None  # closed
    assert Arena(limit=0).alloc(1) is None
    with pytest.raises(nnrt.BadData):
        Arena(limit=-1)


def test_free_from_other_threads() -> None:
    arena = Arena(limit=1 << 24)
    try:
        regions = [arena.alloc(4096) for _ in range(200)]
        threads = [threading.Thread(target=lambda part=regions[i::4]: [arena.free(r) for r in part
                                                                          if r is not None])
                   for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        again = [arena.alloc(4096) for _ in range(200)]
        assert all(r is not None for r in again)
        assert len({r.offset for r in again if r is not None}) == 200
    finally:
        arena.close()
