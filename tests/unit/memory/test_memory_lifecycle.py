"""Memory lifecycles: find_memory, close with live views, callbacks, and no leaked fds or names."""

from __future__ import annotations

import gc
import mmap
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

import nnrt
from nnrt.memory import Memory, TensorRef, find_memory

RW = mmap.PROT_READ | mmap.PROT_WRITE


def fds() -> set[int]:
    return {int(name) for name in os.listdir("/proc/self/fd")}


def shm_names() -> set[str]:
    """This process's blobs (other processes on the machine may create and remove their own)."""
    return {name for name in os.listdir("/dev/shm") if f"-{os.getpid()}-" in name}


@pytest.fixture
def file_fd(tmp_path: Path) -> Iterator[Callable[[], int]]:
    """Opens (and later closes) an O_RDWR fd on a 64 KiB file."""
    path = tmp_path / "pool.bin"
    path.write_bytes(bytes(65536))
    opened: list[int] = []

    def open_fd() -> int:
        opened.append(os.open(path, os.O_RDWR))
        return opened[-1]

    yield open_fd
    for fd in opened:
        os.close(fd)


# -- find_memory ------------------------------------------------------------------------------

def test_find_memory_recognises_views_and_slices() -> None:
    with Memory.create(4096) as a, Memory.create_blob(4096) as b:
        view = a.ndarray(np.float32, (8, 8), offset=256)
        assert find_memory(view) == (a, 256)
        assert find_memory(view[2:]) == (a, 256 + 2 * 32)
        assert find_memory(view[:, 3]) == (a, 256 + 12)
        assert find_memory(view[::-1, ::-2]) == (a, 256 + 7 * 32 + 7 * 4)
        assert find_memory(view.reshape(64)[10:20]) == (a, 296)
        assert find_memory(view.view(np.uint8)) == (a, 256)
        assert find_memory(a.ndarray(np.uint8, 0, offset=4096)) == (a, 4096)
        assert find_memory(b.ndarray(np.int16, (3,), offset=4090)) == (b, 4090)
        last = b.ndarray(np.uint8, 4096)
        assert find_memory(last[4095:]) == (b, 4095)
        del view, last


def test_find_memory_remembers_a_view_only_while_it_stays_valid() -> None:
    mem = Memory.create(4096)
    view = mem.ndarray(np.float32, (4, 4), offset=64)
    assert find_memory(view) == (mem, 64)
    assert find_memory(view) == (mem, 64)  # the remembered answer
    view.shape = (16,)  # reshaped in place: still the same bytes, looked up again
    assert find_memory(view) == (mem, 64)
    mem.close()  # a closed memory is never answered from memory
    assert find_memory(view) is None
    del view
    other = Memory.create(4096)
    fresh = other.ndarray(np.float32, (4, 4), offset=128)  # may reuse the old view's id
    assert find_memory(fresh) == (other, 128)
    del fresh
    other.close()


def test_find_memory_does_not_keep_a_memory_alive() -> None:
    mem = Memory.create(4096)
    view = mem.ndarray(np.uint8, 16)
    assert find_memory(view) == (mem, 0)
    fd_target = os.readlink(f"/proc/self/fd/{mem.fileno()}")
    fd = mem.fileno()
    del mem
    gc.collect()
    still_open = os.path.exists(f"/proc/self/fd/{fd}") and os.readlink(
        f"/proc/self/fd/{fd}") == fd_target
    assert not still_open  # the remembered lookup held the memory only weakly
    del view


def test_find_memory_counts_offsets_from_the_file_offset(file_fd: Callable[[], int]) -> None:
    with Memory.from_fd(file_fd(), 4100, 1000, RW) as mem:
        assert find_memory(mem.ndarray(np.int32, 5, offset=16)) == (mem, 16)


def test_find_memory_rejects_foreign_and_partial_arrays() -> None:
    assert find_memory(np.zeros(16)) is None
    assert find_memory(np.frombuffer(bytearray(64), np.uint8)) is None
    assert find_memory([1, 2, 3]) is None
    with Memory.create(4096) as mem:
        tail = mem.ndarray(np.uint8, 16, offset=4080)
        past = np.lib.stride_tricks.as_strided(tail, shape=(32,), strides=(1,))
        assert find_memory(past) is None  # starts inside, ends 16 bytes past the mapping
        spread = np.lib.stride_tricks.as_strided(tail, shape=(2,), strides=(4096,))
        assert find_memory(spread) is None
        before = np.lib.stride_tricks.as_strided(tail, shape=(2,), strides=(-8192,))
        assert find_memory(before) is None
        assert find_memory(np.copy(tail)) is None
        del tail, past, spread, before


def test_find_memory_forgets_closed_memories() -> None:
    mem = Memory.create(4096)
    view = mem.ndarray(np.uint8, 16)
    assert find_memory(view) == (mem, 0)
    mem.close()
    assert find_memory(view) is None
    with pytest.raises(nnrt.BadData, match=r"not a view of a live nnrt\.Memory"):
        TensorRef.of(view)
    assert int(view.sum()) == 0  # still mapped: the view keeps the mapping alive
    del view


# -- close ------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["memfd", "mmap_fd", "blob"])
def test_close_with_live_views_keeps_them_readable(kind: str,
                                                  file_fd: Callable[[], int]) -> None:
    user_fd = file_fd()
    before = fds()
    if kind == "memfd":
        mem = Memory.create(8192, name="nnrt-live-view")
    elif kind == "blob":
        mem = Memory.create_blob(8192)
    else:
        mem = Memory.from_fd(user_fd, 0, 8192, RW)
    fd = mem.fileno()
    view = mem.ndarray(np.int32, 100)
    view[:] = np.arange(100)
    constant = mem.view(0, 8)
    mem.close()  # no BufferError even though views are alive
    assert mem.closed
    with pytest.raises(OSError):
        os.fstat(fd)  # our fd is closed at once
    assert int(view.sum()) == 4950  # the mapping lives on with its views
    assert bytes(constant) == b"\x00\x00\x00\x00\x01\x00\x00\x00"
    if mem.name is not None:
        assert not Path("/dev/shm" + mem.name).exists()
    del view, constant
    gc.collect()
    assert fds() == before  # the mapping's own fd went with the last view
    with Path("/proc/self/maps").open() as maps:
        assert "nnrt-live-view" not in maps.read()


def test_use_after_close_is_bad_state() -> None:
    mem = Memory.create(64)
    mem.close()
    for action, call in [("fileno", mem.fileno), ("ndarray", lambda: mem.ndarray(np.uint8, 1)),
                         ("view", lambda: mem.view(0, 1)),
                         ("add_close_callback", lambda: mem.add_close_callback(print))]:
        with pytest.raises(nnrt.BadState, match=f"memory {mem.id} .* is closed: {action}"):
            call()
    assert "closed" in repr(mem)


def test_close_callbacks_run_once_in_order_before_unmapping() -> None:
    calls: list[tuple[str, int, bool]] = []
    mem = Memory.create(64)
    mem.add_close_callback(lambda m: calls.append(("first", m.id, m.closed)))
    mem.add_close_callback(lambda m: calls.append(("second", m.id, m.closed)))
    with pytest.raises(nnrt.BadData, match="must be callable"):
        mem.add_close_callback(5)  # type: ignore[arg-type]
    with mem:
        pass
    mem.close()
    assert calls == [("first", mem.id, True), ("second", mem.id, True)]


def test_a_failing_callback_does_not_stop_the_release() -> None:
    before = fds()
    mem = Memory.create_blob(64)
    name = mem.name
    ran: list[int] = []

    def boom(m: Memory) -> None:
        raise RuntimeError("callback failed")

    mem.add_close_callback(boom)
    mem.add_close_callback(lambda m: ran.append(m.id))
    with pytest.raises(RuntimeError, match="callback failed"):
        mem.close()
    assert ran == [mem.id] and mem.closed
    assert fds() == before and not Path(f"/dev/shm{name}").exists()
    mem.close()


def test_garbage_collection_releases_a_forgotten_memory() -> None:
    before, names = fds(), shm_names()
    ran: list[int] = []
    mem = Memory.create_blob(64)
    mem.add_close_callback(lambda m: ran.append(m.id))
    ident = mem.id
    del mem
    gc.collect()
    assert ran == [ident]
    assert fds() == before and shm_names() == names


def test_ids_are_unique_and_repr_names_the_memory(file_fd: Callable[[], int]) -> None:
    with Memory.create(64) as a, Memory.create_blob(128) as b, \
            Memory.from_fd(file_fd(), 10, 20) as c:
        assert len({a.id, b.id, c.id}) == 3 and min(a.id, b.id, c.id) > 0
        assert repr(a) == f"<Memory id={a.id} kind=memfd size=64 rw>"
        assert repr(b) == f"<Memory id={b.id} kind=blob size=128 name={b.name!r} rw>"
        assert repr(c) == f"<Memory id={c.id} kind=mmap_fd size=20 file_offset=10 ro>"
    assert Memory.create(64).id > c.id  # never reused (and released by the GC at once)


# -- many cycles ------------------------------------------------------------------------------

def test_ten_thousand_cycles_of_each_kind_leak_nothing(file_fd: Callable[[], int]) -> None:
    fd = file_fd()
    before, names = fds(), shm_names()
    started = time.monotonic()
    for _ in range(10_000):
        Memory.create(4096).close()
        with Memory.create_blob(4096) as mem:
            mem.ndarray(np.uint8, 1)[0] = 1
        Memory.from_fd(fd, 4097, 100, RW).close()
    assert fds() == before
    assert shm_names() == names
    assert time.monotonic() - started < 20
