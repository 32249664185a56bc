"""Checking a cache directory's entries against their drivers' integrity stores.

Used by ``nnrt cache verify``: each entry's files are read under its lock and checked exactly as
a driver's load would check them (:func:`~nnrt.cache.codec.load_cache`).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

from nnrt.cache.codec import load_cache
from nnrt.cache.directory import CacheDirectory, EntryInfo
from nnrt.cache.files import CacheFiles
from nnrt.cache.store import IntegrityStore
from nnrt.errors import CacheError

__all__ = ["Verdict", "verify_entry"]


@dataclass(frozen=True)
class Verdict:
    """``status``: ``ok``, ``corrupt``, ``unknown`` (no integrity record) or ``incomplete``."""

    token_hex: str
    status: str
    detail: str = ""


def verify_entry(directory: CacheDirectory, entry: EntryInfo,
                 store_root: str | os.PathLike[str] | None = None) -> Verdict:
    """Read ``entry``'s files under its lock and check them against its integrity store."""
    token_hex = entry.token_hex
    if entry.meta is None:
        incomplete = entry.problem.startswith("incomplete")
        return Verdict(token_hex, "incomplete" if incomplete else "corrupt", entry.problem)
    meta = entry.meta
    store = IntegrityStore.for_driver(meta.driver, meta.version, store_root, maintain=False)
    token = bytes.fromhex(token_hex)
    if store.expected(token) is None:
        return Verdict(token_hex, "unknown", f"no record in the integrity store of driver "
                       f"{meta.driver!r} version {meta.version!r}")
    with directory.locked(token_hex) as paths:
        fds: list[int] = []
        try:
            for path in paths.files(meta.counts):
                fds.append(_open_read(path))
            n_model = meta.counts[0]
            files = CacheFiles(token, tuple(fds[:n_model]), tuple(fds[n_model:]))
            load_cache(files, store)
        except CacheError as exc:
            return Verdict(token_hex, "corrupt", str(exc))
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
    return Verdict(token_hex, "ok")


def _open_read(path: str) -> int:
    try:
        return os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise CacheError(f"cannot open {os.path.basename(path)}: {exc.strerror}") from None
