"""save_cache / load_cache on real files: round trips, bad fds, and every kind of tampering."""

from __future__ import annotations

import fcntl
import hashlib
import os
import struct
from pathlib import Path

import numpy as np
import pytest
from cache_helpers import TOKEN_A, TOKEN_B, data_blobs, flip_bit, model_blobs, opened, paths

from nnrt.cache import (
    MAX_FILES,
    TOKEN_BYTES,
    CacheFiles,
    IntegrityStore,
    cache_digest,
    load_cache,
    save_cache,
)
from nnrt.cache.codec import CHUNK_BYTES
from nnrt.errors import BadData, CacheError


@pytest.fixture
def store(tmp_path: Path) -> IntegrityStore:
    return IntegrityStore.for_driver("com.example.test", "1.0", tmp_path / "integrity")


def _save(tmp_path: Path, store: IntegrityStore, name: str = "a", token: bytes = TOKEN_A,
          seed: str = "A") -> tuple[list[bytes], list[bytes]]:
    model, data = model_blobs(seed), data_blobs(seed)
    with opened(tmp_path, name, token) as files:
        save_cache(files, model, data, store)
    return model, data


def _load(tmp_path: Path, store: IntegrityStore, name: str = "a", token: bytes = TOKEN_A,
          counts: tuple[int, int] = (2, 1)) -> tuple[list[bytes], list[bytes]]:
    with opened(tmp_path, name, token, counts, os.O_RDWR) as files:
        return load_cache(files, store)


def test_limits_match_the_driver_hal() -> None:
    from nnrt.hal.base import CACHE_TOKEN_BYTES, MAX_CACHE_FILES

    assert (TOKEN_BYTES, MAX_FILES) == (CACHE_TOKEN_BYTES, MAX_CACHE_FILES)


def test_round_trip_with_memoryviews_and_an_empty_blob(tmp_path: Path,
                                                       store: IntegrityStore) -> None:
    model = [memoryview(bytearray(b"\x01" * 5000)), b""]
    data = [memoryview(b"weights" * 100)]
    with opened(tmp_path, "a", TOKEN_A) as files:
        save_cache(files, model, data, store)
        got_model, got_data = load_cache(files, store)
    assert got_model == [b"\x01" * 5000, b""] and got_data == [b"weights" * 100]
    assert all(type(b) is bytes for b in got_model + got_data)
    assert store.expected(TOKEN_A) == cache_digest(model, data)


def test_files_with_junk_and_an_offset_are_rewritten_from_zero(tmp_path: Path,
                                                              store: IntegrityStore) -> None:
    for path in paths(tmp_path, "a", (2, 1)):
        path.write_bytes(b"junk" * 100_000)
    model, data = model_blobs("A"), data_blobs("A")
    with opened(tmp_path, "a", TOKEN_A) as files:
        for fd in files.all:
            os.lseek(fd, 12345, os.SEEK_SET)
        save_cache(files, model, data, store)
        for fd in files.all:
            os.lseek(fd, 777, os.SEEK_SET)
        assert load_cache(files, store) == (model, data)
    assert [p.stat().st_size for p in paths(tmp_path, "a", (2, 1))] == [4096, 100, 3000]


def test_wrong_counts_are_refused(tmp_path: Path, store: IntegrityStore) -> None:
    with opened(tmp_path, "a", TOKEN_A) as files, pytest.raises(CacheError, match="one blob"):
        save_cache(files, model_blobs("A"), [], store)
    assert store.expected(TOKEN_A) is None
    _save(tmp_path, store)
    with pytest.raises(CacheError, match="do not match"):
        _load(tmp_path, store, counts=(2, 0))  # the framing hashes the counts
    with opened(tmp_path, "a", TOKEN_A) as files, pytest.raises(CacheError, match="expected 1"):
        files.check((1, 1), "prepare_from_cache")


def test_cache_files_record_checks_its_fields() -> None:
    with pytest.raises(BadData, match="32 bytes"):
        CacheFiles(b"short", (), ())
    with pytest.raises(BadData, match="file descriptors"):
        CacheFiles(TOKEN_A, (-1,), ())
    with pytest.raises(CacheError, match="at most 32"):
        CacheFiles(TOKEN_A, tuple(range(33)), ())


def test_read_only_fd_at_save_names_the_file(tmp_path: Path, store: IntegrityStore) -> None:
    _save(tmp_path, store)
    before = store.expected(TOKEN_A)
    fds = [os.open(p, os.O_RDWR) for p in paths(tmp_path, "a", (2, 1))]
    readonly = os.open(paths(tmp_path, "a", (2, 1))[1], os.O_RDONLY)
    try:
        files = CacheFiles(TOKEN_A, (fds[0], readonly), (fds[2],))
        with pytest.raises(CacheError, match=r"model cache file 1 .* read-only.*still usable"):
            save_cache(files, model_blobs("other"), data_blobs("other"), store)
    finally:
        for fd in [*fds, readonly]:
            os.close(fd)
    assert store.expected(TOKEN_A) == before  # nothing recorded, nothing written
    assert _load(tmp_path, store) == (model_blobs("A"), data_blobs("A"))


def test_write_only_fd_at_load_is_refused(tmp_path: Path, store: IntegrityStore) -> None:
    _save(tmp_path, store)
    with opened(tmp_path, "a", TOKEN_A, flags=os.O_WRONLY) as files, \
            pytest.raises(CacheError, match=r"model cache file 0 .* write-only"):
        load_cache(files, store)


@pytest.mark.parametrize("damage", ["flip_model_bit", "append_model", "truncate_model",
                                    "other_models_cache", "flip_data_bit", "extend_data",
                                    "empty_data"])
def test_tampered_files_are_rejected(tmp_path: Path, store: IntegrityStore, damage: str) -> None:
    _save(tmp_path, store)
    _save(tmp_path, store, name="b", token=TOKEN_B, seed="B")
    model0, data0 = tmp_path / "a.model.0", tmp_path / "a.data.0"
    if damage == "flip_model_bit":
        flip_bit(model0, 2049, 5)
    elif damage == "append_model":
        with model0.open("ab") as f:
            f.write(b"\0")
    elif damage == "truncate_model":
        os.truncate(model0, 4095)
    elif damage == "other_models_cache":
        model0.write_bytes((tmp_path / "b.model.0").read_bytes())
    elif damage == "flip_data_bit":
        flip_bit(data0, 0)
    elif damage == "extend_data":
        with data0.open("ab") as f:
            f.write(b"more constants")
    else:
        data0.write_bytes(b"")
    with pytest.raises(CacheError, match="do not match the digest"):
        _load(tmp_path, store)


def test_all_files_swapped_for_another_models_are_rejected(tmp_path: Path,
                                                           store: IntegrityStore) -> None:
    _save(tmp_path, store)
    _save(tmp_path, store, name="b", token=TOKEN_B, seed="B")
    with pytest.raises(CacheError, match="do not match"):
        _load(tmp_path, store, name="b", token=TOKEN_A)


def test_a_token_with_one_bit_flipped_is_unknown(tmp_path: Path, store: IntegrityStore) -> None:
    _save(tmp_path, store)
    token = bytes([TOKEN_A[0] ^ 1]) + TOKEN_A[1:]
    with pytest.raises(CacheError, match=r"unknown to the integrity store of driver "
                       r"'com.example.test' version '1.0'"):
        _load(tmp_path, store, token=token)


def test_another_driver_version_refuses_the_files(tmp_path: Path, store: IntegrityStore) -> None:
    _save(tmp_path, store)
    newer = IntegrityStore.for_driver("com.example.test", "1.1", tmp_path / "integrity")
    with pytest.raises(CacheError, match="unknown"):
        _load(tmp_path, newer)


def test_reads_are_bounded(tmp_path: Path, store: IntegrityStore) -> None:
    _save(tmp_path, store)
    with opened(tmp_path, "a", TOKEN_A, flags=os.O_RDWR) as files:
        with pytest.raises(CacheError, match="at most 5000 bytes"):
            load_cache(files, store, max_bytes=5000)  # 4096 + 100 + 3000 in all
        assert load_cache(files, store, max_bytes=7196)[0] == model_blobs("A")


def test_a_pipe_is_not_a_cache_file(store: IntegrityStore) -> None:
    store.record(TOKEN_A, cache_digest([b""], []))
    read, write = os.pipe()
    try:
        with pytest.raises(CacheError, match="not a regular file"):
            load_cache(CacheFiles(TOKEN_A, (read,), ()), store)
    finally:
        os.close(read)
        os.close(write)


def test_a_held_lock_gives_cache_busy_not_a_hang(tmp_path: Path, store: IntegrityStore) -> None:
    _save(tmp_path, store)
    holder = os.open(tmp_path / "a.model.0", os.O_RDWR)  # another open file description
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        with pytest.raises(CacheError, match="cache busy"), \
                opened(tmp_path, "a", TOKEN_A, flags=os.O_RDWR) as files:
            load_cache(files, store, lock_timeout=0.1)
        fcntl.flock(holder, fcntl.LOCK_SH)  # readers share; a writer must wait
        assert _load(tmp_path, store)[0] == model_blobs("A")
        with pytest.raises(CacheError, match="exclusive lock"), \
                opened(tmp_path, "a", TOKEN_A) as files:
            save_cache(files, model_blobs("A"), data_blobs("A"), store, lock_timeout=0.1)
    finally:
        os.close(holder)


def test_digest_framing_separates_blob_boundaries_and_kinds() -> None:
    digests = {cache_digest([b"ab"], [b"c"]), cache_digest([b"a"], [b"bc"]),
               cache_digest([b"abc"], []), cache_digest([], [b"abc"]),
               cache_digest([b"abc", b""], [])}
    assert len(digests) == 5
    assert all(len(d) == 32 for d in digests)


def test_digest_is_the_documented_two_level_sha256_threads_or_not() -> None:
    # independent computation of the documented format: counts, then per blob its length and
    # the SHA-256 of each CHUNK_BYTES piece; a large blob (hashed by threads) and small ones
    big = np.random.default_rng(0).integers(0, 256, 2 * CHUNK_BYTES + 12345, np.uint8).tobytes()
    model, data = [b"header", b""], [big]
    want = hashlib.sha256(b"nnrt.cache.v2\0" + struct.pack("<II", 2, 1))
    for blob in (*model, *data):
        want.update(struct.pack("<Q", len(blob)))
        for start in range(0, len(blob), CHUNK_BYTES):
            want.update(hashlib.sha256(blob[start:start + CHUNK_BYTES]).digest())
    assert cache_digest(model, data) == want.digest()
    flipped = bytearray(big)
    flipped[CHUNK_BYTES + 7] ^= 1  # one bit in the second piece
    assert cache_digest(model, [bytes(flipped)]) != want.digest()
