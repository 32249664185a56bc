"""ArenaAllocator: first fit, alignment, coalescing, fragmentation, exhaustion, misuse."""

from __future__ import annotations

import itertools
import random

import pytest

import nnrt
from nnrt.memory import ArenaAllocator


def test_allocations_are_aligned_first_fit() -> None:
    arena = ArenaAllocator(1024)
    assert (arena.capacity, arena.alignment, arena.used, arena.largest_free) == (1024, 64, 0,
                                                                                 1024)
    assert [arena.alloc(n) for n in (1, 64, 65, 10)] == [0, 64, 128, 256]
    assert arena.used == 64 + 64 + 128 + 64
    assert len(arena) == 4
    arena.free(64)
    assert arena.alloc(30) == 64  # the first hole that fits
    assert arena.alloc(100) == 320  # too big for any hole: after the last allocation


def test_zero_byte_allocations_get_distinct_slots() -> None:
    arena = ArenaAllocator(256, alignment=32)
    offsets = [arena.alloc(0) for _ in range(8)]
    assert offsets == [0, 32, 64, 96, 128, 160, 192, 224]
    assert arena.alloc(0) is None
    assert arena.used == 256


def test_free_coalesces_with_both_neighbours() -> None:
    arena = ArenaAllocator(640)
    a, b, c, d, e = (arena.alloc(128) for _ in range(5))
    assert arena.free_ranges() == []
    arena.free(b)
    arena.free(d)
    assert arena.free_ranges() == [(128, 256), (384, 512)]
    arena.free(c)  # joins both
    assert arena.free_ranges() == [(128, 512)]
    arena.free(a)  # joins the following range
    arena.free(e)  # joins the preceding range
    assert arena.free_ranges() == [(0, 640)]
    assert arena.used == 0 and arena.largest_free == 640


def test_fragmentation_refuses_what_only_fits_in_total() -> None:
    arena = ArenaAllocator(1024)
    offsets = [arena.alloc(64) for _ in range(16)]
    for offset in offsets[::2]:
        arena.free(offset)
    assert arena.capacity - arena.used == 512
    assert arena.largest_free == 64
    assert arena.alloc(65) is None  # 512 bytes free, but no two free slots are adjacent
    arena.free(offsets[1])
    assert arena.largest_free == 192
    assert arena.alloc(150) == 0


def test_exhaustion_returns_none_and_recovers() -> None:
    arena = ArenaAllocator(4096, alignment=4096)
    assert arena.alloc(4096) == 0
    assert arena.alloc(1) is None
    assert arena.largest_free == 0
    arena.free(0)
    assert arena.alloc(4097) is None
    assert arena.alloc(4096) == 0


def test_an_unaligned_capacity_can_be_used_to_the_end() -> None:
    arena = ArenaAllocator(100)
    assert arena.alloc(100) == 0
    arena.free(0)
    assert arena.alloc(36) == 0
    assert arena.alloc(30) == 64  # the 36-byte tail: the bytes fit, the padding need not
    assert arena.alloc(0) is None
    arena.free(64)
    assert arena.alloc(0) == 64
    assert arena.used == 100


def test_double_and_unknown_frees_are_bad_state() -> None:
    arena = ArenaAllocator(256)
    offset = arena.alloc(10)
    assert offset == 0
    arena.free(offset)
    with pytest.raises(nnrt.BadState, match=r"no allocation at offset 0 .*already freed"):
        arena.free(offset)
    arena.alloc(128)
    for bad in (1, 64, 256, -1, "0", None):
        with pytest.raises(nnrt.BadState, match="no allocation at offset"):
            arena.free(bad)  # type: ignore[arg-type]


def test_arguments_are_checked() -> None:
    with pytest.raises(nnrt.BadData, match="alignment must be a power of two"):
        ArenaAllocator(1024, alignment=48)
    with pytest.raises(nnrt.BadData, match="alignment must be >= 1"):
        ArenaAllocator(1024, alignment=0)
    with pytest.raises(nnrt.BadData, match="capacity must be >= 0"):
        ArenaAllocator(-1)
    arena = ArenaAllocator(0)
    assert arena.alloc(0) is None and arena.largest_free == 0
    with pytest.raises(nnrt.BadData, match="nbytes must be >= 0"):
        ArenaAllocator(64).alloc(-1)
    with pytest.raises(nnrt.BadData, match="nbytes must be an int"):
        ArenaAllocator(64).alloc(1.5)  # type: ignore[arg-type]
    assert "capacity=64" in repr(ArenaAllocator(64))


@pytest.mark.parametrize("seed", range(5))
def test_random_workload_matches_a_reference_model(seed: int) -> None:
    rng = random.Random(seed)
    capacity, alignment = 64 * 1000 + rng.randrange(64), 1 << rng.randrange(0, 8)
    arena = ArenaAllocator(capacity, alignment)
    live: dict[int, int] = {}  # the reference model: offset -> bytes reserved

    def first_fit(nbytes: int) -> int | None:
        """Where first fit must place the request: the lowest gap between live ranges it fits."""
        want = max(-(-nbytes // alignment) * alignment, alignment)
        cursor = 0
        for start, size in [*sorted(live.items()), (capacity, 0)]:
            room = start - cursor
            if want <= room or (start == capacity and max(nbytes, 1) <= room):
                return cursor
            cursor = start + size
        return None

    for _ in range(3000):
        if live and rng.random() < 0.45:
            offset = rng.choice(sorted(live))
            arena.free(offset)
            del live[offset]
        else:
            nbytes = rng.choice([0, rng.randrange(1, 64), rng.randrange(64, 4096)])
            offset = arena.alloc(nbytes)
            assert offset == first_fit(nbytes)
            if offset is None:
                continue
            assert offset % alignment == 0 and offset + nbytes <= capacity
            reserved = min(max(-(-nbytes // alignment) * alignment, alignment), capacity - offset)
            for other, size in live.items():  # no overlap with any live allocation
                assert offset + reserved <= other or other + size <= offset
            live[offset] = reserved
        assert arena.used == sum(live.values()) and len(arena) == len(live)
        free = arena.free_ranges()
        assert all(a_end < b_start for (_, a_end), (b_start, _) in itertools.pairwise(free))
        assert sum(end - start for start, end in free) == capacity - arena.used
    for offset in list(live):
        arena.free(offset)
    assert arena.free_ranges() == [(0, capacity)]
