"""``IntegrityStore``: the persistent map token -> SHA-256 of a model cache, per driver version.

As in NNAPI's compilation caching, a driver keeps, across restarts, the hash of every model cache it
saved, and refuses to prepare from files whose contents do not hash to it. The map is reset when the
driver is updated, so each ``(driver name, version)`` has its own sub-store and a new version never
sees an old one's entries.

Layout under the root: ``<name>/<version>/`` (names percent-encoded) holding ``store.meta`` (its
mtime is the store's last use) and one 72-byte file per token, named by the token's hex: a magic
string, the token and the digest. Records are written atomically and fsynced. A store holds at
most ``max_entries`` records and forgets the least recently recorded or looked up; a driver that
caches on its own frees its own artefacts. Other versions' stores unused for ``STALE_AFTER``
seconds are removed when a store is opened; ``nnrt cache clear --stores`` removes them at once.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote

from nnrt.cache.disk import TEMP_MARK, AnyPath, atomic_write, private_dir, read_small, remove
from nnrt.cache.files import TOKEN_BYTES, check_token
from nnrt.errors import BadData, CacheError

__all__ = ["DEFAULT_MAX_ENTRIES", "DIGEST_BYTES", "STALE_AFTER", "IntegrityStore", "StoreInfo",
           "default_store_root", "list_stores", "remove_store"]

#: Length of a digest (SHA-256).
DIGEST_BYTES = 32
#: Records a store keeps before it forgets the least recently used.
DEFAULT_MAX_ENTRIES = 4096
#: Seconds after which another version's unused store is removed (30 days).
STALE_AFTER = 30 * 24 * 3600.0
_MAGIC = b"nnrtIS1\n"
_RECORD_BYTES = len(_MAGIC) + TOKEN_BYTES + DIGEST_BYTES
_MARKER = "store.meta"
_MARKER_TEXT = b"nnrt integrity store, format 1\n"
_TOUCH_EVERY = 3600.0
_TEMP_AGE = 3600.0
_HEX_NAME = re.compile(r"[0-9a-f]{64}")
_MAX_NAME = 128


def default_store_root() -> Path:
    """``$NNRT_INTEGRITY_DIR``, else ``$XDG_CACHE_HOME/nnrt/integrity``, else ``~/.cache/...``."""
    explicit = os.environ.get("NNRT_INTEGRITY_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "nnrt" / "integrity"


def _encode(value: object, field: str) -> str:
    if not isinstance(value, str) or not value or len(value) > _MAX_NAME:
        raise BadData(f"IntegrityStore: driver {field} must be a non-empty string of at most "
                      f"{_MAX_NAME} characters, got {value!r:.80}")
    encoded = quote(value, safe="-_.~+")
    return "%2E" + encoded[1:] if encoded.startswith(".") else encoded


class IntegrityStore:
    """Persistent token -> SHA-256 of the model cache for one driver name and version.

    Build one with :meth:`for_driver`. Safe to use from several threads and processes at once:
    every record is its own file, replaced atomically.
    """

    def __init__(self, root: Path, name: str, version: str, max_entries: int) -> None:
        """Internal: use :meth:`for_driver`."""
        self._root = root
        self._name = name
        self._version = version
        self._path = root / _encode(name, "name") / _encode(version, "version")
        self._dir = os.fspath(self._path)  # records are looked up on every cache hit
        self._max_entries = max_entries

    @classmethod
    def for_driver(cls, name: str, version: str, root: str | os.PathLike[str] | None = None, *,
                   max_entries: int = DEFAULT_MAX_ENTRIES, maintain: bool = True
                   ) -> IntegrityStore:
        """The store of driver ``name`` at ``version`` under ``root`` (default:
        :func:`default_store_root`).

        With ``maintain`` (the default, for drivers) the store is marked as used and other
        versions' stores of the same driver unused for ``STALE_AFTER`` seconds are removed;
        tools that only inspect stores pass ``maintain=False``. Nothing is created on disk
        before the first :meth:`record`.
        """
        if type(max_entries) is not int or max_entries < 1:
            raise BadData(f"IntegrityStore: max_entries must be a positive int, got "
                          f"{max_entries!r:.40}")
        base = Path(os.fsdecode(root)).expanduser() if root is not None else default_store_root()
        store = cls(base, name, version, max_entries)
        if maintain:
            store._maintain()
        return store

    @property
    def path(self) -> Path:
        """The sub-store directory of this driver version."""
        return self._path

    @property
    def driver(self) -> tuple[str, str]:
        """``(driver name, version)``."""
        return self._name, self._version

    def __repr__(self) -> str:
        return f"IntegrityStore({self._name!r}, {self._version!r}, {str(self._path)!r})"

    # -- records ----------------------------------------------------------------------------

    def record(self, token: bytes, digest: bytes) -> None:
        """Remember ``digest`` for ``token`` (atomic and durable), then enforce the bound."""
        check_token(token, "IntegrityStore.record")
        if not isinstance(digest, bytes) or len(digest) != DIGEST_BYTES:
            raise BadData(f"IntegrityStore.record: digest must be {DIGEST_BYTES} bytes, got "
                          f"{digest!r:.40}")
        self._ensure()
        path = self._record_path(token)
        try:
            atomic_write(path, _MAGIC + token + digest)
            _stamp(path)
        except OSError as exc:
            raise CacheError(f"integrity store {str(self._path)!r}: cannot record token "
                             f"{token.hex()[:16]}: {exc.strerror}") from None
        self._bound()

    def expected(self, token: bytes) -> bytes | None:
        """The digest recorded for ``token``, or None if unknown (or its record is damaged)."""
        check_token(token, "IntegrityStore.expected")
        path = self._record_path(token)
        data = read_small(path, _RECORD_BYTES)
        if data is None:
            if os.path.isfile(path):  # oversized or otherwise damaged
                remove(path)
            return None
        if (len(data) != _RECORD_BYTES or not data.startswith(_MAGIC)
                or data[len(_MAGIC):len(_MAGIC) + TOKEN_BYTES] != token):
            remove(path)  # damaged: unknown from now on, so the model is recompiled
            return None
        with contextlib.suppress(OSError):
            _stamp(path)  # least recently used goes first
        return data[len(_MAGIC) + TOKEN_BYTES:]

    def forget(self, token: bytes) -> None:
        """Drop the record of ``token`` (no error if there is none)."""
        check_token(token, "IntegrityStore.forget")
        try:
            remove(self._record_path(token))
        except OSError as exc:
            raise CacheError(f"integrity store {str(self._path)!r}: cannot forget token "
                             f"{token.hex()[:16]}: {exc.strerror}") from None

    def __len__(self) -> int:
        """The number of records."""
        return len(self._records())

    # -- housekeeping ------------------------------------------------------------------------

    def _record_path(self, token: bytes) -> str:
        return f"{self._dir}/{token.hex()}"

    def _ensure(self) -> None:
        private_dir(self._root, "integrity store root")
        private_dir(self._path.parent, "integrity store")
        private_dir(self._path, "integrity store")
        marker = self._path / _MARKER
        if not marker.exists():
            atomic_write(marker, _MARKER_TEXT)

    def _records(self) -> list[os.DirEntry[str]]:
        try:
            with os.scandir(self._path) as entries:
                return [e for e in entries if _HEX_NAME.fullmatch(e.name)]
        except FileNotFoundError:
            return []

    def _bound(self) -> None:
        records = self._records()
        now = time.time()
        with contextlib.suppress(OSError), os.scandir(self._path) as entries:
            for entry in entries:  # temporary files of a crashed writer
                if TEMP_MARK in entry.name and now - entry.stat().st_mtime > _TEMP_AGE:
                    remove(Path(entry.path))
        if len(records) <= self._max_entries:
            return
        aged = []
        for entry in records:
            with contextlib.suppress(OSError):
                aged.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.path))
        aged.sort()
        for _, path in aged[:len(aged) - self._max_entries]:
            remove(Path(path))

    def _maintain(self) -> None:
        marker = self._path / _MARKER
        now = time.time()
        with contextlib.suppress(OSError):
            if now - marker.stat().st_mtime > _TOUCH_EVERY:
                os.utime(marker)
        for version_dir in _subdirs(self._path.parent):  # this driver's other versions
            if version_dir.name == self._path.name:
                continue
            try:
                stale = now - (version_dir / _MARKER).stat().st_mtime > STALE_AFTER
            except OSError:
                continue  # not a store this code wrote
            if stale:
                with contextlib.suppress(CacheError, BadData):
                    remove_store(self._root, self._name, unquote(version_dir.name))


@dataclass(frozen=True)
class StoreInfo:
    """One sub-store found under a root: its driver, version, record count and last use."""

    name: str
    version: str
    path: Path
    records: int
    last_used: float


def list_stores(root: str | os.PathLike[str] | None = None, *, name: str | None = None
                ) -> list[StoreInfo]:
    """Every sub-store under ``root`` (default :func:`default_store_root`), or ``name``'s."""
    base = Path(os.fsdecode(root)).expanduser() if root is not None else default_store_root()
    found = []
    for driver_dir in _subdirs(base):
        driver = unquote(driver_dir.name)
        if name is not None and driver != name:
            continue
        for version_dir in _subdirs(driver_dir):
            version = unquote(version_dir.name)
            marker = version_dir / _MARKER
            if (driver_dir.name != _safe_encode(driver)
                    or version_dir.name != _safe_encode(version) or not marker.is_file()):
                continue  # not a store this code wrote
            store = IntegrityStore(base, driver, version, DEFAULT_MAX_ENTRIES)
            found.append(StoreInfo(driver, version, version_dir, len(store),
                                   marker.stat().st_mtime))
    return sorted(found, key=lambda s: (s.name, s.version))


def remove_store(root: str | os.PathLike[str] | None, name: str, version: str) -> bool:
    """Delete the sub-store of ``name`` at ``version``; whether there was one."""
    base = Path(os.fsdecode(root)).expanduser() if root is not None else default_store_root()
    path = base / _encode(name, "name") / _encode(version, "version")
    if not path.is_dir() or path.is_symlink():
        return False
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise CacheError(f"cannot remove integrity store {str(path)!r}: {exc.strerror}") from None
    with contextlib.suppress(OSError):
        path.parent.rmdir()  # only if no other version is left
    return True


def _stamp(path: AnyPath) -> None:
    # explicit nanoseconds: file systems take mtimes from a coarse clock (ms ticks)
    now = time.time_ns()
    os.utime(path, ns=(now, now))


def _safe_encode(value: str) -> str | None:
    try:
        return _encode(value, "name")
    except BadData:
        return None


def _subdirs(path: Path) -> list[Path]:
    try:
        with os.scandir(path) as entries:
            return [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError):
        return []
