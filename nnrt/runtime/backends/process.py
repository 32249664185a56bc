"""Driver worker processes: spawned as fresh interpreters on a socketpair, reaped on close."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from typing import Self

import anyio

from nnrt.errors import BadData

__all__ = ["LITERT_THREADS", "MAX_THREADS", "WorkerProcess", "check_threads"]

#: Seconds a worker gets to exit after its connection closes, and after SIGTERM.
GRACE_SECONDS = 2.0


#: BLAS / OpenMP thread pools in a worker: one thread each unless the caller's environment
#: says otherwise. Workers are the runtime's unit of parallelism (a pool runs one per core); a
#: multi-threaded BLAS inside each of them oversubscribes the cores, and OpenBLAS's spinning
#: threads turn a 1 ms model into a 50 ms one as soon as another process competes for a core.
WORKER_THREAD_LIMITS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                        "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


#: Environment variable: the LiteRT (XNNPACK) threads of a litert worker (read by
#: ``nnrt.drivers.litert.dispatch.threads``; named here so that a client need not import LiteRT).
LITERT_THREADS = "NNRT_LITERT_THREADS"
#: The most threads one worker's kernels may be given.
MAX_THREADS = 64


def check_threads(value: object) -> int | None:
    """``value`` as threads per worker (None: the default, one, or what the environment says);
    ``BadData`` unless None or an int from 1 to :data:`MAX_THREADS`."""
    if value is None:
        return None
    if value.__class__ is not int or not 1 <= value <= MAX_THREADS:
        raise BadData(f"threads must be an int from 1 to {MAX_THREADS} (threads per worker), "
                      f"got {value!r:.40}")
    return value


def _child_env(threads: int | None = None) -> dict[str, str]:
    env = dict(os.environ)
    for name in (*WORKER_THREAD_LIMITS, LITERT_THREADS):
        if threads is not None:
            env[name] = str(threads)
        elif name != LITERT_THREADS:
            env.setdefault(name, "1")
    # The child must import what this process imports (source trees, test driver modules).
    paths = [p for p in sys.path if p and os.path.isdir(p)]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


class WorkerProcess:
    """Owns one ``python -m nnrt.worker`` child and the parent's end of its socketpair.

    Never forks the client interpreter: the child is a fresh ``sys.executable``.
    """

    def __init__(self, process: subprocess.Popen[bytes], sock: socket.socket) -> None:
        self.process = process
        self.sock = sock
        self._closed = False

    @property
    def pid(self) -> int:
        """The child's process id."""
        return self.process.pid

    @classmethod
    async def spawn(cls, driver_spec: str, poll_window: float | None = None,
                    threads: int | None = None) -> Self:
        """Start a worker serving ``driver_spec`` (runs the blocking spawn in a thread)."""
        return await anyio.to_thread.run_sync(cls.spawn_blocking, driver_spec, poll_window,
                                              threads)

    @classmethod
    def spawn_blocking(cls, driver_spec: str, poll_window: float | None = None,
                       threads: int | None = None) -> Self:
        """Start a worker serving ``driver_spec`` (``poll_window``: the service's, in seconds;
        None: its default; ``threads``: its kernels' threads, None: one unless the environment
        says otherwise)."""
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        options = [] if poll_window is None else ["--poll-window", repr(float(poll_window))]
        try:
            process = subprocess.Popen(
                [sys.executable, "-m", "nnrt.worker", "--driver", driver_spec,
                 "--fd", str(child.fileno()), *options],
                pass_fds=[child.fileno()], stdin=subprocess.DEVNULL, env=_child_env(threads),
                close_fds=True,
            )
        except BaseException:
            parent.close()
            raise
        finally:
            child.close()
        return cls(process, parent)

    def kill(self) -> None:
        """SIGKILL the child (tests and emergency teardown)."""
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGKILL)

    async def aclose(self) -> None:
        """Close the connection and reap the child: wait, then SIGTERM, then SIGKILL."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._reap)

    def close(self) -> None:
        """Blocking variant of :meth:`aclose`."""
        if not self._closed:
            self._closed = True
            self._reap()

    def _reap(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
        try:
            self.process.wait(GRACE_SECONDS)
            return
        except subprocess.TimeoutExpired:
            pass
        with contextlib.suppress(ProcessLookupError):
            self.process.terminate()
        try:
            self.process.wait(GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            with contextlib.suppress(Exception):
                self.kill()
                self.sock.close()
