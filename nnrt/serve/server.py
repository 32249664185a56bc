"""Shared mode, service side: ``nnrt serve --socket PATH`` runs the pools for many clients.

Each client connection is a session: identified by the connection and its ``SO_PEERCRED``
(pid, uid, gid), it owns the models it compiled (handles are scoped to the session and released
when it disconnects). Requests run concurrently and are answered as they finish. A client that
breaks the protocol loses its connection; the service and the other clients carry on. Only the
service's own user and root are served (the socket is 0600, and the peer's uid is checked too).

Each session is bounded (:class:`ClientLimits`): pools mapped, device-memory bytes allocated and
requests in flight; past a limit the request fails with ``ResourceExhausted`` naming it. A client
that does not read its replies stops being read once twice its in-flight limit is unanswered.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
from collections.abc import Callable, Sequence
from typing import Any

import anyio
from anyio.abc import TaskGroup

from nnrt.errors import BadData
from nnrt.hal.discovery import default_drivers, load_driver
from nnrt.runtime.backends.embedded import EmbeddedBackend
from nnrt.runtime.backends.pool import DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_QUEUE
from nnrt.runtime.backends.process import check_threads
from nnrt.runtime.compile.compilation import FALLBACK_DRIVER
from nnrt.runtime.runtime import Runtime
from nnrt.serve.batched import BatchedModels
from nnrt.serve.clients import (
    ClientLimits,
    PeerCredentials,
    admitted,
    peer_credentials,
)
from nnrt.serve.metrics import ServiceMetrics, serve_metrics
from nnrt.serve.session import Session

__all__ = ["ClientLimits", "PeerCredentials", "peer_credentials", "serve"]

log = logging.getLogger("nnrt.serve")

def check_socket_path(path: str) -> None:
    """``BadData`` naming ``path`` unless a service may listen there: its directory exists,
    and nothing is there but (at most) the stale socket of a service that has stopped — a
    live service's socket is never taken over."""
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise BadData(f"cannot listen on {path}: directory {parent} does not exist")
    if not os.path.lexists(path):
        return
    if not _is_socket(path):
        raise BadData(f"cannot listen on {path}: it exists and is not a socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(1.0)
        probe.connect(path)
    except OSError:
        return  # nobody listens: a stale socket, replaced when the service starts
    finally:
        probe.close()
    raise BadData(f"cannot listen on {path}: a service is already listening there")


def _listen(path: str) -> socket.socket:
    check_socket_path(path)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # the socket file is created 0600: only this user may connect
    try:
        sock.bind(path)
    except OSError as exc:
        sock.close()
        raise BadData(f"cannot listen on {path}: {exc.strerror or exc}") from None
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(128)
    sock.setblocking(False)
    return sock


def _is_socket(path: str) -> bool:
    import stat  # noqa: PLC0415

    return stat.S_ISSOCK(os.lstat(path).st_mode)


async def serve(path: str, *, drivers: Sequence[str] | None = None,
                workers: dict[str, int] | None = None,
                max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
                ready: Callable[[], None] | None = None, limits: ClientLimits | None = None,
                max_queue: int = DEFAULT_MAX_QUEUE, threads: int | None = None,
                metrics: tuple[str, int] | None = None) -> None:
    """Run the pools and accept clients on ``path`` until SIGTERM / SIGINT or cancellation.

    ``drivers`` defaults to :func:`~nnrt.hal.discovery.default_drivers`. ``max_in_flight``
    bounds the requests sent to one worker, ``max_queue`` those waiting for a worker of one
    driver (all clients together), ``limits`` what one client may hold, ``threads`` the
    threads of each worker's kernels (as ``Runtime(threads=...)``). ``metrics`` (host, port)
    serves ``GET /metrics`` there (:mod:`nnrt.serve.metrics`; port 0: one the system picks,
    logged).
    """
    limits = limits or ClientLimits()
    check_socket_path(path)  # before any worker starts: a clear error, nothing to stop
    count = os.cpu_count() or 1
    threads = check_threads(threads)
    names = list(dict.fromkeys(default_drivers() if drivers is None else drivers))
    for name in names:  # refused before any worker starts (see Runtime.__aenter__)
        load_driver(name).cache_files_needed()
    if FALLBACK_DRIVER not in names:  # runs what no other driver takes
        names.append(FALLBACK_DRIVER)
    per_driver = {d: (workers or {}).get(d, count) for d in names}
    backend = EmbeddedBackend(names, per_driver, max_in_flight, threads=threads)
    for pool in backend.pools.values():
        pool.max_queue = max_queue
    listener: socket.socket | None = None
    measured = ServiceMetrics(backend)
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(_stop_on_signals, tg)
            if metrics is not None:  # first: a port in use fails before any worker starts
                await tg.start(serve_metrics, *metrics, measured.statistics)
            await backend.start(tg)
            # the service's own runtime over its pools: the models it batches across clients
            async with Runtime.over(backend) as runtime:
                batched = BatchedModels(runtime)
                listener = _listen(path)  # the socket appears once the service is ready
                if ready is not None:
                    ready()
                log.info("nnrt service listening on %s", path)
                while True:
                    await anyio.wait_readable(listener)
                    try:
                        conn, _ = listener.accept()
                    except BlockingIOError:
                        continue
                    creds = admitted(conn)
                    if creds is None:
                        continue
                    session = Session(backend, conn, limits, creds, measured, batched)
                    log.info("client pid %d uid %d connected", creds.pid, creds.uid)
                    tg.start_soon(session.run)
    finally:
        backend.close()
        if listener is not None:
            listener.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)


async def _stop_on_signals(tg: TaskGroup, *, task_status: Any = anyio.TASK_STATUS_IGNORED
                           ) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        task_status.started()
        async for _ in signals:
            tg.cancel_scope.cancel()
            return
