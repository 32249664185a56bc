"""Advisory locks on cache file descriptors that never hang, and fd access checks.

``flock`` is taken with non-blocking attempts and a short back-off until a deadline; a lock that
is still busy then raises ``CacheError("... cache busy ...")`` instead of blocking forever (SEEDS
§1: no write runs concurrently with another read or write of the same cache files).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator

from nnrt.errors import CacheError

__all__ = ["DEFAULT_LOCK_TIMEOUT", "access_mode", "flocked"]

#: Seconds a cache operation waits for a lock before it reports "cache busy".
DEFAULT_LOCK_TIMEOUT = 10.0
_FIRST_PAUSE = 0.001
_LONGEST_PAUSE = 0.05


def access_mode(fd: int, label: str) -> int:
    """``os.O_RDONLY``, ``os.O_WRONLY`` or ``os.O_RDWR`` for ``fd``; CacheError if not open."""
    try:
        return fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE
    except OSError as exc:
        raise CacheError(f"{label} is not an open file ({exc.strerror})") from None


@contextlib.contextmanager
def flocked(fd: int, *, exclusive: bool, timeout: float, label: str) -> Iterator[None]:
    """Hold ``flock`` on ``fd`` (exclusive or shared) for the ``with`` body.

    Retries non-blocking attempts until ``timeout`` seconds have passed, then raises CacheError
    saying the cache is busy. ``label`` names the file in messages.
    """
    operation = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB
    deadline = time.monotonic() + max(0.0, timeout)
    pause = _FIRST_PAUSE
    while True:
        try:
            fcntl.flock(fd, operation)
            break
        except BlockingIOError:
            now = time.monotonic()
            if now >= deadline:
                kind = "exclusive" if exclusive else "shared"
                raise CacheError(f"cache busy: could not take the {kind} lock on {label} within "
                                 f"{timeout:g} s; another process is using it") from None
            time.sleep(min(pause, deadline - now))
            pause = min(pause * 2, _LONGEST_PAUSE)
        except OSError as exc:
            raise CacheError(f"cannot lock {label}: {exc.strerror}") from None
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
