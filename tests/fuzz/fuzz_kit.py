"""Shared bits of the fuzzers: case counts, example budgets, the error oracle, corpus files."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import msgpack
from hypothesis import settings

import nnrt

#: The hypothesis profile in use ("ci" unless ``HYPOTHESIS_PROFILE`` says otherwise).
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
#: Cases run per fuzzer in this session.
CASES: Counter[str] = Counter()
CORPUS = Path(__file__).parent / "corpus"

F = TypeVar("F", bound=Callable[..., Any])


def count(name: str, n: int = 1) -> None:
    """Count ``n`` cases of fuzzer ``name``."""
    CASES[name] += n


def budget(ci: int, long: int) -> Callable[[F], F]:
    """``@settings(max_examples=...)``: ``ci`` examples by default, ``long`` in the long run."""
    return settings(max_examples=long if PROFILE == "long" else ci)


def check_error(exc: BaseException, where: str) -> None:
    """The oracle for hostile input: only nnrt errors, and no wrapped Python crash.

    The HAL and ``finish()`` wrap an unexpected Python exception of a driver hook or an op
    definition in ``OpFailed`` ("internal error", "... failed: IndexError(...)"): that is an
    nnrt bug reached by bad input, so it fails the fuzzer too.
    """
    if not isinstance(exc, nnrt.NnrtError):
        raise AssertionError(f"{where}: {type(exc).__name__} escaped: {exc!r}") from exc
    cause = exc.__cause__
    if cause is not None and not isinstance(cause, nnrt.NnrtError):
        raise AssertionError(f"{where}: {type(exc).__name__} wraps a Python "
                             f"{type(cause).__name__}: {exc}") from exc
    if "internal error" in str(exc):
        raise AssertionError(f"{where}: {exc}") from exc


def corpus_files(kind: str) -> Iterator[Path]:
    """The saved inputs of ``kind`` (``corpus/<kind>/*``), sorted by name."""
    folder = CORPUS / kind
    if folder.is_dir():
        yield from sorted(p for p in folder.iterdir() if p.is_file())


def load_msgpack(path: Path) -> Any:
    """A corpus file's msgpack object (bytes stay bytes, maps keep non-str keys)."""
    return msgpack.unpackb(path.read_bytes(), raw=False, strict_map_key=False)


def save_msgpack(kind: str, name: str, value: Any) -> Path:
    """Save ``value`` as corpus file ``corpus/<kind>/<name>.msgpack`` (for new findings)."""
    folder = CORPUS / kind
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.msgpack"
    path.write_bytes(msgpack.packb(value, use_bin_type=True))
    return path
