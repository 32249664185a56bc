"""Who the shared service serves, and how much each client connection may hold.

The service identifies a client by its connection and ``SO_PEERCRED`` (pid, uid, gid); only
its own user and root are served (:func:`admitted`), and each connection is held to
:class:`ClientLimits`.
"""

from __future__ import annotations

import logging
import os
import socket
import struct
from dataclasses import dataclass

from nnrt.errors import BadData

__all__ = ["MAX_REQUESTS_PER_CLIENT", "ClientLimits", "PeerCredentials", "admitted",
           "peer_credentials"]

log = logging.getLogger("nnrt.serve")
_CREDS = struct.Struct("3i")
#: Requests one client may have running at once (default of ``--max-in-flight``).
MAX_REQUESTS_PER_CLIENT = 4096


@dataclass(frozen=True)
class ClientLimits:
    """What one client connection may hold at once (``nnrt serve --max-pools N
    --max-device-bytes B --max-in-flight K``); past a limit: ``ResourceExhausted`` naming it."""

    #: Shared-memory pools mapped.
    max_pools: int = 1024
    #: Bytes of device memory allocated (sizes known at allocation; see docs/reliability.md).
    max_device_bytes: int = 4 << 30
    #: Requests sent and not yet answered.
    max_in_flight: int = MAX_REQUESTS_PER_CLIENT

    def __post_init__(self) -> None:
        for name in ("max_pools", "max_device_bytes", "max_in_flight"):
            value = getattr(self, name)
            if value.__class__ is not int or value < 1:
                raise BadData(f"{name} must be an int of at least 1, got {value!r:.40}")


@dataclass(frozen=True)
class PeerCredentials:
    """Who is on the other end of a Unix socket (``SO_PEERCRED``)."""

    pid: int
    uid: int
    gid: int


def peer_credentials(sock: socket.socket) -> PeerCredentials:
    """The connected peer's pid, uid and gid."""
    pid, uid, gid = _CREDS.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                  _CREDS.size))
    return PeerCredentials(pid, uid, gid)


def admitted(conn: socket.socket) -> PeerCredentials | None:
    """The peer's credentials if it may use the service (this service's user or root), else
    None with ``conn`` closed and the refusal logged (a socket made group- or world-writable
    by mistake does not open the service to other users)."""
    try:
        creds = peer_credentials(conn)
    except OSError as exc:
        log.warning("refused a client whose credentials cannot be read: %s", exc)
        conn.close()
        return None
    if creds.uid not in (os.getuid(), 0):
        log.warning("refused client pid %d uid %d: only uid %d and root are served",
                    creds.pid, creds.uid, os.getuid())
        conn.close()
        return None
    return creds
