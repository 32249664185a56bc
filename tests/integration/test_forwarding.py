"""Executes the shared service forwards at arrival (``Session._execute_now``): a request for a
model prepared on a worker with room goes to that worker from the socket's readiness
callback and its reply straight back. What the task path guaranteed must hold on this one:
cancellation reaches the worker, a client that does not read is paused, a worker lost
mid-request fails only its requests, the service's statistics count every request."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from test_overload import Service, limited_service, read_replies
from test_service import matmul_chain

import nnrt
from nnrt.ipc.framing import FrameReader, encode_frame
from nnrt.ipc.messages import PROTOCOL_VERSION, Status, encode_tensor
from nnrt.model.wire import model_to_wire

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    with limited_service(str(tmp_path), max_in_flight=8) as running:
        yield running


def add_model() -> nnrt.Model:
    b = nnrt.ModelBuilder()
    b.output(b.add(b.input("x", (1, 4)), np.arange(4, dtype=np.float32).reshape(1, 4)))
    return b.build()


def workers_of(service: Service) -> list[int]:
    pids: list[int] = []
    for task in Path(f"/proc/{service.proc.pid}/task").iterdir():
        pids.extend(int(p) for p in (task / "children").read_text().split())
    return pids


async def test_a_cancelled_execute_stops_on_its_worker(service: Service) -> None:
    """A forwarded execute the client gives up on is cancelled on the worker: the next
    request of the one worker does not wait for the rest of it (~0.5 s of matmuls)."""
    async with nnrt.Runtime(connect=service.path) as rt:
        slow = await rt.compile(matmul_chain(64))
        fast = await rt.compile(add_model())
        await slow.execute([np.ones((1, 1), np.float32)])  # prepared: forwarded from now on
        x = np.ones((1, 4), np.float32)
        await fast.execute([x])
        started = time.perf_counter()
        (y,) = await slow.execute([np.ones((1, 1), np.float32)])
        chain = time.perf_counter() - started
        np.testing.assert_array_equal(y[:2, :2], np.ones((2, 2), np.float32))
        with anyio.move_on_after(chain / 10):
            await slow.execute([np.ones((1, 1), np.float32)])
            pytest.fail("the slow execute finished before it was cancelled")
        started = time.perf_counter()
        (y,) = await fast.execute([x])
        waited = time.perf_counter() - started
        np.testing.assert_array_equal(y, x + np.arange(4, dtype=np.float32))
        assert waited < chain / 2, (waited, chain)
        stats = await rt.refresh_statistics()
        assert stats.pools["reference"].failed >= 1  # the cancelled one, counted


async def test_a_deadline_answers_a_forwarded_execute_on_time(service: Service) -> None:
    """A forwarded execute with a deadline is answered at the deadline even while its worker
    is inside one long operation it cannot stop in (one [1536, 1536] matmul); one that
    finishes in time returns its result, and the service serves on."""
    async with nnrt.Runtime(connect=service.path) as rt:
        slow = await rt.compile(matmul_chain(1, size=1536))
        fast = await rt.compile(add_model())
        await slow.execute([np.ones((1, 1), np.float32)])
        x = np.ones((1, 4), np.float32)
        (y,) = await fast.execute([x], timeout=30)  # in time, with a deadline
        np.testing.assert_array_equal(y, x + np.arange(4, dtype=np.float32))
        started = time.perf_counter()
        await slow.execute([np.ones((1, 1), np.float32)])
        operation = time.perf_counter() - started
        started = time.perf_counter()
        with pytest.raises(nnrt.DeadlineMissed, match="deadline"):
            await slow.execute([np.ones((1, 1), np.float32)], timeout=operation / 10)
        missed = time.perf_counter() - started
        assert missed < operation / 2, (missed, operation)
        (y,) = await fast.execute([x], timeout=30)
        np.testing.assert_array_equal(y, x + np.arange(4, dtype=np.float32))


async def test_a_worker_lost_mid_request_fails_only_its_requests(service: Service) -> None:
    async with nnrt.Runtime(connect=service.path) as rt:
        slow = await rt.compile(matmul_chain(64))
        await slow.execute([np.ones((1, 1), np.float32)])
        (worker,) = workers_of(service)
        failures: list[BaseException] = []

        async def lost() -> None:
            try:
                await slow.execute([np.ones((1, 1), np.float32)])
            except nnrt.NnrtError as exc:
                failures.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(lost)
            await anyio.sleep(0.05)
            os.kill(worker, signal.SIGKILL)
        assert [type(e) for e in failures] == [nnrt.UnavailableDevice], failures
        fast = await rt.compile(add_model())  # the worker is replaced; the service serves on
        x = np.ones((1, 4), np.float32)
        (y,) = await fast.execute([x])
        np.testing.assert_array_equal(y, x + np.arange(4, dtype=np.float32))


def test_a_client_flooding_executes_it_does_not_read_is_paused(service: Service) -> None:
    """Replies of forwarded executes wait in the service for a client that does not read
    them only up to a bound: then its executes take the task path, its unanswered requests
    pile up to twice its in-flight limit and the service stops reading it. Reading resumes
    it, and every request is answered."""
    b = nnrt.ModelBuilder()  # a [1, 1] input broadcast to a 256 KiB output
    b.output(b.add(b.input("x", (1, 1)), np.zeros((1, 1 << 16), np.float32)))
    wire = model_to_wire(b.build())
    reader = FrameReader()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(service.path)
        s.sendall(encode_frame([1, "hello", {"protocol": PROTOCOL_VERSION, "client": "t"}]))
        s.sendall(encode_frame([2, "compile", {"model": wire}]))
        replies: dict[int, tuple[int, dict[str, Any]]] = {}
        while 2 not in replies:
            assert reader.receive(s) > 0
            replies.update((m[0], (m[1], m[2])) for m in reader.messages())
        status, body = replies[2]
        assert status == Status.OK, body
        execute = {"handle": body["handle"], "priority": 100,
                   "inputs": [encode_tensor(np.ones((1, 1), np.float32))]}
        s.setblocking(False)
        request_id, pending = 2, b""
        while "reading from it is paused" not in service.log():
            # paced: a worker keeping up with the requests never leaves 8 in flight, so only
            # the bound on the replies waiting to be read stops the service
            assert request_id < 600, "the service kept reading a client that never reads"
            request_id += 1
            pending += encode_frame([request_id, "execute", execute])
            with contextlib.suppress(BlockingIOError):
                pending = pending[s.send(pending):]
            time.sleep(0.005)
        answered = read_replies(s, reader, pending, lambda got: len(got) >= request_id - 2,
                                60)
    reader.close()
    assert set(answered) == set(range(3, request_id + 1))  # nothing lost
    assert Status.OK in answered.values()
    assert set(answered.values()) <= {Status.OK, Status.RESOURCE_EXHAUSTED}


async def test_statistics_count_forwarded_executes(service: Service) -> None:
    async with nnrt.Runtime(connect=service.path) as rt:
        compiled = await rt.compile(add_model(), name="adder")
        x = np.ones((1, 4), np.float32)
        before = (await rt.refresh_statistics()).pools["reference"].completed

        async def five() -> None:
            for _ in range(5):
                await compiled.execute([x])

        async with anyio.create_task_group() as tg:  # within the client's 8 in flight
            for _ in range(6):
                tg.start_soon(five)
        stats = await rt.refresh_statistics()
        assert stats.pools["reference"].completed - before == 30
