"""Entry locks (``nnrt.cache.locking``): busy timeouts, any-thread release, unlinked lock files,
fork safety, and no descriptor left open on any path."""

from __future__ import annotations

import fcntl
import gc
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cache_helpers import TOKEN_A

from nnrt.cache import CacheDirectory
from nnrt.cache.locking import EntryLock, lock_file
from nnrt.errors import CacheError

META = {"driver": "com.example.test", "version": "1.0"}

HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
sys.stdin.read()  # hold it until the test closes our stdin
"""


def _open_fds() -> set[int]:
    return {int(name) for name in os.listdir("/proc/self/fd")}


def _fds_on(path: Path) -> list[str]:
    """What each of our open fds on ``path`` points to (``... (deleted)`` once unlinked)."""
    found = []
    for fd in _open_fds():
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(path)):
            found.append(target)
    return found


def _is_free(path: Path) -> bool:
    """Whether nobody holds an exclusive lock on the file at ``path`` (checked on a new fd)."""
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


@pytest.fixture
def lock_path(tmp_path: Path) -> Path:
    return tmp_path / "entry.lock"


@pytest.fixture
def holder(lock_path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding an exclusive flock on ``lock_path``."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock_path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "locked\n"
        yield proc
    finally:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()
        proc.wait(10)
        proc.stdout.close()


def test_a_lock_is_exclusive_and_release_is_idempotent(lock_path: Path) -> None:
    before = _open_fds()
    lock = lock_file(str(lock_path), 0.0)
    assert isinstance(lock, EntryLock) and lock.held
    assert (lock_path.stat().st_mode & 0o777) == 0o600
    assert lock_file(str(lock_path), 0.0) is None  # a second fd of this very process
    assert not _is_free(lock_path)
    lock.release()
    lock.release()
    assert not lock.held and "released" in repr(lock)
    assert _is_free(lock_path)
    assert _open_fds() == before


def test_busy_in_another_process_times_out_with_cache_busy(tmp_path: Path,
                                                           holder: subprocess.Popen[str]) -> None:
    directory = CacheDirectory(tmp_path, lock_timeout=0.3)
    lock_path = tmp_path / f"{TOKEN_A.hex()}.lock"
    holder_lock = tmp_path / "entry.lock"
    os.link(holder_lock, lock_path)  # the holder's locked file is the entry's lock file
    before = _open_fds()
    start = time.monotonic()
    with pytest.raises(CacheError) as caught:
        directory.open(TOKEN_A, (1, 0), META)
    elapsed = time.monotonic() - start
    assert str(caught.value) == (f"cache busy: entry {TOKEN_A.hex()[:16]} in {str(tmp_path)!r} "
                                 "stayed locked for 0.3 s")
    assert 0.3 <= elapsed < 2.0
    assert _open_fds() == before  # the timeout path closed the lock file
    assert [p.name for p in tmp_path.iterdir() if ".lock" not in p.name] == []  # no files made


def test_lock_file_gives_up_at_the_timeout(lock_path: Path,
                                           holder: subprocess.Popen[str]) -> None:
    before = _open_fds()
    for timeout in (0.0, 0.15):
        start = time.monotonic()
        assert lock_file(str(lock_path), timeout) is None
        assert timeout <= time.monotonic() - start < timeout + 1.0
    assert _open_fds() == before


def test_a_lock_taken_in_one_thread_is_released_in_another(lock_path: Path) -> None:
    before = _open_fds()
    taken: list[EntryLock | None] = []
    worker = threading.Thread(target=lambda: taken.append(lock_file(str(lock_path), 1.0)))
    worker.start()
    worker.join()
    [lock] = taken
    assert lock is not None and not _is_free(lock_path)
    lock.release()  # this thread never took it
    assert _is_free(lock_path)
    assert _open_fds() == before


def test_an_entry_opened_in_a_worker_thread_is_closed_from_another(tmp_path: Path) -> None:
    directory = CacheDirectory(tmp_path, lock_timeout=0.0)
    opened = []
    worker = threading.Thread(target=lambda: opened.append(directory.open(TOKEN_A, (1, 0),
                                                                          META)))
    worker.start()
    worker.join()
    [entry] = opened
    with pytest.raises(CacheError, match="cache busy"):
        directory.open(TOKEN_A, (1, 0), META)
    entry.close()
    with directory.open(TOKEN_A, (1, 0), META) as again:  # free at once
        assert not again.hit


def test_a_waiter_on_an_unlinked_lock_file_locks_the_new_one(lock_path: Path) -> None:
    before = _open_fds()
    first = lock_file(str(lock_path), 0.0)
    assert first is not None
    got: list[EntryLock | None] = []
    waiter = threading.Thread(target=lambda: got.append(lock_file(str(lock_path), 10.0)))
    waiter.start()
    # the waiter holds the old file open while it waits; then it is unlinked (as `nnrt cache
    # clear` does, under the lock) and released: the waiter's flock on it succeeds, but the
    # file is no longer the lock file, so it must retry on the one at the path now
    _wait_for(lambda: len(_fds_on(lock_path)) == 2, "the waiter to open the lock file")
    os.unlink(lock_path)
    first.release()
    waiter.join(10)
    [second] = got
    assert second is not None
    assert lock_path.exists() and not _is_free(lock_path)  # locked: the new file
    assert _fds_on(lock_path) == [str(lock_path)]  # and nothing on the deleted one
    second.release()
    assert _open_fds() == before


def test_an_entry_lock_file_removed_by_clear_does_not_break_exclusion(tmp_path: Path) -> None:
    directory = CacheDirectory(tmp_path, lock_timeout=10.0)
    entry = directory.open(TOKEN_A, (1, 0), META)
    opened = []
    waiter = threading.Thread(target=lambda: opened.append(directory.open(TOKEN_A, (1, 0),
                                                                          META)))
    waiter.start()
    lock_path = tmp_path / f"{TOKEN_A.hex()}.lock"
    _wait_for(lambda: len(_fds_on(lock_path)) == 2, "the waiter to open the lock file")
    os.unlink(lock_path)
    entry.close()
    waiter.join(10)
    [second] = opened
    with second:
        assert not _is_free(lock_path)
        with pytest.raises(CacheError, match="cache busy"):  # the new lock file is the lock
            CacheDirectory(tmp_path, lock_timeout=0.0).open(TOKEN_A, (1, 0), META)


def test_errors_opening_the_lock_file_leave_no_fd(tmp_path: Path) -> None:
    before = _open_fds()
    with pytest.raises(FileNotFoundError):
        lock_file(str(tmp_path / "missing" / "x.lock"), 0.0)
    target = tmp_path / "elsewhere"
    target.write_bytes(b"")
    link = tmp_path / "link.lock"
    link.symlink_to(target)
    with pytest.raises(OSError, match="Too many levels of symbolic links"):
        lock_file(str(link), 0.0)  # O_NOFOLLOW
    assert _open_fds() == before
    directory = CacheDirectory(tmp_path)
    os.symlink(target, tmp_path / f"{TOKEN_A.hex()}.lock")
    with pytest.raises(CacheError, match=f"cache entry {TOKEN_A.hex()[:16]}: cannot lock "
                                         ".*Too many levels of symbolic links"):
        directory.open(TOKEN_A, (1, 0), META)
    assert _open_fds() == before


def test_the_lock_file_is_0600_whatever_the_umask(lock_path: Path) -> None:
    old = os.umask(0o277)
    try:
        lock = lock_file(str(lock_path), 0.0)
    finally:
        os.umask(old)
    assert lock is not None
    lock.release()
    assert (lock_path.stat().st_mode & 0o777) == 0o600
    again = lock_file(str(lock_path), 0.0)  # so it can be opened read+write again
    assert again is not None
    again.release()


def test_a_dropped_lock_is_released(lock_path: Path) -> None:
    before = _open_fds()
    lock = lock_file(str(lock_path), 0.0)
    assert lock is not None
    del lock
    gc.collect()
    assert _is_free(lock_path)
    assert _open_fds() == before


def test_a_forked_child_does_not_release_the_parents_lock(lock_path: Path) -> None:
    lock = lock_file(str(lock_path), 0.0)
    assert lock is not None
    pid = os.fork()
    if pid == 0:  # the child: drop its copy, then report whether the lock is still held
        lock.release()
        os._exit(0 if not _is_free(lock_path) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert lock.held and not _is_free(lock_path)
    lock.release()
    assert _is_free(lock_path)
