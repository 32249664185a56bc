"""File names of a cache directory entry, all derived from the token's hex.

``<hex>.model.<i>`` and ``<hex>.data.<i>`` hold the cache files, ``<hex>.meta`` the entry's
record (written last), ``<hex>.lock`` the inter-process lock; temporary files add
``.tmp-<pid>-<random>`` to the name they will replace.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from nnrt.cache.disk import TEMP_MARK

__all__ = ["EntryPaths", "parse_name"]

_NAME = re.compile(r"(?P<hex>[0-9a-f]{64})\.(?P<rest>.+)")


@dataclass(frozen=True)
class EntryPaths:
    """The paths of one entry in ``directory``."""

    directory: Path
    token_hex: str

    @property
    def meta(self) -> Path:
        """The meta record."""
        return self.directory / f"{self.token_hex}.meta"

    @property
    def lock(self) -> Path:
        """The lock file (never removed while the directory is in use)."""
        return self.directory / f"{self.token_hex}.lock"

    def model(self, index: int) -> Path:
        """Model cache file ``index``."""
        return self.directory / f"{self.token_hex}.model.{index}"

    def data(self, index: int) -> Path:
        """Data cache file ``index``."""
        return self.directory / f"{self.token_hex}.data.{index}"

    def files(self, counts: tuple[int, int]) -> list[Path]:
        """The cache files of an entry with ``counts`` files, model files first."""
        return ([self.model(i) for i in range(counts[0])]
                + [self.data(i) for i in range(counts[1])])

    def existing(self) -> list[Path]:
        """Every file of this entry on disk except the lock: cache files, meta, temporaries."""
        prefix = self.token_hex + "."
        lock = self.lock.name
        try:
            return sorted(p for p in self.directory.iterdir()
                          if p.name.startswith(prefix) and p.name != lock)
        except FileNotFoundError:
            return []

    def temporaries(self) -> list[Path]:
        """Temporary files of this entry (left by a crashed writer when nobody holds the lock)."""
        return [p for p in self.existing() if TEMP_MARK in p.name]


def parse_name(name: str) -> tuple[str, str] | None:
    """``(token hex, rest)`` for a file name of an entry (rest: ``meta``, ``model.0``, ...)."""
    match = _NAME.fullmatch(name)
    return None if match is None else (match["hex"], match["rest"])
