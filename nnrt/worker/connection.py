"""One client connection of the worker service: its socket, frames in and out, and its state.

The service owns every :class:`Connection`; a connection owns its socket, its
:class:`~nnrt.ipc.framing.FrameReader` (and the descriptors received but not claimed), the
memory pools its client mapped (:class:`~nnrt.memory.mapped.MappingTable`), the prepared models
it created (its handles) and the device buffers it allocated (its tokens). Responses are
appended to one output buffer and sent by :meth:`Connection.flush`, once per loop iteration,
never blocking on a slow reader.
"""

from __future__ import annotations

import logging
import secrets
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgpack

from nnrt.errors import ResourceExhausted
from nnrt.ipc.framing import HEADER, FrameReader
from nnrt.ipc.messages import encode_error
from nnrt.memory.mapped import MappedMemory, MappingTable

if TYPE_CHECKING:
    from nnrt.hal.base import PreparedModel
    from nnrt.hal.buffers import DeviceBuffer
    from nnrt.worker.jobs import Job

__all__ = ["MAX_BUFFERS", "MAX_HANDLES", "Connection", "Handle", "HeldBuffer"]

#: Most prepared models one connection may hold at once.
MAX_HANDLES = 4096
#: Most device buffers one connection may hold at once.
MAX_BUFFERS = 4096

_log = logging.getLogger("nnrt.worker.service")


@dataclass(frozen=True, slots=True)
class Handle:
    """A prepared model held by a connection, with the priority its executes default to.

    ``pools`` are the resizable pools (``mmap_fd``, ``blob``) its constants were read from by
    reference: their size is re-checked before each of its executes.
    """

    prepared: PreparedModel
    priority: int
    pools: tuple[MappedMemory, ...] = ()


@dataclass(frozen=True, slots=True)
class HeldBuffer:
    """A device buffer held by a connection under ``token``, and the roles it may be used in:
    ``(handle, "input" | "output", index)``."""

    token: int
    buffer: DeviceBuffer
    roles: frozenset[tuple[int, str, int]]


class Connection:
    """A connected client socket (non-blocking) and what the service knows about that client.

    Owns the socket, the frame reader and the mapped pools; :meth:`close` closes them exactly
    once. Releasing the prepared models is the service's job (one may be running when the
    connection ends).
    """

    def __init__(self, sock: socket.socket, max_frame: int, peer: str) -> None:
        sock.setblocking(False)
        self.sock = sock
        self.fileno = sock.fileno()
        self.reader = FrameReader(max_frame)
        self.max_frame = max_frame
        #: Who is on the other end (pid / uid when known), for log messages.
        self.peer = peer
        #: Encoded responses not yet sent.
        self.out = bytearray()
        #: Whether the ``hello`` handshake succeeded.
        self.greeted = False
        #: Whether the client asked for load reports in its ``hello``.
        self.load_reports = False
        #: Whether the connection ends once the output buffer is flushed (nothing more is read).
        self.closing = False
        self.closed = False
        #: Whether reading is paused because the peer does not read its responses.
        self.paused = False
        #: Prepared models by handle.
        self.handles: dict[int, Handle] = {}
        #: Execute requests not yet answered (queued or running), by request id.
        self.jobs: dict[int, Job] = {}
        #: Memory pools mapped by this client, by the ids it chose.
        self.memories = MappingTable()
        #: Device buffers allocated by this client, by token.
        self.buffers: dict[int, HeldBuffer] = {}
        self._next_handle = 1
        self._packer = msgpack.Packer(use_bin_type=True)

    def __repr__(self) -> str:
        return f"<Connection fd={self.fileno} {self.peer}>"

    # -- responses ---------------------------------------------------------------------------

    def respond(self, request_id: int, status: int, body: dict[str, Any]) -> None:
        """Queue the response ``[request_id, status, body]`` for sending.

        A response larger than the maximum frame becomes a RESOURCE_EXHAUSTED error response.
        """
        if self.closed:
            return
        payload: bytes = self._packer.pack([request_id, status, body])
        if len(payload) > self.max_frame:
            status, body = encode_error(ResourceExhausted(
                f"request {request_id}: the response of {len(payload)} bytes exceeds the "
                f"maximum frame size {self.max_frame}"))
            payload = self._packer.pack([request_id, status, body])
        out = self.out
        out += HEADER.pack(len(payload))
        out += payload

    def flush(self) -> None:
        """Send as much of the output buffer as the socket takes now (one ``send``).

        Raises ``OSError`` if the connection is broken; the caller then closes it.
        """
        out = self.out
        if not out:
            return
        try:
            sent = self.sock.send(out)
        except (BlockingIOError, InterruptedError):
            return
        del out[:sent]

    # -- handles -----------------------------------------------------------------------------

    def add_handle(self, prepared: PreparedModel, priority: int,
                   pools: tuple[MappedMemory, ...] = ()) -> int:
        """Register a prepared model and return its new handle (unique on this connection)."""
        if len(self.handles) >= MAX_HANDLES:
            raise ResourceExhausted(f"{self}: already {MAX_HANDLES} prepared models; release "
                                    "some before preparing more")
        handle = self._next_handle
        self._next_handle += 1
        self.handles[handle] = Handle(prepared, priority, pools)
        return handle

    # -- device buffers ----------------------------------------------------------------------

    def add_buffer(self, buffer: DeviceBuffer, roles: frozenset[tuple[int, str, int]]) -> int:
        """Hold ``buffer`` under a new random token (63-bit, odd, unique on this connection)."""
        if len(self.buffers) >= MAX_BUFFERS:
            raise ResourceExhausted(f"{self}: already {MAX_BUFFERS} device buffers; free some "
                                    "before allocating more")
        token = secrets.randbits(63) | 1
        while token in self.buffers:
            token = secrets.randbits(63) | 1
        self.buffers[token] = HeldBuffer(token, buffer, roles)
        return token

    # -- ending ------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the socket, unclaimed descriptors and mapped pools (idempotent).

        Call it once the executor forgot the connection's jobs: a running job keeps its views
        of a pool, and with them the mapping, until it ends.
        """
        if self.closed:
            return
        self.closed = True
        self.out.clear()
        try:
            self.memories.close_all()
        finally:
            try:
                self.reader.close()
            finally:
                self.sock.close()
        _log.debug("%s closed", self)
