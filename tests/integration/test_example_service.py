"""``examples/service.py`` and ``examples/load_test.py`` as real subprocesses over real sockets."""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
START_TIMEOUT = 30.0  # seconds for the service to print its "listening on" line
STOP_TIMEOUT = 15.0  # seconds for it to exit after SIGTERM


class ServiceProcess:
    """Owns one ``examples/service.py`` child: SIGTERM, then SIGKILL, always reaped."""

    def __init__(self, stderr_path: Path) -> None:
        self.stderr_path = stderr_path
        with stderr_path.open("wb") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, str(EXAMPLES / "service.py"), "--port", "0", "--workers", "2"],
                stdout=subprocess.PIPE, stderr=stderr)
        self.port = 0

    def wait_listening(self) -> None:
        """Read the "listening on http://HOST:PORT" line and remember the port."""
        stdout = self.process.stdout
        if stdout is None:
            raise RuntimeError("the service was started without a stdout pipe")
        ready, _, _ = select.select([stdout], [], [], START_TIMEOUT)
        line = stdout.readline().decode() if ready else ""
        match = re.fullmatch(r"listening on http://127\.0\.0\.1:(\d+)\n", line)
        if match is None:
            raise RuntimeError(f"service did not start: {line!r}\n{self.stderr()}")
        self.port = int(match.group(1))

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def terminate(self) -> int:
        """SIGTERM, wait up to STOP_TIMEOUT, then SIGKILL; returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                return self.process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
        return self.process.wait()

    def close(self) -> None:
        self.terminate()
        if self.process.stdout is not None:
            self.process.stdout.close()


@contextlib.contextmanager
def running_service(stderr_path: Path) -> Iterator[ServiceProcess]:
    service = ServiceProcess(stderr_path)
    try:
        service.wait_listening()
        yield service
    finally:
        service.close()


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    with running_service(tmp_path_factory.mktemp("service") / "stderr.log") as running:
        yield running


def call(port: int, method: str, path: str, body: bytes | None = None) -> tuple[int, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(method, path, body=body)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def reference_mlp(x: np.ndarray) -> np.ndarray:
    """The example's MLP in plain numpy: same seed, same draw order, float64 arithmetic."""
    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((32, 64)) * 0.1).astype(np.float32)
    b1 = (rng.standard_normal(32) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((10, 32)) * 0.1).astype(np.float32)
    b2 = (rng.standard_normal(10) * 0.1).astype(np.float32)
    hidden = np.maximum(x.astype(np.float64) @ w1.T + b1, 0.0)
    logits = hidden @ w2.T + b2
    e = np.exp(logits - logits.max())
    probs: np.ndarray = e / e.sum()
    return probs


def test_predict_matches_numpy(service: ServiceProcess) -> None:
    x = np.random.default_rng(1).uniform(-2, 2, 64).astype(np.float32)
    body = json.dumps({"input": x.tolist()}).encode()
    status, reply = call(service.port, "POST", "/predict", body)
    assert status == 200, reply
    probs = np.array(reply["probabilities"])
    assert probs.shape == (10,)
    assert abs(probs.sum() - 1.0) < 1e-5
    expected = reference_mlp(x)
    np.testing.assert_allclose(probs, expected, rtol=1e-5, atol=1e-6)
    assert reply["class"] == int(np.argmax(expected))


def test_keep_alive_serves_requests_on_one_connection(service: ServiceProcess) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", service.port, timeout=10)
    try:
        for k in range(5):
            body = json.dumps({"input": [float(k)] * 64}).encode()
            connection.request("POST", "/predict", body=body)
            response = connection.getresponse()
            assert response.status == 200
            assert response.getheader("Connection") == "keep-alive"
            json.loads(response.read())
    finally:
        connection.close()


@pytest.mark.parametrize("body", [
    b"not json", b"", b"[]", b'{"inputs": []}', b'{"input": [1, 2, 3]}',
    json.dumps({"input": ["x"] * 64}).encode(), json.dumps({"input": [True] * 64}).encode(),
    json.dumps({"input": [[1.0]] * 64}).encode(), b'{"input": [NaN' + b", 1" * 63 + b"]}",
    b'{"input": [1e300' + b", 1" * 63 + b"]}", b'{"input": [' + b"9" * 400 + b", 1" * 63 + b"]}",
    b"\xff\xfe", b"[" * 100_000 + b"]" * 100_000,
], ids=lambda body: repr(body[:24]))
def test_bad_input_is_400(service: ServiceProcess, body: bytes) -> None:
    status, reply = call(service.port, "POST", "/predict", body)
    assert status == 400, reply
    assert reply["error"]


def test_unknown_route_and_wrong_method(service: ServiceProcess) -> None:
    assert call(service.port, "GET", "/nope")[0] == 404
    assert call(service.port, "GET", "/predict")[0] == 405


def test_oversized_body_is_413(service: ServiceProcess) -> None:
    with socket.create_connection(("127.0.0.1", service.port), timeout=10) as sock:
        sock.sendall(b"POST /predict HTTP/1.1\r\nHost: test\r\n"
                     b"Content-Length: 2097152\r\n\r\n")
        answer = b""
        while chunk := sock.recv(4096):  # the service closes the connection after answering
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413 "), answer
    assert b"Connection: close" in answer


def test_healthz_reports_statistics(service: ServiceProcess) -> None:
    call(service.port, "POST", "/predict", json.dumps({"input": [0.5] * 64}).encode())
    status, reply = call(service.port, "GET", "/healthz")
    assert status == 200
    assert reply["ok"] is True
    stats = reply["statistics"]
    assert stats["completed"] > 0
    assert stats["failed"] == 0
    assert stats["restarts"] == 0
    assert stats["pools"]["reference"]["workers_alive"] == 2


def test_load_test_runs_clean(service: ServiceProcess) -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "load_test.py"), "--concurrency", "16", "--duration", "2",
         "--url", f"http://127.0.0.1:{service.port}/predict"],
        capture_output=True, text=True, timeout=30, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    match = re.search(r"requests/s: ([\d.]+)", result.stdout)
    assert match is not None, result.stdout
    assert float(match.group(1)) > 0
    assert ", 0 errors" in result.stdout


def test_load_test_refuses_other_hosts() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "load_test.py"), "--url", "http://192.0.2.1:80/predict",
         "--requests", "1"], capture_output=True, text=True, timeout=30, check=False)
    assert result.returncode == 2
    assert "only http:// on 127.0.0.1" in result.stderr


def test_sigterm_closes_idle_connections_and_exits_0(tmp_path: Path) -> None:
    with running_service(tmp_path / "stderr.log") as service, \
            socket.create_connection(("127.0.0.1", service.port), timeout=10) as idle:
        body = json.dumps({"input": [1.0] * 64}).encode()
        idle.sendall(b"POST /predict HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        assert idle.recv(4096).startswith(b"HTTP/1.1 200 ")  # kept alive, now idle
        started = time.monotonic()
        assert service.terminate() == 0, service.stderr()
        assert time.monotonic() - started < STOP_TIMEOUT
        assert idle.recv(4096) == b""  # closed by the service, not left hanging
        assert "stopped; 2 workers reaped" in service.stderr()
