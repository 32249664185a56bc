"""``CacheEntry``: one token's files in a cache directory, held under the entry's lock.

A hit hands out the existing files opened read+write; a miss hands out new temporary files that
:meth:`CacheEntry.commit` renames into place (the meta record last, so a crash never leaves a
half-written entry that looks complete). The entry owns its fds and its lock and releases them
exactly once, on exit from the ``with`` block or at :meth:`CacheEntry.close`.

A hit is the hot path: it opens the files and nothing else, and :meth:`CacheEntry.touch` only
stamps the meta record's modification time (the entry's last use) instead of rewriting it.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

from nnrt.cache.disk import atomic_write, create_exclusive, fsync_dir, remove, temp_name
from nnrt.cache.files import CacheFiles
from nnrt.cache.layout import EntryPaths
from nnrt.cache.locking import EntryLock
from nnrt.cache.meta import EntryMeta
from nnrt.errors import BadState, CacheError

__all__ = ["CacheEntry"]

_OPEN_EXISTING = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC


class CacheEntry:
    """One entry of a :class:`~nnrt.cache.directory.CacheDirectory`, holding its lock.

    ``hit`` says whether complete files were found; ``files`` carries the token and the fds
    (the entry owns them). On a hit call :meth:`touch` after a successful load or
    :meth:`discard` after a rejected one; on a miss call :meth:`commit` once the driver wrote
    the files, or :meth:`discard` if it failed. Made by ``CacheDirectory.open``.
    """

    def __init__(self, paths: EntryPaths, token: bytes, lock: EntryLock,
                 previous: EntryMeta | None, extra: dict[str, Any], counts: tuple[int, int],
                 on_commit: Callable[[str], None]) -> None:
        """Internal: take ``lock`` (held) and open the files; releases the lock on failure."""
        self._paths = paths
        self._lock: EntryLock | None = lock
        self._extra = extra
        self._counts = counts
        self._on_commit = on_commit
        self._previous = previous
        self._temps: list[tuple[str, str]] = []
        self._fds: list[int] = []
        self._finished = False
        self.hit = previous is not None
        try:
            if self.hit:
                for path in paths.files(counts):
                    self._fds.append(os.open(path, _OPEN_EXISTING))
            else:
                # a crashed writer's, kept meanwhile by hits (commit and discard remove them
                # too): we hold the lock. Not on a hit: it lists the whole directory.
                for stale in paths.temporaries():
                    remove(stale)
                for final in paths.files(counts):
                    temp = temp_name(final)
                    self._fds.append(create_exclusive(temp))
                    self._temps.append((temp, final))
        except OSError as exc:
            self.close()
            raise CacheError(f"cache entry {paths.token_hex[:16]}: cannot open its files in "
                             f"{str(paths.directory)!r}: {exc.strerror}") from None
        except BaseException:
            self.close()
            raise
        n_model = counts[0]
        self.files = CacheFiles(token, tuple(self._fds[:n_model]), tuple(self._fds[n_model:]))

    @property
    def token_hex(self) -> str:
        """The token in hex (the prefix of every file name)."""
        return self._paths.token_hex

    def _live(self, what: str) -> None:
        if self._lock is None:
            raise BadState(f"CacheEntry.{what}: the entry {self.token_hex[:16]} is closed")
        if self._finished:
            raise BadState(f"CacheEntry.{what}: the entry {self.token_hex[:16]} was already "
                           "committed or discarded")

    def commit(self) -> None:
        """Miss: make the written files the entry (fsync, rename, then the meta record)."""
        self._live("commit")
        if self.hit:
            raise BadState(f"CacheEntry.commit: entry {self.token_hex[:16]} was a hit; "
                           "nothing to commit (call touch())")
        try:
            sizes = []
            for fd in self._fds:
                os.fsync(fd)
                sizes.append(os.fstat(fd).st_size)
            remove(self._paths.meta)  # from here the old entry is incomplete, never a hit
            for temp, final in self._temps:
                os.replace(temp, final)
            self._temps = []
            keep = {*self._paths.files(self._counts), self._paths.meta}
            for path in self._paths.existing():  # files of an earlier entry with more files
                if path not in keep:
                    remove(path)
            now = time.time_ns()
            meta = EntryMeta(self.token_hex, self._extra["driver"], self._extra["version"],
                             self._counts, tuple(sizes), now / 1e9, now / 1e9, self._extra)
            atomic_write(self._paths.meta, meta.encode())
            _stamp(self._paths.meta, now)  # its mtime is its last use (see touch)
            fsync_dir(self._paths.directory)
        except OSError as exc:
            raise CacheError(f"cache entry {self.token_hex[:16]}: commit failed in "
                             f"{str(self._paths.directory)!r}: {exc.strerror}") from None
        self._finished = True
        self._on_commit(self.token_hex)

    def touch(self) -> None:
        """Hit: record that the entry was just used (for least-recently-used eviction).

        Sets the meta record's modification time, which listings read as the entry's last use
        (:attr:`EntryMeta.last_used <nnrt.cache.meta.EntryMeta.last_used>` is the later of the
        two). Not made durable: a crash may only lose this hint, never the record.
        """
        self._live("touch")
        if self._previous is None:
            raise BadState(f"CacheEntry.touch: entry {self.token_hex[:16]} was a miss "
                           "(call commit())")
        try:
            _stamp(self._paths.meta, time.time_ns())
        except OSError as exc:
            raise CacheError(f"cache entry {self.token_hex[:16]}: cannot update its meta "
                             f"record: {exc.strerror}") from None

    def discard(self) -> None:
        """A rejected hit or a failed miss: remove every file of the entry (not the lock)."""
        self._live("discard")
        self._finished = True
        self._remove_temps()
        try:
            remove(self._paths.meta)  # first: the entry stops being a hit at once
            for path in self._paths.existing():
                remove(path)
        except OSError as exc:
            raise CacheError(f"cache entry {self.token_hex[:16]}: cannot remove its files: "
                             f"{exc.strerror}") from None

    def close(self) -> None:
        """Close the fds, remove uncommitted temporaries and release the lock (idempotent)."""
        fds, self._fds = self._fds, []
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._remove_temps()
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.release()

    def _remove_temps(self) -> None:
        temps, self._temps = self._temps, []
        for temp, _ in temps:
            with contextlib.suppress(OSError):
                remove(temp)

    def __enter__(self) -> CacheEntry:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def __repr__(self) -> str:
        state = "closed" if self._lock is None else ("hit" if self.hit else "miss")
        return f"CacheEntry({self.token_hex[:16]}…, {state}, counts={self._counts})"


def _stamp(path: str, when_ns: int) -> None:
    # explicit nanoseconds: file systems stamp writes from a coarse clock (ms ticks), which
    # would make entries committed in a row look equally recent
    os.utime(path, ns=(when_ns, when_ns), follow_symlinks=False)
