"""Test-wide fixtures: every test must leave no fds, child processes or nnrt shm segments behind."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


def _open_fds() -> set[int]:
    return {int(name) for name in os.listdir("/proc/self/fd")}


def _children() -> set[int]:
    pids: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        try:
            text = (task / "children").read_text()
        except OSError:
            continue
        pids.update(int(p) for p in text.split())
    return pids


def _shm_segments() -> set[str]:
    # nnrt's blob names (and the tests') embed the creating pid: another test run on the same
    # machine must not look like a leak of this one
    pid = str(os.getpid())
    try:
        return {name for name in os.listdir("/dev/shm") if name.startswith("nnrt") and pid in name}
    except FileNotFoundError:
        return set()


@pytest.fixture(autouse=True)
def no_leaks() -> Iterator[None]:
    """Fail a test that leaks file descriptors, child processes or nnrt shared-memory segments."""
    fds, children, segments = _open_fds(), _children(), _shm_segments()
    yield
    leaked_fds = {fd for fd in _open_fds() - fds if _is_real_leak(fd)}
    leaked_children = _children() - children
    leaked_segments = _shm_segments() - segments
    problems = []
    if leaked_fds:
        problems.append(f"file descriptors {sorted(leaked_fds)}")
    if leaked_children:
        problems.append(f"child processes {sorted(leaked_children)}")
    if leaked_segments:
        problems.append(f"shared-memory segments {sorted(leaked_segments)}")
    if problems:
        pytest.fail("test leaked " + ", ".join(problems))


def _is_real_leak(fd: int) -> bool:
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return False  # closed meanwhile (e.g. the fd used to list /proc/self/fd)
    # pytest's own capture / cache files are not ours
    return not target.startswith(("/dev/pts", "/dev/null"))
