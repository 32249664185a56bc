"""The worker service: one process serving one driver to its connections.

Run as ``python -m nnrt.worker`` (see :mod:`nnrt.worker.__main__`).

A synchronous :mod:`selectors` loop, no threads, no asyncio. Control requests (``hello``,
``ping``, ``info``, ``supported``, ``prepare``, ``release``, ``cancel``, ``map``, ``unmap``,
``allocate``, ``free``, ``copy_from``, ``copy_to``) are answered as soon as they are read;
``execute`` requests are queued (:mod:`nnrt.worker.jobs`) and run one at a time, highest
priority first. While one runs, the driver's ``should_stop`` hook polls the sockets (at most
every millisecond) so that cancels and new requests are still read. After answering, the loop
keeps polling its sockets for a short *polling window* before it sleeps (NNAPI bursts poll the
same way): a request arriving within the window is read at once instead of waking a sleeping
process, which on a virtual machine costs tens to hundreds of microseconds.
A connection that breaks the protocol is closed; the others keep being served. Responses are
buffered per connection and sent once per loop iteration, never blocking on a slow reader.
Connections whose ``hello`` asked for them also get a load report every few milliseconds while
the loop is busy (:mod:`nnrt.worker.load`): the CPU it spent serving, never its polling.
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import socket
import struct
import time
from typing import Any

from nnrt.errors import BadData, NnrtError
from nnrt.hal.base import Driver
from nnrt.ipc.framing import DEFAULT_MAX_FRAME, ProtocolError
from nnrt.ipc.messages import LOAD_REPORT_ID, Status, check_request, encode_error
from nnrt.ipc.polling import DEFAULT_POLL_WINDOW, MAX_POLL_WINDOW, Turnaround
from nnrt.worker.connection import Connection
from nnrt.worker.executor import Executor
from nnrt.worker.listener import UnixListener
from nnrt.worker.load import LoadMeter
from nnrt.worker.requests import RequestHandlers

__all__ = ["MAX_CONNECTIONS", "Service"]

#: Most connections a shared service accepts at once (more are closed on arrival).
MAX_CONNECTIONS = 1024
#: Unsent response bytes above which a connection's requests are no longer read.
_OUT_LIMIT = 8 << 20
#: Most receives from one connection per readiness event (so that one cannot starve others),
#: and the size below which a receive probably emptied the socket.
_READS_PER_EVENT = 32
_SMALL_READ = 64 << 10
_LISTENER, _WAKEUP = object(), object()
_READ, _WRITE = selectors.EVENT_READ, selectors.EVENT_WRITE
_UCRED = struct.Struct("3i")

_log = logging.getLogger("nnrt.worker.service")


#: Longest stretch of back-to-back executes before pending responses are sent (and the sockets
#: read again). Short enough that a client with many requests in flight gets answers while the
#: worker still runs the rest of its queue, so both sides work at once instead of in turn
#: (1 worker, 64 tiny requests in flight: 0.5 ms gave ~65k req/s, 0.25 ms ~96k).
BATCH_SECONDS = 0.00025


class Service:
    """Serves ``driver`` on one inherited connection (:meth:`serve_fd`) or a Unix socket path.

    Owns the selector, the listening socket (if any), every connection and every prepared
    model and device buffer created through it; :meth:`close` releases all of them exactly once.
    ``poll_window``: seconds the loop keeps polling (yielding the CPU between polls) after its
    last execute before it sleeps; 0 sleeps at once.
    """

    def __init__(self, driver: Driver, *, max_frame: int = DEFAULT_MAX_FRAME,
                 poll_window: float = DEFAULT_POLL_WINDOW) -> None:
        if not (isinstance(poll_window, int | float) and 0 <= poll_window <= MAX_POLL_WINDOW):
            raise BadData(f"poll_window must be from 0 to {MAX_POLL_WINDOW} seconds, got "
                          f"{poll_window!r:.40}")
        self.driver = driver
        self.max_frame = max_frame
        self.poll_window = float(poll_window)
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._wake_r, _READ, _WAKEUP)
        self._listener: UnixListener | None = None
        self._connections: dict[int, Connection] = {}
        self._events: dict[Connection, int] = {}
        self._dirty: set[Connection] = set()
        #: The execute queue and the running execute.
        self.executor = Executor(self._poll, self._answered)
        self._stopping = False
        self._closed = False
        self._requests = RequestHandlers(self.executor, driver, self._start_reports)
        #: CPU and executes since the last load report.
        self._meter = LoadMeter(time.monotonic())
        #: Whether a client asked for load reports (set by its ``hello``; stays set).
        self.reporting = False
        #: How soon after an answer the next execute request comes (the polling window).
        self.turnaround = Turnaround()

    # -- setting up ----------------------------------------------------------------------------

    def _start_reports(self) -> None:
        """A client asked for load reports: send them from now on while busy."""
        self.reporting = True

    def serve_fd(self, fd: int) -> None:
        """Serve the connected stream socket ``fd`` (taking ownership); stop when it closes."""
        sock = socket.socket(fileno=fd)
        if sock.family != socket.AF_UNIX or sock.type != socket.SOCK_STREAM:
            sock.close()
            raise BadData(f"fd {fd} is not a Unix stream socket")
        sock.set_inheritable(False)
        self._add_connection(sock)

    def listen(self, path: str) -> None:
        """Accept connections on a Unix socket at ``path`` (mode 0600) until stopped."""
        if self._listener is not None:
            raise BadData(f"the service already listens on {self._listener.path!r}")
        self._listener = UnixListener(path)
        self._selector.register(self._listener.fileno(), _READ, _LISTENER)

    def request_stop(self) -> None:
        """Make :meth:`run` return soon (safe to call from a signal handler)."""
        self._stopping = self.executor.stopping = True
        with contextlib.suppress(OSError):  # full: a wakeup is pending anyway
            self._wake_w.send(b"\0")

    # -- the loop ------------------------------------------------------------------------------

    def run(self) -> None:
        """Serve until :meth:`request_stop`, or until the last connection ends (no listener)."""
        select, executor, window = self._selector.select, self.executor, self.poll_window
        monotonic, cpu, meter = time.monotonic, time.process_time, self._meter
        turnaround = self.turnaround
        polling_until = answered = 0.0
        while not self._stopping and (self._listener is not None or self._connections):
            if executor.pending:
                events = select(0)
            elif window and monotonic() < polling_until:
                events = select(0)  # the polling window: no sleep, no wake-up to pay
                if not events:
                    os.sched_yield()  # let a process sharing this CPU run (the client)
                    continue
            else:
                events = select(None)
            started = cpu()
            for key, mask in events:
                self._on_event(key.data, mask)
            if executor.pending and not self._stopping:
                now = monotonic()
                if answered:  # the first execute since the last answer: the turnaround
                    turnaround.observe(now - answered)
                # Run queued executes for a short while before answering: responses then leave
                # in one send per connection (many small requests in flight), while a lone
                # request is answered right after it ran.
                until = now + BATCH_SECONDS
                ran = 0
                while executor.run_next():
                    ran += 1
                    if self._stopping or monotonic() >= until:
                        break
                meter.executes += ran
                answered = monotonic()
                polling_until = answered + turnaround.window(window)
            self._flush()
            meter.busy += cpu() - started
            if self.reporting and meter.due(now := monotonic()):
                self._report(meter.take(now))

    def _on_event(self, data: Any, mask: int) -> None:
        if data is _LISTENER:
            self._accept()
        elif data is _WAKEUP:
            with contextlib.suppress(BlockingIOError, InterruptedError):
                self._wake_r.recv(4096)
        else:
            conn: Connection = data
            if mask & _READ and not conn.closing and not conn.closed:
                self._read(conn)
            if mask & _WRITE and not conn.closed:
                self._dirty.add(conn)

    def _accept(self) -> None:
        listener = self._listener
        while listener is not None and (sock := listener.accept()) is not None:
            if len(self._connections) >= MAX_CONNECTIONS:
                _log.warning("refusing a connection: already %d open", MAX_CONNECTIONS)
                sock.close()
                continue
            self._add_connection(sock)

    def _add_connection(self, sock: socket.socket) -> None:
        try:
            pid, uid, _ = _UCRED.unpack(sock.getsockopt(
                socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))
            peer = f"pid {pid} uid {uid}"
        except OSError:
            peer = "unknown peer"
        conn = Connection(sock, self.max_frame, peer)
        self._connections[conn.fileno] = conn
        self._events[conn] = _READ
        self._selector.register(conn.fileno, _READ, conn)

    def _read(self, conn: Connection) -> None:
        """Read and serve what ``conn`` sent: a few socket buffers' worth at most per event."""
        reader, dispatch = conn.reader, self._dispatch
        try:
            for _ in range(_READS_PER_EVENT):
                received = reader.receive(conn.sock)
                if received == 0:
                    if reader.pending_bytes:
                        _log.warning("%s: connection ended inside a frame (%d bytes)", conn,
                                     reader.pending_bytes)
                    self._close(conn)
                    return
                for message in reader.messages():
                    dispatch(conn, message)
                    if conn.closing:
                        break
                if reader.has_fds:
                    _close_stray_fds(conn)
                if conn.closing or received < _SMALL_READ:
                    break  # most likely drained; if not, the selector reports it again
        except (BlockingIOError, InterruptedError):
            pass
        except ProtocolError as exc:
            _log.warning("%s: protocol error, closing the connection: %s", conn, exc)
            self._close(conn)
            return
        except OSError as exc:
            _log.info("%s: connection failed: %s", conn, exc)
            self._close(conn)
            return
        except Exception as exc:  # a frame no check foresaw: that connection only
            _log.warning("%s: unexpected %s while reading a request, closing the connection",
                         conn, type(exc).__name__)
            self._close(conn)
            return
        if conn.out:
            self._dirty.add(conn)

    def _dispatch(self, conn: Connection, message: Any) -> None:
        request_id, verb, body = check_request(message)
        if not conn.greeted and verb != "hello":
            raise ProtocolError(f"request {request_id} ({verb}) before hello")
        try:
            self._requests.handle(conn, request_id, verb, body)
        except ProtocolError:
            raise
        except NnrtError as exc:  # before OSError: Unmappable is one, and only an answer
            conn.respond(request_id, *encode_error(exc))
        except OSError:
            raise
        except Exception as exc:
            _log.exception("%s: request %d (%s) failed unexpectedly", conn, request_id, verb)
            conn.respond(request_id, *encode_error(exc))

    def _answered(self, conn: Connection) -> None:
        """An execute of ``conn`` was answered: with nothing more queued, its response leaves
        now, before the loop's bookkeeping (the client waits for it; the accounts can wait);
        while more executes are queued, with the others' at the end of the run."""
        if not self.executor.pending:
            # broken: the loop's flush meets the error again and closes the connection
            with contextlib.suppress(OSError):
                conn.flush()
        if conn.out:
            self._dirty.add(conn)

    def _flush(self) -> None:
        dirty = self._dirty
        if not dirty:
            return
        for conn in list(dirty):
            if conn.closed:
                continue
            try:
                conn.flush()
            except OSError as exc:
                _log.info("%s: send failed, closing: %s", conn, exc)
                self._close(conn)
                continue
            if conn.closing and not conn.out:
                self._close(conn)
                continue
            conn.paused = len(conn.out) > _OUT_LIMIT
            wanted = (0 if conn.paused or conn.closing else _READ) | (_WRITE if conn.out else 0)
            if wanted != self._events[conn]:
                self._events[conn] = wanted
                self._selector.modify(conn.fileno, wanted, conn)
        dirty.clear()

    def _report(self, load: list[float | int]) -> None:
        """Send a load report to every connection that asked for them."""
        body = {"load": load}
        for conn in self._connections.values():
            if conn.load_reports and not conn.closing:
                conn.respond(LOAD_REPORT_ID, Status.OK, body)
                self._dirty.add(conn)
        self._flush()

    def _poll(self) -> None:
        """While an execute runs: serve what the sockets have, without blocking."""
        for key, mask in self._selector.select(0):
            self._on_event(key.data, mask)
        self._flush()

    def _close(self, conn: Connection) -> None:
        """End ``conn``: drop its queued requests, stop its running one, release its models."""
        if conn.closed:
            return
        self.executor.forget(conn)
        handles, conn.handles = conn.handles, {}
        for handle in handles.values():
            self.executor.release(handle.prepared)
        buffers, conn.buffers = conn.buffers, {}
        for held in buffers.values():
            self.executor.release_buffer(held.buffer)
        self._selector.unregister(conn.fileno)
        del self._connections[conn.fileno]
        del self._events[conn]
        self._dirty.discard(conn)
        conn.close()

    def close(self) -> None:
        """Close every connection, the listener and the selector (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._stopping = self.executor.stopping = True
        for conn in list(self._connections.values()):
            self._close(conn)
        self.executor.close()
        if self._listener is not None:
            self._listener.close()
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()

    def __enter__(self) -> Service:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _close_stray_fds(conn: Connection) -> None:
    """Close descriptors that came with frames that did not declare them (never leak one)."""
    stray = conn.reader.take_stray_fds()
    for fd in stray:
        os.close(fd)
    if stray:
        _log.warning("%s: closed %d file descriptor(s) no request declared", conn, len(stray))
