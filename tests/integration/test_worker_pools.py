"""Shared memory pools with a real worker process: fds over SCM_RIGHTS, blobs, files, attacks."""

from __future__ import annotations

import fcntl
import mmap
import os
import secrets
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import posix_ipc
import pytest
from service_client import RawClient, Worker, outputs_of

from nnrt.ipc.messages import Status, encode_tensor
from nnrt.model.builder import ModelBuilder
from nnrt.model.model import Model
from nnrt.model.types import OperandLifetime
from nnrt.model.wire import model_to_wire

X = np.array([[1, 2, 3, 4]], np.float32)
Y = np.array([[10, 20, 30, 40]], np.float32)
SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL


def binary_model(op: str) -> Model:
    b = ModelBuilder()
    x, y = b.input("x", (1, 4)), b.input("y", (1, 4))
    b.output(getattr(b, op)(x, y))
    return b.build()


def sealed_memfd(size: int, seals: int = SEALS) -> int:
    fd = os.memfd_create("nnrt-test", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, size)
    if seals:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    return fd


def ref(pool: int, offset: int, shape: Sequence[int] = (1, 4), dtype: str = "float32",
        length: int | None = None) -> list[Any]:
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    return [dtype, list(shape), pool, offset, nbytes if length is None else length]


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def shm_names() -> set[str]:
    return set(os.listdir("/dev/shm"))


class Session:
    """A greeted client of a worker child, with helpers to map pools and execute."""

    def __init__(self, worker: Worker, client: RawClient, pid: int) -> None:
        self.worker, self.client, self.pid = worker, client, pid

    def call(self, verb: str, body: dict[str, Any], fds: Sequence[int] = ()
             ) -> tuple[int, dict[str, Any]]:
        request = self.client.send(verb, body, fds=fds)
        got, status, reply = self.client.receive()
        assert got == request
        return status, reply

    def map_memfd(self, pool: int, fd: int, size: int, writable: bool = True
                  ) -> tuple[int, dict[str, Any]]:
        return self.call("map", {"pool": pool, "kind": "memfd", "size": size,
                                 "writable": writable, "nfds": 1}, fds=[fd])

    def execute(self, handle: int, inputs: list[Any], outputs: list[Any] | None = None
                ) -> tuple[int, dict[str, Any]]:
        body: dict[str, Any] = {"handle": handle, "inputs": inputs}
        if outputs is not None:
            body["outputs"] = outputs
        return self.call("execute", body)

    def alive(self) -> bool:
        return self.client.call("ping") == (Status.OK, {})


@pytest.fixture
def session() -> Iterator[Session]:
    worker, client = Worker.embedded()
    with worker, client:
        pid = client.hello()["pid"]
        yield Session(worker, client, pid)


@pytest.fixture
def pool_memfd() -> Iterator[tuple[int, mmap.mmap]]:
    fd = sealed_memfd(4096)
    view = mmap.mmap(fd, 4096)
    try:
        yield fd, view
    finally:
        view.close()
        os.close(fd)


def floats(view: mmap.mmap, offset: int, count: int = 4) -> list[float]:
    return np.frombuffer(view, np.float32, count, offset).tolist()


# -- the three kinds ----------------------------------------------------------------------------

@pytest.mark.parametrize(("op", "expected"), [("add", X + Y), ("mul", X * Y)])
def test_memfd_inputs_and_output_by_reference(session: Session,
                                              pool_memfd: tuple[int, mmap.mmap], op: str,
                                              expected: np.ndarray) -> None:
    fd, ours = pool_memfd
    ours[0:16], ours[16:32] = X.tobytes(), Y.tobytes()
    assert session.map_memfd(1, fd, 4096) == (Status.OK, {})
    handle = session.client.prepare(binary_model(op))
    status, body = session.execute(handle, [ref(1, 0), ref(1, 16)], [ref(1, 64)])
    assert status == Status.OK, body
    assert body["outputs"] == [["float32", [1, 4]]]  # no bytes on the socket
    assert floats(ours, 64) == expected.ravel().tolist()  # in the client's own mapping
    # mixed: one input inline, the output inline
    status, body = session.execute(handle, [encode_tensor(X), ref(1, 16)], [None])
    assert status == Status.OK
    np.testing.assert_array_equal(outputs_of(body)[0], expected)
    # the output written over an input (aliasing)
    status, body = session.execute(handle, [ref(1, 0), ref(1, 16)], [ref(1, 0)])
    assert status == Status.OK and floats(ours, 0) == expected.ravel().tolist()
    assert session.call("unmap", {"pool": 1}) == (Status.OK, {})


def test_blob_by_name(session: Session) -> None:
    name = f"/nnrt-test-{os.getpid()}-{secrets.token_hex(8)}"
    shm = posix_ipc.SharedMemory(name, posix_ipc.O_CREX, size=4096)
    try:
        with mmap.mmap(shm.fd, 4096) as ours:
            ours[128:144], ours[144:160] = X.tobytes(), Y.tobytes()
            status, body = session.call("map", {"pool": 5, "kind": "blob", "size": 4096,
                                                "writable": True, "name": name})
            assert status == Status.OK, body
            handle = session.client.prepare(binary_model("add"))
            status, body = session.execute(handle, [ref(5, 128), ref(5, 144)], [ref(5, 256)])
            assert (status, body["outputs"]) == (Status.OK, [["float32", [1, 4]]])
            assert floats(ours, 256) == (X + Y).ravel().tolist()
            # the owner shrinks it after sharing: refused before any access
            os.ftruncate(shm.fd, 64)
            status, body = session.execute(handle, [ref(5, 0), ref(5, 16)], [ref(5, 32)])
            assert status == Status.BAD_DATA
            assert "pool 5 was truncated to 64 bytes after it was shared" in body["message"]
            assert session.alive()
    finally:
        shm.close_fd()
        shm.unlink()


def test_mmap_fd_over_a_file(session: Session, tmp_path: Path) -> None:
    path = tmp_path / "tensors.bin"
    offset = mmap.ALLOCATIONGRANULARITY + 64  # not page aligned: the worker aligns down
    path.write_bytes(b"\0" * (offset + 4096))
    with open(path, "r+b") as file:
        file.seek(offset)
        file.write(X.tobytes() + Y.tobytes())
        file.flush()
        status, body = session.call("map", {"pool": 9, "kind": "mmap_fd", "size": 4096,
                                            "offset": offset, "writable": True, "nfds": 1},
                                    fds=[file.fileno()])
        assert status == Status.OK, body
    handle = session.client.prepare(binary_model("mul"))
    status, body = session.execute(handle, [ref(9, 0), ref(9, 16)], [ref(9, 32)])
    assert (status, body["outputs"]) == (Status.OK, [["float32", [1, 4]]])
    data = path.read_bytes()
    assert np.frombuffer(data, np.float32, 4, offset + 32).tolist() == (X * Y).ravel().tolist()
    os.truncate(path, offset + 16)  # truncated after sharing
    status, body = session.execute(handle, [ref(9, 0), ref(9, 0)])
    assert status == Status.BAD_DATA
    assert f"pool 9 was truncated to {offset + 16} bytes after it was shared" in body["message"]
    assert session.alive()


def constant_model() -> tuple[Model, int, np.ndarray]:
    """y = x + c on [1, 64]: c is a CONSTANT_REFERENCE (256 bytes); returns it and its index."""
    c = np.arange(64, dtype=np.float32).reshape(1, 64)
    b = ModelBuilder()
    b.output(b.add(b.input("x", (1, 64)), b.constant(c)))
    model = b.build()
    (index,) = [i for i, op in enumerate(model.operands)
                if op.lifetime == OperandLifetime.CONSTANT_REFERENCE]
    return model, index, c


def test_constants_by_reference(session: Session, pool_memfd: tuple[int, mmap.mmap],
                                tmp_path: Path) -> None:
    fd, ours = pool_memfd
    model, index, c = constant_model()
    ours[1024:1280] = c.tobytes()
    assert session.map_memfd(1, fd, 4096, writable=False) == (Status.OK, {})
    wire = model_to_wire(model, lambda i: (1, 1024, 256) if i == index else None)
    assert "ref" in wire["operands"][index]
    assert session.call("supported", {"model": wire}) == (
        Status.OK, {"supported": [True], "reasons": [], "groups": []})
    status, body = session.call("prepare", {"model": wire})
    assert status == Status.OK, body
    handle = body["handle"]
    x = np.ones((1, 64), np.float32)
    assert session.call("unmap", {"pool": 1}) == (Status.OK, {})  # the model keeps its views
    status, body = session.execute(handle, [encode_tensor(x)])
    assert status == Status.OK
    np.testing.assert_array_equal(outputs_of(body)[0], x + c)
    status, body = session.call("prepare", {"model": wire})  # the pool is gone now
    assert status == Status.BAD_DATA and f"model.operands[{index}].ref" in body["message"]
    assert "pool 1 was unmapped" in body["message"]
    # weights in a file: truncating it afterwards is caught before the execute runs
    path = tmp_path / "weights"
    path.write_bytes(c.tobytes())
    with open(path, "r+b") as file:
        map_file = {"pool": 2, "kind": "mmap_fd", "size": 256, "writable": False, "nfds": 1}
        assert session.call("map", map_file, fds=[file.fileno()]) == (Status.OK, {})
    status, body = session.call("prepare", {"model": model_to_wire(
        model, lambda i: (2, 0, 256) if i == index else None)})
    assert status == Status.OK, body
    handle = body["handle"]
    status, body = session.execute(handle, [encode_tensor(x)])
    assert status == Status.OK
    os.truncate(path, 128)
    status, body = session.execute(handle, [encode_tensor(x)])
    assert status == Status.BAD_DATA and "pool 2 was truncated to 128 bytes" in body["message"]
    assert session.alive()


# -- adversarial requests: each a clear error, the worker keeps answering ------------------------

def test_map_refusals(session: Session, tmp_path: Path) -> None:
    unsealed, wrong_size = sealed_memfd(4096, seals=0), sealed_memfd(4096)
    path = tmp_path / "f"
    path.write_bytes(b"\0" * 4096)
    read_only = os.open(path, os.O_RDONLY)
    try:
        cases: list[tuple[dict[str, Any], list[int], int, str]] = [
            ({"kind": "memfd", "size": 4096, "nfds": 1}, [unsealed], Status.BAD_DATA,
             "not sealed against shrinking and growing"),
            ({"kind": "memfd", "size": 8192, "nfds": 1}, [wrong_size], Status.BAD_DATA,
             "the memfd holds 4096 bytes, the request says 8192"),
            ({"kind": "mmap_fd", "size": 4096, "nfds": 1}, [read_only], Status.BAD_DATA,
             "the fd is not open for reading and writing (O_RDWR)"),
            ({"kind": "mmap_fd", "size": 4096, "offset": 1, "nfds": 1}, [read_only],
             Status.BAD_DATA, "the file holds 4096 bytes, fewer than offset 1 + size 4096"),
            ({"kind": "blob", "size": 64, "name": "/nnrt-does-not-exist-" + secrets.token_hex(4)},
             [], Status.UNMAPPABLE, "does not exist"),
            ({"kind": "blob", "size": 64, "name": "../../etc/passwd"}, [], Status.BAD_DATA,
             "must match"),
            ({"kind": "ashmem", "size": 64}, [], Status.BAD_DATA, "unknown pool kind"),
            ({"kind": "memfd", "size": 0, "nfds": 1}, [wrong_size], Status.BAD_DATA,
             "size 0 must be"),
            ({"kind": "memfd", "size": 2**48 + 1, "nfds": 1}, [wrong_size], Status.BAD_DATA,
             "must be from 1 to 2**48"),
        ]
        before = fd_count(session.pid)
        for fields, fds, status, message in cases:
            got, body = session.call("map", {"pool": 3, "writable": True, **fields}, fds=fds)
            assert (got, message in body["message"]) == (status, True), (fields, body)
            assert "request" in body["message"] and "pool 3" in body["message"]
            assert session.alive()
        assert fd_count(session.pid) == before  # every fd received was closed
        ro_map = {"pool": 3, "kind": "mmap_fd", "size": 4096, "writable": False, "nfds": 1}
        assert session.call("map", ro_map, fds=[read_only]) == (Status.OK, {})
        status, body = session.call("map", ro_map, fds=[read_only])
        assert status == Status.BAD_DATA and "pool 3 is already mapped" in body["message"]
        handle = session.client.prepare(binary_model("add"))
        status, body = session.execute(handle, [ref(3, 0), ref(3, 16)], [ref(3, 32)])
        assert status == Status.BAD_DATA and "pool 3 is read-only" in body["message"]
        assert session.alive()
    finally:
        for fd in (unsealed, wrong_size, read_only):
            os.close(fd)


def test_wrong_fd_counts_leak_nothing(session: Session) -> None:
    fd = sealed_memfd(4096)
    try:
        before = fd_count(session.pid)
        body = {"pool": 1, "kind": "memfd", "size": 4096, "writable": True}
        status, reply = session.call("map", body, fds=[fd])  # nfds missing
        assert status == Status.BAD_DATA
        assert "1 fd(s) came with the request but nfds declares 0" in reply["message"]
        assert session.alive()
        status, reply = session.call("map", {**body, "nfds": 1}, fds=[fd, fd])  # one extra
        assert status == Status.BAD_DATA
        assert "2 fd(s) came with the request but nfds declares 1" in reply["message"]
        status, reply = session.call("map", {**body, "nfds": 0})  # no fd at all
        assert status == Status.BAD_DATA and "comes with 1 fd(s) (nfds), got 0" in reply[
            "message"]
        status, reply = session.call("map", {"pool": 2, "kind": "blob", "size": 64,
                                             "writable": True, "name": "/x", "nfds": 1},
                                     fds=[fd])
        assert status == Status.BAD_DATA and "comes with 0 fd(s)" in reply["message"]
        session.client.send("ping", {}, fds=[fd])  # fds on a request that takes none
        assert session.client.receive()[1] == Status.OK
        assert session.alive()
        assert fd_count(session.pid) == before
        assert session.map_memfd(1, fd, 4096) == (Status.OK, {})  # the queue is in sync
    finally:
        os.close(fd)


def test_reference_refusals(session: Session, pool_memfd: tuple[int, mmap.mmap]) -> None:
    fd, _ = pool_memfd
    assert session.map_memfd(1, fd, 4096) == (Status.OK, {})
    handle = session.client.prepare(binary_model("add"))
    good = ref(1, 0)
    cases: list[tuple[list[Any], list[Any] | None, int, str]] = [
        ([ref(1, 2**63), good], None, Status.BAD_DATA, "must be ints from 0 to 2**62"),
        ([ref(1, 2**64 - 16), good], None, Status.BAD_DATA, "must be ints from 0 to 2**62"),
        ([ref(1, -16), good], None, Status.BAD_DATA, "must be ints from 0 to 2**62"),
        ([ref(1, 0, length=-16), good], None, Status.BAD_DATA, "must be ints from 0 to 2**62"),
        ([ref(1, 4088), good], None, Status.BAD_DATA, "bytes 4088..4104 are outside pool 1"),
        ([ref(1, 2**62 - 8), good], None, Status.BAD_DATA, "outside pool 1 of 4096 bytes"),
        ([ref(1, 2), good], None, Status.BAD_DATA, "offset 2 in pool 1 is not aligned"),
        ([ref(1, 0, length=20), good], None, Status.BAD_DATA, "the reference has length 20"),
        ([ref(2, 0), good], None, Status.BAD_DATA, "input 0: unknown pool 2"),
        ([good, good], [ref(1, 0, dtype="int32")], Status.BAD_DATA,
         "the reference is int32, model output 0 is float32"),
        ([good, good], [None, None], Status.BAD_DATA, "outputs has 2 entries"),
        ([good, good], [ref(1, 0, shape=(1, 2))], Status.OUTPUT_INSUFFICIENT_SIZE, ""),
    ]
    for inputs, outputs, status, message in cases:
        got, body = session.execute(handle, inputs, outputs)
        assert (got, message in body["message"]) == (status, True), (inputs, outputs, body)
        assert session.alive()
    assert body["shapes"] == [[1, 4]]
    assert session.call("unmap", {"pool": 1}) == (Status.OK, {})
    status, body = session.execute(handle, [good, good])
    assert status == Status.BAD_DATA and "input 0: pool 1 was unmapped" in body["message"]
    status, body = session.call("unmap", {"pool": 1})
    assert status == Status.BAD_DATA and "pool 1 was unmapped" in body["message"]
    status, body = session.call("unmap", {"pool": 77})
    assert status == Status.BAD_DATA and "unknown pool 77" in body["message"]
    assert session.alive()


@pytest.mark.parametrize("bad", [
    ["float32", [1, 4], 1, 0],                 # four entries
    ["float32", [1, 4], 1, "0", 16],           # offset not an int
    ["float32", [1, 4], 1.0, 0, 16],           # pool not an int
    ["float32", [1, 4], True, 0, 16],          # bool pool
    ["complex64", [1, 4], 1, 0, 16],           # unknown dtype
])
def test_malformed_references_drop_only_that_connection(tmp_path: Path, bad: list[Any]
                                                        ) -> None:
    path = str(tmp_path / "w.sock")
    with Worker.listening(path), RawClient.connect(path) as good, \
            RawClient.connect(path) as evil:
        good.hello()
        evil.hello()
        evil.send("execute", {"handle": 1, "inputs": [bad]})
        assert evil.closed_by_peer()
        assert good.call("ping") == (Status.OK, {})


def test_closing_a_connection_unmaps_its_pools(tmp_path: Path) -> None:
    path = str(tmp_path / "w.sock")
    data = tmp_path / "data"
    data.write_bytes(b"\0" * 8192)
    with Worker.listening(path), RawClient.connect(path) as other:
        pid = other.hello()["pid"]
        before = fd_count(pid)
        with RawClient.connect(path) as client, open(data, "r+b") as file:
            client.hello()
            for pool in range(1, 9):
                request = client.send("map", {"pool": pool, "kind": "mmap_fd", "size": 8192,
                                              "writable": True, "nfds": 1},
                                      fds=[file.fileno()])
                assert client.receive()[:2] == (request, Status.OK)
            assert fd_count(pid) == before + 1 + 8  # the socket, one fd per mapping
        assert other.call("ping") == (Status.OK, {})
        deadline = time.monotonic() + 5
        while fd_count(pid) != before and time.monotonic() < deadline:
            time.sleep(0.01)
        assert fd_count(pid) == before


def test_10000_map_execute_unmap_cycles_leak_nothing(session: Session,
                                                     pool_memfd: tuple[int, mmap.mmap]) -> None:
    fd, ours = pool_memfd
    ours[0:16], ours[16:32] = X.tobytes(), Y.tobytes()
    handle = session.client.prepare(binary_model("add"))
    name = f"/nnrt-test-{os.getpid()}-{secrets.token_hex(8)}"
    shm = posix_ipc.SharedMemory(name, posix_ipc.O_CREX, size=4096)
    try:
        blob = {"kind": "blob", "size": 4096, "writable": True, "name": name}
        memfd = {"kind": "memfd", "size": 4096, "writable": True, "nfds": 1}
        fds_before, shm_before = fd_count(session.pid), shm_names()
        client = session.client
        start = time.monotonic()
        for cycle in range(10_000):
            pool = cycle + 1
            blob_cycle = cycle % 4 == 3
            client.send("map", {"pool": pool, **(blob if blob_cycle else memfd)},
                        fds=() if blob_cycle else [fd])
            client.send("execute", {"handle": handle, "inputs": [ref(pool, 0), ref(pool, 16)],
                                    "outputs": [ref(pool, 32 + 16 * (cycle % 8))]})
            client.send("unmap", {"pool": pool})
            for _ in range(3):
                _, status, body = client.receive()
                assert status == Status.OK, body
        elapsed = time.monotonic() - start
        assert fd_count(session.pid) == fds_before
        assert shm_names() == shm_before
        assert floats(ours, 32 + 16 * 6) == (X + Y).ravel().tolist()  # memfd cycles wrote it
        assert elapsed < 30, f"10,000 cycles took {elapsed:.1f} s"
    finally:
        shm.unlink()
        shm.close_fd()
