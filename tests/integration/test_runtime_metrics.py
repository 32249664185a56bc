"""Metrics with real workers: ``rt.statistics().models`` after real executes, per-worker load,
and ``nnrt serve --metrics-port`` scraped over a real TCP socket (hostile requests included)."""

from __future__ import annotations

import gc
import re
import select
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import anyio
import numpy as np
import pytest
from models import add_model, dynamic_add_model, slow_input, slow_model
from service_client import running_service

import nnrt

X = np.array([[1.0, 2.0, 3.0, 4.0]], np.float32)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.anyio
async def test_statistics_count_requests_errors_and_latency() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=2) as rt:
        compiled = await rt.compile(add_model(), name="adder")
        other = await rt.compile(add_model())
        assert (compiled.name, other.name) == ("adder", "y")  # y: the model's output name
        for _ in range(25):
            (y,) = await compiled.execute([X])
        np.testing.assert_array_equal(y, X + np.arange(1, 5, dtype=np.float32))
        with pytest.raises(nnrt.BadData):
            await compiled.execute([np.ones((2, 3), np.float32)])  # wrong shape
        stats = rt.statistics()
        assert set(stats.models) == {"adder", "y"}
        m = stats.models["adder"]
        assert (m.driver, m.requests, m.errors) == ("reference", 26, {"BadData": 1})
        assert m.latency.count == 26 and m.latency.sum > 0
        assert m.execution.count == 25 and m.batch_size.count == 25  # each sent alone
        assert m.batch_size.counts[0] == 25 and m.queue_wait.count == 25
        assert 0 < m.latency.quantile(0.5) < 1.0
        assert m.requests_per_second > 0
        assert stats.models["y"].requests == 0
        pool = stats.pools["reference"]
        assert len(pool.worker_load) == len(pool.worker_in_flight) == 2
        assert all(load >= 0 for load in pool.worker_load) and max(pool.worker_load) > 0
        assert pool.worker_in_flight == (0, 0)
        await other.release()
        assert set(rt.statistics().models) == {"adder"}


@pytest.mark.anyio
async def test_names_are_unique_and_collected_models_leave() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        first = await rt.compile(add_model(), name="net")
        second = await rt.compile(add_model(), name="net")  # shares the prepared model
        assert (first.name, second.name) == ("net", "net#2")
        await second.execute([X])
        assert rt.statistics().models["net#2"].requests == 1
        assert rt.statistics().models["net"].requests == 0
        del second
        gc.collect()
        assert set(rt.statistics().models) == {"net"}
        with pytest.raises(nnrt.BadData, match="name"):
            await rt.compile(add_model(), name="")


@pytest.mark.anyio
async def test_per_shape_variants_count_once_under_the_compiled_model() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        compiled = await rt.compile(dynamic_add_model(), name="dyn")
        for rows in (1, 2, 2):
            await compiled.execute([np.ones((rows, 3), np.float32)])
        stats = rt.statistics()
        assert set(stats.models) == {"dyn"}  # its variants are not listed apart
        assert stats.models["dyn"].requests == 3 and stats.models["dyn"].driver == "reference"


@pytest.mark.anyio
async def test_cancelled_and_late_executes_count_by_kind() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        compiled = await rt.compile(slow_model(ops=20), name="slow")
        with anyio.move_on_after(0.05):
            await compiled.execute([slow_input()])
        with pytest.raises(nnrt.DeadlineMissed):
            await compiled.execute([slow_input()], timeout=0.05)
        m = rt.statistics().models["slow"]
        assert m.errors == {"Cancelled": 1, "DeadlineMissed": 1}
        assert m.requests == m.latency.count == 2 and m.execution.count == 0


# -- the service's /metrics ----------------------------------------------------------------------

def _metrics_port(proc: subprocess.Popen[bytes]) -> int:
    """The port the service logged ("metrics on http://HOST:PORT/metrics")."""
    stderr = proc.stderr
    assert stderr is not None
    seen = b""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        ready, _, _ = select.select([stderr], [], [], 0.5)
        if ready:
            line = stderr.readline()
            seen += line
            found = re.search(rb"metrics on http://127\.0\.0\.1:(\d+)/metrics", line)
            if found:
                return int(found.group(1))
    raise AssertionError(f"the service logged no metrics address: {seen!r}")


@pytest.fixture
def service(tmp_path: Path) -> Iterator[tuple[str, int]]:
    path = str(tmp_path / "nnrt.sock")
    with running_service(path, workers=2, extra=["--driver", "reference",
                                                 "--metrics-port", "0"]) as proc:
        yield path, _metrics_port(proc)


def _get(port: int, path: str = "/metrics") -> tuple[int, str, str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as reply:
        return reply.status, reply.headers["Content-Type"], reply.read().decode()


def _sample(text: str, name: str, **labels: str) -> float:
    """The value of the one sample of ``name`` with exactly ``labels``."""
    wanted = ",".join(f'{k}="{v}"' for k, v in labels.items())
    values = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
              if line.startswith(f"{name}{{{wanted}}} ")]
    assert len(values) == 1, (name, labels, values)
    return values[0]


def _raw_http(port: int, data: bytes) -> bytes:
    """Send ``data``, read until the service closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
    return reply


@pytest.mark.anyio
async def test_service_serves_metrics_of_forwarded_executes(service: tuple[str, int]) -> None:
    path, port = service
    async with nnrt.Runtime(connect=path) as rt:
        compiled = await rt.compile(add_model(), name="adder")
        for _ in range(20):
            await compiled.execute([X])
        with pytest.raises(nnrt.DeadlineMissed):  # the service misses it, and counts it
            slow = await rt.compile(slow_model(ops=20), name="slow")
            await slow.execute([slow_input()], timeout=0.1)
        mine = (await rt.refresh_statistics()).models
        assert mine["adder"].requests == 20  # recorded in this client too
        assert len(rt.statistics().pools["reference"].worker_load) == 2  # over the wire
        status, content_type, text = await anyio.to_thread.run_sync(_get, port)
        assert status == 200 and content_type.startswith("text/plain; version=0.0.4")
        model = {"model": "adder", "driver": "reference"}
        assert _sample(text, "nnrt_model_requests_total", **model) == 20
        assert _sample(text, "nnrt_model_latency_seconds_count", **model) == 20
        assert _sample(text, "nnrt_model_latency_seconds_bucket", **model, le="+Inf") == 20
        assert _sample(text, "nnrt_model_execution_seconds_count", **model) == 20
        assert _sample(text, "nnrt_model_batch_size_bucket", **model, le="1.0") == 20
        assert _sample(text, "nnrt_model_errors_total", model="slow", driver="reference",
                       kind="DeadlineMissed") == 1
        assert _sample(text, "nnrt_pool_completed_total", driver="reference") >= 20
        assert _sample(text, "nnrt_pool_workers_alive", driver="reference") == 2
        for worker in ("0", "1"):
            assert _sample(text, "nnrt_worker_load", driver="reference", worker=worker) >= 0
            assert _sample(text, "nnrt_worker_in_flight", driver="reference",
                           worker=worker) == 0
    # the client is gone: its models leave the service's metrics
    for _ in range(100):
        _, _, text = await anyio.to_thread.run_sync(_get, port)
        if "adder" not in text:
            break
        await anyio.sleep(0.05)
    assert "nnrt_model_requests_total" not in text
    assert _sample(text, "nnrt_pool_workers", driver="reference") == 2


def test_hostile_http_requests_are_refused_and_the_service_serves_on(
        service: tuple[str, int]) -> None:
    path, port = service
    idle = socket.create_connection(("127.0.0.1", port), timeout=10)  # sends nothing
    try:
        assert _raw_http(port, b"GARBAGE\r\n\r\n").startswith(b"HTTP/1.1 400 ")
        assert _raw_http(port, b"\x00\xff\xfe" * 10 + b"\r\n\r\n").startswith(b"HTTP/1.1 400 ")
        oversized = b"GET /metrics HTTP/1.1\r\nX-Pad: " + b"a" * 20_000 + b"\r\n\r\n"
        assert _raw_http(port, oversized).startswith(b"HTTP/1.1 431 ")
        assert _raw_http(port, b"GET /metrics HTTP/1.1\r\nX-Pad: " + b"a" * 9000).startswith(
            b"HTTP/1.1 431 ")  # no end of head in sight
        assert _raw_http(port, b"POST /metrics HTTP/1.1\r\n\r\n").startswith(
            b"HTTP/1.1 405 ")
        assert _raw_http(port, b"GET /other HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 404 ")
        head = _raw_http(port, b"HEAD /metrics HTTP/1.0\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 ") and head.endswith(b"\r\n\r\n")
        with pytest.raises(urllib.error.HTTPError) as refused:
            _get(port, "/")
        refused.value.close()  # it holds the connection
        assert refused.value.code == 404
        assert _get(port, "/metrics?x=1")[0] == 200  # while the idle connection waits
        started = time.monotonic()
        reply = idle.recv(65536)  # the read timeout answers and closes it
        assert reply.startswith(b"HTTP/1.1 408 ") and time.monotonic() - started < 8
    finally:
        idle.close()
    for _ in range(40):  # many connections closed at once, mid-request
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"GET /met")
    status, _, text = _get(port)
    assert status == 200 and "nnrt_pool_workers" in text

    async def use() -> None:  # and the service itself is unharmed
        async with nnrt.Runtime(connect=path) as rt:
            (y,) = await (await rt.compile(add_model())).execute([X])
            np.testing.assert_array_equal(y, X + np.arange(1, 5, dtype=np.float32))

    anyio.run(use)


def test_a_metrics_port_in_use_fails_the_service_at_once(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "nnrt", "serve", "--socket", str(tmp_path / "s.sock"),
             "--driver", "reference", "--workers", "1", "--metrics-port", str(port)],
            capture_output=True, timeout=60, check=False)
    assert result.returncode == 1
    assert f"cannot serve metrics on 127.0.0.1:{port}" in result.stderr.decode()
    assert not (tmp_path / "s.sock").exists()
