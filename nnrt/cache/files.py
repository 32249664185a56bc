"""``CacheFiles``: the cache token and the cache file descriptors a driver's prepare receives.

The limits equal the driver HAL's (``nnrt.hal.base.CACHE_TOKEN_BYTES`` and
``MAX_CACHE_FILES``); they are repeated here so that the cache layer imports nothing of the
driver layer (the driver imports the cache), and a test keeps both in step.
"""

from __future__ import annotations

from dataclasses import dataclass

from nnrt.errors import BadData, CacheError

__all__ = ["MAX_FILES", "TOKEN_BYTES", "CacheFiles", "check_counts", "check_token"]

#: Length of a cache token in bytes (NNAPI's BYTE_SIZE_OF_CACHE_TOKEN).
TOKEN_BYTES = 32
#: Most cache files of each kind (NNAPI's MAX_NUMBER_OF_CACHE_FILES).
MAX_FILES = 32


def check_token(token: object, where: str) -> bytes:
    """``token`` if it is ``TOKEN_BYTES`` bytes; ``BadData`` naming ``where`` otherwise."""
    if not isinstance(token, bytes) or len(token) != TOKEN_BYTES:
        length = len(token) if isinstance(token, bytes | bytearray) else None
        raise BadData(f"{where}: the cache token must be {TOKEN_BYTES} bytes, got "
                      f"{type(token).__name__}" + ("" if length is None else f" of {length}"))
    return token


def check_counts(counts: object, where: str) -> tuple[int, int]:
    """``counts`` as ``(n_model, n_data)``, each an int from 0 to ``MAX_FILES``, or CacheError."""
    if (not isinstance(counts, tuple) or len(counts) != 2
            or not all(type(n) is int and 0 <= n <= MAX_FILES for n in counts)):
        raise CacheError(f"{where}: cache file counts must be two ints from 0 to {MAX_FILES} "
                         f"(model, data), got {counts!r:.80}")
    return counts[0], counts[1]


def _check_fds(fds: object, kind: str) -> tuple[int, ...]:
    if not isinstance(fds, tuple) or not all(type(fd) is int and fd >= 0 for fd in fds):
        raise BadData(f"CacheFiles: {kind} must be a tuple of non-negative file descriptors, "
                      f"got {fds!r:.80}")
    if len(fds) > MAX_FILES:
        raise CacheError(f"CacheFiles: {len(fds)} {kind} cache files, at most {MAX_FILES}")
    return fds


@dataclass(frozen=True)
class CacheFiles:
    """What a driver's ``prepare`` / ``prepare_from_cache`` gets: the token and the cache fds.

    ``model`` holds the model-cache file descriptors (security sensitive: compiled code),
    ``data`` the data-cache ones (constants). The record owns nothing: whoever opened the fds
    (a :class:`~nnrt.cache.directory.CacheEntry`, or the driver service that received them)
    closes them.
    """

    token: bytes
    model: tuple[int, ...]
    data: tuple[int, ...]

    def __post_init__(self) -> None:
        check_token(self.token, "CacheFiles")
        _check_fds(self.model, "model")
        _check_fds(self.data, "data")

    @property
    def counts(self) -> tuple[int, int]:
        """``(number of model files, number of data files)``."""
        return len(self.model), len(self.data)

    @property
    def all(self) -> tuple[int, ...]:
        """Every fd, model files first."""
        return self.model + self.data

    def label(self, index: int) -> str:
        """A human name for file ``index`` of :attr:`all`: "model cache file 0 (fd 7)"."""
        fd = self.all[index]
        if index < len(self.model):
            return f"model cache file {index} (fd {fd})"
        return f"data cache file {index - len(self.model)} (fd {fd})"

    def check(self, needed: tuple[int, int], where: str) -> None:
        """Raise CacheError naming ``where`` unless there are exactly ``needed`` files."""
        if self.counts != tuple(needed):
            raise CacheError(f"{where}: expected {needed[0]} model and {needed[1]} data cache "
                             f"files, got {len(self.model)} and {len(self.data)}")

