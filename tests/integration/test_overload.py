"""Overload: bounded queues, per-client limits of the shared service, priorities under flood.

Every bound answers ``ResourceExhausted`` (transient) instead of growing memory: the runtime's
per-driver queue (``max_queue``), and per client connection of ``nnrt serve`` the pools mapped,
the device-memory bytes and the requests in flight. A HIGH-priority request overtakes a flood of
LOW ones: it waits for at most the execution the worker is running (plus the one that frees its
slot), never for the queue. Run this file as a script for the latency figures of
docs/reliability.md (``python tests/integration/test_overload.py``).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from test_device_memory import state_model
from test_memory_runtime import mul_model

import nnrt
from nnrt.errors import BadData, DeadlineMissed, ResourceExhausted
from nnrt.ipc.framing import FrameReader, encode_frame
from nnrt.ipc.messages import PROTOCOL_VERSION, Status
from nnrt.runtime.backends.pool import DEFAULT_MAX_IN_FLIGHT, WorkerPool

pytestmark = pytest.mark.anyio

LAUNCH = """
import sys, anyio
from nnrt.serve.server import ClientLimits, serve
path, workers, pools, device_bytes, in_flight = sys.argv[1], *map(int, sys.argv[2:])
limits = ClientLimits(max_pools=pools, max_device_bytes=device_bytes, max_in_flight=in_flight)
anyio.run(lambda: serve(path, drivers=["reference"], workers={"reference": workers},
                        limits=limits))
"""


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class Service:
    """A real ``serve`` process with client limits; its log goes to a file (``log()``)."""

    def __init__(self, path: str, proc: subprocess.Popen[bytes], log_path: str) -> None:
        self.path = path
        self.proc = proc
        self.log_path = log_path

    def log(self) -> str:
        """What the service logged so far."""
        return Path(self.log_path).read_text()


@contextlib.contextmanager
def limited_service(directory: str, *, workers: int = 1, max_pools: int = 1024,
                    max_device_bytes: int = 1 << 30, max_in_flight: int = 4096
                    ) -> Iterator[Service]:
    """``serve`` with these limits in a real process, stopped by SIGTERM (must exit 0)."""
    path = os.path.join(directory, "nnrt.sock")
    log_path = os.path.join(directory, "service.log")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-c", LAUNCH, path, str(workers),
                                 str(max_pools), str(max_device_bytes), str(max_in_flight)],
                                stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(path):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"service did not start: {Path(log_path).read_text()}")
            time.sleep(0.02)
        yield Service(path, proc, log_path)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
        assert code == 0, Path(log_path).read_text()


def busy_model(size: int = 384, matmuls: int = 2) -> nnrt.Model:
    """y = ((C + x) @ W ... @ W) @ v: a tiny input and output ([1, 1, 1] in, [1, size, 1] out)
    around ``matmuls`` [size, size] products (a few ms each on the reference driver)."""
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 1, 1))
    rng = np.random.default_rng(size)
    c = rng.standard_normal((1, size, size)).astype(np.float32) * 0.1
    w = np.eye(size, dtype=np.float32).reshape(1, size, size)
    y = b.add(b.constant(c), x)
    for _ in range(matmuls):
        y = b.operation(nnrt.OperationType.BATCH_MATMUL, y, b.constant(w), False, False)[0]
    v = np.ones((1, size, 1), np.float32)
    b.output(b.operation(nnrt.OperationType.BATCH_MATMUL, y, b.constant(v), False, False)[0])
    return b.build()


def busy_expected(model: nnrt.Model, k: float) -> np.ndarray:
    """What :func:`busy_model` returns for input ``k`` (W is the identity)."""
    size = model.operands[model.outputs[0]].dims[1]
    c = np.random.default_rng(size).standard_normal((1, size, size)).astype(np.float32) * 0.1
    return ((c + np.float32(k)) @ np.ones((1, size, 1), np.float32)).astype(np.float32)


# -- the runtime's queue -----------------------------------------------------------------------


async def flood(compiled: nnrt.CompiledModel, count: int
                ) -> tuple[dict[int, Any], list[ResourceExhausted]]:
    """``count`` concurrent executions: each one's output, or the ResourceExhausted it got."""
    outcomes: dict[int, Any] = {}

    async def one(k: int) -> None:
        try:
            (outcomes[k],) = await compiled.execute([np.full((1, 1, 1), k, np.float32)])
        except ResourceExhausted as exc:
            outcomes[k] = exc

    async with anyio.create_task_group() as tg:
        for k in range(count):
            tg.start_soon(one, k)
    return outcomes, [e for e in outcomes.values() if isinstance(e, ResourceExhausted)]


async def test_the_queue_is_bounded_and_refusals_are_transient() -> None:
    model = busy_model(256, 6)
    async with nnrt.Runtime(drivers=["reference"], workers=1, max_in_flight=1) as rt:
        pool = rt._core.backend.pools["reference"]  # type: ignore[union-attr]
        pool.max_queue = 3
        compiled = await rt.compile(model)
        outcomes, refused = await flood(compiled, 24)
        assert refused and len(refused) == pool.queue_full
        assert len(outcomes) - len(refused) >= 4  # one running, three waiting
        for exc in refused:
            assert exc.transient and "max_queue=3" in str(exc) and "transient" in str(exc)
        for k, y in outcomes.items():
            if not isinstance(y, ResourceExhausted):
                np.testing.assert_allclose(y, busy_expected(model, k), rtol=1e-4, atol=1e-5)
        assert pool.waiting == 0
        (y,) = await compiled.execute([np.zeros((1, 1, 1), np.float32)])  # served again
        np.testing.assert_allclose(y, busy_expected(model, 0), rtol=1e-4, atol=1e-5)


def test_max_queue_must_be_positive() -> None:
    with pytest.raises(BadData, match="max_queue"):
        WorkerPool("reference", 1, max_queue=0)
    pool = WorkerPool("reference", 1)
    with pytest.raises(BadData, match="max_queue"):
        pool.max_queue = True  # type: ignore[assignment]


async def test_waiters_that_gave_up_do_not_pile_up() -> None:
    """Regression: a request that left the queue (deadline, cancel) stayed in the heap until a
    worker freed up; with the worker busy the heap grew without bound."""
    async with nnrt.Runtime(drivers=["reference"], workers=1, max_in_flight=1) as rt:
        pool = rt._core.backend.pools["reference"]  # type: ignore[union-attr]
        held = await pool.acquire(100, None)
        try:
            for _ in range(300):
                with pytest.raises(DeadlineMissed):
                    await pool.acquire(100, time.monotonic())
            assert pool.waiting == 0 and pool.queue_depth == 0
            assert len(pool._waiters) <= 65
        finally:
            pool.release(held, ok=True)


# -- per-client limits of the shared service -------------------------------------------------


@pytest.fixture(scope="module")
def tight(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """One service for the limit tests (the limits are per client: each test connects anew)."""
    with limited_service(str(tmp_path_factory.mktemp("tight")), max_pools=2,
                         max_device_bytes=64, max_in_flight=8) as service:
        yield service


async def test_pools_per_client_are_limited(tight: Service) -> None:
    async with nnrt.Runtime(connect=tight.path) as rt, \
            nnrt.Runtime(connect=tight.path) as other:
        compiled = await rt.compile(mul_model((4,)))
        memories = [rt.memory.create(64) for _ in range(3)]
        try:
            for memory in memories[:2]:
                x = memory.ndarray(np.float32, (4,))
                x[:] = 3
                (y,) = await compiled.execute([x])
                np.testing.assert_array_equal(y, np.full(4, 6, np.float32))
                del x
            x = memories[2].ndarray(np.float32, (4,))
            with pytest.raises(ResourceExhausted, match="already 2 pools mapped"):
                await compiled.execute([x])
            del x
            # the limit is per client: another connection maps its own
            theirs = await other.compile(mul_model((4,)))
            with other.memory.create(64) as memory:
                x = memory.ndarray(np.float32, (4,))
                x[:] = 1
                (y,) = await theirs.execute([x])
                np.testing.assert_array_equal(y, np.full(4, 2, np.float32))
                del x
            memories[0].close()  # unmapped: room for the third
            await anyio.sleep(0)
            x = memories[2].ndarray(np.float32, (4,))
            x[:] = 5
            for _ in range(100):  # the unmap notification travels ahead of this request
                try:
                    (y,) = await compiled.execute([x])
                    break
                except ResourceExhausted:
                    await anyio.sleep(0.01)
            np.testing.assert_array_equal(y, np.full(4, 10, np.float32))
            del x
        finally:
            for memory in memories:
                memory.close()


async def test_device_bytes_per_client_are_limited(tight: Service) -> None:
    async with nnrt.Runtime(connect=tight.path) as rt:
        step = await rt.compile(state_model())  # [4] float32 state: 16 bytes a buffer
        roles = [nnrt.BufferRole(step, 1)]
        buffers = [await rt.allocate(nnrt.BufferDesc(), roles) for _ in range(4)]  # 64 bytes
        with pytest.raises(ResourceExhausted, match="max_device_bytes=64"):
            await rt.allocate(nnrt.BufferDesc(), roles)
        await buffers.pop().free()
        buffers.append(await rt.allocate(nnrt.BufferDesc(), roles))  # room again
        await buffers[-1].copy_from(np.ones(4, np.float32))
        (y,) = await step.execute([np.ones(4, np.float32), buffers[-1]])
        np.testing.assert_array_equal(y, np.full(4, 2, np.float32))
        for buffer in buffers:
            await buffer.free()


async def test_requests_in_flight_per_client_are_limited(tight: Service) -> None:
    model = busy_model(256, 6)
    async with nnrt.Runtime(connect=tight.path) as rt:
        compiled = await rt.compile(model)
        outcomes, refused = await flood(compiled, 40)
        assert refused and len(outcomes) - len(refused) >= 8
        for exc in refused:
            assert exc.transient and "max_in_flight" in str(exc) and "8 requests" in str(exc)
        for k, y in outcomes.items():
            if not isinstance(y, ResourceExhausted):
                np.testing.assert_allclose(y, busy_expected(model, k), rtol=1e-4, atol=1e-5)


def test_a_client_not_reading_its_replies_is_paused(tight: Service) -> None:
    """Past twice its in-flight limit unanswered, the service stops reading the client (its
    replies would pile up in the service's memory otherwise); reading its replies resumes it."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(tight.path)
        s.sendall(encode_frame([1, "hello", {"protocol": PROTOCOL_VERSION, "client": "t"}]))
        s.setblocking(False)
        request_id, pending, blocked_since = 1, b"", None
        while True:  # send until the service stops reading (1 s without progress)
            if not pending:
                request_id += 1
                assert request_id < 1_000_000, "the service kept reading a client that never reads"
                pending = encode_frame([request_id, "statistics", {}])
            try:
                pending = pending[s.send(pending):]
                blocked_since = None
            except BlockingIOError:
                blocked_since = blocked_since or time.monotonic()
                if time.monotonic() - blocked_since > 1.0:
                    break
                time.sleep(0.01)
        assert "reading from it is paused" in tight.log()
        pending += encode_frame([request_id + 1, "ping", {}])  # answered once reading resumes
        reader = FrameReader()
        answered = read_replies(s, reader, pending, lambda got: request_id + 1 in got, 30)
        reader.close()
        assert set(answered) == set(range(1, request_id + 2))  # nothing lost
        assert set(answered.values()) == {Status.OK, Status.RESOURCE_EXHAUSTED}


def read_replies(s: socket.socket, reader: FrameReader, pending: bytes,
                 done: Callable[[dict[int, int]], bool], seconds: float) -> dict[int, int]:
    """Send ``pending`` on the non-blocking ``s`` while reading its replies until
    ``done(answered)`` (request id -> status), within ``seconds``."""
    answered: dict[int, int] = {}
    deadline = time.monotonic() + seconds
    while not done(answered):
        assert time.monotonic() < deadline, "the service did not resume reading"
        readable, writable, _ = select.select([s], [s] if pending else [], [], 1.0)
        if writable:
            pending = pending[s.send(pending):]
        if readable:
            assert reader.receive(s) > 0
            answered.update((m[0], m[1]) for m in reader.messages())
    return answered


# -- priorities under flood ------------------------------------------------------------------


async def _high_under_flood(path: str, lows: int, highs: int, model: nnrt.Model,
                            latencies: list[float] | None = None) -> list[int]:
    """Flood LOW executes from one client while another sends HIGH ones one at a time; per
    HIGH request, how many LOW requests completed while it was in flight."""
    counts: list[int] = []
    async with nnrt.Runtime(connect=path) as flooder, nnrt.Runtime(connect=path) as urgent:
        low = await flooder.compile(model, priority=nnrt.Priority.LOW)
        high = await urgent.compile(model, priority=nnrt.Priority.HIGH)
        await high.execute([np.zeros((1, 1, 1), np.float32)])
        wrong: list[int] = []
        done = 0

        async def flood(k: int) -> None:
            nonlocal done
            (y,) = await low.execute([np.full((1, 1, 1), k % 7, np.float32)])
            done += 1
            if not np.allclose(y, busy_expected(model, k % 7), rtol=1e-4, atol=1e-5):
                wrong.append(k)

        async with anyio.create_task_group() as tg:
            for k in range(lows):
                tg.start_soon(flood, k)
            while (await urgent.refresh_statistics()).pools["reference"].queue_depth < lows // 2:
                await anyio.sleep(0.005)
            for _ in range(highs):
                before, start = done, time.perf_counter()
                (y,) = await high.execute([np.full((1, 1, 1), 3, np.float32)])
                if latencies is not None:
                    latencies.append(time.perf_counter() - start)
                counts.append(done - before)
                np.testing.assert_allclose(y, busy_expected(model, 3), rtol=1e-4, atol=1e-5)
            assert done < lows - 16, "the flood drained before the HIGH requests were measured"
        assert not wrong and done == lows
    return counts


def test_high_priority_overtakes_a_low_priority_flood(tmp_path: Path) -> None:
    """One worker, 64 LOW requests in flight on it (the default bound), ~190 more queued in the
    service: each HIGH request completes after at most the LOW one that frees a slot for it and
    the one the worker is running then (plus one whose reply crosses ours) — never after the
    queue, neither the service's nor the worker's own. The count is of LOW replies the client
    handles meanwhile, and on a loaded machine a reply or two that arrived before the HIGH
    request was sent are handled after it (the same event loop runs both clients): two more
    are allowed, against the ~190 it must overtake."""
    model = busy_model(256, 4)
    with limited_service(str(tmp_path), workers=1) as service:
        counts = anyio.run(_high_under_flood, service.path, 4 * DEFAULT_MAX_IN_FLIGHT, 3, model)
    assert max(counts) <= 6, counts


# -- figures (run as a script) ---------------------------------------------------------------


def _percentiles(values: list[float]) -> str:
    ms = np.array(values) * 1000
    return (f"p50 {np.percentile(ms, 50):.1f} ms, p99 {np.percentile(ms, 99):.1f} ms, "
            f"max {ms.max():.1f} ms")


async def _idle(path: str, model: nnrt.Model, n: int) -> tuple[list[float], list[float]]:
    high_ms, low_ms = [], []
    async with nnrt.Runtime(connect=path) as rt:
        high = await rt.compile(model, priority=nnrt.Priority.HIGH)
        low = await rt.compile(model, priority=nnrt.Priority.LOW)
        x = np.zeros((1, 1, 1), np.float32)
        await high.execute([x])
        await low.execute([x])
        for compiled, out in ((high, high_ms), (low, low_ms)):
            for _ in range(n):
                start = time.perf_counter()
                await compiled.execute([x])
                out.append(time.perf_counter() - start)
    return high_ms, low_ms


def figures() -> None:
    """HIGH-priority latency idle and under a LOW flood (1 and 2 workers)."""
    model = busy_model(256, 4)
    for workers in (1, 2):
        with tempfile.TemporaryDirectory() as directory, \
                limited_service(directory, workers=workers) as service:
            idle_high, idle_low = anyio.run(_idle, service.path, model, 200)
            latencies: list[float] = []
            counts: list[int] = []
            for _ in range(5):
                counts += anyio.run(_high_under_flood, service.path, 600, 40, model, latencies)
        print(f"workers={workers}: one execution alone {_percentiles(idle_low)}")
        print(f"  HIGH idle:             {_percentiles(idle_high)}")
        print(f"  HIGH under LOW flood:  {_percentiles(latencies)} "
              f"({len(latencies)} requests; completions meanwhile: max {max(counts)})")


if __name__ == "__main__":
    print(f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    figures()
