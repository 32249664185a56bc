"""File names of a cache directory entry, all derived from the token's hex.

``<hex>.model.<i>`` and ``<hex>.data.<i>`` hold the cache files, ``<hex>.meta`` the entry's
record (written last), ``<hex>.lock`` the inter-process lock; temporary files add
``.tmp-<pid>-<random>`` to the name they will replace. Paths are plain strings: they are built
on every cache hit, and ``pathlib`` objects cost more than the system calls that use them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from nnrt.cache.disk import TEMP_MARK

__all__ = ["EntryPaths", "parse_name"]

_NAME = re.compile(r"(?P<hex>[0-9a-f]{64})\.(?P<rest>.+)")


@dataclass(frozen=True)
class EntryPaths:
    """The paths of one entry in ``directory`` (every path is ``<directory>/<name>``)."""

    directory: str
    token_hex: str

    @property
    def meta(self) -> str:
        """The meta record."""
        return f"{self.directory}/{self.token_hex}.meta"

    @property
    def lock(self) -> str:
        """The lock file (removed only by ``nnrt cache clear``, under the lock)."""
        return f"{self.directory}/{self.token_hex}.lock"

    def model(self, index: int) -> str:
        """Model cache file ``index``."""
        return f"{self.directory}/{self.token_hex}.model.{index}"

    def data(self, index: int) -> str:
        """Data cache file ``index``."""
        return f"{self.directory}/{self.token_hex}.data.{index}"

    def files(self, counts: tuple[int, int]) -> list[str]:
        """The cache files of an entry with ``counts`` files, model files first."""
        return ([self.model(i) for i in range(counts[0])]
                + [self.data(i) for i in range(counts[1])])

    def existing(self) -> list[str]:
        """Every file of this entry on disk except the lock: cache files, meta, temporaries."""
        prefix = self.token_hex + "."
        lock = prefix + "lock"
        try:
            with os.scandir(self.directory) as listing:
                names = [item.name for item in listing
                         if item.name.startswith(prefix) and item.name != lock]
        except FileNotFoundError:
            return []
        return [f"{self.directory}/{name}" for name in sorted(names)]

    def temporaries(self) -> list[str]:
        """Temporary files of this entry (left by a crashed writer when nobody holds the lock)."""
        return [p for p in self.existing() if TEMP_MARK in os.path.basename(p)]


def parse_name(name: str) -> tuple[str, str] | None:
    """``(token hex, rest)`` for a file name of an entry (rest: ``meta``, ``model.0``, ...)."""
    match = _NAME.fullmatch(name)
    return None if match is None else (match["hex"], match["rest"])
