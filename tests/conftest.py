"""Test-wide fixtures: every test must leave no fds, child processes or nnrt shm segments behind."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

#: How long a new descriptor may take to close by itself before it counts as leaked.
_SETTLE_SECONDS = 1.0
#: The temporary bytecode directory of this run, when :func:`pytest_configure` made one.
_PYCACHE = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """Where the environment forbids bytecode files (``PYTHONDONTWRITEBYTECODE``), keep them
    for this run in a temporary ``PYTHONPYCACHEPREFIX`` instead, outside the source tree.

    The suite starts hundreds of Python processes (driver workers, services, the
    CLI); without bytecode each one compiles nnrt from source again (0.4 s a worker).
    """
    if not sys.dont_write_bytecode or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    prefix = tempfile.mkdtemp(prefix="nnrt-test-pycache-")
    config.stash[_PYCACHE] = prefix
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.pycache_prefix = prefix
    sys.dont_write_bytecode = False


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove the bytecode directory :func:`pytest_configure` made, if any."""
    prefix = config.stash.get(_PYCACHE, None)
    if prefix is not None:
        shutil.rmtree(prefix, ignore_errors=True)


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
    leaked_fds = _new_fds(fds)
    deadline = time.monotonic() + _SETTLE_SECONDS
    while leaked_fds and time.monotonic() < deadline:
        # native threads (onnxruntime's, the C library's) open short-lived sockets of their
        # own: only a descriptor that stays open, pointing at the same object, is a leak
        time.sleep(0.02)
        still = _new_fds(fds)
        leaked_fds = {fd: target for fd, target in leaked_fds.items() if still.get(fd) == target}
    leaked_children = _children() - children
    leaked_segments = _shm_segments() - segments
    problems = []
    if leaked_fds:
        problems.append("file descriptors " + ", ".join(
            f"{fd} ({target})" for fd, target in sorted(leaked_fds.items())))
    if leaked_children:
        problems.append(f"child processes {sorted(leaked_children)}")
    if leaked_segments:
        problems.append(f"shared-memory segments {sorted(leaked_segments)}")
    if problems:
        pytest.fail("test leaked " + ", ".join(problems))


def _new_fds(before: set[int]) -> dict[int, str]:
    """Descriptors opened since ``before`` (and not pytest's own), with what they point at."""
    found = {}
    for fd in _open_fds() - before:
        if _is_real_leak(fd):
            with contextlib.suppress(OSError):
                found[fd] = os.readlink(f"/proc/self/fd/{fd}")
    return found


def _is_real_leak(fd: int) -> bool:
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return False  # closed meanwhile (e.g. the fd used to list /proc/self/fd)
    # pytest's own capture / cache files are not ours
    return not target.startswith(("/dev/pts", "/dev/null"))
