"""One node's ``nnrt serve``: its private directory, its process and the lifeline tying both
to the actor that started them.

:class:`ServiceProcess` owns the directory (``tempfile.mkdtemp``: mode 0700, named
``nnrt-ray-<actor pid>-*``) holding the service's socket, its log and the models the node
received; the service process; and the lifeline pipe's write end
(:mod:`nnrt.cluster.lifeline`). :meth:`ServiceProcess.close` stops the service (SIGTERM, a
grace period, SIGKILL) and removes the directory. An actor killed outright cannot: its
service stops by the lifeline, and the next actor starting on the node removes the
directories of actors that are gone (:func:`sweep_stale`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

from nnrt.errors import UnavailableDevice
from nnrt.memory.sweep import pid_alive

__all__ = ["DIRECTORY_PREFIX", "ServiceProcess", "sweep_stale"]

#: The name of every node service's directory starts so, followed by its actor's pid.
DIRECTORY_PREFIX = "nnrt-ray-"
#: Seconds a service gets to stop after SIGTERM before it is killed.
STOP_GRACE = 10.0


def sweep_stale(root: str | None = None) -> list[str]:
    """Remove this user's node-service directories whose actor process is gone; returns them."""
    removed = []
    base = Path(root or tempfile.gettempdir())
    for entry in base.glob(f"{DIRECTORY_PREFIX}*-*"):
        pid = entry.name[len(DIRECTORY_PREFIX):].split("-", 1)[0]
        try:
            if not pid.isdigit() or entry.lstat().st_uid != os.getuid() or not entry.is_dir():
                continue
        except OSError:
            continue
        if not pid_alive(int(pid)):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(str(entry))
    return removed



class ServiceProcess:
    """Starts ``nnrt serve ARGUMENTS`` on a socket in a new private directory (see the module
    docstring for what it owns)."""

    def __init__(self, arguments: list[str]) -> None:
        sweep_stale()
        self.directory = tempfile.mkdtemp(prefix=f"{DIRECTORY_PREFIX}{os.getpid()}-")
        #: The service's Unix socket (0600, created once the service is ready).
        self.socket = os.path.join(self.directory, "nnrt.sock")
        self.log = os.path.join(self.directory, "serve.log")
        self._lifeline = -1
        self._process: subprocess.Popen[bytes] | None = None
        read, write = os.pipe()
        try:
            with open(self.log, "wb") as log:
                self._process = subprocess.Popen(
                    [sys.executable, "-m", "nnrt.cluster.lifeline", str(read),
                     "--socket", self.socket, *arguments],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=log, pass_fds=(read,))
        except BaseException:
            os.close(write)
            shutil.rmtree(self.directory, ignore_errors=True)
            raise
        finally:
            os.close(read)
        self._lifeline = write

    @property
    def pid(self) -> int:
        """The service's process id (-1 once closed)."""
        return -1 if self._process is None else self._process.pid

    async def wait_ready(self, timeout: float) -> None:
        """Wait until the service listens (its socket appears once it is ready)."""
        deadline = time.monotonic() + timeout
        while not self._listening():
            process = self._process
            if process is None or process.poll() is not None:
                raise UnavailableDevice(f"nnrt serve exited before listening on {self.socket}: "
                                        f"{self._log_tail()}")
            if time.monotonic() > deadline:
                raise UnavailableDevice(f"nnrt serve did not listen on {self.socket} within "
                                        f"{timeout:.0f} s: {self._log_tail()}")
            await anyio.sleep(0.02)

    def _listening(self) -> bool:
        """Whether the service accepts connections (its socket is bound a moment before it
        listens: a connection in between is refused)."""
        if not os.path.exists(self.socket):
            return False
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(self.socket)
        except OSError:
            return False
        finally:
            probe.close()
        return True

    def _log_tail(self) -> str:
        try:
            text = Path(self.log).read_text(errors="replace").strip()
        except OSError:
            return "(no log)"
        return text[-600:] or "(empty log)"

    def close(self) -> None:
        """Stop the service (SIGTERM, then SIGKILL after :data:`STOP_GRACE` seconds), close the
        lifeline and remove the directory (idempotent; blocks while the service stops)."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:  # poll() reaps an exited one
            process.terminate()
            try:
                process.wait(STOP_GRACE)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._lifeline >= 0:
            os.close(self._lifeline)
            self._lifeline = -1
        shutil.rmtree(self.directory, ignore_errors=True)

    def __del__(self) -> None:
        # only releases: the lifeline's end stops the service by itself
        if self._lifeline >= 0:
            with contextlib.suppress(OSError):
                os.close(self._lifeline)
            self._lifeline = -1
