"""Fuzzing pool references ``[dtype, shape, pool, offset, length]`` in execute, copy_from and
copy_to requests against a real worker process with mapped pools.

The oracle keeps its own mapping of every pool: a request is answered (never a hang, never a
dead worker); a reference this test knows to be valid runs and writes exactly the expected
bytes; one it knows to be out of bounds, misaligned, mis-sized, on an unknown / unmapped pool
or an output into a read-only pool is refused; and no request ever changes a byte of any pool
outside the output region it named.
"""

from __future__ import annotations

import fcntl
import math
import mmap
import os
import tempfile
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from frame_fuzzer import SEED_MODELS, Closed, Conn, Target
from fuzz_kit import budget, count
from hypothesis import given
from hypothesis import strategies as st

from nnrt.ipc.messages import PROTOCOL_VERSION

SIZE = 4096
FILE_OFFSET = 100
FILE_SIZE = 1000
C = np.arange(1, 5, dtype=np.float32)
_ITEMSIZE = {"float32": 4, "float16": 2, "int32": 4, "uint32": 4, "uint8": 1, "int8": 1,
             "int16": 2, "uint16": 2, "bool": 1}


class Pools:
    """A worker with pools 1 (memfd rw), 2 (memfd read-only), 3 (file range rw), 4 (unmapped)
    on one connection, the add model prepared, and our own mappings of the pools."""

    def __init__(self, workdir: str) -> None:
        self.target = Target("worker", workdir, driver="reference")
        self.workdir = workdir
        self.maps: dict[int, mmap.mmap] = {}
        self.sizes = {1: SIZE, 2: SIZE, 3: FILE_SIZE}
        self.writable = {1: True, 2: False, 3: True}
        self.fds: list[int] = []
        for pool in (1, 2):
            fd = os.memfd_create(f"pool{pool}", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            os.ftruncate(fd, SIZE)
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
            self.fds.append(fd)
            self.maps[pool] = mmap.mmap(fd, SIZE)
        path = os.path.join(workdir, "pool3")
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        os.ftruncate(fd, FILE_OFFSET + FILE_SIZE)
        self.fds.append(fd)
        self.maps[3] = mmap.mmap(fd, FILE_OFFSET + FILE_SIZE)
        rng = np.random.default_rng(1)
        for m in self.maps.values():
            m[:] = rng.integers(0, 256, len(m), np.uint8).tobytes()
        self.connect()

    def connect(self) -> None:
        self.conn = Conn(self.target.path)
        conn = self.conn
        assert conn.call("hello", {"protocol": PROTOCOL_VERSION, "client": "fuzz"})[0] == 0
        status, body = conn.call("prepare", {"model": SEED_MODELS[0]})
        assert status == 0, body
        self.handle = body["handle"]
        for pool, (fd, writable) in enumerate(((self.fds[0], True), (self.fds[1], False)), 1):
            assert conn.call("map", {"pool": pool, "kind": "memfd", "size": SIZE,
                                     "writable": writable, "nfds": 1}, [fd])[0] == 0
        assert conn.call("map", {"pool": 3, "kind": "mmap_fd", "size": FILE_SIZE,
                                 "offset": FILE_OFFSET, "writable": True, "nfds": 1},
                         [self.fds[2]])[0] == 0
        assert conn.call("map", {"pool": 4, "kind": "memfd", "size": SIZE, "writable": True,
                                 "nfds": 1}, [self.fds[0]])[0] == 0
        assert conn.call("unmap", {"pool": 4})[0] == 0
        status, body = conn.call("allocate", {"roles": [[self.handle, "input", 0, 1.0]]})
        assert status == 0, body
        self.token = body["token"]

    def snapshot(self) -> dict[int, bytes]:
        return {pool: self.region(pool, 0, size) for pool, size in self.sizes.items()}

    def region(self, pool: int, offset: int, length: int) -> bytes:
        base = FILE_OFFSET if pool == 3 else 0
        return bytes(self.maps[pool][base + offset:base + offset + length])

    def close(self) -> None:
        self.conn.close()
        for m in self.maps.values():
            m.close()
        for fd in self.fds:
            os.close(fd)
        self.target.close()


@pytest.fixture(scope="module")
def pools() -> Iterator[Pools]:
    with tempfile.TemporaryDirectory(prefix="nnrt-fuzz-pools-") as workdir:
        state = Pools(workdir)
        try:
            yield state
        finally:
            state.close()


_POOL_IDS = st.sampled_from([1, 1, 2, 3, 4, 5, 0, -1, 2**53, 2**63 - 1])
_OFFSETS = st.one_of(st.sampled_from([0, 0, 4, 2, 16, 996, 1000, 4080, 4092, 4096, 2**62,
                                      2**62 + 4, 2**63 - 4, -4]), st.integers(0, 5000))
_LENGTHS = st.one_of(st.sampled_from([16, 16, 0, 4, 8, 4096, 2**62, 2**63 - 16, -16]),
                     st.integers(0, 5000))
_SHAPES = st.sampled_from([[1, 4], [1, 4], [4], [2, 2], [1, 8], [0], [], [2**31 - 1, 4]])
_DTYPES = st.sampled_from(["float32", "float32", "float32", "float16", "uint8", "int32"])


@st.composite
def refs(draw: st.DrawFn) -> list[Any]:
    return [draw(_DTYPES), draw(_SHAPES), draw(_POOL_IDS), draw(_OFFSETS), draw(_LENGTHS)]


def _valid(pools: Pools, ref: list[Any], output: bool) -> bool | None:
    """True: every rule holds and the ref fits the add model exactly; False: a pool rule is
    broken (must be refused); None: pool rules hold but the model may refuse it."""
    dtype, shape, pool, offset, length = ref
    itemsize = _ITEMSIZE[dtype]
    if pool not in pools.sizes or not (0 <= offset <= 2**62 and 0 <= length <= 2**62):
        return False
    if offset + length > pools.sizes[pool] or offset % itemsize:
        return False
    if math.prod(shape) * itemsize != length or (output and not pools.writable[pool]):
        return False
    return True if dtype == "float32" and shape == [1, 4] else None


def _valid_target(pools: Pools, ref: list[Any]) -> bool:
    """copy_to uses the target's dtype, pool, offset and length (at least the buffer's 16
    bytes), not its shape."""
    dtype, _, pool, offset, length = ref
    return (dtype == "float32" and pool in pools.sizes and pools.writable[pool]
            and 0 <= offset <= 2**62 and 16 <= length <= 2**62 and offset % 4 == 0
            and length % 4 == 0
            and offset + length <= pools.sizes[pool])


def _request(pools: Pools, verb: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    try:
        return pools.conn.call(verb, body)
    except Closed:  # a structural protocol error: this connection only
        pools.conn.close()
        assert pools.target.alive(), "the worker died"
        pools.connect()
        return -1, {}


def _unchanged_outside(pools: Pools, before: dict[int, bytes], written: list[Any]) -> None:
    after = pools.snapshot()
    for pool, data in before.items():
        keep = bytearray(data)
        new = bytearray(after[pool])
        for ref in written:
            if ref[2] == pool and ref[3] >= 0 and ref[3] + ref[4] <= len(data):
                keep[ref[3]:ref[3] + ref[4]] = new[ref[3]:ref[3] + ref[4]]
        assert keep == new, f"pool {pool} changed outside the output region {written}"


@budget(ci=250, long=10000)
@given(inp=refs(), out=st.one_of(st.none(), refs()), inline_input=st.booleans(),
       values=st.lists(st.integers(-100, 100), min_size=4, max_size=4))
def test_execute_references(pools: Pools, inp: list[Any], out: list[Any] | None,
                            inline_input: bool, values: list[int]) -> None:
    count("pools.execute")
    x = np.array([values], np.float32)
    inputs = [["float32", [1, 4], x.tobytes()]] if inline_input else [inp]
    body: dict[str, Any] = {"handle": pools.handle, "inputs": inputs}
    if out is not None:
        body["outputs"] = [out]
    in_ok = True if inline_input else _valid(pools, inp, False)
    if not inline_input and in_ok is not False:
        x = np.frombuffer(pools.region(inp[2], inp[3], inp[4]), np.dtype(inp[0])).copy()
    out_ok = True if out is None else _valid(pools, out, True)
    before = pools.snapshot()
    status, reply = _request(pools, "execute", body)
    assert pools.target.alive(), "the worker died"
    written = [out] if out is not None and out_ok is not False else []
    _unchanged_outside(pools, before, written)
    if in_ok is False or out_ok is False:
        assert status != 0, f"an invalid reference was accepted: {inp} {out}"
        return
    if in_ok and out_ok and (x.dtype == np.float32 and x.size == 4):
        overlap = (out is not None and not inline_input and inp[2] == out[2]
                   and inp[3] < out[3] + out[4] and out[3] < inp[3] + inp[4])
        assert status == 0, f"valid references refused: {status} {reply}"
        data = reply["outputs"][0][2] if out is None else pools.region(out[2], out[3], 16)
        if not overlap:
            got = np.frombuffer(data, np.float32)
            np.testing.assert_array_equal(got, (x.reshape(-1) + C).astype(np.float32))
        count("pools.execute.valid")


@budget(ci=150, long=5000)
@given(ref=refs(), verb=st.sampled_from(["copy_from", "copy_to"]))
def test_device_copy_references(pools: Pools, ref: list[Any], verb: str) -> None:
    count("pools.copy")
    if verb == "copy_to":  # make sure the buffer holds something
        status, _ = _request(pools, "copy_from", {"token": pools.token, "source": [
            "float32", [1, 4], np.ones(4, np.float32).tobytes()]})
        assert status == 0
    before = pools.snapshot()
    field = "source" if verb == "copy_from" else "target"
    status, reply = _request(pools, verb, {"token": pools.token, field: ref})
    assert pools.target.alive(), "the worker died"
    ok = _valid(pools, ref, False) if verb == "copy_from" else _valid_target(pools, ref)
    _unchanged_outside(pools, before, [ref] if verb == "copy_to" and ok is not False else [])
    if ok is False and verb == "copy_from":
        assert status != 0, f"an invalid source was accepted: {ref}"
    if ok is True:
        assert status == 0, f"a valid {verb} {ref} was refused: {status} {reply}"
