"""The worker's pool table over real memfds, files and POSIX shared memory (no processes)."""

from __future__ import annotations

import fcntl
import mmap
import os
import re
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import posix_ipc
import pytest

from nnrt.errors import BadData, ResourceExhausted, Unmappable
from nnrt.memory.mapped import MAX_POOLS, MappedMemory, MappingTable
from nnrt.model.operand import ConstantMemory

F32 = np.dtype(np.float32)
SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL


def memfd(size: int, seals: int = SEALS) -> int:
    fd = os.memfd_create("nnrt-test", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, size)
    if seals:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    return fd


def map_body(pool: int, kind: str, size: int, writable: bool = True, **extra: Any
             ) -> dict[str, Any]:
    return {"pool": pool, "kind": kind, "size": size, "writable": writable, **extra}


@pytest.fixture
def table() -> Iterator[MappingTable]:
    pools = MappingTable()
    yield pools
    pools.close_all()


def test_memfd_pool_views_share_the_bytes(table: MappingTable) -> None:
    fd = memfd(64)
    try:
        ours = mmap.mmap(fd, 64)
        pool = table.map("t", map_body(1, "memfd", 64), [os.dup(fd)])
        assert (len(table), table.mapped_bytes, pool.size, pool.kind) == (1, 64, 64, "memfd")
        ours[0:8] = np.array([1.5, 2.5], np.float32).tobytes()
        view = pool.array(F32, [2], 0, 8, "input 0")
        assert not view.flags.writeable and list(view) == [1.5, 2.5]
        out = pool.array(F32, [1, 2], 16, 8, "outputs[0]", output=True)
        out[...] = [[7, 8]]
        assert np.frombuffer(ours, np.float32, 2, 16).tolist() == [7, 8]
        assert isinstance(pool, ConstantMemory) and bytes(pool.view(16, 8)) == out.tobytes()
        del view, out
        ours.close()
    finally:
        os.close(fd)


def test_every_reference_check(table: MappingTable) -> None:
    fd = memfd(64)
    try:
        pool = table.map("t", map_body(3, "memfd", 64), [os.dup(fd)])
        bad: list[tuple[Any, Any, list[int], str]] = [
            (2**63, 4, [1], "ints from 0 to 2\\*\\*62"),
            (0, 2**64 - 1, [1], "ints from 0 to 2\\*\\*62"),
            (-4, 4, [1], "ints from 0 to 2\\*\\*62"),
            (0, -4, [1], "ints from 0 to 2\\*\\*62"),
            (True, 4, [1], "ints from 0 to 2\\*\\*62"),
            (60, 8, [2], "outside pool 3 of 64 bytes"),
            (2**62, 2**62, [1], "outside pool 3"),
            (2, 4, [1], "not aligned to the 4-byte elements"),
            (0, 12, [2], "is 8 bytes, the reference has length 12"),
        ]
        for offset, length, shape, message in bad:
            with pytest.raises(BadData, match=message):
                pool.array(F32, shape, offset, length, "request 9: input 0")
        with pytest.raises(BadData, match="request 9: input 0"):
            pool.array(F32, [1], 2, 4, "request 9: input 0")
        assert pool.array(np.dtype(np.uint8), [3], 1, 3, "u8 is aligned anywhere").shape == (3,)
    finally:
        os.close(fd)


def test_read_only_pool_refuses_outputs(table: MappingTable) -> None:
    fd = memfd(16)
    try:
        pool = table.map("t", map_body(1, "memfd", 16, writable=False), [os.dup(fd)])
        with pytest.raises(BadData, match="pool 1 is read-only"):
            pool.array(F32, [4], 0, 16, "outputs[0]", output=True)
        assert not pool.array(F32, [4], 0, 16, "input 0").flags.writeable
    finally:
        os.close(fd)


def test_memfd_checks_seals_size_and_kind(table: MappingTable) -> None:
    cases = [
        (memfd(32, seals=0), 32, "not sealed against shrinking and growing"),
        (memfd(32, seals=fcntl.F_SEAL_SHRINK), 32, "not sealed"),
        (memfd(32), 64, "holds 32 bytes, the request says 64"),
    ]
    for fd, size, message in cases:
        with pytest.raises(BadData, match=message):
            table.map("t", map_body(1, "memfd", size), [fd])
    read_end, write_end = os.pipe()
    os.close(write_end)
    with pytest.raises(BadData, match="not a memfd"):
        table.map("t", map_body(1, "memfd", 32), [read_end])
    assert len(table) == 0


def test_request_checks(table: MappingTable) -> None:
    bodies = [
        (map_body(0, "memfd", 16), 1, "pool id 0 must be from 1"),
        (map_body(2**53, "memfd", 16), 1, "pool id"),
        (map_body(1, "ashmem", 16), 1, "unknown pool kind 'ashmem'"),
        (map_body(1, "memfd", 16), 0, "comes with 1 fd"),
        (map_body(1, "memfd", 16), 2, "comes with 1 fd"),
        (map_body(1, "blob", 16, name="/x"), 1, "comes with 0 fd"),
        (map_body(1, "memfd", 0), 1, "size 0 must be from 1 to 2\\*\\*48"),
        (map_body(1, "memfd", 2**48 + 1), 1, "size"),
        (map_body(1, "memfd", 16, offset=0), 1, "'offset' does not apply to a memfd"),
        (map_body(1, "blob", 16, name="no-slash"), 0, "blob name 'no-slash' must match"),
        (map_body(1, "blob", 16, name="/a/b"), 0, "must match"),
        (map_body(1, "blob", 16, name="/" + "a" * 201), 0, "must match"),
    ]
    for body, nfds, message in bodies:
        fds = [memfd(16) for _ in range(nfds)]
        with pytest.raises(BadData, match=message):
            table.map("request 5 (map)", body, fds)
        assert fds == []  # every fd given was closed
    assert len(table) == 0


def test_duplicates_unknown_and_released_ids(table: MappingTable) -> None:
    table.map("t", map_body(7, "memfd", 16), [memfd(16)])
    with pytest.raises(BadData, match="pool 7 is already mapped"):
        table.map("t", map_body(7, "memfd", 16), [memfd(16)])
    with pytest.raises(BadData, match="unknown pool 8"):
        table.get(8, "input 0")
    with pytest.raises(BadData, match="unknown pool 8"):
        table.unmap(8, "unmap")
    with pytest.raises(BadData, match=r"model\.operands\[2\]\.ref: unknown pool 9"):
        table.resolve(9, "model.operands[2].ref")
    table.unmap(7, "unmap")
    with pytest.raises(BadData, match="pool 7 was unmapped"):
        table.get(7, "input 0")
    assert (len(table), table.mapped_bytes) == (0, 0)
    table.map("t", map_body(7, "memfd", 16), [memfd(16)])  # ids may be reused once unmapped
    assert 7 in table


def test_pool_and_byte_limits() -> None:
    assert MAX_POOLS == 4096
    table = MappingTable(max_pools=3, max_bytes=1 << 20)
    try:
        for pool_id in (1, 2, 3):
            table.map("t", map_body(pool_id, "memfd", 4096), [memfd(4096)])
        fd = memfd(4096)
        with pytest.raises(ResourceExhausted, match="already 3 pools mapped"):
            table.map("t", map_body(4, "memfd", 4096), [fd])
        table.unmap(3, "t")
        with pytest.raises(ResourceExhausted, match="exceed the limit of 1048576"):
            table.map("t", map_body(4, "memfd", 1 << 20), [memfd(1 << 20)])
        table.map("t", map_body(4, "memfd", 4096), [memfd(4096)])
    finally:
        table.close_all()


def test_mmap_fd_unaligned_offset_and_truncation(table: MappingTable, tmp_path: Path) -> None:
    path = tmp_path / "weights.bin"
    path.write_bytes(bytes(range(256)) * 64)  # 16 KiB
    offset = mmap.ALLOCATIONGRANULARITY + 64
    fd = os.open(path, os.O_RDWR)
    pool = table.map("t", map_body(1, "mmap_fd", 1024, offset=offset), [fd])
    assert pool.file_offset == offset
    view = pool.array(np.dtype(np.uint8), [4], 0, 4, "input 0")
    assert bytes(view) == bytes([64, 65, 66, 67])
    os.truncate(path, offset + 512)
    with pytest.raises(BadData, match="pool 1 was truncated to 4672 bytes after it was shared"):
        pool.array(np.dtype(np.uint8), [4], 0, 4, "input 0")
    with pytest.raises(BadData, match="truncated"):
        pool.check_size("request 3")
    del view
    with pytest.raises(BadData, match="the file holds 4672 bytes, fewer than offset"):
        table.map("t", map_body(2, "mmap_fd", 1024, offset=offset), [os.open(path, os.O_RDWR)])
    with pytest.raises(BadData, match="not open for reading and writing"):
        table.map("t", map_body(2, "mmap_fd", 64), [os.open(path, os.O_RDONLY)])
    pool = table.map("t", map_body(2, "mmap_fd", 64, writable=False),
                     [os.open(path, os.O_RDONLY)])
    assert not pool.writable
    read_end, write_end = os.pipe()
    os.close(write_end)
    with pytest.raises(BadData, match="not a regular file"):
        table.map("t", map_body(3, "mmap_fd", 64), [read_end])


def test_blob_by_name(table: MappingTable) -> None:
    name = f"/nnrt-test-{os.getpid()}-{secrets.token_hex(8)}"
    shm = posix_ipc.SharedMemory(name, posix_ipc.O_CREX, size=4096)
    try:
        with mmap.mmap(shm.fd, 4096) as ours:
            pool = table.map("t", map_body(1, "blob", 4096, name=name), [])
            ours[8:12] = np.float32(3.25).tobytes()
            assert pool.array(F32, [], 8, 4, "input 0") == 3.25
            with pytest.raises(BadData, match="holds 4096 bytes, the request says 8192"):
                table.map("t", map_body(2, "blob", 8192, name=name), [])
            os.ftruncate(shm.fd, 1024)
            with pytest.raises(BadData, match="pool 1 was truncated to 1024 bytes"):
                pool.array(F32, [], 8, 4, "input 0")
    finally:
        shm.close_fd()
        shm.unlink()
    with pytest.raises(Unmappable, match=f"blob {re.escape(name)} does not exist"):
        table.map("t", map_body(3, "blob", 16, name=name), [])


def test_close_with_live_views_keeps_them_valid(table: MappingTable) -> None:
    pool = table.map("t", map_body(1, "memfd", 64), [memfd(64)])
    view = pool.array(F32, [16], 0, 64, "outputs[0]", output=True)
    constant = pool.view(0, 8)
    table.unmap(1, "unmap")  # mmap.close() raises BufferError inside: the views keep it alive
    assert pool.closed
    view[:] = 5.0
    assert np.frombuffer(constant, np.float32).tolist() == [5.0, 5.0]
    with pytest.raises(BadData, match="pool 1 was unmapped"):
        pool.array(F32, [1], 0, 4, "input 0")
    with pytest.raises(BadData, match="pool 1 was unmapped"):
        pool.view(0, 4)
    pool.close()  # idempotent


def test_close_all_releases_every_fd(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"\0" * 4096)
    before = len(os.listdir("/proc/self/fd"))
    table = MappingTable()
    for pool_id in range(1, 6):
        table.map("t", map_body(pool_id, "mmap_fd", 4096), [os.open(path, os.O_RDWR)])
    assert len(os.listdir("/proc/self/fd")) == before + 5  # one each, kept by the mapping
    table.close_all()
    assert len(table) == 0 and len(os.listdir("/proc/self/fd")) == before


def test_pool_repr() -> None:
    table = MappingTable()
    pool: MappedMemory = table.map("t", map_body(1, "memfd", 16, writable=False), [memfd(16)])
    assert repr(pool) == "<MappedMemory 1 memfd 16 bytes ro>"
    table.close_all()
    assert repr(pool) == "<MappedMemory 1 memfd 16 bytes closed>"
