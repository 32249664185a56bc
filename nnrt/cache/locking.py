"""Advisory locks on cache files that never hang (``flock`` on a caller's fd, entry locks), and
fd access checks.

``flock`` is taken with non-blocking attempts and a short back-off until a deadline; a lock that
is still busy then gives up (``CacheError("... cache busy ...")`` from :func:`flocked`, ``None``
from :func:`lock_file`) instead of blocking forever (NNAPI compilation caching: no write runs
concurrently with another read or write of the same cache files).

An entry lock (:class:`EntryLock`) is an exclusive ``flock`` on a lock file of its own. It
belongs to no thread: the runtime takes it in a worker thread and may release it from another.
Lock files may be unlinked (``nnrt cache clear``) while others wait on them, so a lock only
counts once the locked file is still the one at the path.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from nnrt.errors import CacheError

__all__ = ["DEFAULT_LOCK_TIMEOUT", "EntryLock", "access_mode", "flocked", "lock_file"]

#: Seconds a cache operation waits for a lock before it reports "cache busy".
DEFAULT_LOCK_TIMEOUT = 10.0
_FIRST_PAUSE = 0.001
_LONGEST_PAUSE = 0.05
_LOCK_FILE_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
_LOCK_FILE_MODE = 0o600

_T = TypeVar("_T")


def access_mode(fd: int, label: str) -> int:
    """``os.O_RDONLY``, ``os.O_WRONLY`` or ``os.O_RDWR`` for ``fd``; CacheError if not open."""
    try:
        return fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE
    except OSError as exc:
        raise CacheError(f"{label} is not an open file ({exc.strerror})") from None


def _retry(attempt: Callable[[], _T | None], timeout: float) -> _T | None:
    """The first result of ``attempt()`` that is not None, or None once ``timeout`` s passed.

    Attempts right away, then after pauses of 1 ms doubling up to 50 ms; the last attempt is
    made at the deadline. Exceptions of ``attempt`` propagate.
    """
    deadline = time.monotonic() + max(0.0, timeout)
    pause = _FIRST_PAUSE
    while True:
        result = attempt()
        if result is not None:
            return result
        now = time.monotonic()
        if now >= deadline:
            return None
        time.sleep(min(pause, deadline - now))
        pause = min(pause * 2, _LONGEST_PAUSE)


def _flock_nowait(fd: int, operation: int) -> int | None:
    """``fd`` once ``flock(fd, operation)`` succeeded, None while another holder has it."""
    try:
        fcntl.flock(fd, operation | fcntl.LOCK_NB)
    except BlockingIOError:
        return None
    return fd


@contextlib.contextmanager
def flocked(fd: int, *, exclusive: bool, timeout: float, label: str) -> Iterator[None]:
    """Hold ``flock`` on ``fd`` (exclusive or shared) for the ``with`` body.

    Retries non-blocking attempts until ``timeout`` seconds have passed, then raises CacheError
    saying the cache is busy. ``label`` names the file in messages.
    """
    operation = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
    try:
        locked = _retry(functools.partial(_flock_nowait, fd, operation), timeout)
    except OSError as exc:
        raise CacheError(f"cannot lock {label}: {exc.strerror}") from None
    if locked is None:
        kind = "exclusive" if exclusive else "shared"
        raise CacheError(f"cache busy: could not take the {kind} lock on {label} within "
                         f"{timeout:g} s; another process is using it")
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)


class EntryLock:
    """An exclusive ``flock`` on a lock file, held until :meth:`release`. Made by
    :func:`lock_file`.

    Owns the lock file's descriptor and closes it exactly once: :meth:`release` (idempotent,
    callable from any thread), leaving a ``with`` block, or ``__del__`` (which only releases).
    A process forked while the lock is held does not unlock it for its parent: only the
    process that took the lock unlocks it, a child just closes its copy of the descriptor.
    ``path`` is the lock file.
    """

    __slots__ = ("_fd", "_guard", "_owner", "path")

    def __init__(self, fd: int, path: str) -> None:
        """Internal: own ``fd``, already locked exclusively, of the lock file ``path``."""
        self.path = path
        self._fd = fd
        self._owner = os.getpid()
        self._guard = threading.Lock()

    @property
    def held(self) -> bool:
        """Whether the lock is still held (not released yet)."""
        return self._fd >= 0

    def release(self) -> None:
        """Unlock and close the lock file (no-op once released)."""
        with self._guard:
            fd, self._fd = self._fd, -1
        if fd < 0:
            return
        try:
            if os.getpid() == self._owner:
                with contextlib.suppress(OSError):
                    fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> EntryLock:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.release()

    def __repr__(self) -> str:
        return f"EntryLock({self.path!r}, {'held' if self.held else 'released'})"


def lock_file(path: str, timeout: float) -> EntryLock | None:
    """Lock the file ``path`` exclusively (created 0600 if missing); None if still busy after
    ``timeout`` seconds.

    Symbolic links are refused (``O_NOFOLLOW``). Raises OSError if the file cannot be opened or
    locked; no descriptor is left open then, nor on a timeout.
    """
    attempts = _LockAttempts(path)
    try:
        return _retry(attempts, timeout)
    finally:
        attempts.close()


class _LockAttempts:
    """Non-blocking attempts to lock ``path``, for :func:`_retry`.

    The file stays open between attempts; once locked, it only counts if it is still the file
    at ``path``: otherwise it was unlinked (or replaced) while we waited, and the next attempt
    opens the file now there.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = -1

    def __call__(self) -> EntryLock | None:
        if self.fd < 0:
            self.fd = os.open(self.path, _LOCK_FILE_FLAGS, _LOCK_FILE_MODE)
        if _flock_nowait(self.fd, fcntl.LOCK_EX) is None:
            return None
        held = os.fstat(self.fd)
        if not _still_at(held, self.path):
            self.close()  # which unlocks the stale file
            return None
        if stat.S_IMODE(held.st_mode) != _LOCK_FILE_MODE:  # created under a stricter umask
            with contextlib.suppress(PermissionError):
                os.fchmod(self.fd, _LOCK_FILE_MODE)
        lock = EntryLock(self.fd, self.path)
        self.fd = -1  # the lock owns it now
        return lock

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)


def _still_at(held: os.stat_result, path: str) -> bool:
    """Whether the file ``held`` describes is the one at ``path`` (not unlinked or replaced)."""
    try:
        current = os.lstat(path)
    except FileNotFoundError:
        return False
    return held.st_ino == current.st_ino and held.st_dev == current.st_dev
