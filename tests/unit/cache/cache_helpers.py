"""Shared helpers of the cache tests: deterministic blobs and real cache files opened by path."""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

from nnrt.cache import CacheFiles

TOKEN_A = hashlib.sha256(b"model A").digest()
TOKEN_B = hashlib.sha256(b"model B").digest()


def blob(seed: str, size: int) -> bytes:
    """``size`` pseudo-random bytes derived from ``seed``."""
    out = bytearray()
    counter = 0
    while len(out) < size:
        out += hashlib.sha256(f"{seed}/{counter}".encode()).digest()
        counter += 1
    return bytes(out[:size])


def model_blobs(seed: str, sizes: tuple[int, ...] = (4096, 100)) -> list[bytes]:
    """A model's model-cache blobs."""
    return [blob(f"{seed}/model/{i}", n) for i, n in enumerate(sizes)]


def data_blobs(seed: str, sizes: tuple[int, ...] = (3000,)) -> list[bytes]:
    """A model's data-cache blobs."""
    return [blob(f"{seed}/data/{i}", n) for i, n in enumerate(sizes)]


def paths(directory: Path, name: str, counts: tuple[int, int]) -> list[Path]:
    """The file paths of a set of cache files, model files first."""
    return ([directory / f"{name}.model.{i}" for i in range(counts[0])]
            + [directory / f"{name}.data.{i}" for i in range(counts[1])])


@contextlib.contextmanager
def opened(directory: Path, name: str, token: bytes, counts: tuple[int, int] = (2, 1),
           flags: int = os.O_RDWR | os.O_CREAT) -> Iterator[CacheFiles]:
    """Files ``<name>.model.<i>`` / ``<name>.data.<i>`` opened with ``flags``, closed after."""
    fds: list[int] = []
    try:
        for path in paths(directory, name, counts):
            fds.append(os.open(path, flags, 0o600))
        yield CacheFiles(token, tuple(fds[:counts[0]]), tuple(fds[counts[0]:]))
    finally:
        for fd in fds:
            os.close(fd)


def flip_bit(path: Path, offset: int, bit: int = 0) -> None:
    """Flip one bit of the file at ``path``."""
    data = bytearray(path.read_bytes())
    data[offset] ^= 1 << bit
    path.write_bytes(bytes(data))
