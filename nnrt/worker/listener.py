"""The listening Unix socket of a shared worker service: created mode 0600, unlinked on close."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import socket
import stat

from nnrt.errors import BadData, BadState

__all__ = ["UnixListener"]

_BACKLOG = 128
_log = logging.getLogger("nnrt.worker.service")


class UnixListener:
    """A non-blocking listening ``AF_UNIX`` stream socket bound to ``path`` (mode 0600).

    A stale socket file left by a dead service is replaced; a live one (something accepts
    connections on it) or a path that is not a socket is refused. Owns the socket and the file:
    :meth:`close` closes the socket and unlinks the file if it is still the one bound here.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        _remove_stale(path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            old_umask = os.umask(0o177)  # the file is born 0600: no window for other users
            try:
                sock.bind(path)
            finally:
                os.umask(old_umask)
            os.chmod(path, 0o600)
            info = os.stat(path)
            self._identity: tuple[int, int] | None = (info.st_dev, info.st_ino)
            sock.listen(_BACKLOG)
            sock.setblocking(False)
        except OSError as exc:
            sock.close()
            raise BadData(f"cannot listen on {path!r}: {exc.strerror or exc}") from exc
        self._sock: socket.socket | None = sock

    def fileno(self) -> int:
        """The listening socket's descriptor (-1 once closed)."""
        return -1 if self._sock is None else self._sock.fileno()

    def accept(self) -> socket.socket | None:
        """A newly connected client socket, or None when none is waiting."""
        if self._sock is None:
            return None
        try:
            client, _ = self._sock.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            return None
        except OSError as exc:  # EMFILE, ENFILE, ENOBUFS: the client waits in the backlog
            _log.warning("cannot accept a connection on %s: %s", self.path, exc)
            return None
        return client

    def close(self) -> None:
        """Close the socket and remove its file (only if nobody replaced it meanwhile)."""
        sock, self._sock = self._sock, None
        if sock is None:
            return
        sock.close()
        with contextlib.suppress(OSError):
            info = os.stat(self.path)
            if (info.st_dev, info.st_ino) == self._identity:
                os.unlink(self.path)

    def __enter__(self) -> UnixListener:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _remove_stale(path: str) -> None:
    """Unlink ``path`` if it is a socket nobody listens on; refuse anything else there."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise BadData(f"cannot listen on {path!r}: it exists and is not a socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError as exc:
        if exc.errno not in (errno.ECONNREFUSED, errno.ENOENT):
            raise BadData(f"cannot listen on {path!r}: {exc.strerror or exc}") from exc
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    finally:
        probe.close()
    raise BadState(f"cannot listen on {path!r}: another service is already listening there")
