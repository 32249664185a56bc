"""Saving and loading a driver's cache blobs through cache file descriptors, TOCTOU-safe.

As NNAPI's compilation caching asks, the hash is computed on the driver's internal buffers — before
they are written on save, after the file contents were copied into memory on load — never on the
files themselves, so a file changed between the check and the use cannot slip through. Model and
data blobs are hashed together: a tampered data cache is rejected rather than loaded with a wrong
structure.
Files are untrusted input: every read is bounded, and nothing is unpickled.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
import struct
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from nnrt.cache.files import CacheFiles
from nnrt.cache.locking import DEFAULT_LOCK_TIMEOUT, access_mode, flocked
from nnrt.cache.store import IntegrityStore
from nnrt.errors import CacheError

__all__ = ["CHUNK_BYTES", "DEFAULT_MAX_BYTES", "cache_digest", "load_cache", "save_cache"]

#: Most bytes ``load_cache`` reads over all files unless told otherwise (16 GiB).
DEFAULT_MAX_BYTES = 2**34
_DOMAIN = b"nnrt.cache.v2\0"
_MAX_PREAD = 1 << 30
#: Blobs are hashed in pieces of this many bytes; from ``_PARALLEL_BYTES`` in all, the pieces
#: are hashed by up to ``_HASH_THREADS`` threads (hashlib releases the GIL).
CHUNK_BYTES = 16 << 20
_PARALLEL_BYTES = 32 << 20
_HASH_THREADS = 4

Blob = bytes | bytearray | memoryview


def cache_digest(model_blobs: Sequence[Blob], data_blobs: Sequence[Blob]) -> bytes:
    """SHA-256 over a framing of both blob lists: the counts, then per blob its length and the
    SHA-256 of each of its :data:`CHUNK_BYTES` pieces in order (a two-level hash, so that large
    caches are hashed on several cores; the same value whatever the thread count)."""
    views = [memoryview(blob).cast("B") for blob in (*model_blobs, *data_blobs)]
    pieces = [view[start:start + CHUNK_BYTES]
              for view in views for start in range(0, view.nbytes, CHUNK_BYTES)]
    digests = iter(_hash_pieces(pieces))
    digest = hashlib.sha256(_DOMAIN)
    digest.update(struct.pack("<II", len(model_blobs), len(data_blobs)))
    for view in views:
        digest.update(struct.pack("<Q", view.nbytes))
        for _ in range(0, view.nbytes, CHUNK_BYTES):
            digest.update(next(digests))
    result: bytes = digest.digest()
    return result


def _hash_pieces(pieces: list[memoryview]) -> list[bytes]:
    """SHA-256 of each piece, in threads when there is enough to hash and cores to do it."""
    threads = min(_HASH_THREADS, os.cpu_count() or 1, len(pieces))
    if threads < 2 or sum(p.nbytes for p in pieces) < _PARALLEL_BYTES:
        return [hashlib.sha256(piece).digest() for piece in pieces]
    with ThreadPoolExecutor(threads, "nnrt-cache-hash") as pool:
        return list(pool.map(_sha256, pieces))


def _sha256(piece: memoryview) -> bytes:
    return hashlib.sha256(piece).digest()


def save_cache(files: CacheFiles, model_blobs: Sequence[Blob], data_blobs: Sequence[Blob],
               store: IntegrityStore, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> None:
    """Write one blob per cache file and record their digest in ``store`` under ``files.token``.

    The blobs are the driver's serialised buffers; they are hashed as given, the digest is
    recorded, then each file is truncated and rewritten from offset 0 and fsynced, all under an
    exclusive lock on the first file. Failure raises CacheError; the compiled model the driver
    holds stays usable (saving is best effort for the caller).
    """
    files.check((len(model_blobs), len(data_blobs)), "save_cache: one blob per cache file")
    blobs = [memoryview(b).cast("B") for b in (*model_blobs, *data_blobs)]
    for index, fd in enumerate(files.all):
        if access_mode(fd, files.label(index)) == os.O_RDONLY:
            raise CacheError(f"save_cache: {files.label(index)} is read-only; the cache was not "
                             "saved (the compiled model is still usable)")
    digest = cache_digest(model_blobs, data_blobs)
    if not files.all:
        store.record(files.token, digest)
        return
    with flocked(files.all[0], exclusive=True, timeout=lock_timeout, label=files.label(0)):
        store.record(files.token, digest)
        for index, (fd, blob) in enumerate(zip(files.all, blobs, strict=True)):
            try:
                _rewrite(fd, blob)
            except OSError as exc:
                raise CacheError(f"save_cache: cannot write {files.label(index)}: "
                                 f"{exc.strerror}; the cache was not saved (the compiled model "
                                 "is still usable)") from None


def load_cache(files: CacheFiles, store: IntegrityStore, *, max_bytes: int = DEFAULT_MAX_BYTES,
               lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> tuple[list[bytes], list[bytes]]:
    """Read every cache file into memory, check the digest, and return (model, data) blobs.

    Under a shared lock on the first file, each file is read whole from offset 0 (at most
    ``max_bytes`` over all files); the bytes read are hashed and compared, in constant time,
    with the digest ``store`` recorded for ``files.token``. Unknown token, mismatch, unreadable
    or oversized files raise CacheError; the blobs are only returned after the check passed.
    """
    expected = store.expected(files.token)
    name, version = store.driver
    if expected is None:
        raise CacheError(f"load_cache: token {files.token.hex()[:16]}… is unknown to the "
                         f"integrity store of driver {name!r} version {version!r}: never saved "
                         "by this driver version, or forgotten")
    for index, fd in enumerate(files.all):
        if access_mode(fd, files.label(index)) == os.O_WRONLY:
            raise CacheError(f"load_cache: {files.label(index)} is write-only; cannot read it")
    blobs: list[bytes] = []
    if files.all:
        with flocked(files.all[0], exclusive=False, timeout=lock_timeout, label=files.label(0)):
            budget = max_bytes
            for index, fd in enumerate(files.all):
                blob = _read_whole(fd, budget, files.label(index), max_bytes)
                budget -= len(blob)
                blobs.append(blob)
    n_model = len(files.model)
    model, data = blobs[:n_model], blobs[n_model:]
    if not hmac.compare_digest(cache_digest(model, data), expected):
        raise CacheError(f"load_cache: the cache files of token {files.token.hex()[:16]}… do "
                         f"not match the digest driver {name!r} version {version!r} recorded "
                         "when it saved them: corrupt or tampered, not loaded")
    return model, data


def _rewrite(fd: int, blob: memoryview) -> None:
    os.ftruncate(fd, 0)
    offset = 0
    while offset < blob.nbytes:
        written = os.pwrite(fd, blob[offset:offset + _MAX_PREAD], offset)
        if written <= 0:
            raise OSError(0, "no progress writing")
        offset += written
    os.ftruncate(fd, blob.nbytes)
    os.fsync(fd)


def _read_whole(fd: int, budget: int, label: str, max_bytes: int) -> bytes:
    try:
        info = os.fstat(fd)
    except OSError as exc:
        raise CacheError(f"load_cache: cannot stat {label}: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise CacheError(f"load_cache: {label} is not a regular file")
    size = info.st_size
    if size > budget:
        raise CacheError(f"load_cache: {label} has {size} bytes; the cache files may hold at "
                         f"most {max_bytes} bytes in all")
    parts = []
    offset = 0
    while offset < size:
        chunk = _pread(fd, min(size - offset, _MAX_PREAD), offset, label)
        if not chunk:
            raise CacheError(f"load_cache: short read of {label}: {offset} of {size} bytes "
                             "(the file shrank while it was read)")
        parts.append(chunk)
        offset += len(chunk)
    if _pread(fd, 1, size, label):
        raise CacheError(f"load_cache: {label} grew while it was read (more than {size} bytes)")
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _pread(fd: int, length: int, offset: int, label: str) -> bytes:
    try:
        return os.pread(fd, length, offset)
    except OSError as exc:
        raise CacheError(f"load_cache: cannot read {label}: {exc.strerror}") from None
