"""Memory kinds: round trips through real mappings and other processes, seals, fds and checks."""

from __future__ import annotations

import fcntl
import mmap
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nnrt
from nnrt.memory import Memory

RW = mmap.PROT_READ | mmap.PROT_WRITE


def run_child(code: str, *, pass_fds: tuple[int, ...] = ()) -> str:
    """Run ``code`` in a fresh Python process and return its stdout (failing on errors)."""
    done = subprocess.run([sys.executable, "-c", code], pass_fds=pass_fds, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture
def data_file(tmp_path: Path) -> tuple[Path, bytes]:
    """A file of three pages and a bit, holding a known byte pattern."""
    data = bytes(range(256)) * (3 * 4096 // 256) + b"tail-bytes"
    path = tmp_path / "weights.bin"
    path.write_bytes(data)
    return path, data


# -- memfd ------------------------------------------------------------------------------------

def test_memfd_views_share_bytes() -> None:
    with Memory.create(4096, name="nnrt-test") as mem:
        assert (mem.kind, mem.size, mem.writable, mem.name, mem.file_offset, mem.owner) == (
            "memfd", 4096, True, None, 0, False)
        a = mem.ndarray(np.float32, (4, 4), offset=64)
        a[:] = np.arange(16, dtype=np.float32).reshape(4, 4)
        b = mem.ndarray("uint8", 64, offset=64)
        assert bytes(b) == a.tobytes()
        assert bytes(mem.view(64, 64)) == a.tobytes()
        assert mem.view(0, 8).readonly
        assert os.readlink(f"/proc/self/fd/{mem.fileno()}").startswith("/memfd:nnrt-test")
        del a, b


def test_memfd_is_sealed_at_creation() -> None:
    with Memory.create(8192) as mem:
        fd = mem.fileno()
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
        assert seals == fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
        with pytest.raises(PermissionError):
            os.ftruncate(fd, 4096)
        with pytest.raises(PermissionError):
            os.ftruncate(fd, 16384)
        with pytest.raises(PermissionError):  # F_SEAL_SEAL: no further seals either
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE)
        assert os.fstat(fd).st_size == 8192
        assert fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC


def test_memfd_fd_sent_to_a_child_process_maps_the_same_bytes() -> None:
    with Memory.create(4096) as mem:
        mem.ndarray(np.uint8, 6)[:] = np.frombuffer(b"parent", np.uint8)
        fd = mem.fileno()
        out = run_child(
            "import mmap, numpy as np\n"
            "from nnrt.memory import Memory\n"
            f"m = Memory.from_fd({fd}, 0, 4096, mmap.PROT_READ | mmap.PROT_WRITE)\n"
            "print(bytes(m.view(0, 6)).decode())\n"
            "m.ndarray(np.uint8, 5, offset=100)[:] = np.frombuffer(b'child', np.uint8)\n"
            "m.close()\n", pass_fds=(fd,))
        assert out == "parent"
        assert bytes(mem.view(100, 5)) == b"child"


# -- mmap_fd ----------------------------------------------------------------------------------

@pytest.mark.parametrize("offset", [0, 1, 100, 4095, 4096, 4097, 8191])
def test_from_fd_maps_any_file_offset(data_file: tuple[Path, bytes], offset: int) -> None:
    path, data = data_file
    fd = os.open(path, os.O_RDONLY)
    try:
        with Memory.from_fd(fd, offset, 3000) as mem:
            assert (mem.kind, mem.size, mem.writable, mem.file_offset) == (
                "mmap_fd", 3000, False, offset)
            assert bytes(mem.view(0, 3000)) == data[offset:offset + 3000]
            assert bytes(mem.ndarray(np.uint8, 10, offset=7)) == data[offset + 7:offset + 17]
            assert mem.fileno() != fd  # a dup: the caller keeps theirs
        os.fstat(fd)  # still open after the memory closed
    finally:
        os.close(fd)


def test_from_fd_writable_writes_through_to_the_file(data_file: tuple[Path, bytes]) -> None:
    path, data = data_file
    fd = os.open(path, os.O_RDWR)
    try:
        with Memory.from_fd(fd, 4099, 100, RW) as mem:
            assert mem.writable
            mem.ndarray(np.uint8, 4)[:] = np.frombuffer(b"ABCD", np.uint8)
            other = Memory.from_fd(fd, 4096, 200)  # a second mapping of the same range
            assert bytes(other.view(3, 4)) == b"ABCD"
            other.close()
        assert os.pread(fd, 6, 4098) == data[4098:4099] + b"ABCD" + data[4103:4104]
    finally:
        os.close(fd)


def test_from_fd_read_only_views_refuse_writes(data_file: tuple[Path, bytes]) -> None:
    path, _ = data_file
    fd = os.open(path, os.O_RDWR)
    try:
        with Memory.from_fd(fd, 0, 64) as mem:  # PROT_READ by default, even on an O_RDWR fd
            view = mem.ndarray(np.int32, (4, 4))
            assert not view.flags.writeable
            with pytest.raises(ValueError, match="read-only"):
                view[0, 0] = 1
            del view
    finally:
        os.close(fd)


def test_from_fd_checks_protection_against_the_access_mode(data_file: tuple[Path, bytes]) -> None:
    path, _ = data_file
    ro, wo = os.open(path, os.O_RDONLY), os.open(path, os.O_WRONLY)
    try:
        with pytest.raises(nnrt.BadData, match="PROT_WRITE needs an fd opened O_RDWR"):
            Memory.from_fd(ro, 0, 10, RW)
        with pytest.raises(nnrt.BadData, match="write-only"):
            Memory.from_fd(wo, 0, 10)
        for prot in (mmap.PROT_WRITE, 0, mmap.PROT_READ | mmap.PROT_EXEC, True, "r", None):
            with pytest.raises(nnrt.BadData, match="prot must be"):
                Memory.from_fd(ro, 0, 10, prot)  # type: ignore[arg-type]
    finally:
        os.close(ro)
        os.close(wo)


def test_from_fd_checks_its_arguments(data_file: tuple[Path, bytes]) -> None:
    path, data = data_file
    fd = os.open(path, os.O_RDONLY)
    closed = os.open(path, os.O_RDONLY)
    os.close(closed)
    try:
        with pytest.raises(nnrt.BadData, match=f"holds {len(data)} bytes, fewer than"):
            Memory.from_fd(fd, 4096, len(data))
        with pytest.raises(nnrt.BadData, match="offset must be >= 0"):
            Memory.from_fd(fd, -1, 10)
        with pytest.raises(nnrt.BadData, match="offset must be <="):
            Memory.from_fd(fd, 2**63, 10)
        with pytest.raises(nnrt.BadData, match="size must be >= 1"):
            Memory.from_fd(fd, 0, 0)
        with pytest.raises(nnrt.BadData, match="size must be an int"):
            Memory.from_fd(fd, 0, 1.5)  # type: ignore[arg-type]
        with pytest.raises(nnrt.BadData, match=f"fd {closed} is not open"):
            Memory.from_fd(closed, 0, 10)
        with pytest.raises(nnrt.BadData, match="fd must be >= 0"):
            Memory.from_fd(-1, 0, 10)
    finally:
        os.close(fd)


def test_from_fd_notices_a_file_truncated_after_mapping(data_file: tuple[Path, bytes]) -> None:
    path, _ = data_file
    fd = os.open(path, os.O_RDWR)
    try:
        with Memory.from_fd(fd, 4096, 4096) as mem:
            mem.check_size()
            os.truncate(path, 5000)
            with pytest.raises(nnrt.BadData, match="truncated to 5000 bytes after it was mapped"):
                mem.ndarray(np.uint8, 1)
            with pytest.raises(nnrt.BadData, match="truncated to 5000 bytes"):
                mem.view(0, 1)
    finally:
        os.close(fd)


# -- blob -------------------------------------------------------------------------------------

def test_blob_written_by_a_second_process_opening_it_by_name() -> None:
    with Memory.create_blob(4096) as mem:
        assert mem.kind == "blob" and mem.owner and mem.writable
        assert mem.name is not None
        assert re.fullmatch(rf"/nnrt-{os.getpid()}-[0-9a-f]{{16}}", mem.name)
        assert Path("/dev/shm" + mem.name).exists()
        mem.ndarray(np.float32, 4)[:] = [1.5, 2.5, 3.5, 4.5]
        out = run_child(
            "import numpy as np\n"
            "from nnrt.memory import Memory\n"
            f"with Memory.open_blob({mem.name!r}) as m:\n"
            "    a = m.ndarray(np.float32, 4)\n"
            "    print(m.size, m.owner, float(a.sum()))\n"
            "    a[:] = a * 2\n"
            "    del a\n")
        assert out == "4096 False 12.0"
        assert mem.ndarray(np.float32, 4).tolist() == [3.0, 5.0, 7.0, 9.0]
        assert Path("/dev/shm" + mem.name).exists()  # the child did not unlink it


def test_blob_owner_unlinks_and_others_do_not() -> None:
    owner = Memory.create_blob(8192, name=f"/nnrt-test-{os.getpid()}")
    assert owner.name == f"/nnrt-test-{os.getpid()}"
    path = Path("/dev/shm" + owner.name)
    with Memory.open_blob(owner.name, writable=False) as reader:
        assert (reader.size, reader.owner, reader.writable) == (8192, False, False)
        owner.ndarray(np.uint8, 3)[:] = [7, 8, 9]
        assert bytes(reader.view(0, 3)) == b"\x07\x08\x09"
        ro = reader.ndarray(np.uint8, 3)
        assert not ro.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            ro[0] = 1
        del ro
    assert path.exists()
    owner.close()
    assert not path.exists()
    owner.close()  # idempotent


def test_blob_names_are_checked() -> None:
    with pytest.raises(nnrt.Unmappable, match="no blob named /nnrt-missing-blob exists"):
        Memory.open_blob("/nnrt-missing-blob")
    for bad in ("nnrt-x", "/a/b", "/x\n", "/", "/" + "a" * 201, "/..", 5, None):
        with pytest.raises(nnrt.BadData, match="name"):
            Memory.open_blob(bad)  # type: ignore[arg-type]
    with pytest.raises(nnrt.BadData, match="writable must be a bool"):
        Memory.open_blob("/nnrt-x", writable=1)  # type: ignore[arg-type]
    with Memory.create_blob(64) as mem:
        assert mem.name is not None
        with pytest.raises(nnrt.BadData, match="already exists"):
            Memory.create_blob(64, name=mem.name)
    with pytest.raises(nnrt.BadData, match="size must be >= 1"):
        Memory.create_blob(0)
    with pytest.raises(nnrt.BadData, match="size must be <="):
        Memory.create_blob(2**48 + 1)


def test_blob_notices_truncation_by_another_process() -> None:
    with Memory.create_blob(8192) as mem:
        os.ftruncate(mem.fileno(), 100)  # what any process with the name could do
        with pytest.raises(nnrt.BadData, match="truncated to 100 bytes"):
            mem.ndarray(np.uint8, 1)


# -- arguments and errors ---------------------------------------------------------------------

def test_create_checks_its_arguments() -> None:
    for size in (0, -1, 2**48 + 1, 2**63, True, 1.0, "4096"):
        with pytest.raises(nnrt.BadData, match=r"Memory\.create: size"):
            Memory.create(size)  # type: ignore[arg-type]
    for name in ("a\0b", "x" * 250, 5):
        with pytest.raises(nnrt.BadData, match=r"Memory\.create: name"):
            Memory.create(64, name=name)  # type: ignore[arg-type]


@pytest.mark.parametrize(("dtype", "shape", "offset", "message"), [
    (np.float32, (2,), 2, r"offset 2 is not aligned to float32 \(4-byte elements\)"),
    (np.float64, (1,), 4, "offset 4 is not aligned to float64"),
    (np.float32, (2,), 4088, r"needs 8 bytes up to 4096, past the end of the memory's 4092"),
    (np.uint8, (4093,), 0, "needs 4093 bytes"),
    (np.uint8, (1,), 2**63, "needs 1 bytes up to 9223372036854775809"),
    (np.uint8, (2**62, 2**62), 0, "past the end"),
    (np.uint8, (1,), -4, "offset must be >= 0"),
    (np.uint8, (-1,), 0, r"shape\[0\] must be >= 0"),
    (np.uint8, (True,), 0, r"shape\[0\] must be an int"),
    (np.uint8, "12", 0, "shape must be a sequence"),
    (object, (1,), 0, "holds Python objects"),
    ("V0", (1,), 0, "has no size"),
    ("no-such-type", (1,), 0, "is not a numpy dtype"),
])
def test_ndarray_checks_bounds_and_alignment(dtype: object, shape: object, offset: int,
                                             message: str) -> None:
    with Memory.create(4092) as mem:
        with pytest.raises(nnrt.BadData, match=message) as info:
            mem.ndarray(dtype, shape, offset)  # type: ignore[arg-type]
        assert f"memory {mem.id} (memfd, 4092 bytes)" in str(info.value)


def test_ndarray_accepts_edges() -> None:
    with Memory.create(4096) as mem:
        assert mem.ndarray(np.float32, (0, 5), offset=4096).shape == (0, 5)
        assert mem.ndarray(np.float32, (), offset=4092).shape == ()
        assert mem.ndarray(np.float32, [1024]).shape == (1024,)
        assert mem.ndarray(np.float32, np.int64(3), offset=np.int64(4)).shape == (3,)
        assert mem.view(4096, 0).nbytes == 0
        with pytest.raises(nnrt.BadData, match="view of 1 bytes at offset 4096"):
            mem.view(4096, 1)


def test_out_of_descriptors_is_resource_exhausted() -> None:
    out = run_child(
        "import resource, os, nnrt\n"
        "from nnrt.memory import Memory\n"
        "n = len(os.listdir('/proc/self/fd'))\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (n, n + 100))\n"
        "for make in (Memory.create, Memory.create_blob):\n"
        "    try:\n"
        "        make(64)\n"
        "    except nnrt.NnrtError as exc:\n"
        "        print(type(exc).__name__, exc.transient)\n")
    assert out.splitlines() == ["ResourceExhausted True", "ResourceExhausted True"]
