"""IntegrityStore: persistence, per-version isolation, bounds, permissions and housekeeping."""

from __future__ import annotations

import hashlib
import os
import stat
import time
from pathlib import Path

import pytest
from cache_helpers import TOKEN_A, TOKEN_B

from nnrt.cache import IntegrityStore, default_store_root, list_stores, remove_store
from nnrt.cache.disk import read_record, read_small
from nnrt.cache.store import STALE_AFTER
from nnrt.errors import BadData, CacheError

DIGEST_1 = hashlib.sha256(b"1").digest()
DIGEST_2 = hashlib.sha256(b"2").digest()


def _token(i: int) -> bytes:
    return hashlib.sha256(f"token {i}".encode()).digest()


def test_records_survive_a_restart_and_a_new_version_sees_nothing(tmp_path: Path) -> None:
    store = IntegrityStore.for_driver("acme", "1", tmp_path)
    assert store.expected(TOKEN_A) is None
    store.record(TOKEN_A, DIGEST_1)
    store.record(TOKEN_A, DIGEST_2)  # the latest save wins
    store.record(TOKEN_B, DIGEST_1)
    again = IntegrityStore.for_driver("acme", "1", tmp_path)
    assert again.expected(TOKEN_A) == DIGEST_2 and again.expected(TOKEN_B) == DIGEST_1
    assert len(again) == 2
    assert IntegrityStore.for_driver("acme", "2", tmp_path).expected(TOKEN_A) is None
    assert IntegrityStore.for_driver("other", "1", tmp_path).expected(TOKEN_A) is None
    again.forget(TOKEN_A)
    again.forget(TOKEN_A)  # no error the second time
    assert store.expected(TOKEN_A) is None and store.expected(TOKEN_B) == DIGEST_1


def test_directories_are_private_and_records_0600(tmp_path: Path) -> None:
    root = tmp_path / "integrity"
    store = IntegrityStore.for_driver("acme", "1", root)
    assert not root.exists()  # nothing on disk before the first record
    store.record(TOKEN_A, DIGEST_1)
    for directory in (root, store.path.parent, store.path):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    record = store.path / TOKEN_A.hex()
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    assert record.stat().st_size == 72


def test_a_shared_root_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "open"
    root.mkdir()
    root.chmod(0o777)
    with pytest.raises(CacheError, match="writable by other users"):
        IntegrityStore.for_driver("acme", "1", root).record(TOKEN_A, DIGEST_1)


def test_bounded_least_recently_used_first(tmp_path: Path) -> None:
    store = IntegrityStore.for_driver("acme", "1", tmp_path, max_entries=3)
    for i in range(3):
        store.record(_token(i), DIGEST_1)
    assert store.expected(_token(0)) == DIGEST_1  # used: token 1 is now the oldest
    store.record(_token(3), DIGEST_2)
    assert len(store) == 3
    assert store.expected(_token(1)) is None
    assert [store.expected(_token(i)) for i in (0, 2, 3)] == [DIGEST_1, DIGEST_1, DIGEST_2]


def test_damaged_records_count_as_unknown(tmp_path: Path) -> None:
    store = IntegrityStore.for_driver("acme", "1", tmp_path)
    store.record(TOKEN_A, DIGEST_1)
    store.record(TOKEN_B, DIGEST_1)
    (store.path / TOKEN_A.hex()).write_bytes(b"garbage")
    (store.path / TOKEN_B.hex()).write_bytes((store.path / TOKEN_B.hex()).read_bytes() + b"x")
    assert store.expected(TOKEN_A) is None and store.expected(TOKEN_B) is None
    assert len(store) == 0


def test_bad_arguments(tmp_path: Path) -> None:
    store = IntegrityStore.for_driver("acme", "1", tmp_path)
    with pytest.raises(BadData, match="32 bytes"):
        store.record(b"x" * 31, DIGEST_1)
    with pytest.raises(BadData, match="digest"):
        store.record(TOKEN_A, b"short")
    with pytest.raises(BadData, match="non-empty string"):
        IntegrityStore.for_driver("", "1", tmp_path)
    with pytest.raises(BadData, match="max_entries"):
        IntegrityStore.for_driver("acme", "1", tmp_path, max_entries=0)


def test_names_cannot_escape_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    store = IntegrityStore.for_driver("../../evil", "../1", root)
    store.record(TOKEN_A, DIGEST_1)
    assert store.path.resolve().is_relative_to(root.resolve())
    assert [(s.name, s.version, s.records) for s in list_stores(root)] == [("../../evil", "../1",
                                                                             1)]


def test_default_root_follows_the_environment(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NNRT_INTEGRITY_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_store_root() == tmp_path / "xdg" / "nnrt" / "integrity"
    monkeypatch.setenv("NNRT_INTEGRITY_DIR", str(tmp_path / "explicit"))
    store = IntegrityStore.for_driver("acme", "1")
    store.record(TOKEN_A, DIGEST_1)
    assert (tmp_path / "explicit" / "acme" / "1" / TOKEN_A.hex()).is_file()


def test_stale_versions_go_after_the_grace_period(tmp_path: Path) -> None:
    for version in ("0.9", "1.0"):
        IntegrityStore.for_driver("acme", version, tmp_path).record(TOKEN_A, DIGEST_1)
    IntegrityStore.for_driver("other", "0.1", tmp_path).record(TOKEN_A, DIGEST_1)
    long_ago = time.time() - STALE_AFTER - 60
    for name, version in (("acme", "0.9"), ("other", "0.1")):
        os.utime(tmp_path / name / version / "store.meta", (long_ago, long_ago))
    IntegrityStore.for_driver("acme", "1.0", tmp_path, maintain=False)
    assert len(list_stores(tmp_path)) == 3  # inspection never removes anything
    IntegrityStore.for_driver("acme", "1.1", tmp_path)  # acme 1.1 starts: 0.9 is stale
    assert [(s.name, s.version) for s in list_stores(tmp_path)] == [("acme", "1.0"),
                                                                    ("other", "0.1")]
    assert remove_store(tmp_path, "acme", "1.0") and not remove_store(tmp_path, "acme", "1.0")
    assert not (tmp_path / "acme").exists()


def test_small_records_are_read_bounded_and_only_from_regular_files(tmp_path: Path) -> None:
    exact, over = tmp_path / "exact", tmp_path / "over"
    exact.write_bytes(b"x" * 72)
    over.write_bytes(b"x" * 73)
    found = read_record(str(exact), 72)
    assert found is not None and found[0] == b"x" * 72 and found[1].st_ino == exact.stat().st_ino
    assert read_small(exact, 100) == b"x" * 72  # a Path works too
    assert read_small(str(over), 72) is None
    (tmp_path / "link").symlink_to(exact)
    os.mkfifo(tmp_path / "fifo")
    for name in ("link", "fifo", "missing"):
        assert read_small(str(tmp_path / name), 72) is None, name
