"""Framed messaging over a non-blocking Unix stream socket (asyncio or trio via anyio):
``FramedSocket`` sends and receives whole msgpack messages (with fds); frames are read with
``recvmsg_into`` into one reused buffer. :mod:`nnrt.runtime.backends.channel` matches
responses to requests over it."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio
import msgpack

from nnrt.errors import UnavailableDevice
from nnrt.ipc.framing import (
    DEFAULT_MAX_FRAME,
    HEADER,
    FrameReader,
    ProtocolError,
    encode_frame,
    pack_payload,
)

__all__ = ["FramedSocket", "running_asyncio"]


class FramedSocket:
    """Owns a connected stream socket; sends and receives msgpack frames asynchronously."""

    def __init__(self, sock: socket.socket, *, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        #: Who is at the other end, for error messages (set by :class:`RequestClient`).
        self.peer = "the worker"
        sock.setblocking(False)
        self.sock = sock
        self.max_frame = max_frame
        self.reader = FrameReader(max_frame)
        self._packer = msgpack.Packer(use_bin_type=True)
        self._outbox = bytearray()
        self._flush_lock = anyio.Lock()
        self.closed = False
        #: Called once when :meth:`close` runs (lets a readiness-callback reader finish).
        self.on_close: Callable[[], None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._flush_scheduled = False
        self._writer_registered = False
        self._drained: list[asyncio.Future[None]] = []
        #: Ends :meth:`receive_loop`'s callback reading (asyncio mode) while it runs.
        self._stop_reading: asyncio.Future[Awaitable[None] | None] | None = None

    def use_asyncio(self, loop: asyncio.AbstractEventLoop | None) -> None:
        """Coalesce sends per event-loop iteration on ``loop`` (None: back to generic)."""
        self._loop = loop

    @property
    def backlog(self) -> int:
        """Bytes queued to send that the socket has not taken yet."""
        return len(self._outbox)

    async def drain(self, limit: int) -> None:
        """Wait until at most ``limit`` bytes wait to be sent (asyncio mode: a peer that does
        not read holds up its sender here instead of growing the outbox)."""
        while len(self._outbox) > limit and self._loop is not None and not self.closed:
            future: asyncio.Future[None] = self._loop.create_future()
            self._drained.append(future)
            await future

    def _schedule_flush(self) -> None:
        if not self._flush_scheduled and self._loop is not None:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush_now)

    def _flush_now(self) -> None:
        """Send what the outbox holds; register for writability if the socket is full."""
        self._flush_scheduled = False
        if self.closed or self._loop is None:
            return
        if self._outbox:
            try:
                sent = self.sock.send(self._outbox)
            except BlockingIOError:
                sent = 0
            except OSError:
                self._outbox.clear()  # the reader sees the broken connection and fails all
                sent = 0
            del self._outbox[:sent]
        if self._outbox and not self._writer_registered:
            self._writer_registered = True
            self._loop.add_writer(self.sock.fileno(), self._flush_now)
        elif not self._outbox:
            if self._writer_registered:
                self._writer_registered = False
                self._loop.remove_writer(self.sock.fileno())
            drained, self._drained = self._drained, []
            for future in drained:
                if not future.done():
                    future.set_result(None)

    def send_coalesced(self, message: Any) -> bool:
        """Queue ``message`` without waiting (asyncio mode only); False if not possible."""
        if self._loop is None or self.closed:
            return False
        if self._outbox or self._flush_scheduled:  # joins this iteration's send: no frame copy
            payload = pack_payload(message, self.max_frame, self._packer)
            outbox = self._outbox
            outbox += HEADER.pack(len(payload))
            outbox += payload
            self._schedule_flush()
        else:
            self._send_frame_coalesced(encode_frame(message, self.max_frame, self._packer))
        return True

    async def send(self, message: Any, fds: Sequence[int] = ()) -> None:
        """Send one message (and ``fds`` attached to it); waits only if the socket is full."""
        if self.closed:
            raise UnavailableDevice("the connection is closed")
        frame = encode_frame(message, self.max_frame, self._packer)
        if self._loop is not None:
            await self._send_asyncio(frame, fds)
            return
        if fds:
            await self._flush()  # descriptors ride on the frame's first byte: nothing before it
            sent = self._try_send(frame, fds)
        elif not self._outbox:
            sent = self._try_send(frame, ())
        else:
            sent = 0
        if sent < len(frame):
            self._outbox += memoryview(frame)[sent:]
            await self._flush()

    async def _send_asyncio(self, frame: bytes, fds: Sequence[int]) -> None:
        if not fds:
            self._send_frame_coalesced(frame)
            return
        while self._outbox:  # descriptors ride on the frame's first byte: drain first
            self._flush_now()
            if self._outbox and self._loop is not None:
                future: asyncio.Future[None] = self._loop.create_future()
                self._drained.append(future)
                await future
        sent = self._try_send(frame, fds)
        if sent < len(frame):
            self._outbox += memoryview(frame)[sent:]
            self._schedule_flush()

    def _send_frame_coalesced(self, frame: bytes) -> None:
        # The first frame of a loop iteration leaves at once (lowest latency); frames queued
        # after it in the same iteration leave together in one send (the call_soon flush).
        if not self._outbox and not self._flush_scheduled:
            sent = self._try_send(frame, ())
            if sent < len(frame):
                self._outbox += memoryview(frame)[sent:]
        else:
            self._outbox += frame
        self._schedule_flush()

    def _try_send(self, frame: bytes, fds: Sequence[int]) -> int:
        try:
            if fds:
                return socket.send_fds(self.sock, [frame], list(fds))
            return self.sock.send(frame)
        except BlockingIOError:
            return 0
        except OSError as exc:
            raise UnavailableDevice(f"sending to {self.peer} failed: {exc}") from None

    async def _flush(self) -> None:
        async with self._flush_lock:
            while self._outbox:
                await anyio.wait_writable(self.sock)
                try:
                    sent = self.sock.send(self._outbox)
                except BlockingIOError:
                    continue
                except OSError as exc:
                    raise UnavailableDevice(f"sending to {self.peer} failed: {exc}") from None
                del self._outbox[:sent]

    async def receive_loop(self, handle: Callable[[Any], Awaitable[None] | None]) -> None:
        """Feed every received message to ``handle`` until end of stream; an awaitable it
        returns is awaited before the next message is read.

        Raises ``ProtocolError`` for malformed input (including a truncated final frame).
        In asyncio mode (:meth:`use_asyncio`) messages are handled straight from the socket's
        readiness callback, with no task hop per message.
        """
        if self._loop is not None:
            await self._receive_from_callback(self._loop, handle)
            return
        while True:
            for message in self.reader.messages():
                result = handle(message)
                if result is not None:
                    await result
            try:
                await anyio.wait_readable(self.sock)
            except (anyio.ClosedResourceError, OSError):
                return
            try:
                count = self.reader.receive(self.sock)
            except BlockingIOError:
                continue
            except (ConnectionResetError, OSError):
                count = 0
            if count == 0:
                if self.reader.pending_bytes:
                    raise ProtocolError("connection closed in the middle of a frame")
                return

    async def _receive_from_callback(self, loop: asyncio.AbstractEventLoop,
                                     handle: Callable[[Any], Awaitable[None] | None]) -> None:
        reader, sock, fd = self.reader, self.sock, self.sock.fileno()
        while True:
            for message in reader.messages():  # those left when a handler paused reading
                result = handle(message)
                if result is not None:
                    await result
            # what stops the callback: the awaitable of a handler, or None at end of stream
            stopped: asyncio.Future[Awaitable[None] | None] = loop.create_future()

            def readable(stopped: asyncio.Future[Awaitable[None] | None] = stopped) -> None:
                if stopped.done():
                    return
                try:
                    try:
                        count = reader.receive(sock)
                    except BlockingIOError:
                        return
                    except OSError:  # reset by the peer: its end of stream
                        count = 0
                    for message in reader.messages():
                        result = handle(message)
                        if result is not None:
                            stopped.set_result(result)
                            return
                    if count == 0:
                        if reader.pending_bytes:
                            raise ProtocolError("connection closed in the middle of a frame")
                        stopped.set_result(None)
                except BaseException as exc:
                    stopped.set_exception(exc)

            self._stop_reading = stopped
            loop.add_reader(fd, readable)
            try:
                paused = await stopped
            finally:
                self._stop_reading = None
                if not self.closed:
                    loop.remove_reader(fd)
            if paused is None:
                return
            await paused

    def close(self) -> None:
        """Close the socket and any received descriptors nobody claimed (idempotent)."""
        if self.closed:
            return
        self.closed = True
        stop_reading = self._stop_reading
        if stop_reading is not None and self._loop is not None:  # reading from the callback
            with contextlib.suppress(Exception):
                self._loop.remove_reader(self.sock.fileno())
            if not stop_reading.done():
                stop_reading.set_result(None)
        if self._writer_registered and self._loop is not None:
            self._writer_registered = False
            with contextlib.suppress(Exception):
                self._loop.remove_writer(self.sock.fileno())
        for future in self._drained:
            if not future.done():
                future.set_result(None)
        if self.on_close is not None:
            self.on_close()
        self.reader.close()
        with contextlib.suppress(RuntimeError):  # no event loop (closing from a finaliser)
            anyio.notify_closing(self.sock)
        self.sock.close()


def running_asyncio() -> bool:
    """Whether the current task runs on an asyncio event loop (else trio or another backend)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
