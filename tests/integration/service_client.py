"""Test kit for the worker service: a ``python -m nnrt.worker`` child and a raw frame client.

:class:`Worker` owns the child process (SIGTERM, then SIGKILL, always reaped) and
:class:`RawClient` one blocking socket that speaks frames with ``encode_frame`` / ``send_frame``
and reads them with ``FrameReader``: no runtime code, so the tests see the wire as it is.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from nnrt.ipc.framing import FrameReader, encode_frame, send_frame
from nnrt.ipc.messages import PROTOCOL_VERSION, check_response, decode_tensor, encode_tensor
from nnrt.model.model import Model
from nnrt.model.wire import model_to_wire

TIMEOUT = 10.0


class RawClient:
    """One blocking connection to a worker; request ids count up from 1."""

    def __init__(self, sock: socket.socket) -> None:
        sock.settimeout(TIMEOUT)
        self.sock = sock
        self.reader = FrameReader()
        self._next_id = 1
        self._pending: list[Any] = []

    @classmethod
    def connect(cls, path: str) -> RawClient:
        """Connect to a listening worker at ``path``."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
        except BaseException:
            sock.close()
            raise
        return cls(sock)

    def close(self) -> None:
        """Close the socket and any descriptors received."""
        self.reader.close()
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- sending -----------------------------------------------------------------------------

    def frame(self, verb: str, body: dict[str, Any] | None = None) -> tuple[int, bytes]:
        """A request frame with the next id (not sent)."""
        request_id = self._next_id
        self._next_id += 1
        return request_id, encode_frame([request_id, verb, body or {}])

    def send(self, verb: str, body: dict[str, Any] | None = None,
             fds: Sequence[int] = ()) -> int:
        """Send one request; returns its id."""
        request_id, frame = self.frame(verb, body)
        send_frame(self.sock, frame, fds)
        return request_id

    def send_raw(self, data: bytes) -> None:
        """Send bytes as they are."""
        self.sock.sendall(data)

    # -- receiving ---------------------------------------------------------------------------

    def receive(self) -> tuple[int, int, dict[str, Any]]:
        """The next response ``(id, status, body)``; ``EOFError`` if the worker closed."""
        while not self._pending:
            if self.reader.receive(self.sock) == 0:
                raise EOFError("the worker closed the connection")
            self._pending.extend(self.reader.messages())
        return check_response(self._pending.pop(0))

    def call(self, verb: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        """Send one request and wait for its response (no other request may be in flight)."""
        request_id = self.send(verb, body)
        got_id, status, reply = self.receive()
        if got_id != request_id:
            raise AssertionError(f"response {got_id} for request {request_id}")
        return status, reply

    def closed_by_peer(self) -> bool:
        """Read until end of stream; True if the worker closed (responses are discarded)."""
        try:
            while self.reader.receive(self.sock) != 0:
                list(self.reader.messages())
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
        return True

    # -- conveniences ------------------------------------------------------------------------

    def hello(self) -> dict[str, Any]:
        """Do the handshake; returns the worker's reply."""
        status, body = self.call("hello", {"protocol": PROTOCOL_VERSION, "client": "test",
                                           "pid": os.getpid()})
        if status != 0:
            raise AssertionError(f"hello failed: {status} {body}")
        return body

    def prepare(self, model: Model, **options: int) -> int:
        """Prepare ``model``; returns the handle."""
        status, body = self.call("prepare", {"model": model_to_wire(model), **options})
        if status != 0:
            raise AssertionError(f"prepare failed: {status} {body}")
        handle: int = body["handle"]
        return handle

    def execute(self, handle: int, inputs: Sequence[np.ndarray[Any, Any]],
                **fields: Any) -> int:
        """Send an execute request; returns its id."""
        return self.send("execute", {"handle": handle,
                                     "inputs": [encode_tensor(x) for x in inputs], **fields})


def outputs_of(body: dict[str, Any]) -> list[np.ndarray[Any, Any]]:
    """The decoded output tensors of an execute response."""
    return [decode_tensor(t, f"output {i}") for i, t in enumerate(body["outputs"])]


class Worker:
    """A worker service child process (owned: :meth:`close` stops and reaps it)."""

    def __init__(self, args: Sequence[str], pass_fds: Sequence[int] = ()) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "nnrt.worker", "--driver", "reference", *args],
            pass_fds=tuple(pass_fds), stdin=subprocess.DEVNULL)

    @classmethod
    def embedded(cls, *args: str) -> tuple[Worker, RawClient]:
        """A worker serving one end of a socketpair; returns it and a client on the other."""
        ours, theirs = socket.socketpair()
        try:
            worker = cls(["--fd", str(theirs.fileno()), *args], pass_fds=[theirs.fileno()])
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        return worker, RawClient(ours)

    @classmethod
    def listening(cls, path: str, *args: str) -> Worker:
        """A worker listening at ``path``; returns once it accepts connections."""
        worker = cls(["--socket", path, *args])
        deadline = time.monotonic() + TIMEOUT
        while True:
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(path)
                return worker
            except OSError:
                if worker.process.poll() is not None or time.monotonic() > deadline:
                    worker.close()
                    raise RuntimeError("the worker did not start listening") from None
                time.sleep(0.02)
            finally:
                probe.close()

    def wait(self, timeout: float = TIMEOUT) -> int:
        """Wait for the worker to exit; returns its exit status."""
        return self.process.wait(timeout)

    def close(self) -> None:
        """Terminate the worker if it still runs, and reap it."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


@contextlib.contextmanager
def running_service(path: str, workers: int = 2, extra: Sequence[str] = (),
                    env: Mapping[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """``nnrt serve --socket path`` in a real process; stopped by SIGTERM (must exit 0)."""
    proc = subprocess.Popen([sys.executable, "-m", "nnrt", "serve", "--socket", path,
                             "--workers", str(workers), *extra], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=None if env is None else dict(env))
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(path):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"service did not start: {proc.stderr.read()!r}")  # type: ignore[union-attr]
            time.sleep(0.05)
        _wait_ready(path)
        yield proc
    finally:
        proc.send_signal(subprocess.signal.SIGTERM)  # type: ignore[attr-defined]
        try:
            code = proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
        finally:
            proc.stderr.close()  # type: ignore[union-attr]
        assert code == 0


def _wait_ready(path: str) -> None:
    for _ in range(200):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            try:
                s.connect(path)
                return
            except OSError:
                time.sleep(0.05)
