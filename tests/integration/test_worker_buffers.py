"""Device buffers (memory domains) with a real worker process over a raw socket."""

from __future__ import annotations

import contextlib
import mmap
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from service_client import RawClient, Worker, outputs_of
from test_worker_pools import Session, X, Y, binary_model, floats, ref, sealed_memfd

from nnrt.ipc.messages import PROTOCOL_VERSION, Status, decode_tensor, encode_tensor
from nnrt.model.builder import ModelBuilder
from nnrt.model.model import Model

HERE = Path(__file__).parent


@contextlib.contextmanager
def open_session(*args: str) -> Iterator[Session]:
    worker, client = Worker.embedded(*args)
    with worker, client:
        pid = client.hello()["pid"]
        yield Session(worker, client, pid)


@pytest.fixture
def session() -> Iterator[Session]:
    with open_session() as opened:
        yield opened


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> Iterator[Session]:
    monkeypatch.setenv("PYTHONPATH", str(HERE))
    with open_session("--driver", "flaky_driver:SmallBufferDriver") as opened:
        yield opened


def plus_zero_model(shape: tuple[int, ...] = (1, 4)) -> Model:
    """y = x + 0 (bit for bit the identity on finite values other than -0)."""
    b = ModelBuilder()
    x = b.input("x", shape)
    b.output(b.add(x, np.zeros((1,) * len(shape), np.float32)))
    return b.build()


def dynamic_model() -> Model:
    """y = x + x with x of shape [?, 3]."""
    b = ModelBuilder()
    x = b.input("x", (0, 3))
    b.output(b.add(x, x))
    return b.build()


def allocate(session: Session, roles: list[list[Any]], dims: list[int] | None = None
             ) -> tuple[int, dict[str, Any]]:
    body: dict[str, Any] = {"roles": roles}
    if dims is not None:
        body["dims"] = dims
    return session.call("allocate", body)


def token_of(session: Session, roles: list[list[Any]], dims: list[int] | None = None) -> int:
    status, body = allocate(session, roles, dims)
    assert status == Status.OK, body
    token: int = body["token"]
    return token


def device(token: int) -> list[Any]:
    return ["device", token]


def read_back(session: Session, token: int) -> np.ndarray:
    status, body = session.call("copy_to", {"token": token})
    assert status == Status.OK, body
    return decode_tensor(body["tensor"], "tensor")


# -- the verbs ----------------------------------------------------------------------------------

def test_device_buffers_need_protocol_version_3_or_later() -> None:
    assert PROTOCOL_VERSION >= 3


def test_allocate_copy_execute_free(session: Session) -> None:
    handle = session.client.prepare(binary_model("add"))
    status, body = allocate(session, [[handle, "input", 0, 1.0], [handle, "output", 0, 0.5]])
    assert status == Status.OK, body
    state = body["token"]
    assert body["dtype"] == "float32" and body["dims"] == [1, 4]
    assert state & 1 and 0 < state < 2**63
    assert session.call("copy_from", {"token": state, "source": encode_tensor(X)}) == (
        Status.OK, {})
    for step in range(1, 4):  # state = state + Y, kept in the worker
        status, body = session.execute(handle, [device(state), encode_tensor(Y)], [None])
        assert status == Status.OK
        np.testing.assert_array_equal(outputs_of(body)[0], X + step * Y)
        status, body = session.execute(handle, [encode_tensor(outputs_of(body)[0]),
                                                encode_tensor(np.zeros_like(Y))],
                                       [device(state)])
        assert status == Status.OK, body
        assert body["outputs"] == [["device", [1, 4]]]
    np.testing.assert_array_equal(read_back(session, state), X + 3 * Y)
    assert session.call("free", {"token": state}) == (Status.OK, {})
    status, body = session.call("free", {"token": state})
    assert status == Status.BAD_DATA and "unknown token" in body["message"]
    assert session.alive()


def test_two_buffers_chain_without_the_client(session: Session) -> None:
    handle = session.client.prepare(binary_model("add"))
    a = token_of(session, [[handle, "input", 0, 1.0]])
    b = token_of(session, [[handle, "output", 0, 1.0]])
    session.call("copy_from", {"token": a, "source": encode_tensor(X)})
    status, body = session.execute(handle, [device(a), encode_tensor(Y)], [device(b)])
    assert status == Status.OK, body
    np.testing.assert_array_equal(read_back(session, b), X + Y)
    np.testing.assert_array_equal(read_back(session, a), X)  # inputs are only read


def test_copy_to_a_pool_and_from_a_pool(session: Session) -> None:
    fd = sealed_memfd(4096)
    try:
        with mmap.mmap(fd, 4096) as ours:
            ours[0:16] = X.tobytes()
            assert session.map_memfd(1, fd, 4096) == (Status.OK, {})
            handle = session.client.prepare(binary_model("add"))
            token = token_of(session, [[handle, "input", 1, 1.0]])
            assert session.call("copy_from", {"token": token, "source": ref(1, 0)}) == (
                Status.OK, {})
            status, body = session.call("copy_to", {"token": token,
                                                    "target": ref(1, 64, (8,), length=32)})
            assert (status, body) == (Status.OK, {"shape": [1, 4]})
            assert floats(ours, 64) == X.ravel().tolist()
            # a target too small, or of another dtype
            status, body = session.call("copy_to", {"token": token,
                                                    "target": ref(1, 128, (2,))})
            assert status == Status.BAD_DATA and "holds 8 bytes" in body["message"]
            status, body = session.call("copy_to", {"token": token,
                                                    "target": ref(1, 128, (4,), "int32")})
            assert status == Status.BAD_DATA and "int32" in body["message"]
    finally:
        os.close(fd)


def test_shared_device_device_shared_round_trip_is_bit_exact(session: Session) -> None:
    shape = (64, 256)
    data = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    data[data == 0] = 1.0  # -0 + 0 is +0: keep the identity exact
    nbytes = data.nbytes
    fd = sealed_memfd(2 * nbytes)
    try:
        with mmap.mmap(fd, 2 * nbytes) as ours:
            ours[0:nbytes] = data.tobytes()
            assert session.map_memfd(1, fd, 2 * nbytes) == (Status.OK, {})
            handle = session.client.prepare(plus_zero_model(shape))
            a = token_of(session, [[handle, "input", 0, 1.0]])
            b = token_of(session, [[handle, "output", 0, 1.0]])
            whole = ref(1, 0, shape)
            assert session.call("copy_from", {"token": a, "source": whole})[0] == Status.OK
            status, body = session.execute(handle, [device(a)], [device(b)])  # device→device
            assert status == Status.OK and body["outputs"] == [["device", list(shape)]]
            status, body = session.call("copy_to", {"token": b,
                                                    "target": ref(1, nbytes, shape)})
            assert (status, body) == (Status.OK, {"shape": list(shape)})
            assert ours[nbytes:2 * nbytes] == data.tobytes()
    finally:
        os.close(fd)


# -- state --------------------------------------------------------------------------------------

def test_uninitialised_reads_fail(session: Session) -> None:
    handle = session.client.prepare(binary_model("add"))
    token = token_of(session, [[handle, "input", 0, 1.0]])
    status, body = session.call("copy_to", {"token": token})
    assert status == Status.OP_FAILED and "uninitialised" in body["message"]
    status, body = session.execute(handle, [device(token), encode_tensor(Y)])
    assert status == Status.OP_FAILED and "uninitialised" in body["message"]
    assert f"token {token}" in body["message"]
    assert session.call("copy_from", {"token": token, "source": encode_tensor(X)})[0] == 0
    status, body = session.execute(handle, [device(token), encode_tensor(Y)])
    assert status == Status.OK
    assert session.alive()


@pytest.mark.parametrize(("source", "why"), [
    (encode_tensor(X.astype(np.int32)), "int32"),
    (encode_tensor(np.zeros((2, 4), np.float32)), "does not fit"),
    (encode_tensor(np.zeros((4,), np.float32)), "does not fit"),
])
def test_failed_copy_leaves_the_buffer_uninitialised(session: Session, source: list[Any],
                                                     why: str) -> None:
    handle = session.client.prepare(binary_model("add"))
    token = token_of(session, [[handle, "input", 0, 1.0]])
    assert session.call("copy_from", {"token": token, "source": encode_tensor(X)})[0] == 0
    status, body = session.call("copy_from", {"token": token, "source": source})
    assert status == Status.BAD_DATA and why in body["message"]
    assert session.call("copy_to", {"token": token})[0] == Status.OP_FAILED
    # re-initialised after a successful copy
    assert session.call("copy_from", {"token": token, "source": encode_tensor(Y)})[0] == 0
    np.testing.assert_array_equal(read_back(session, token), Y)


def test_copy_from_an_unmapped_pool_fails_and_invalidates(session: Session) -> None:
    handle = session.client.prepare(binary_model("add"))
    token = token_of(session, [[handle, "input", 0, 1.0]])
    assert session.call("copy_from", {"token": token, "source": encode_tensor(X)})[0] == 0
    status, body = session.call("copy_from", {"token": token, "source": ref(7, 0)})
    assert status == Status.BAD_DATA and "pool 7" in body["message"]
    assert session.call("copy_to", {"token": token})[0] == Status.OP_FAILED


@pytest.mark.parametrize("failure", ["uninitialised input", "deadline"])
def test_failed_execution_invalidates_its_device_outputs(session: Session,
                                                         failure: str) -> None:
    handle = session.client.prepare(binary_model("add"))
    a = token_of(session, [[handle, "input", 0, 1.0]])
    out = token_of(session, [[handle, "output", 0, 1.0]])
    session.call("copy_from", {"token": out, "source": encode_tensor(X)})
    assert session.call("copy_to", {"token": out})[0] == Status.OK
    if failure == "deadline":
        session.call("copy_from", {"token": a, "source": encode_tensor(X)})
        status, _ = session.call("execute", {"handle": handle, "inputs": [
            device(a), encode_tensor(Y)], "outputs": [device(out)], "deadline": -1e9})
        assert status == Status.MISSED_DEADLINE
    else:
        status, _ = session.execute(handle, [device(a), encode_tensor(Y)], [device(out)])
        assert status == Status.OP_FAILED
    status, body = session.call("copy_to", {"token": out})
    assert status == Status.OP_FAILED and "uninitialised" in body["message"]


def test_dynamic_output_resizes(session: Session) -> None:
    handle = session.client.prepare(dynamic_model())
    status, body = allocate(session, [[handle, "output", 0, 1.0]])
    assert status == Status.OK and body["dims"] is None  # the output operand says nothing
    token = body["token"]
    for rows in (2, 5, 1):
        x = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3)
        status, body = session.execute(handle, [encode_tensor(x)], [device(token)])
        assert status == Status.OK and body["outputs"] == [["device", [rows, 3]]]
        np.testing.assert_array_equal(read_back(session, token), x + x)


def test_an_output_that_does_not_fit_a_fixed_buffer_fails(session: Session) -> None:
    dynamic = session.client.prepare(dynamic_model())
    fixed = session.client.prepare(plus_zero_model((2, 3)))
    status, body = allocate(session, [[dynamic, "output", 0, 1.0], [fixed, "input", 0, 1.0]])
    assert status == Status.OK and body["dims"] == [2, 3]  # deduced from the fixed role
    token = body["token"]
    status, body = session.execute(dynamic, [encode_tensor(np.ones((4, 3), np.float32))],
                                   [device(token)])
    assert status == Status.OP_FAILED and "[4, 3]" in body["message"]
    assert session.call("copy_to", {"token": token})[0] == Status.OP_FAILED
    x = np.ones((2, 3), np.float32)
    assert session.execute(dynamic, [encode_tensor(x)], [device(token)])[0] == Status.OK
    status, body = session.execute(fixed, [device(token)])
    assert status == Status.OK
    np.testing.assert_array_equal(outputs_of(body)[0], x + x)


# -- invalid use: the execution fails at once, the worker lives on ------------------------------

INVALID_USES = {
    "unknown token": (lambda a, b, h: ([device(12345), encode_tensor(Y)], None),
                      "unknown token"),
    "not its role (index)": (lambda a, b, h: ([encode_tensor(X), device(a)], None),
                             "not allocated for input 1"),
    "input as output": (lambda a, b, h: ([encode_tensor(X), encode_tensor(Y)], [device(a)]),
                        "not allocated for output 0"),
    "input and output": (lambda a, b, h: ([device(b), encode_tensor(Y)], [device(b)]),
                         "both an input and an output"),
    "offset and length": (lambda a, b, h: ([["device", a, 0, 16], encode_tensor(Y)], None),
                          "no offset or length"),
    "token only": (lambda a, b, h: ([["device"], encode_tensor(Y)], None),
                   "no offset or length"),
    "other handle": (lambda a, b, h: ([device(a), encode_tensor(Y)], None),
                     "not allocated for input 0 of handle"),
}


@pytest.mark.parametrize("case", INVALID_USES)
def test_invalid_use_is_rejected(session: Session, case: str) -> None:
    handle = session.client.prepare(binary_model("add"))
    other = session.client.prepare(binary_model("mul"))
    a = token_of(session, [[handle, "input", 0, 1.0]])
    b = token_of(session, [[handle, "input", 0, 1.0], [handle, "output", 0, 1.0]],
                 dims=[1, 4]) if case != "other handle" else 0
    if case == "input and output":  # b may be either, just not both at once
        b = token_of(session, [[other, "input", 0, 1.0], [other, "output", 0, 1.0]])
        handle = other
    session.call("copy_from", {"token": a, "source": encode_tensor(X)})
    inputs, outputs = INVALID_USES[case][0](a, b, handle)
    target = other if case == "other handle" else handle
    status, body = session.execute(target, inputs, outputs)
    assert status == Status.BAD_DATA, body
    assert INVALID_USES[case][1] in body["message"]
    assert session.alive()
    np.testing.assert_array_equal(read_back(session, a), X)  # nothing ran


def test_one_buffer_for_two_outputs_is_rejected(session: Session) -> None:
    b = ModelBuilder()
    x = b.input("x", (1, 4))
    b.output(b.add(x, x), b.mul(x, x))
    handle = session.client.prepare(b.build())
    token = token_of(session, [[handle, "output", 0, 1.0]])
    status, body = session.execute(handle, [encode_tensor(X)], [device(token), device(token)])
    assert status == Status.BAD_DATA and "output 1" in body["message"]
    status, body = session.execute(handle, [encode_tensor(X)], [device(token), None])
    assert status == Status.OK and body["outputs"][0] == ["device", [1, 4]]
    np.testing.assert_array_equal(read_back(session, token), X + X)


def test_one_buffer_read_by_two_models(session: Session) -> None:
    add = session.client.prepare(binary_model("add"))
    mul = session.client.prepare(binary_model("mul"))
    token = token_of(session, [[add, "input", 0, 1.0], [mul, "input", 1, 1.0]])
    session.call("copy_from", {"token": token, "source": encode_tensor(X)})
    status, body = session.execute(add, [device(token), encode_tensor(Y)])
    assert status == Status.OK
    np.testing.assert_array_equal(outputs_of(body)[0], X + Y)
    status, body = session.execute(mul, [encode_tensor(Y), device(token)])
    assert status == Status.OK
    np.testing.assert_array_equal(outputs_of(body)[0], X * Y)


def test_freed_token_and_released_handle(session: Session) -> None:
    handle = session.client.prepare(binary_model("add"))
    token = token_of(session, [[handle, "input", 0, 1.0]])
    session.call("copy_from", {"token": token, "source": encode_tensor(X)})
    assert session.call("free", {"token": token}) == (Status.OK, {})
    for verb, body in (("copy_to", {"token": token}),
                       ("copy_from", {"token": token, "source": encode_tensor(X)})):
        status, reply = session.call(verb, body)
        assert status == Status.BAD_DATA and "unknown token" in reply["message"]
    status, reply = session.execute(handle, [device(token), encode_tensor(Y)])
    assert status == Status.BAD_DATA and "unknown token" in reply["message"]
    # a released handle: its buffers stay until freed, executes name the handle
    token = token_of(session, [[handle, "input", 0, 1.0]])
    assert session.call("release", {"handle": handle}) == (Status.OK, {})
    status, reply = session.execute(handle, [device(token), encode_tensor(Y)])
    assert status == Status.BAD_DATA and "unknown handle" in reply["message"]
    assert session.call("free", {"token": token}) == (Status.OK, {})


# -- allocation ---------------------------------------------------------------------------------

def test_allocate_rejections(session: Session) -> None:
    handle = session.client.prepare(binary_model("add"))
    int_model = ModelBuilder()
    i = int_model.input("i", (1, 4), "int32")
    int_model.output(int_model.add(i, i))
    ints = session.client.prepare(int_model.build())
    cases: list[tuple[list[list[Any]], list[int] | None, str]] = [
        ([], None, "at least one"),
        ([[999, "input", 0, 1.0]], None, "unknown handle 999"),
        ([[handle, "input", 2, 1.0]], None, "out of range"),
        ([[handle, "sideways", 0, 1.0]], None, "'input' or 'output'"),
        ([[handle, "input", 0, 0.0]], None, "frequency"),
        ([[handle, "input", 0, 1.5]], None, "frequency"),
        ([[handle, "input", 0, 1.0], [handle, "input", 0, 0.5]], None, "the same role"),
        ([[handle, "input", 0, 1.0], [handle, "input", 1, 1.0]], None, "twice"),
        ([[handle, "input", 0, 1.0], [ints, "input", 0, 1.0]], None, "differ in type"),
        ([[handle, "input", 0, 1.0]], [2, 4], "not compatible"),
        ([[handle, "input", 0, 1.0]], [1, 4, 1], "not compatible"),
    ]
    for roles, dims, why in cases:
        status, body = allocate(session, roles, dims)
        assert status == Status.BAD_DATA, (roles, dims, body)
        assert why in body["message"], (why, body)
    assert session.alive()


def test_allocate_malformed_roles_close_the_connection(session: Session) -> None:
    session.client.send("allocate", {"roles": [["x", "input", 0, 1.0]]})
    assert session.client.closed_by_peer()


def test_small_buffer_driver_refuses(small: Session) -> None:
    handle = small.client.prepare(dynamic_model())
    status, body = allocate(small, [[handle, "input", 0, 1.0]])
    assert status == Status.OP_FAILED and "unknown size" in body["message"]
    status, body = allocate(small, [[handle, "input", 0, 1.0]], dims=[100_000, 3])
    assert status == Status.OP_FAILED and "1048576-byte limit" in body["message"]
    token = token_of(small, [[handle, "input", 0, 1.0], [handle, "output", 0, 1.0]],
                     dims=[1000, 3])
    x = np.ones((1000, 3), np.float32)
    assert small.execute(handle, [encode_tensor(x)], [device(token)])[0] == Status.OK
    np.testing.assert_array_equal(read_back(small, token), x + x)
    assert small.alive()


# -- scope --------------------------------------------------------------------------------------

def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_buffers_belong_to_their_connection_and_die_with_it(tmp_path: Path) -> None:
    path = str(tmp_path / "w.sock")
    shape = (2048, 4096)  # 32 MiB
    with Worker.listening(path) as worker, RawClient.connect(path) as other:
        pid = other.hello()["pid"]
        assert pid == worker.process.pid
        first = Session(worker, RawClient.connect(path), pid)
        with first.client:
            first.client.hello()
            handle = first.client.prepare(plus_zero_model(shape))
            token = token_of(first, [[handle, "input", 0, 1.0]])
            fd = sealed_memfd(32 << 20)
            try:
                assert first.map_memfd(1, fd, 32 << 20)[0] == Status.OK
            finally:
                os.close(fd)
            assert first.call("copy_from", {"token": token, "source": ref(1, 0, shape)})[0] == 0
            assert first.call("unmap", {"pool": 1})[0] == Status.OK
            held = _rss(pid)
            # another connection cannot use it
            status, body = other.call("copy_to", {"token": token})
            assert status == Status.BAD_DATA and "unknown token" in body["message"]
        assert other.call("ping") == (Status.OK, {})  # the close was read before this
        assert _rss(pid) < held - (24 << 20)
