"""The service's metrics: the models its clients compiled, and ``GET /metrics`` over HTTP.

Every client compile is a :class:`ForwardedModel` of the service's :class:`ServiceMetrics`,
named by the ``name`` the client sent with ``compile`` (its ``CompiledModel.name``; a step of a
model split over drivers is ``name/step<i>``), else ``handle-<n>``, made unique across clients
(``name#2``). The session records each execute it forwards: end-to-end seconds in the service,
errors by kind, and one execution of one request. It leaves the registry when released or when
its client disconnects.

``nnrt serve --metrics-port PORT`` serves :func:`~nnrt.runtime.prometheus.prometheus_text` of
:meth:`ServiceMetrics.statistics` (the pools, per-worker load, the forwarded models) with
:func:`serve_metrics`: HTTP/1.x on a TCP listener in the service's event loop, one request per
connection. A request is untrusted: its head is bounded (:data:`MAX_HEAD`), read within
:data:`READ_TIMEOUT`, answered ``400`` / ``404`` / ``405`` / ``431`` when it is not ``GET
/metrics`` (or ``HEAD``), and the connection closed after each response; at most
:data:`MAX_CONNECTIONS` are served at once (more are closed at once). Nothing a peer sends
stops the service.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

import anyio
from anyio.abc import ByteStream, SocketAttribute

from nnrt.errors import BadData
from nnrt.runtime.backends.embedded import EmbeddedBackend
from nnrt.runtime.metrics import MetricsRegistry, ModelMetrics
from nnrt.runtime.prometheus import CONTENT_TYPE, prometheus_text
from nnrt.runtime.stats import RuntimeStatistics

__all__ = ["MAX_CONNECTIONS", "MAX_HEAD", "READ_TIMEOUT", "ForwardedModel", "ServiceMetrics",
           "serve_metrics"]

log = logging.getLogger("nnrt.serve")

#: Bytes a request's head (request line and headers) may take.
MAX_HEAD = 8192
#: Seconds a peer has to send its request head, and to take the response.
READ_TIMEOUT = 5.0
#: Connections served at once; more are closed unanswered.
MAX_CONNECTIONS = 32
#: Characters of a client-sent model name kept.
MAX_NAME = 200


class ForwardedModel:
    """One client compile as the service's metrics see it."""

    __slots__ = ("__weakref__", "metrics")

    def __init__(self, driver: str) -> None:
        self.metrics = ModelMetrics("", driver)


class ServiceMetrics:
    """The forwarded models of every session, and the statistics ``/metrics`` serves."""

    def __init__(self, backend: EmbeddedBackend) -> None:
        self.backend = backend
        self.models = MetricsRegistry()

    def add(self, name: str, driver: str) -> ForwardedModel:
        """A new forwarded model named ``name`` (made unique) on ``driver``; the caller holds
        it (the registry does not) and :meth:`remove` s it when it is released."""
        model = ForwardedModel(driver)
        self.models.add(model, name[:MAX_NAME])
        return model

    def remove(self, model: ForwardedModel) -> None:
        """Take a released model out."""
        self.models.remove(model)

    def statistics(self) -> RuntimeStatistics:
        """The pools (with per-worker load) and the live forwarded models."""
        return dataclasses.replace(self.backend.statistics(), models=self.models.snapshot())


async def serve_metrics(host: str, port: int, statistics: Callable[[], RuntimeStatistics], *,
                        task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
    """Serve ``GET /metrics`` on ``host``:``port`` until cancelled; ``task_status.started``
    gets the port listened on (``port`` 0: one the system chose)."""
    try:
        listener = await anyio.create_tcp_listener(local_host=host, local_port=port)
    except OSError as exc:
        raise BadData(f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}") from None
    bound = listener.extra(SocketAttribute.local_port)
    log.info("metrics on http://%s:%d/metrics", host, bound)
    open_connections = 0

    async def handle(stream: ByteStream) -> None:
        nonlocal open_connections
        async with stream:
            if open_connections >= MAX_CONNECTIONS:
                return
            open_connections += 1
            try:
                await _answer(stream, statistics)
            except Exception as exc:  # a peer never stops the service (reset, garbage, …)
                log.debug("metrics: request dropped: %s", exc)
            finally:
                open_connections -= 1

    async with listener:
        task_status.started(bound)
        await listener.serve(handle)


class _BadRequest(Exception):
    def __init__(self, status: str) -> None:
        super().__init__(status)
        self.status = status


async def _answer(stream: ByteStream, statistics: Callable[[], RuntimeStatistics]) -> None:
    """Read one request head from ``stream`` and answer it."""
    try:
        with anyio.fail_after(READ_TIMEOUT):
            head = await _read_head(stream)
        method, path = _request_line(head)
    except TimeoutError:
        return await _respond(stream, "408 Request Timeout")
    except _BadRequest as exc:
        return await _respond(stream, exc.status)
    if path != "/metrics":
        return await _respond(stream, "404 Not Found")
    if method not in ("GET", "HEAD"):
        return await _respond(stream, "405 Method Not Allowed", extra="Allow: GET, HEAD\r\n")
    body = prometheus_text(statistics()).encode()
    await _respond(stream, "200 OK", body, CONTENT_TYPE, send_body=method == "GET")
    return None


async def _read_head(stream: ByteStream) -> bytes:
    """The request head (up to the blank line), at most :data:`MAX_HEAD` bytes."""
    data = b""
    while True:
        end = data.find(b"\r\n\r\n")
        if end < 0:
            end = data.find(b"\n\n")  # bare newlines: tolerated, as most servers do
        if 0 <= end <= MAX_HEAD:
            return data[:end]
        if len(data) > MAX_HEAD:
            raise _BadRequest("431 Request Header Fields Too Large")
        try:
            chunk = await stream.receive(4096)
        except anyio.EndOfStream:
            raise _BadRequest("400 Bad Request") from None
        data += chunk


def _request_line(head: bytes) -> tuple[str, str]:
    """``(method, path)`` of an HTTP/1.x request head (the query string dropped)."""
    line = head.split(b"\n", 1)[0].rstrip(b"\r")
    parts = line.split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        raise _BadRequest("400 Bad Request")
    try:
        method, target = parts[0].decode("ascii"), parts[1].decode("ascii")
    except UnicodeDecodeError:
        raise _BadRequest("400 Bad Request") from None
    if not method.isalpha() or not target.startswith("/"):
        raise _BadRequest("400 Bad Request")
    return method, target.split("?", 1)[0]


async def _respond(stream: ByteStream, status: str, body: bytes = b"",
                   content_type: str = "text/plain; charset=utf-8", *, extra: str = "",
                   send_body: bool = True) -> None:
    """Send one response and let the connection close (``Connection: close``)."""
    if not body and not status.startswith("200"):
        body = status.encode() + b"\n"
    head = (f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\n{extra}Connection: close\r\n\r\n").encode()
    with anyio.fail_after(READ_TIMEOUT):  # a peer that does not read is not waited for
        await stream.send(head + body if send_body else head)
