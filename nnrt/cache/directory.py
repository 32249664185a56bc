"""``CacheDirectory``: the runtime's compilation cache, one entry of files per token.

NNAPI compilation caching, runtime side (``docs/cache.md``): the runtime finds the cache files from
the token; on a hit it opens them read+write and hands them to the driver's prepare-from-cache, on a
miss it creates empty ones and hands them to prepare, which writes them. Each entry is guarded by
its own lock file (an exclusive ``flock``, :mod:`nnrt.cache.locking`), so processes sharing the
directory never see half-written entries; a size limit evicts the least recently used entries after
each commit.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nnrt.cache.disk import private_dir, read_record, remove
from nnrt.cache.entry import CacheEntry
from nnrt.cache.files import check_counts, check_token
from nnrt.cache.layout import EntryPaths, parse_name
from nnrt.cache.locking import DEFAULT_LOCK_TIMEOUT, EntryLock, lock_file
from nnrt.cache.meta import MAX_META_BYTES, EntryMeta, check_user_meta
from nnrt.errors import BadData, CacheError

__all__ = ["CacheDirectory", "EntryInfo", "default_cache_dir"]


def default_cache_dir() -> Path:
    """``$NNRT_CACHE_DIR``, else ``$XDG_CACHE_HOME/nnrt/compiled``, else ``~/.cache/...``."""
    explicit = os.environ.get("NNRT_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "nnrt" / "compiled"


@dataclass(frozen=True)
class EntryInfo:
    """One entry as listed: ``meta`` is None for an incomplete or unreadable entry."""

    token_hex: str
    meta: EntryMeta | None
    bytes: int
    files: int
    problem: str = ""


class CacheDirectory:
    """A directory of cache entries (created 0700), optionally bounded to ``size_limit`` bytes.

    ``lock_timeout`` bounds every wait for an entry's lock; a busy entry then raises
    CacheError instead of blocking.
    """

    def __init__(self, path: str | os.PathLike[str], *, size_limit: int | None = None,
                 lock_timeout: float = DEFAULT_LOCK_TIMEOUT, create: bool = True) -> None:
        """Use (and with ``create``, make) the cache directory ``path``."""
        if size_limit is not None and (type(size_limit) is not int or size_limit < 0):
            raise BadData(f"CacheDirectory: size_limit must be None or an int >= 0, got "
                          f"{size_limit!r:.40}")
        self._path = private_dir(path, "cache directory", create=create)
        self._dir = os.fspath(self._path)
        self._size_limit = size_limit
        self._lock_timeout = lock_timeout

    @property
    def path(self) -> Path:
        """The directory."""
        return self._path

    def __repr__(self) -> str:
        return f"CacheDirectory({str(self._path)!r}, size_limit={self._size_limit})"

    def open(self, token: bytes, counts: tuple[int, int], meta: Mapping[str, Any]
             ) -> CacheEntry:
        """The entry of ``token`` with ``counts`` (model, data) files, holding its lock.

        ``meta`` must name the ``driver`` and ``version`` whose integrity store vouches for the
        files; everything in it is kept in the entry's meta record. A hit needs a valid meta
        record with the same driver, version and counts and every file present.
        """
        check_token(token, "CacheDirectory.open")
        counts = check_counts(counts, "CacheDirectory.open")
        extra = check_user_meta(meta)
        paths = EntryPaths(self._dir, token.hex())
        lock = self._lock(paths, self._lock_timeout)
        try:
            previous = self._committed(paths, counts, extra)
        except BaseException:
            lock.release()
            raise
        return CacheEntry(paths, token, lock, previous, extra, counts, self._evict)

    def remove(self, token_hex: str, *, lock_file: bool = False) -> bool:
        """Remove the entry ``token_hex`` under its lock; whether it had files.

        ``lock_file`` also removes the lock file (``nnrt cache clear``); processes that opened
        the entry meanwhile notice the unlinked lock and retry.
        """
        paths = EntryPaths(self._dir, token_hex)
        lock = self._lock(paths, self._lock_timeout)
        try:
            had = remove(paths.meta)
            for path in paths.existing():
                had = remove(path) or had
            if lock_file:
                remove(paths.lock)
        finally:
            lock.release()
        return had

    @contextlib.contextmanager
    def locked(self, token_hex: str) -> Iterator[EntryPaths]:
        """Hold the lock of entry ``token_hex`` (for tools that inspect it) and yield its paths."""
        paths = EntryPaths(self._dir, token_hex)
        lock = self._lock(paths, self._lock_timeout)
        try:
            yield paths
        finally:
            lock.release()

    def entries(self) -> list[EntryInfo]:
        """Every entry with files in the directory, most recently used first."""
        groups: dict[str, list[os.stat_result]] = {}
        with os.scandir(self._path) as listing:
            for item in listing:
                parsed = parse_name(item.name)
                if parsed is None or parsed[1] == "lock":
                    continue
                with contextlib.suppress(OSError):
                    groups.setdefault(parsed[0], []).append(item.stat(follow_symlinks=False))
        found = []
        for token_hex, stats in groups.items():
            size = sum(s.st_size for s in stats if stat.S_ISREG(s.st_mode))
            meta, problem = self._read_meta(EntryPaths(self._dir, token_hex))
            found.append(EntryInfo(token_hex, meta, size, len(stats) - (meta is not None),
                                   problem))
        return sorted(found, key=lambda e: -(e.meta.last_used if e.meta else 0.0))

    def total_bytes(self) -> int:
        """The bytes all entries occupy (cache files, meta records, temporaries)."""
        return sum(e.bytes for e in self.entries())

    # -- internals ---------------------------------------------------------------------------

    def _lock(self, paths: EntryPaths, timeout: float) -> EntryLock:
        # not thread-local: the runtime takes the lock in a worker thread (off its event loop)
        # and may release it from another thread
        try:
            lock = lock_file(paths.lock, timeout)
        except OSError as exc:
            raise CacheError(f"cache entry {paths.token_hex[:16]}: cannot lock "
                             f"{paths.lock!r}: {exc.strerror}") from None
        if lock is None:
            raise CacheError(f"cache busy: entry {paths.token_hex[:16]} in "
                             f"{self._dir!r} stayed locked for {timeout:g} s")
        return lock

    def _read_meta(self, paths: EntryPaths) -> tuple[EntryMeta | None, str]:
        """The entry's meta record with its last use, or None and what is wrong with it."""
        meta, problem, stamped = self._meta_record(paths)
        # CacheEntry.touch stamps the record's mtime rather than rewriting the record
        if meta is not None and stamped > meta.last_used:
            meta = meta.used(stamped)
        return meta, problem

    def _meta_record(self, paths: EntryPaths) -> tuple[EntryMeta | None, str, float]:
        """The record as written, what is wrong with it, and the meta file's mtime."""
        found = read_record(paths.meta, MAX_META_BYTES)
        if found is None:
            return None, "incomplete: no readable meta record", 0.0
        data, info = found
        try:
            # from nanoseconds, as commit computes the record's time: equal when unchanged
            return EntryMeta.decode(data, paths.token_hex), "", info.st_mtime_ns / 1e9
        except CacheError as exc:
            return None, str(exc), 0.0

    def _committed(self, paths: EntryPaths, counts: tuple[int, int], extra: dict[str, Any]
                   ) -> EntryMeta | None:
        meta = self._meta_record(paths)[0]  # its last use does not matter here
        if (meta is None or meta.counts != counts or meta.driver != extra["driver"]
                or meta.version != extra["version"]):
            return None
        for path in paths.files(counts):
            try:
                if not stat.S_ISREG(os.lstat(path).st_mode):
                    return None
            except OSError:
                return None
        return meta

    def _evict(self, keep_hex: str) -> None:
        """Remove least recently used entries (never ``keep_hex``) while over the size limit."""
        if self._size_limit is None:
            return
        entries = self.entries()
        total = sum(e.bytes for e in entries)
        for entry in sorted(entries, key=lambda e: e.meta.last_used if e.meta else 0.0):
            if total <= self._size_limit:
                return
            if entry.token_hex == keep_hex:
                continue
            paths = EntryPaths(self._dir, entry.token_hex)
            try:
                lock = self._lock(paths, 0.0)
            except CacheError:
                continue  # in use: try the next one
            try:
                for path in paths.existing():
                    remove(path)
            finally:
                lock.release()
            total -= entry.bytes
