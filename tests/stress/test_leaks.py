"""Leak accounting: /proc readings of real processes, findings, RSS flatness."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from nnrt.stress import procs
from nnrt.stress.leaks import LeakAccount, RssSeries


def test_proc_readings_of_a_real_child() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; print('up', flush=True); "
                              "sys.stdin.read()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline() == b"up\n"
        assert child.pid in procs.children(os.getpid())
        assert procs.is_alive(child.pid)
        assert not procs.is_worker(child.pid)
        assert child.pid not in procs.workers_of(os.getpid())
        count = procs.fd_count(child.pid)
        assert count is not None and count >= 3
        rss = procs.rss_bytes(child.pid)
        assert rss is not None and rss > 1 << 20
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait()
        assert child.stdout is not None
        child.stdout.close()
    assert not procs.is_alive(child.pid)
    assert procs.fd_count(child.pid) is None and procs.rss_bytes(child.pid) is None
    assert procs.children(child.pid) == set()


def test_fd_count_sees_a_new_descriptor() -> None:
    before = procs.fd_count(os.getpid())
    r, w = os.pipe()
    try:
        assert procs.fd_count(os.getpid()) == (before or 0) + 2
    finally:
        os.close(r)
        os.close(w)


def test_shm_segments_match_nnrt_names_by_pid(tmp_path: Path) -> None:
    for name in ("nnrt-123-00ff", "nnrt-4567-aa", "other-123", "nnrt-device-fallback"):
        (tmp_path / name).touch()
    assert procs.shm_segments([123], tmp_path) == {"nnrt-123-00ff"}
    assert procs.shm_segments([12], tmp_path) == set()  # no partial pid matches
    assert procs.shm_segments([123, 4567], tmp_path) == {"nnrt-123-00ff", "nnrt-4567-aa"}
    assert procs.shm_segments_all(tmp_path) == {"nnrt-123-00ff", "nnrt-4567-aa",
                                                "nnrt-device-fallback"}
    assert procs.shm_segments([1], tmp_path / "missing") == set()


def test_leak_account_counts_each_item() -> None:
    account = LeakAccount()
    account.fds("service", 20, 20)
    account.fds("client", 9, 8)  # fewer is fine
    assert account.leaked == 0 and not account.findings
    account.fds("client 1", 9, 12)
    account.fds("client 2", None, 9)  # unknown is a finding
    account.processes("workers", [])
    account.processes("workers", [44, 43])
    account.segments("/dev/shm", ["nnrt-1-ab"])
    assert account.leaked == 3 + 1 + 2 + 1
    kinds = [(f.kind, f.owner) for f in account.findings]
    assert kinds == [("fds", "client 1"), ("fds", "client 2"), ("children", "workers"),
                     ("shm", "/dev/shm")]
    assert account.findings[2].detail == "pids [43, 44]"


def test_rss_flatness_judged_after_the_first_minute_of_long_runs() -> None:
    series = RssSeries("service")
    for t in range(0, 181, 5):
        series.add(float(t), 100 << 20 if t < 60 else (200 << 20) + t * 1000)
    series.add(185.0, None)  # the process was gone: nothing recorded
    assert series.reference() == (60.0, (200 << 20) + 60_000)
    growth = series.growth()
    assert growth is not None and 0 < growth < 0.01
    assert series.flat(180) is True
    assert series.flat(119) is None  # runs under 2 minutes are not judged
    growing = RssSeries("client")
    for t in range(0, 181, 5):
        growing.add(float(t), (100 << 20) + t * (1 << 18))
    assert growing.flat(180) is False
    account = LeakAccount()
    account.rss(series, 180)
    account.rss(growing, 180)
    account.rss(growing, 60)
    assert account.leaked == 1 and account.findings[0].owner == "client"
    assert RssSeries("empty").flat(600) is None
