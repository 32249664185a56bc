"""The shared service a stress run talks to: its own ``nnrt serve``, or one given by path."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time

from nnrt.errors import BadState
from nnrt.serve.server import peer_credentials

__all__ = ["Service"]


class Service:
    """``nnrt serve --socket PATH --driver cpu --workers W`` in a subprocess (``reference``
    is added by the service), or an existing service at ``PATH`` (``owned=False``)."""

    def __init__(self, path: str, *, workers: int = 2, env: dict[str, str] | None = None,
                 owned: bool = True) -> None:
        self.path = path
        self.workers = workers
        self.owned = owned
        self._env = env
        self.proc: subprocess.Popen[bytes] | None = None
        self.pid = 0
        self.log_path = path + ".log"

    def start(self, timeout: float = 60.0) -> None:
        """Start the service (when owned) and wait until it accepts connections."""
        if self.owned:
            with open(self.log_path, "wb") as log:
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", "nnrt", "serve", "--socket", self.path,
                     "--driver", "cpu", "--workers", str(self.workers)],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                    env=self._env)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc is not None and self.proc.poll() is not None:
                raise BadState(f"nnrt serve exited with {self.proc.returncode}: "
                               f"{self.log_tail()}")
            pid = self._peer_pid()
            if pid is not None:
                self.pid = pid
                return
            if time.monotonic() > deadline:
                self.stop()
                raise BadState(f"nnrt serve did not accept connections on {self.path} in "
                               f"{timeout:g} s: {self.log_tail()}")
            time.sleep(0.05)

    def _peer_pid(self) -> int | None:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            try:
                sock.connect(self.path)
            except OSError:
                return None
            return peer_credentials(sock).pid

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM the owned service and wait (SIGKILL after ``timeout``); its exit status."""
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return None

    def log_tail(self, limit: int = 2000) -> str:
        """The end of the owned service's log."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(max(0, os.path.getsize(self.log_path) - limit))
                return f.read().decode(errors="replace")
        except OSError:
            return ""
