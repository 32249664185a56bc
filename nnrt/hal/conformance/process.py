"""Driver conformance, part 3: the driver served by a real worker process over its socket.

Starts ``python -m nnrt.worker --driver SPEC --socket PATH`` (the child sees this process's
``sys.path``, so a factory defined in a test module is found), then runs named steps: the
handshake, a prepared case model executed with inline tensors, malformed frames that must get an
error reply or a closed connection while another connection keeps being served, and a clean
stop (SIGTERM, exit status 0). The child is always stopped and reaped, every socket closed.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import msgpack
import numpy as np

from nnrt.hal.base import DriverInfo
from nnrt.hal.conformance.checks import compare
from nnrt.hal.conformance.operations import Probe
from nnrt.ipc.framing import HEADER, FrameReader, encode_frame, send_frame
from nnrt.ipc.messages import (
    PROTOCOL_VERSION,
    Status,
    check_response,
    decode_tensor,
    encode_tensor,
    error_from,
)
from nnrt.model.wire import model_to_wire

__all__ = ["WorkerSession", "factory_spec", "process_checks"]

#: Seconds to wait for the worker to listen, to answer, and to exit.
TIMEOUT = 20.0


def factory_spec(factory: object) -> str | None:
    """``"module:qualname"`` if importing that gives back ``factory`` itself, else None."""
    if isinstance(factory, str):
        return factory
    module = getattr(factory, "__module__", None)
    qualname = getattr(factory, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or "<" in qualname or (
            module == "__main__"):
        return None
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except Exception:
        return None
    return f"{module}:{qualname}" if obj is factory else None


class _Client:
    """One blocking connection to the worker (owns its socket)."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.reader = FrameReader()
        self._next = 1
        try:
            self.sock.settimeout(TIMEOUT)
            self.sock.connect(path)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self.reader.close()
        self.sock.close()

    def call(self, verb: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        """Send one request and return the ``(status, body)`` of its response."""
        request_id, self._next = self._next, self._next + 1
        send_frame(self.sock, encode_frame([request_id, verb, body or {}]))
        got, status, reply = self.receive()
        if got != request_id:
            raise AssertionError(f"{verb}: response to request {got}, expected {request_id}")
        return status, reply

    def receive(self) -> tuple[int, int, dict[str, Any]]:
        """The next response; ``EOFError`` if the worker closed the connection."""
        while True:
            for message in self.reader.messages():
                return check_response(message)
            if self.reader.receive(self.sock) == 0:
                raise EOFError("the worker closed the connection")

    def ok(self, verb: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        """The body of a successful response; ``AssertionError`` with the error otherwise."""
        status, reply = self.call(verb, body)
        if status != Status.OK:
            error = error_from(status, reply)
            raise AssertionError(f"{verb}: {type(error).__name__}: {error}")
        return reply

    def hello(self) -> dict[str, Any]:
        return self.ok("hello", {"protocol": PROTOCOL_VERSION, "client": "check_driver",
                                 "pid": os.getpid()})


class WorkerSession:
    """A worker child serving one driver at a socket in a private directory (owns both)."""

    def __init__(self, spec: str) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="nnrt-check-")
        self.path = str(Path(self._dir.name) / "worker.sock")
        self._log_path = Path(self._dir.name) / "stderr.txt"
        self._clients: list[_Client] = []
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p] + (
            [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        with open(self._log_path, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "nnrt.worker", "--driver", spec, "--socket", self.path],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, env=env)

    def stderr_tail(self, limit: int = 800) -> str:
        """The end of what the worker wrote to stderr."""
        try:
            text = self._log_path.read_text(errors="replace").strip()
        except OSError:
            return ""
        return f" (worker stderr: ...{text[-limit:]})" if text else ""

    def connect(self) -> _Client:
        """A new connection, once the worker listens (``AssertionError`` if it never does)."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                client = _Client(self.path)
            except OSError:
                if self.process.poll() is not None:
                    raise AssertionError(f"the worker exited with status "
                                         f"{self.process.returncode}{self.stderr_tail()}") from None
                if time.monotonic() > deadline:
                    raise AssertionError(f"the worker did not listen within {TIMEOUT:.0f} s"
                                         f"{self.stderr_tail()}") from None
                time.sleep(0.02)
                continue
            self._clients.append(client)
            return client

    def stop(self) -> int | None:
        """SIGTERM, wait, SIGKILL if needed; the exit status (None if it had to be killed)."""
        for client in self._clients:
            client.close()
        self._clients.clear()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(TIMEOUT)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):  # its stacks, into its stderr
                    self.process.send_signal(signal.SIGUSR1)
                time.sleep(0.5)
                self.process.kill()
                self.process.wait()
                return None
        return self.process.returncode

    def close(self) -> None:
        """Stop the worker (if running) and remove the directory."""
        self.stop()
        self._dir.cleanup()


def _execute(client: _Client, probe: Probe) -> None:
    handle = client.ok("prepare", {"model": model_to_wire(probe.model)})["handle"]
    reply = client.ok("execute", {"handle": handle, "inputs": [
        encode_tensor(np.ascontiguousarray(x)) for x in probe.feed]})
    outputs = [decode_tensor(t, f"output {i}") for i, t in enumerate(reply.get("outputs", []))]
    compare(probe.variant, outputs, "executed by the worker")
    client.ok("release", {"handle": handle})


#: Malformed input -> the bytes sent after a successful hello.
_MALFORMED = {
    "a frame that is not msgpack": HEADER.pack(2) + b"\xc1\xc1",
    "a frame longer than any maximum": HEADER.pack(0xFFFF_FFFF) + b"\0" * 8,
    "a request with an unknown verb": encode_frame([7, "frobnicate", {}]),
    "a request with a wrong-typed field": encode_frame([7, "release", {"handle": "1"}]),
    "a truncated envelope": HEADER.pack(3) + msgpack.packb([7]) + b"\x90",
}


def _refused(client: _Client) -> bool:
    """True if the worker answered with an error or closed the connection."""
    try:
        _, status, _ = client.receive()
    except (EOFError, ConnectionResetError):
        return True
    except TimeoutError:
        return False
    return status != Status.OK


def process_checks(spec: str, probe: Probe | None, info: DriverInfo
                   ) -> Generator[tuple[str, Callable[[], None]], None, None]:
    """The named process steps for driver ``spec``, to run in order (each may raise)."""
    session = WorkerSession(spec)
    try:
        good: list[_Client] = []

        def handshake() -> None:
            client = session.connect()
            reply = client.hello()
            if reply.get("protocol") != PROTOCOL_VERSION or reply.get("pid") != (
                    session.process.pid):
                raise AssertionError(f"hello reply {reply!r:.200} is not from this worker")
            remote = DriverInfo.from_wire(reply.get("driver"))
            if remote != info:
                raise AssertionError(f"the worker's driver says {remote}, in-process {info}")
            good.append(client)

        def execute() -> None:
            if probe is None:
                raise AssertionError("no supported case model to execute")
            _execute(good[0], probe)

        def malformed() -> None:
            for what, data in _MALFORMED.items():
                bad = session.connect()
                bad.hello()
                bad.sock.sendall(data)
                if not _refused(bad):
                    raise AssertionError(f"{what}: neither an error reply nor a closed "
                                         "connection")
                if good[0].ok("ping") != {}:
                    raise AssertionError(f"after {what}: ping on another connection failed")
            if probe is not None:
                _execute(good[0], probe)

        def stop() -> None:
            status = session.stop()
            if status != 0:
                raise AssertionError(f"after SIGTERM the worker exited with "
                                     f"{'SIGKILL' if status is None else status}"
                                     f"{session.stderr_tail()}")

        yield "process.handshake", handshake
        if good:
            yield "process.execute", execute
            yield "process.malformed_frames", malformed
        yield "process.stop", stop
    finally:
        with contextlib.suppress(Exception):
            session.close()
