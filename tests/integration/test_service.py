"""The worker service (``python -m nnrt.worker``) over real sockets, in real child processes."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import stat
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import msgpack
import numpy as np
import pytest
from service_client import RawClient, Worker, outputs_of

from nnrt.ipc.framing import encode_frame
from nnrt.ipc.messages import PROTOCOL_VERSION, Status, encode_tensor
from nnrt.model.builder import ModelBuilder
from nnrt.model.model import Model
from nnrt.model.types import OperationType, Priority
from nnrt.model.wire import model_to_wire

X = np.array([[1, 2, 3, 4]], np.float32)
Y = np.array([[10, 20, 30, 40]], np.float32)


def add_model() -> Model:
    b = ModelBuilder()
    x, y = b.input("x", (1, 4)), b.input("y", (1, 4))
    b.output(b.add(x, y))
    return b.build()


def matmul_chain(n_ops: int, size: int = 512) -> Model:
    """``n_ops`` BATCH_MATMULs by the identity: slow enough to cancel (≈ 8 ms each at 512).

    The input is a [1, 1] scalar broadcast to [size, size], so requests stay small.
    """
    b = ModelBuilder()
    x = b.input("x", (1, 1))
    t = b.add(x, b.constant(np.zeros((size, size), np.float32)))
    eye = b.constant(np.eye(size, dtype=np.float32))
    for _ in range(n_ops):
        t = b.operation(OperationType.BATCH_MATMUL, t, eye, False, False)[0]
    b.output(t)
    return b.build()


def scalar() -> np.ndarray:
    return np.ones((1, 1), np.float32)


@pytest.fixture
def embedded() -> Iterator[tuple[Worker, RawClient]]:
    worker, client = Worker.embedded()
    with worker, client:
        client.hello()
        yield worker, client


@pytest.fixture
def socket_path(tmp_path: Path) -> str:
    return str(tmp_path / "worker.sock")


# -- basics -------------------------------------------------------------------------------------

def test_handshake_ping_and_info() -> None:
    worker, client = Worker.embedded()
    with worker, client:
        reply = client.hello()
        assert reply["protocol"] == PROTOCOL_VERSION
        assert reply["pid"] == worker.process.pid
        assert reply["driver"]["name"] == "reference"
        assert client.call("ping") == (Status.OK, {})
        assert client.call("info") == (Status.OK, {"driver": reply["driver"]})


def test_prepare_and_execute_add(embedded: tuple[Worker, RawClient]) -> None:
    _, client = embedded
    model = add_model()
    assert client.call("supported", {"model": model_to_wire(model)}) == (
        Status.OK, {"supported": [True], "reasons": [], "groups": []})
    handle = client.prepare(model)
    request = client.execute(handle, [X, Y])
    got, status, body = client.receive()
    assert (got, status) == (request, Status.OK)
    np.testing.assert_array_equal(outputs_of(body)[0], X + Y)
    assert "timing" not in body  # reported only when asked for
    request = client.execute(handle, [X, Y], measure=True)
    got, status, body = client.receive()
    assert (got, status) == (request, Status.OK)
    np.testing.assert_array_equal(outputs_of(body)[0], X + Y)
    on_device, in_driver = body["timing"]
    assert isinstance(on_device, int) and isinstance(in_driver, int)
    assert 0 <= on_device <= in_driver


def test_driver_errors_are_responses(embedded: tuple[Worker, RawClient]) -> None:
    _, client = embedded
    handle = client.prepare(add_model())
    client.execute(handle, [X])
    _, status, body = client.receive()
    assert status == Status.BAD_DATA and "expected 2 inputs" in body["message"]
    client.execute(handle, [X, Y], output_sizes=[4])
    _, status, body = client.receive()
    assert status == Status.OUTPUT_INSUFFICIENT_SIZE and body["shapes"] == [[1, 4]]
    wire = model_to_wire(add_model())
    wire["operations"][0]["inputs"] = [0, 99, 2]
    status, body = client.call("prepare", {"model": wire})
    assert status == Status.BAD_DATA and "model.operations[0]" in body["message"]
    status, body = client.call("prepare", {"model": model_to_wire(add_model()), "priority": 7})
    assert status == Status.BAD_DATA and "priority" in body["message"]
    assert client.call("release", {"handle": handle}) == (Status.OK, {})
    status, body = client.call("release", {"handle": handle})
    assert status == Status.BAD_DATA and "unknown handle" in body["message"]
    client.execute(handle, [X, Y])
    assert client.receive()[1] == Status.BAD_DATA
    assert client.call("ping") == (Status.OK, {})


def test_200_pipelined_requests_are_all_answered(embedded: tuple[Worker, RawClient]) -> None:
    _, client = embedded
    handle = client.prepare(add_model())
    expected: dict[int, float | None] = {}
    frames = []
    for k in range(200):
        if k % 4 == 3:
            request_id, frame = client.frame("ping")
            expected[request_id] = None
        else:
            x = np.full((1, 4), k, np.float32)
            request_id, frame = client.frame("execute", {
                "handle": handle, "inputs": [encode_tensor(x), encode_tensor(Y)]})
            expected[request_id] = float(k)
        frames.append(frame)
    client.send_raw(b"".join(frames))
    for _ in range(200):
        request_id, status, body = client.receive()
        assert status == Status.OK, body
        k = expected.pop(request_id)
        if k is not None:
            np.testing.assert_array_equal(outputs_of(body)[0], k + Y)
    assert not expected


# -- scheduling ---------------------------------------------------------------------------------

def test_high_priority_runs_before_earlier_low_ones(embedded: tuple[Worker, RawClient]) -> None:
    _, client = embedded
    handle = client.prepare(matmul_chain(3), priority=Priority.LOW)
    frames, lows = [], []
    for _ in range(4):
        request_id, frame = client.frame("execute", {"handle": handle,
                                                     "inputs": [encode_tensor(scalar())]})
        lows.append(request_id)
        frames.append(frame)
    high, frame = client.frame("execute", {"handle": handle, "inputs": [encode_tensor(scalar())],
                                           "priority": int(Priority.HIGH)})
    client.send_raw(b"".join([*frames, frame]))
    order = []
    for _ in range(5):
        request_id, status, _ = client.receive()
        assert status == Status.OK
        order.append(request_id)
    # at most the first low one was already running when the high one arrived
    assert order.index(high) <= 1, order
    assert [r for r in order if r != high] == lows


def test_queued_execute_past_its_deadline_is_not_run(embedded: tuple[Worker, RawClient]) -> None:
    _, client = embedded
    handle, small = client.prepare(matmul_chain(10)), client.prepare(add_model())
    now, tensors = time.monotonic(), [encode_tensor(X), encode_tensor(Y)]
    requests = [client.frame("execute", {"handle": handle, "inputs": [encode_tensor(scalar())]})]
    for deadline in (now + 0.02, now - 1, now + 60):  # behind ≥ 80 ms of matmuls: too late
        requests.append(client.frame("execute", {"handle": small, "inputs": tensors,
                                                 "deadline": deadline}))
    client.send_raw(b"".join(frame for _, frame in requests))
    statuses = {}
    for _ in range(4):
        request_id, status, _ = client.receive()
        statuses[request_id] = status
    long, soon, past, fine = (request_id for request_id, _ in requests)
    assert statuses == {long: Status.OK, soon: Status.MISSED_DEADLINE,
                        past: Status.MISSED_DEADLINE, fine: Status.OK}


def test_release_while_queued_or_running(embedded: tuple[Worker, RawClient]) -> None:
    _, client = embedded
    slow, small = client.prepare(matmul_chain(10)), client.prepare(add_model())
    running, frame = client.frame("execute", {"handle": slow,
                                              "inputs": [encode_tensor(scalar())]})
    ping, ping_frame = client.frame("ping")
    client.send_raw(frame + ping_frame)
    assert client.receive()[:2] == (ping, Status.OK)  # answered just before `running` starts
    requests = [client.frame("execute", {"handle": small,
                                         "inputs": [encode_tensor(X), encode_tensor(Y)]}),
                client.frame("release", {"handle": small}),
                client.frame("release", {"handle": slow})]  # running: released once it ends
    client.send_raw(b"".join(frame for _, frame in requests))
    answers = {}
    for _ in range(4):
        request_id, status, body = client.receive()
        answers[request_id] = (status, body.get("message", ""))
    queued, release_small, release_slow = (request_id for request_id, _ in requests)
    assert answers[running][0] == Status.OK
    assert answers[queued][0] == Status.BAD_DATA and "released" in answers[queued][1]
    assert answers[release_small] == answers[release_slow] == (Status.OK, "")
    client.execute(slow, [scalar()])
    _, status, body = client.receive()
    assert status == Status.BAD_DATA and "unknown handle" in body["message"]


def test_cancel_stops_a_running_execute(embedded: tuple[Worker, RawClient]) -> None:
    _, client = embedded
    handle = client.prepare(matmul_chain(120))  # about a second
    running = client.execute(handle, [scalar()])
    queued = client.execute(handle, [scalar()])
    time.sleep(0.2)  # let the first one start
    start = time.monotonic()
    client.send("cancel", {"target": queued})
    client.send("cancel", {"target": running})
    answers = {}
    for _ in range(2):
        request_id, status, body = client.receive()
        answers[request_id] = (status, body["message"])
    assert time.monotonic() - start < 0.5
    assert answers == {running: (Status.MISSED_DEADLINE, "cancelled"),
                       queued: (Status.MISSED_DEADLINE, "cancelled")}
    client.send("cancel", {"target": running})  # already answered: ignored
    small = client.prepare(add_model())
    client.execute(small, [X, Y])
    _, status, body = client.receive()
    assert status == Status.OK
    np.testing.assert_array_equal(outputs_of(body)[0], X + Y)


# -- connections --------------------------------------------------------------------------------

def test_handles_belong_to_their_connection(socket_path: str) -> None:
    with Worker.listening(socket_path), RawClient.connect(socket_path) as a, \
            RawClient.connect(socket_path) as b:
        assert stat.S_IMODE(os.stat(socket_path).st_mode) == 0o600
        a.hello()
        b.hello()
        handle = a.prepare(add_model())
        b.execute(handle, [X, Y])
        _, status, body = b.receive()
        assert status == Status.BAD_DATA and "unknown handle" in body["message"]
        status, body = b.call("release", {"handle": handle})
        assert status == Status.BAD_DATA and "unknown handle" in body["message"]
        a.execute(handle, [X, Y])
        _, status, body = a.receive()
        assert status == Status.OK
        np.testing.assert_array_equal(outputs_of(body)[0], X + Y)


def _request(body: object) -> bytes:
    return encode_frame(body)


def _raw_frame(payload: bytes) -> bytes:
    return struct.pack("<I", len(payload)) + payload


HELLO = {"protocol": PROTOCOL_VERSION, "client": "test"}
GOOD_MODEL = model_to_wire(add_model())
#: name -> (say hello first?, bytes to send, close our writing side afterwards?)
MALFORMED: dict[str, tuple[bool, bytes, bool]] = {
    "truncated frame then close": (True, _request([9, "ping", {}])[:-2], True),
    "oversize length": (True, struct.pack("<I", 0xFFFF_FFFF) + b"\0" * 8, False),
    "non-msgpack payload": (True, _raw_frame(b"\xc1\xc1"), False),
    "trailing garbage in payload": (True, _raw_frame(msgpack.packb([9, "ping", {}]) + b"\0"),
                                    False),
    "payload not a list": (True, _request({"id": 9, "verb": "ping"}), False),
    "envelope too short": (True, _request([9, "ping"]), False),
    "envelope too long": (True, _request([9, "ping", {}, 1]), False),
    "bool id": (True, _request([True, "ping", {}]), False),
    "negative id": (True, _request([-3, "ping", {}]), False),
    "zero id": (True, _request([0, "ping", {}]), False),
    "string id": (True, _request(["9", "ping", {}]), False),
    "float id": (True, _request([9.0, "ping", {}]), False),
    "unknown verb": (True, _request([9, "frobnicate", {}]), False),
    "missing field": (True, _request([9, "release", {}]), False),
    "extra field": (True, _request([9, "ping", {"x": 1}]), False),
    "wrong-typed field": (True, _request([9, "release", {"handle": "1"}]), False),
    "bool as int field": (True, _request([9, "release", {"handle": True}]), False),
    "body not a map": (True, _request([9, "ping", []]), False),
    "request before hello": (False, _request([9, "ping", {}]), False),
    "hello twice": (True, _request([9, "hello", HELLO]), False),
    "msgpack ext type": (True, _raw_frame(msgpack.packb([9, "ping", msgpack.ExtType(1, b"x")])),
                         False),
    "declared nfds without fds": (True, _request(
        [9, "execute", {"handle": 1, "inputs": [], "nfds": 1}]), False),
    "malformed tensor": (True, _request([9, "execute", {"handle": 1, "inputs": [
        ["float32", [1, 4], b"short"]]}]), False),
    "unknown dtype": (True, _request([9, "execute", {"handle": 1, "inputs": [
        ["object", [1], b"\0" * 8]]}]), False),
    "bad output_sizes": (True, _request([9, "execute", {"handle": 1, "inputs": [],
                                                        "output_sizes": [-1]}]), False),
}


def test_malformed_input_closes_only_that_connection(socket_path: str) -> None:
    with Worker.listening(socket_path), RawClient.connect(socket_path) as good:
        good.hello()
        for name, (greet, data, shut) in MALFORMED.items():
            with RawClient.connect(socket_path) as bad:
                if greet:
                    bad.hello()
                bad.send_raw(data)
                if shut:
                    bad.sock.shutdown(socket.SHUT_WR)
                assert bad.closed_by_peer(), name
            assert good.call("ping") == (Status.OK, {}), name
        with RawClient.connect(socket_path) as bad:  # another protocol: an answer, then closed
            status, body = bad.call("hello", {"protocol": PROTOCOL_VERSION + 1, "client": "x"})
            assert status == Status.BAD_DATA and "protocol version" in body["message"]
            assert bad.closed_by_peer()
        with RawClient.connect(socket_path) as fds:  # fds declared and sent: refused, not fatal
            fds.hello()
            read_end, write_end = os.pipe()
            try:
                fds.send("execute", {"handle": 1, "inputs": [], "nfds": 2},
                         fds=[read_end, write_end])
            finally:
                os.close(read_end)
                os.close(write_end)
            _, status, body = fds.receive()
            assert status == Status.BAD_DATA and "file descriptors" in body["message"]
            assert fds.call("ping") == (Status.OK, {})
        assert good.call("ping") == (Status.OK, {})


def test_a_client_that_does_not_read_does_not_block_others(socket_path: str) -> None:
    b = ModelBuilder()  # a [1, 1] input broadcast to a 256 KiB output
    b.output(b.add(b.input("x", (1, 1)), b.constant(np.zeros((1, 1 << 16), np.float32))))
    big = b.build()
    with Worker.listening(socket_path), RawClient.connect(socket_path) as lazy, \
            RawClient.connect(socket_path) as other:
        lazy.hello()
        other.hello()
        handle = lazy.prepare(big)
        requests = [lazy.execute(handle, [scalar()]) for _ in range(48)]  # 12 MiB of answers
        other.prepare(big)  # served while 12 MiB wait for the lazy reader
        assert other.call("ping") == (Status.OK, {})
        answered = set()
        for _ in requests:
            request_id, status, body = lazy.receive()
            assert status == Status.OK
            assert outputs_of(body)[0].shape == (1, 1 << 16)
            answered.add(request_id)
        assert answered == set(requests)


def test_max_frame_bounds_requests_and_responses() -> None:
    worker, client = Worker.embedded("--max-frame", "65536")
    with worker, client:
        client.hello()
        b = ModelBuilder()  # 32 KiB in, 128 KiB out: more than one frame may carry
        x = b.input("x", (1, 8192))
        b.output(b.concatenation([x, x, x, x], axis=1))
        handle = client.prepare(b.build())
        client.execute(handle, [np.ones((1, 8192), np.float32)])
        _, status, body = client.receive()
        assert status == Status.RESOURCE_EXHAUSTED and "maximum frame" in body["message"]
        assert client.call("ping") == (Status.OK, {})
        # a 128 KiB request: the worker may close the connection while it is still being sent
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            client.execute(handle, [np.ones((1, 1 << 15), np.float32)])
        assert client.closed_by_peer()
        assert worker.wait() == 0


def test_socket_path_is_taken_over_only_when_stale(socket_path: str) -> None:
    with Worker.listening(socket_path) as first:
        second = Worker(["--socket", socket_path])
        with second:
            assert second.wait() == 1  # "another service is already listening there"
        first.process.kill()
        first.wait()
    assert os.path.exists(socket_path)  # left behind by the killed worker
    with Worker.listening(socket_path), RawClient.connect(socket_path) as client:
        client.hello()
        assert client.call("ping") == (Status.OK, {})


# -- process lifetime ---------------------------------------------------------------------------

def test_sigterm_exits_zero_even_while_executing(socket_path: str) -> None:
    with Worker.listening(socket_path) as worker, RawClient.connect(socket_path) as client:
        client.hello()
        handle = client.prepare(matmul_chain(120))
        client.execute(handle, [scalar()])
        time.sleep(0.1)
        worker.process.send_signal(signal.SIGTERM)
        assert worker.wait() == 0
        assert client.closed_by_peer()
        assert not os.path.exists(socket_path)


def test_embedded_worker_exits_when_its_peer_closes() -> None:
    worker, client = Worker.embedded()
    with worker:
        with client:
            client.hello()
            handle = client.prepare(add_model())
            client.execute(handle, [X, Y])
            assert client.receive()[1] == Status.OK
        assert worker.wait() == 0
