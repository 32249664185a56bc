"""CacheDirectory / CacheEntry on a real directory: hits, misses, commits, locks and eviction."""

from __future__ import annotations

import hashlib
import os
import stat
import threading
import time
from pathlib import Path

import pytest
from cache_helpers import TOKEN_A, TOKEN_B, data_blobs, model_blobs

from nnrt.cache import CacheDirectory, IntegrityStore, load_cache, save_cache
from nnrt.errors import BadData, BadState, CacheError

META = {"driver": "com.example.test", "version": "1.0", "preference": "FAST_SINGLE_ANSWER"}


@pytest.fixture
def store(tmp_path_factory: pytest.TempPathFactory) -> IntegrityStore:
    root = tmp_path_factory.mktemp("integrity")
    return IntegrityStore.for_driver("com.example.test", "1.0", root)


def _fill(directory: CacheDirectory, store: IntegrityStore, token: bytes, seed: str,
          sizes: tuple[int, ...] = (4096, 100)) -> None:
    with directory.open(token, (len(sizes), 1), META) as entry:
        assert not entry.hit
        save_cache(entry.files, model_blobs(seed, sizes), data_blobs(seed), store)
        entry.commit()


def test_miss_commit_then_hit(tmp_path: Path, store: IntegrityStore) -> None:
    directory = CacheDirectory(tmp_path / "cache")
    assert stat.S_IMODE(directory.path.stat().st_mode) == 0o700
    with directory.open(TOKEN_A, (2, 1), META) as entry:
        assert not entry.hit
        for fd in entry.files.all:
            target = Path(os.readlink(f"/proc/self/fd/{fd}"))
            assert ".tmp-" in target.name and target.parent == directory.path
            assert stat.S_IMODE(os.fstat(fd).st_mode) == 0o600
            assert os.fstat(fd).st_size == 0
        save_cache(entry.files, model_blobs("A"), data_blobs("A"), store)
        entry.commit()
        with pytest.raises(BadState, match="already committed"):
            entry.commit()
    names = sorted(p.name for p in directory.path.iterdir())
    hexa = TOKEN_A.hex()
    assert names == [f"{hexa}.data.0", f"{hexa}.lock", f"{hexa}.meta", f"{hexa}.model.0",
                     f"{hexa}.model.1"]
    with directory.open(TOKEN_A, (2, 1), META) as entry:
        assert entry.hit
        assert load_cache(entry.files, store) == (model_blobs("A"), data_blobs("A"))
        before = directory.entries()[0].meta
        entry.touch()
        with pytest.raises(BadState, match="was a hit"):
            entry.commit()
    [info] = directory.entries()
    assert info.meta is not None and before is not None
    assert info.meta.last_used >= before.last_used and info.meta.created == before.created
    assert info.meta.extra["preference"] == "FAST_SINGLE_ANSWER"
    assert info.meta.sizes == (4096, 100, 3000) and info.bytes > 7196


def test_an_uncommitted_miss_leaves_nothing(tmp_path: Path) -> None:
    directory = CacheDirectory(tmp_path)
    with directory.open(TOKEN_A, (1, 1), META) as entry:
        os.write(entry.files.model[0], b"half written")
    assert directory.entries() == []
    with directory.open(TOKEN_A, (1, 1), META) as entry:
        assert not entry.hit


def test_temp_files_of_a_crashed_writer_are_cleaned(tmp_path: Path) -> None:
    directory = CacheDirectory(tmp_path)
    stale = tmp_path / f"{TOKEN_A.hex()}.model.0.tmp-99999-abcdef"
    stale.write_bytes(b"crashed")
    other = tmp_path / f"{TOKEN_B.hex()}.model.0.tmp-99999-abcdef"
    other.write_bytes(b"another entry's")
    with directory.open(TOKEN_A, (1, 0), META):
        assert not stale.exists() and other.exists()


def test_a_hit_leaves_temporaries_to_the_next_commit_or_discard(tmp_path: Path,
                                                                store: IntegrityStore) -> None:
    directory = CacheDirectory(tmp_path)
    _fill(directory, store, TOKEN_A, "A")
    stale = tmp_path / f"{TOKEN_A.hex()}.model.2.tmp-99999-abcdef"  # a crashed larger miss
    stale.write_bytes(b"crashed")
    with directory.open(TOKEN_A, (2, 1), META) as entry:
        assert entry.hit and stale.exists()  # a hit lists nothing
    [info] = directory.entries()
    assert info.bytes >= len(b"crashed") + 4096 + 100 + 3000  # counted against the limit
    with directory.open(TOKEN_A, (2, 1), META) as entry:
        entry.discard()
    assert not stale.exists()


def test_touch_stamps_the_meta_record_without_rewriting_it(tmp_path: Path,
                                                           store: IntegrityStore) -> None:
    directory = CacheDirectory(tmp_path)
    _fill(directory, store, TOKEN_A, "A")
    meta_path = tmp_path / f"{TOKEN_A.hex()}.meta"
    record, inode = meta_path.read_bytes(), meta_path.stat().st_ino
    [info] = directory.entries()
    assert info.meta is not None and info.meta.last_used == info.meta.created
    time.sleep(0.01)
    start = time.time()
    with directory.open(TOKEN_A, (2, 1), META) as entry:
        entry.touch()
    assert meta_path.read_bytes() == record and meta_path.stat().st_ino == inode
    [touched] = directory.entries()
    assert touched.meta is not None and touched.meta.created == info.meta.created
    assert start <= touched.meta.last_used <= time.time()
    with directory.open(TOKEN_A, (2, 1), META) as entry:
        meta_path.unlink()
        with pytest.raises(CacheError, match="cannot update its meta record"):
            entry.touch()


def test_other_counts_or_driver_versions_miss(tmp_path: Path, store: IntegrityStore) -> None:
    directory = CacheDirectory(tmp_path)
    _fill(directory, store, TOKEN_A, "A", sizes=(10, 20, 30))
    with directory.open(TOKEN_A, (3, 1), {**META, "version": "2.0"}) as entry:
        assert not entry.hit
    with directory.open(TOKEN_A, (1, 1), META) as entry:
        assert not entry.hit
        save_cache(entry.files, model_blobs("A", (10,)), data_blobs("A"), store)
        entry.commit()  # removes model files 1 and 2 of the older entry
    assert sorted(p.name.split(".", 1)[1] for p in tmp_path.iterdir()) == [
        "data.0", "lock", "meta", "model.0"]


def test_discarding_a_rejected_hit(tmp_path: Path, store: IntegrityStore) -> None:
    directory = CacheDirectory(tmp_path)
    _fill(directory, store, TOKEN_A, "A")
    model0 = tmp_path / f"{TOKEN_A.hex()}.model.0"
    model0.write_bytes(b"tampered")
    with directory.open(TOKEN_A, (2, 1), META) as entry:
        assert entry.hit
        with pytest.raises(CacheError, match="do not match"):
            load_cache(entry.files, store)
        entry.discard()
    assert not model0.exists()
    with directory.open(TOKEN_A, (2, 1), META) as entry:
        assert not entry.hit


def test_bad_arguments(tmp_path: Path) -> None:
    directory = CacheDirectory(tmp_path)
    with pytest.raises(CacheError, match="from 0 to 32"):
        directory.open(TOKEN_A, (33, 0), META)
    with pytest.raises(BadData, match="32 bytes"):
        directory.open(b"x", (1, 0), META)
    with pytest.raises(BadData, match="'driver'"):
        directory.open(TOKEN_A, (1, 0), {"version": "1"})
    with pytest.raises(BadData, match="msgpack"):
        directory.open(TOKEN_A, (1, 0), {**META, "when": object()})
    with pytest.raises(BadData, match="size_limit"):
        CacheDirectory(tmp_path, size_limit=-1)
    assert list(tmp_path.iterdir()) == []  # argument errors come before any lock


def test_a_shared_or_missing_directory_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    with pytest.raises(CacheError, match="writable by other users"):
        CacheDirectory(shared)
    with pytest.raises(CacheError, match="No such file"):
        CacheDirectory(tmp_path / "missing", create=False)
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(CacheError, match="not a directory"):
        CacheDirectory(tmp_path / "file")


def test_a_busy_entry_times_out(tmp_path: Path) -> None:
    directory = CacheDirectory(tmp_path, lock_timeout=0.1)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with directory.open(TOKEN_A, (1, 0), META):
            held.set()
            release.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert held.wait(10)
        with pytest.raises(CacheError, match="cache busy"):
            directory.open(TOKEN_A, (1, 0), META)
        with directory.open(TOKEN_B, (1, 0), META) as entry:  # other entries are free
            assert not entry.hit
    finally:
        release.set()
        thread.join()


def test_least_recently_used_entries_are_evicted(tmp_path: Path,
                                                 store: IntegrityStore) -> None:
    tokens = [hashlib.sha256(f"entry {i}".encode()).digest() for i in range(4)]
    directory = CacheDirectory(tmp_path, size_limit=3 * 10_000)
    for i in range(3):
        _fill(directory, store, tokens[i], f"m{i}", sizes=(6000,))  # ~9.3 kB per entry
    with directory.open(tokens[0], (1, 1), META) as entry:
        assert entry.hit
        entry.touch()  # entry 1 is now the least recently used
    _fill(directory, store, tokens[3], "m3", sizes=(6000,))
    left = {e.token_hex for e in directory.entries()}
    assert left == {tokens[i].hex() for i in (0, 2, 3)}
    assert directory.total_bytes() <= 3 * 10_000
    tiny = CacheDirectory(tmp_path, size_limit=100)
    _fill(tiny, store, tokens[1], "m1", sizes=(6000,))
    assert [e.token_hex for e in tiny.entries()] == [tokens[1].hex()]  # never the new one


def test_eviction_skips_an_entry_in_use(tmp_path: Path, store: IntegrityStore) -> None:
    directory = CacheDirectory(tmp_path, size_limit=10_000)
    _fill(directory, store, TOKEN_A, "A", sizes=(6000,))
    with directory.open(TOKEN_A, (1, 1), META) as busy:
        assert busy.hit
        _fill(directory, store, TOKEN_B, "B", sizes=(6000,))
        assert {e.token_hex for e in directory.entries()} == {TOKEN_A.hex(), TOKEN_B.hex()}
        assert load_cache(busy.files, store)[0] == model_blobs("A", (6000,))


def test_a_corrupt_meta_record_is_listed_and_never_a_hit(tmp_path: Path,
                                                         store: IntegrityStore) -> None:
    directory = CacheDirectory(tmp_path)
    _fill(directory, store, TOKEN_A, "A")
    (tmp_path / f"{TOKEN_A.hex()}.meta").write_bytes(b"\xc1\xff not msgpack")
    [info] = directory.entries()
    assert info.meta is None and "not valid msgpack" in info.problem
    with directory.open(TOKEN_A, (2, 1), META) as entry:
        assert not entry.hit
    assert directory.remove(TOKEN_A.hex(), lock_file=True)
    assert list(tmp_path.iterdir()) == []
