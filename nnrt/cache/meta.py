"""The ``<token hex>.meta`` record of a cache directory entry: msgpack, checked when read.

Written last when an entry is committed, so an entry without a valid meta file is incomplete
(a crash mid-commit) and never a hit. The file is untrusted input: its size is bounded and every
field's type and range is checked before use.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import msgpack

from nnrt.cache.files import MAX_FILES
from nnrt.errors import BadData, CacheError

__all__ = ["MAX_META_BYTES", "EntryMeta", "check_user_meta", "is_token_hex"]

#: Largest meta file read (and written).
MAX_META_BYTES = 64 * 1024
_FORMAT = 1
_HEX = re.compile(r"[0-9a-f]{64}")
_MAX_FILE_BYTES = 2**40


@dataclass(frozen=True)
class EntryMeta:
    """What a committed entry records about itself.

    ``driver`` and ``version`` name the driver whose integrity store vouches for the files;
    ``sizes`` are the file sizes at commit; ``created`` / ``last_used`` are Unix times (the
    record holds the commit time; ``CacheDirectory.entries`` reports as ``last_used`` the later
    of it and the record's mtime, which ``CacheEntry.touch`` sets); ``extra`` is the caller's
    meta mapping (for example the execution preference).
    """

    token_hex: str
    driver: str
    version: str
    counts: tuple[int, int]
    sizes: tuple[int, ...]
    created: float
    last_used: float
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def total_bytes(self) -> int:
        """The sum of the file sizes at commit."""
        return sum(self.sizes)

    def used(self, when: float) -> EntryMeta:
        """A copy with ``last_used`` set to ``when``."""
        return replace(self, last_used=when)

    def encode(self) -> bytes:
        """The msgpack bytes of the meta file."""
        data: bytes = msgpack.packb({
            "format": _FORMAT, "token": self.token_hex, "driver": self.driver,
            "version": self.version, "counts": list(self.counts), "sizes": list(self.sizes),
            "created": float(self.created), "last_used": float(self.last_used),
            "extra": self.extra}, use_bin_type=True)
        if len(data) > MAX_META_BYTES:
            raise BadData(f"cache entry meta: {len(data)} bytes encoded, at most "
                          f"{MAX_META_BYTES}; pass less in meta")
        return data

    @classmethod
    def decode(cls, data: bytes, token_hex: str) -> EntryMeta:
        """Parse and check a meta file of the entry ``token_hex``; CacheError if malformed."""
        where = f"cache entry {token_hex[:16]}: meta file"
        if len(data) > MAX_META_BYTES:
            raise CacheError(f"{where} has {len(data)} bytes, at most {MAX_META_BYTES}")
        try:
            raw = msgpack.unpackb(data, raw=False, strict_map_key=True, use_list=True)
        except (ValueError, msgpack.exceptions.UnpackException) as exc:
            raise CacheError(f"{where} is not valid msgpack ({type(exc).__name__})") from None
        if not isinstance(raw, dict):
            raise CacheError(f"{where}: expected a map, got {type(raw).__name__}")
        fmt = raw.get("format")
        if fmt != _FORMAT:
            raise CacheError(f"{where}: format {fmt!r:.20}, this nnrt reads format {_FORMAT}")
        if raw.get("token") != token_hex:
            raise CacheError(f"{where}: names another token ({raw.get('token')!r:.20})")
        driver, version = _text(raw, "driver", where), _text(raw, "version", where)
        counts = raw.get("counts")
        if (not isinstance(counts, list) or len(counts) != 2
                or not all(type(n) is int and 0 <= n <= MAX_FILES for n in counts)):
            raise CacheError(f"{where}: field 'counts' must be two ints from 0 to {MAX_FILES}")
        sizes = raw.get("sizes")
        if (not isinstance(sizes, list) or len(sizes) != counts[0] + counts[1]
                or not all(type(n) is int and 0 <= n <= _MAX_FILE_BYTES for n in sizes)):
            raise CacheError(f"{where}: field 'sizes' must hold one size per file")
        created, last_used = _time(raw, "created", where), _time(raw, "last_used", where)
        extra = raw.get("extra")
        if not isinstance(extra, dict):
            raise CacheError(f"{where}: field 'extra' must be a map")
        return cls(token_hex, driver, version, (counts[0], counts[1]), tuple(sizes), created,
                   last_used, extra)


def check_user_meta(meta: object) -> dict[str, Any]:
    """The caller's ``meta`` as a dict with str ``driver`` and ``version``; BadData otherwise."""
    if not isinstance(meta, Mapping) or not all(isinstance(k, str) for k in meta):
        raise BadData(f"cache meta must be a mapping with str keys, got {type(meta).__name__}")
    for key in ("driver", "version"):
        value = meta.get(key)
        if not isinstance(value, str) or not value:
            raise BadData(f"cache meta: field {key!r} must be a non-empty str (the driver whose "
                          f"integrity store checks the files), got {value!r:.40}")
    extra = dict(meta)
    try:
        msgpack.packb(extra, use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as exc:
        raise BadData(f"cache meta: values must be msgpack-serialisable: {exc}") from None
    return extra


def is_token_hex(name: str) -> bool:
    """Whether ``name`` is 64 lowercase hex digits."""
    return _HEX.fullmatch(name) is not None


def _text(raw: dict[str, Any], key: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value or len(value) > 256:
        raise CacheError(f"{where}: field {key!r} must be a non-empty str")
    return value


def _time(raw: dict[str, Any], key: str, where: str) -> float:
    value = raw.get(key)
    if not isinstance(value, float) or not math.isfinite(value) or value < 0:
        raise CacheError(f"{where}: field {key!r} must be a finite non-negative float")
    return value
