"""Length-prefixed msgpack frames over a stream socket, with file descriptors via SCM_RIGHTS.

A frame is a 4-byte little-endian payload length followed by one msgpack object. Frames are read
with ``recvmsg_into`` into one reused buffer (a fresh large ``recv`` per message page-faults);
descriptors received alongside are queued in arrival order and claimed by the message that
declares them. Anything malformed raises :class:`ProtocolError`; the caller closes that
connection. Nothing here ever unpickles.
"""

from __future__ import annotations

import array
import os
import socket
import struct
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

import msgpack

__all__ = [
    "DEFAULT_MAX_FRAME",
    "MAX_FDS_PER_MESSAGE",
    "FrameReader",
    "ProtocolError",
    "encode_frame",
    "pack_payload",
    "send_frame",
]

HEADER = struct.Struct("<I")
_HEADER_SIZE = HEADER.size
#: Largest payload accepted by default (tensors travel inline until shared pools carry them).
DEFAULT_MAX_FRAME = 64 << 20
#: Most descriptors one message may carry (and the most that may wait unclaimed).
MAX_FDS_PER_MESSAGE = 16
_INITIAL_BUFFER = 256 << 10
_CTRUNC = int(socket.MSG_CTRUNC)  # a plain int: IntFlag arithmetic is slow
_ANCILLARY = socket.CMSG_SPACE(MAX_FDS_PER_MESSAGE * array.array("i").itemsize)
#: Frames up to this size are decoded from a copy of their bytes (cheaper than a view).
_COPY_BELOW = 4096


class ProtocolError(Exception):
    """The peer broke the protocol (framing, size, encoding, schema); drop the connection."""


def _reject_ext(code: int, data: bytes) -> Any:
    raise ProtocolError(f"msgpack extension type {code} is not allowed")


def encode_frame(message: Any, max_frame: int = DEFAULT_MAX_FRAME,
                 packer: msgpack.Packer | None = None) -> bytes:
    """One frame holding ``message`` (msgpack of lists, dicts, str, bytes, numbers, None).

    ``packer`` (``use_bin_type=True``), reused by one connection, spares making one per frame.
    """
    payload = pack_payload(message, max_frame, packer)
    return HEADER.pack(len(payload)) + payload


def pack_payload(message: Any, max_frame: int = DEFAULT_MAX_FRAME,
                 packer: msgpack.Packer | None = None) -> bytes:
    """The msgpack payload of a frame holding ``message`` (without its length header);
    ``ProtocolError`` if it exceeds ``max_frame``."""
    payload: bytes = (msgpack.packb(message, use_bin_type=True) if packer is None
                      else packer.pack(message))
    if len(payload) > max_frame:
        raise ProtocolError(f"frame of {len(payload)} bytes exceeds the maximum {max_frame}")
    return payload


def send_frame(sock: socket.socket, frame: bytes, fds: Sequence[int] = ()) -> None:
    """Send a whole frame on a blocking socket, descriptors attached to its first byte."""
    view = memoryview(frame)
    if fds:
        sent = socket.send_fds(sock, [view], list(fds))
        view = view[sent:]
    while view:
        sent = sock.send(view)
        view = view[sent:]


class FrameReader:
    """Incremental frame decoder over one reused receive buffer, with a queue of received fds.

    Call :meth:`receive` when the socket is readable, then iterate :meth:`messages`. Received
    descriptors are owned by the reader until claimed with :meth:`take_fds`; :meth:`close`
    closes the unclaimed ones.
    """

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.max_frame = max_frame
        self._buffer = bytearray(_INITIAL_BUFFER)
        self._start = 0
        self._end = 0
        self._fds: deque[int] = deque()

    def receive(self, sock: socket.socket) -> int:
        """Read what is available into the buffer; returns the byte count (0 at end of stream).

        Raises ``BlockingIOError`` on a non-blocking socket with nothing to read.
        """
        if self._end == len(self._buffer):
            self._make_room(len(self._buffer) - self._start + 1)
        with memoryview(self._buffer) as whole, whole[self._end:] as view:
            nbytes, ancdata, flags, _ = sock.recvmsg_into([view], _ANCILLARY)
        for level, kind, data in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds = array.array("i")
                fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
                self._fds.extend(fds)
        if flags & _CTRUNC:
            raise ProtocolError("too many file descriptors in one message")
        if len(self._fds) > MAX_FDS_PER_MESSAGE * 4:
            raise ProtocolError(f"{len(self._fds)} file descriptors sent but never claimed")
        self._end += nbytes
        return nbytes

    def messages(self) -> Iterator[Any]:
        """Decode every complete frame in the buffer, in order."""
        unpack_header = HEADER.unpack_from
        max_frame = self.max_frame
        while True:
            start = self._start  # re-read per frame: the consumer may receive() in between
            if self._end - start < _HEADER_SIZE:
                break
            (length,) = unpack_header(self._buffer, start)
            if length > max_frame:
                raise ProtocolError(f"frame of {length} bytes exceeds the maximum {max_frame}")
            begin = start + _HEADER_SIZE
            stop = begin + length
            if stop > self._end:
                self._make_room(_HEADER_SIZE + length)
                break
            if length <= _COPY_BELOW:  # a small frame: one short copy beats two memoryviews
                message = _unpack(self._buffer[begin:stop])
            else:
                with memoryview(self._buffer) as whole, whole[begin:stop] as payload:
                    message = _unpack(payload)
            self._start = stop
            yield message
        if self._start == self._end:
            self._start = self._end = 0

    @property
    def pending_bytes(self) -> int:
        """Bytes received but not yet decoded (a partial frame at end of stream is truncation)."""
        return self._end - self._start

    @property
    def has_fds(self) -> bool:
        """Whether received descriptors wait to be claimed."""
        return bool(self._fds)

    def take_fds(self, count: int) -> list[int]:
        """Claim the next ``count`` received descriptors (the caller then owns them)."""
        if not 0 <= count <= MAX_FDS_PER_MESSAGE:
            raise ProtocolError(f"a message may carry 0..{MAX_FDS_PER_MESSAGE} fds, not {count}")
        if count > len(self._fds):
            raise ProtocolError(f"message declares {count} fds but {len(self._fds)} arrived")
        return [self._fds.popleft() for _ in range(count)]

    def take_stray_fds(self) -> list[int]:
        """Claim the descriptors no message can still declare (the caller then owns them).

        A descriptor arrives with the first byte of the frame it rides on, so once every
        received byte is decoded (no partial frame waits), unclaimed descriptors came with
        frames already handled that did not declare them. Returns [] while a partial frame
        waits, since they may be its own.
        """
        if self._end != self._start or not self._fds:
            return []
        stray = list(self._fds)
        self._fds.clear()
        return stray

    def close(self) -> None:
        """Close every received descriptor nobody claimed."""
        while self._fds:
            os.close(self._fds.popleft())

    def _make_room(self, frame_size: int) -> None:
        """Ensure a frame of ``frame_size`` bytes fits from ``_start``: compact, then grow."""
        if self._start:
            pending = self._end - self._start
            self._buffer[:pending] = self._buffer[self._start:self._end]
            self._start, self._end = 0, pending
        if frame_size > len(self._buffer):
            self._buffer.extend(bytes(frame_size - len(self._buffer)))


def _unpack(payload: memoryview | bytearray) -> Any:
    try:  # msgpack >= 1.0 defaults: raw=False, strict_map_key=True, use_list=True
        return msgpack.unpackb(payload, ext_hook=_reject_ext)
    except ProtocolError:
        raise
    except Exception as exc:  # msgpack raises several types for malformed input
        raise ProtocolError(f"undecodable frame: {type(exc).__name__}: {exc}") from None
