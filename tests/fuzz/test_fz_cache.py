"""Fuzzing cache files at load: ``nnrt.cache.load_cache`` and the cpu driver's
``prepare_from_cache`` get random bytes and mutations of valid cache files.

* corrupted files (the integrity store keeps the digest of the valid ones): always
  ``CacheError``, never loaded;
* forged files (the mutated blobs' digest recorded too, as if the store were compromised or the
  driver buggy): the decoder is the last line — only nnrt errors, no wrapped Python crash, and a
  model that loads runs with the model's output shapes and dtypes or fails with an nnrt error;
* random bytes straight into ``load_cache`` (unknown tokens, wrong kinds of files).
"""

from __future__ import annotations

import os
import random
import tempfile
from collections.abc import Iterator
from typing import Any

import msgpack
import numpy as np
import pytest
from fuzz_kit import budget, check_error, corpus_files, count
from hostile import mutate
from hypothesis import given
from hypothesis import strategies as st

import nnrt
from nnrt.cache import CacheFiles, IntegrityStore, cache_digest, load_cache
from nnrt.drivers.cpu import CpuDriver
from nnrt.errors import CacheError

TOKEN = bytes(range(32))
X = np.linspace(-1, 1, 2 * 4 * 4 * 3, dtype=np.float32).reshape(2, 4, 4, 3)


def _model() -> nnrt.Model:
    b = nnrt.ModelBuilder()
    x = b.input("x", (2, 4, 4, 3))
    rng = np.random.default_rng(7)
    y = b.conv2d(x, rng.random((4, 3, 3, 3), np.float32), rng.random(4, np.float32),
                 activation="relu")
    y = b.average_pool2d(y, 2)
    b.output(b.fully_connected(b.reshape(y, (2, 16)), rng.random((3, 16), np.float32),
                               np.zeros(3, np.float32)))
    return b.build()


class Env:
    """A cpu driver with a private integrity store, a model and its valid cache blobs."""

    def __init__(self, workdir: str) -> None:
        self.workdir = workdir
        self.driver = CpuDriver(optimize_after=0)
        self.model = _model()
        info = self.driver.info()
        self.store = IntegrityStore.for_driver(info.name, info.version)
        with self.files([b"", b""]) as cache:
            self.driver.prepare(self.model, cache=cache).release()
            self.blobs = [_read(fd) for fd in cache.all]
        self.expected = self.driver.prepare(self.model).execute([X]).outputs

    def files(self, blobs: list[bytes]) -> Any:
        return _files(self.workdir, blobs)


def _read(fd: int) -> bytes:
    return os.pread(fd, os.fstat(fd).st_size, 0)


class _files:  # noqa: N801 - a context manager used like a function
    def __init__(self, workdir: str, blobs: list[bytes]) -> None:
        self.fds = []
        for k, blob in enumerate(blobs):
            path = os.path.join(workdir, f"cache-{k}")
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
            os.write(fd, blob)
            self.fds.append(fd)

    def __enter__(self) -> CacheFiles:
        return CacheFiles(TOKEN, tuple(self.fds[:1]), tuple(self.fds[1:]))

    def __exit__(self, *exc_info: object) -> None:
        for fd in self.fds:
            os.close(fd)


@pytest.fixture(scope="module")
def env() -> Iterator[Env]:
    old = os.environ.get("NNRT_INTEGRITY_DIR")
    with tempfile.TemporaryDirectory(prefix="nnrt-fuzz-cache-") as workdir:
        os.environ["NNRT_INTEGRITY_DIR"] = os.path.join(workdir, "integrity")
        try:
            yield Env(workdir)
        finally:
            if old is None:
                del os.environ["NNRT_INTEGRITY_DIR"]
            else:
                os.environ["NNRT_INTEGRITY_DIR"] = old


def _mutate_bytes(rng: random.Random, blob: bytes) -> bytes:
    data = bytearray(blob)
    for _ in range(rng.randint(1, 4)):
        roll = rng.random()
        if roll < 0.4 and data:
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
        elif roll < 0.55:
            del data[rng.randint(0, len(data)):]
        elif roll < 0.7:
            data += rng.randbytes(rng.choice((1, 7, 64)))
        elif roll < 0.85 and data:
            i = rng.randrange(len(data))
            data[i:i + 8] = rng.randbytes(8)
        else:
            data = bytearray(rng.randbytes(rng.choice((0, 1, 16, len(blob)))))
    return bytes(data)


def _mutate_structure(rng: random.Random, header: bytes, constants: bytes
                      ) -> tuple[bytes, bytes]:
    """Mutate the decoded header / code maps (or the constants), re-encoded validly."""
    outer = msgpack.unpackb(header, raw=False)
    code = msgpack.unpackb(outer["code"], raw=False)
    roll = rng.random()
    if roll < 0.6:
        code = mutate(rng, code, rng.randint(1, 3))
    elif roll < 0.8:
        outer = mutate(rng, outer, 1)
    elif roll < 0.9:
        programs = code.get("programs") if isinstance(code, dict) else None
        steps = next(iter(programs.values()))["steps"] if isinstance(programs, dict) else []
        if steps:  # a step made hostile: another callable, lost or foreign values
            step = steps[rng.randrange(len(steps))]
            which = rng.randrange(4)
            if which == 0:
                step[0] = rng.choice(("exec", "eval", "__import__", "open", "getattr"))
            elif which == 1:
                step[2] = [*step[2], *step[2]]
            elif which == 2:
                step[2] = [msgpack.ExtType(1, rng.randbytes(4)) for _ in step[2]]
            else:
                steps.insert(0, step)
    else:
        constants = _mutate_bytes(rng, constants)
    if isinstance(outer, dict) and "code" in outer:
        outer["code"] = msgpack.packb(code, use_bin_type=True)
    return msgpack.packb(outer, use_bin_type=True), constants


def _prepare(env: Env, blobs: list[bytes]) -> tuple[Any, BaseException | None]:
    with env.files(blobs) as cache:
        try:
            return env.driver.prepare_from_cache(env.model, cache), None
        except Exception as exc:
            return None, exc


@budget(ci=60, long=3000)
@given(seed=st.integers(0, 2**32 - 1), which=st.sampled_from(["model", "data", "both"]))
def test_corrupted_cache_files_are_refused(env: Env, seed: int, which: str) -> None:
    count("cache.corrupted")
    env.store.record(TOKEN, cache_digest(env.blobs[:1], env.blobs[1:]))
    rng = random.Random(seed)
    blobs = list(env.blobs)
    if which in ("model", "both"):
        blobs[0] = _mutate_bytes(rng, blobs[0])
    if which in ("data", "both"):
        blobs[1] = _mutate_bytes(rng, blobs[1])
    prepared, error = _prepare(env, blobs)
    if blobs == env.blobs:
        assert prepared is not None, error
        prepared.release()
        return
    assert prepared is None, "a corrupted cache was loaded"
    assert isinstance(error, CacheError), repr(error)


@budget(ci=120, long=5000)
@given(seed=st.integers(0, 2**32 - 1), structured=st.booleans())
def test_forged_cache_files_fail_cleanly(env: Env, seed: int, structured: bool) -> None:
    count("cache.forged")
    rng = random.Random(seed)
    if structured:
        blobs = list(_mutate_structure(rng, *env.blobs))
    else:
        blobs = [_mutate_bytes(rng, b) if rng.random() < 0.7 else b for b in env.blobs]
    env.store.record(TOKEN, cache_digest(blobs[:1], blobs[1:]))
    _forged(env, blobs, f"forged cache (seed {seed}, structured {structured})")


def _forged(env: Env, blobs: list[bytes], where: str) -> None:
    prepared, error = _prepare(env, blobs)
    if prepared is None:
        assert error is not None
        check_error(error, where)
        return
    count("cache.forged.loaded")
    try:
        outputs = prepared.execute([X]).outputs
    except Exception as exc:
        if not isinstance(exc, nnrt.NnrtError):
            raise AssertionError(f"{where}: execute raised {exc!r}") from exc
        return
    finally:
        prepared.release()
    assert [o.shape for o in outputs] == [o.shape for o in env.expected], where
    assert [o.dtype for o in outputs] == [o.dtype for o in env.expected], where


@budget(ci=60, long=3000)
@given(blobs=st.lists(st.binary(max_size=256), min_size=0, max_size=3),
       known=st.booleans())
def test_random_bytes_into_load_cache(env: Env, blobs: list[bytes], known: bool) -> None:
    count("cache.load_cache")
    if known:
        env.store.record(TOKEN, cache_digest(blobs[:1], blobs[1:]))
    else:
        env.store.record(TOKEN, bytes(32))
    with env.files(blobs) as cache:
        try:
            model, data = load_cache(cache, env.store)
        except Exception as exc:
            assert isinstance(exc, CacheError), repr(exc)
            assert not known, exc
            return
    assert known and model + data == blobs


def test_cache_files_that_are_not_regular_files(env: Env) -> None:
    env.store.record(TOKEN, cache_digest([b""], [b""]))
    r, w = os.pipe()
    directory = os.open(env.workdir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for fds in ((r, directory), (w, r), (directory, directory)):
            with pytest.raises(CacheError):
                load_cache(CacheFiles(TOKEN, fds[:1], fds[1:]), env.store)
    finally:
        for fd in (r, w, directory):
            os.close(fd)


def test_corpus_cache_files_replay(env: Env) -> None:
    """Saved forged caches (corpus/cache: msgpack [model blob, data blob])."""
    files = list(corpus_files("cache"))
    assert files
    for path in files:
        blobs = [bytes(b) for b in msgpack.unpackb(path.read_bytes(), raw=False)]
        env.store.record(TOKEN, cache_digest(blobs[:1], blobs[1:]))
        _forged(env, blobs, path.name)
