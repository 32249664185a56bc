"""Requests over a :class:`~nnrt.runtime.backends.framed.FramedSocket` (asyncio or trio via
anyio): ``RequestClient`` matches responses to requests by id so that many requests are in
flight at once and may be answered in any order.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import anyio

from nnrt.errors import UnavailableDevice
from nnrt.ipc.framing import ProtocolError
from nnrt.ipc.messages import (
    LOAD_REPORT_ID,
    Status,
    check_load_report,
    check_response,
    error_from,
)
from nnrt.runtime.backends.framed import FramedSocket, running_asyncio

__all__ = ["ReplyHandler", "RequestClient"]

log = logging.getLogger("nnrt.runtime")
#: Requests a ``cancel`` is sent for when their caller gives up on them.
_CANCELLABLE = frozenset({"execute", "execute_batched"})
#: Longest a client polls from the start for a lone request's expected reply time beyond its
#: poll window (seconds). A request expected to take longer lets the client sleep until
#: :data:`SLEEP_LEAD` before its reply is due, then poll: the CPU is not burnt for the whole
#: execution, nor the reply kept waiting for a wake-up.
POLL_AHEAD = 0.002
#: How long before a lone request's expected reply a sleeping client starts polling
#: (seconds): ``epoll`` times out in whole milliseconds, rounded up, and waking takes a while.
SLEEP_LEAD = 0.0015
#: Longest a client polls past a lone request's expected reply time (beyond its poll window):
#: a reply later than that wakes it from ``epoll``.
POLL_LATE = 0.001
#: Weight of the newest lone request's reply time in the running mean.
_LONE_WEIGHT = 0.2


class _Pending:
    """A request's response slot where no asyncio future can be had (trio): an anyio event."""

    __slots__ = ("event", "result")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.result: tuple[int, dict[str, Any]] = (Status.OK, {})

    async def wait(self) -> tuple[int, dict[str, Any]]:
        await self.event.wait()
        return self.result


class ReplyHandler:
    """A request's response slot that hands the reply (or the connection's loss) to a
    function at once, from the reader's callback: no task waits for it (asyncio only; see
    :meth:`RequestClient.send_now`). Subclasses define :meth:`on_reply`."""

    __slots__ = ("answered",)

    def __init__(self) -> None:
        self.answered = False

    def done(self) -> bool:
        return self.answered

    def set_result(self, result: tuple[int, dict[str, Any]]) -> None:
        if not self.answered:
            self.answered = True
            self.on_reply(*result)

    def on_reply(self, status: int, body: dict[str, Any]) -> None:
        raise NotImplementedError


#: Where a response goes: the asyncio future of its request (the result is ``(status, body)``),
#: a :class:`ReplyHandler` or, on other backends, a :class:`_Pending`.
_Waiter = asyncio.Future[tuple[int, dict[str, Any]]] | _Pending | ReplyHandler


def _resolve(waiter: _Waiter, status: int, body: dict[str, Any]) -> None:
    if isinstance(waiter, _Pending):
        waiter.result = (status, body)
        waiter.event.set()
    elif not waiter.done():
        waiter.set_result((status, body))


class RequestClient:
    """Requests over a ``FramedSocket``; responses are matched to requests by id.

    Run :meth:`run` in a task; when the connection ends every pending request fails with
    ``UnavailableDevice`` and later requests fail at once. Under asyncio the socket stays
    registered with the event loop for the connection's lifetime and responses resolve their
    futures straight from the readiness callback (no task hop per response); under other
    backends (trio) a receive task does the same through anyio.

    ``poll_window`` (seconds, asyncio only): after sending a request while no other is in
    flight, the client polls its socket from the event loop that long (a ``call_soon`` chain
    that yields the CPU each turn) instead of sleeping in ``epoll``, so a fast reply does not
    pay for waking the client — the same trade as the worker's own poll window
    (:mod:`nnrt.ipc.polling`). It polls longer when lone requests on this connection have been
    taking longer: for their recent time (a running mean) plus the window, so that a reply due
    in a millisecond does not find the client asleep either; a request expected to take more
    than :data:`POLL_AHEAD` lets the client sleep until :data:`SLEEP_LEAD` before its reply is
    due and poll from then. Other ready callbacks still run between polls. 0 disables it.
    """

    def __init__(self, framed: FramedSocket, peer: str = "the worker",
                 poll_window: float = 0.0) -> None:
        self.framed = framed
        self.poll_window = poll_window
        #: ``time.monotonic()`` until which the asyncio reader polls (see ``poll_window``).
        self._polling_until = 0.0
        #: When the lone request in flight was sent (0: none), and the running mean of such
        #: requests' reply times (seconds).
        self._lone_sent = 0.0
        self._lone_seconds = 0.0
        #: Starts the polling chain (set while the asyncio reader runs).
        self._start_polling: Callable[[], None] | None = None
        #: The timer that starts it later for a lone request expected to take long.
        self._polling_timer: asyncio.TimerHandle | None = None
        #: Who answers (in messages when the connection ends): a worker, or a shared service.
        self.peer = framed.peer = peer
        self._ids = itertools.count(1)
        self._pending: dict[int, _Waiter] = {}
        self.lost: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Executes we gave up on (cancelled, timed out) that the worker has not answered yet:
        #: request id -> time.monotonic() when abandoned. The worker is still busy with them.
        self.abandoned: dict[int, float] = {}
        #: Notifications waiting for a send (backends without the asyncio fast path).
        self._notes: list[list[Any]] = []
        #: Called with ``(span, busy, executes)`` for each load report of the worker (asked
        #: for in ``hello``); while None, a load report is a protocol error.
        self.on_load_report: Callable[[float, float, int], None] | None = None

    @property
    def in_flight(self) -> int:
        """Requests sent and not yet answered."""
        return len(self._pending)

    async def run(self) -> None:
        """Receive responses until the connection ends, then fail what is pending."""
        reason = f"{self.peer} closed the connection"
        try:
            if running_asyncio():
                reason = await self._run_asyncio()
            else:
                await self.framed.receive_loop(self._on_message)
        except ProtocolError as exc:
            reason = f"protocol error from {self.peer}: {exc}"
            log.warning("%s", reason)
        finally:
            self._fail_all(reason)
            self.framed.close()

    async def _run_asyncio(self) -> str:
        loop = asyncio.get_running_loop()
        self._loop = loop
        done: asyncio.Future[str] = loop.create_future()
        framed, sock = self.framed, self.framed.sock
        fd = sock.fileno()

        def readable() -> None:
            try:
                count = framed.reader.receive(sock)
            except BlockingIOError:
                return
            except ProtocolError as exc:
                finish(f"protocol error from {self.peer}: {exc}")
                return
            except OSError:
                count = 0
            try:
                for message in framed.reader.messages():
                    self._on_message(message)
            except ProtocolError as exc:
                finish(f"protocol error from {self.peer}: {exc}")
                return
            if count == 0:
                finish(f"{self.peer} closed the connection")

        registered = True

        def finish(reason: str) -> None:
            # unregister at once: the fd must not stay registered once the socket is closed
            nonlocal registered
            if registered:
                registered = False
                loop.remove_reader(fd)
            if not done.done():
                done.set_result(reason)

        polling = False

        def poll() -> None:
            # one turn of the polling chain: read what arrived, go on while a reply is awaited
            nonlocal polling
            if registered and self._pending:
                readable()
            if registered and self._pending and time.monotonic() < self._polling_until:
                os.sched_yield()  # a worker sharing this CPU runs first
                loop.call_soon(poll)
            else:
                polling = False

        def start_polling() -> None:
            nonlocal polling
            if not polling:
                polling = True
                loop.call_soon(poll)

        framed.on_close = lambda: finish("the connection was closed")
        loop.add_reader(fd, readable)
        framed.use_asyncio(loop)
        if self.poll_window > 0:
            self._start_polling = start_polling
        try:
            return await done
        finally:
            finish("the receive task ended")
            framed.use_asyncio(None)
            self._loop = None
            self._start_polling = None
            self._cancel_polling_timer()

    def _on_message(self, message: Any) -> None:
        request_id, status, body = check_response(message)
        waiter = self._pending.pop(request_id, None)
        if self._lone_sent and waiter is not None:  # the lone request's reply: its time
            seconds = time.monotonic() - self._lone_sent
            self._lone_seconds += _LONE_WEIGHT * (seconds - self._lone_seconds)
            self._lone_sent = 0.0
            self._cancel_polling_timer()  # came before its polling was to start
        if waiter is None:
            if request_id == LOAD_REPORT_ID:
                self._on_load_report(status, body)
            else:  # the worker finished (or stopped) a request we gave up on
                self.abandoned.pop(request_id, None)
        elif isinstance(waiter, _Pending):
            _resolve(waiter, status, body)
        elif not waiter.done():  # _resolve inlined: once per response
            waiter.set_result((status, body))

    def _on_load_report(self, status: int, body: dict[str, Any]) -> None:
        if self.on_load_report is None:
            raise ProtocolError("the worker sent a load report nobody asked for")
        self.on_load_report(*check_load_report(status, body))

    def _fail_all(self, reason: str) -> None:
        self.lost = reason
        self.abandoned.clear()
        pending, self._pending = self._pending, {}
        for waiter in pending.values():
            _resolve(waiter, Status.UNAVAILABLE_DEVICE, {"message": reason})

    async def request(self, verb: str, body: dict[str, Any], fds: Sequence[int] = ()
                      ) -> dict[str, Any]:
        """Send a request and wait for its response body; error responses raise nnrt errors.

        If the waiting task is cancelled, a ``cancel`` for the request is sent (best effort) so
        that the worker stops working on it.
        """
        if self.lost is not None:
            raise UnavailableDevice(self.lost)
        if self._notes:
            await self._send_notes()
        request_id = next(self._ids)
        loop = self._loop
        waiter = loop.create_future() if loop is not None else _Pending()
        self._pending[request_id] = waiter
        try:
            if fds or not self.framed.send_coalesced([request_id, verb, body]):
                await self.framed.send([request_id, verb, body], fds)
            start = self._start_polling
            if start is not None and loop is not None and len(self._pending) == 1:
                self._poll_for_lone(loop, start)
            if isinstance(waiter, _Pending):
                status, reply = await waiter.wait()
            else:
                status, reply = await waiter
        except BaseException:
            if self._pending.pop(request_id, None) is not None and verb in _CANCELLABLE:
                self.abandoned[request_id] = time.monotonic()
                await self._send_cancel(request_id)
            raise
        if status != Status.OK:
            raise error_from(status, reply)
        return reply

    def send_now(self, verb: str, body: dict[str, Any], handler: ReplyHandler) -> int | None:
        """Send a request without waiting for anything, its reply to go to ``handler``; the
        request's id, or None when that is not possible right now (not under asyncio, the
        connection lost or failing as it is sent, notes waiting): then use :meth:`request`.
        Never raises for the connection's loss."""
        loop = self._loop
        if loop is None or self.lost is not None or self._notes:
            return None
        request_id = next(self._ids)
        self._pending[request_id] = handler
        try:
            sent = self.framed.send_coalesced([request_id, verb, body])
        except (UnavailableDevice, OSError):  # the peer just went: the reader will find out
            sent = False
        if not sent:
            del self._pending[request_id]
            return None
        start = self._start_polling
        if start is not None and len(self._pending) == 1:
            self._poll_for_lone(loop, start)
        return request_id

    def abandon(self, request_id: int) -> bool:
        """Give up on a request sent with :meth:`send_now` (its handler is not called): a
        ``cancel`` goes to the peer, as for a cancelled :meth:`request` (unless the connection
        is failing: never raises for that). False if it was answered already."""
        if self._pending.pop(request_id, None) is None:
            return False
        self.abandoned[request_id] = time.monotonic()
        with contextlib.suppress(UnavailableDevice, OSError):  # a peer gone has nothing to stop
            self.notify("cancel", {"target": request_id})
        return True

    def _poll_for_lone(self, loop: asyncio.AbstractEventLoop, start: Callable[[], None]
                       ) -> None:
        """Poll for the reply of the lone request just sent: from now when it is expected
        within :data:`POLL_AHEAD`, else from :data:`SLEEP_LEAD` before it is due (a timer on
        the event loop, which sleeps till then), up to :data:`POLL_LATE` after."""
        now = self._lone_sent = time.monotonic()
        expected = self._lone_seconds
        self._cancel_polling_timer()
        if expected <= POLL_AHEAD:
            self._polling_until = now + expected + self.poll_window
            start()
            return
        self._polling_until = now + expected + POLL_LATE + self.poll_window
        self._polling_timer = loop.call_at(now + expected - SLEEP_LEAD, start)

    def _cancel_polling_timer(self) -> None:
        timer = self._polling_timer
        if timer is not None:
            timer.cancel()
            self._polling_timer = None

    def notify(self, verb: str, body: dict[str, Any]) -> None:
        """Send a request whose reply nobody waits for (e.g. ``unmap``); never blocks.

        Sent at once under asyncio; otherwise queued and sent before the next request.
        """
        if self.lost is not None:
            return
        message = [next(self._ids), verb, body]
        if self._notes or not self.framed.send_coalesced(message):
            self._notes.append(message)

    async def _send_notes(self) -> None:
        notes, self._notes = self._notes, []
        for message in notes:
            await self.framed.send(message)

    async def _send_cancel(self, request_id: int) -> None:
        with anyio.CancelScope(shield=True):
            try:
                await self.framed.send([next(self._ids), "cancel", {"target": request_id}])
            except Exception:  # the connection may be gone already; nothing to cancel then
                log.debug("could not send cancel for request %d", request_id)

    def close(self) -> None:
        """Close the connection; pending requests fail with ``UnavailableDevice``."""
        self.framed.close()
        self._fail_all("the connection was closed")
