"""What the harness reads about processes from ``/proc``: fds, children, RSS, shm segments.

Every function tolerates a process that exits while it is being read (it returns an empty
answer or None): the killer and the runtime's restarts make that common.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection
from pathlib import Path

__all__ = ["children", "fd_count", "is_alive", "is_worker", "rss_bytes", "shm_segments",
           "shm_segments_all", "workers_of"]

_PROC = Path("/proc")
_SHM = Path("/dev/shm")
_RSS = re.compile(r"^VmRSS:\s+(\d+)\s+kB$", re.MULTILINE)


def fd_count(pid: int) -> int | None:
    """How many file descriptors ``pid`` has open (None when it is gone or unreadable)."""
    try:
        return len(os.listdir(_PROC / str(pid) / "fd"))
    except OSError:
        return None


def children(pid: int) -> set[int]:
    """The direct children of ``pid`` (of all its threads)."""
    found: set[int] = set()
    try:
        tasks = list((_PROC / str(pid) / "task").iterdir())
    except OSError:
        return found
    for task in tasks:
        try:
            found.update(int(p) for p in (task / "children").read_text().split())
        except (OSError, ValueError):
            continue
    return found


def _cmdline(pid: int) -> list[str]:
    try:
        raw = (_PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def is_worker(pid: int) -> bool:
    """Whether ``pid`` is an nnrt driver worker (``python -m nnrt.worker ...``)."""
    return "nnrt.worker" in _cmdline(pid)


def workers_of(pid: int) -> set[int]:
    """The driver worker processes among ``pid``'s children."""
    return {child for child in children(pid) if is_worker(child)}


def is_alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return False
    # the state follows the command name, which is in parentheses and may contain spaces
    return stat[stat.rfind(")") + 2:][:1] not in ("Z", "X", "")


def rss_bytes(pid: int) -> int | None:
    """The resident set size of ``pid`` in bytes (None when it is gone)."""
    try:
        match = _RSS.search((_PROC / str(pid) / "status").read_text())
    except OSError:
        return None
    return int(match.group(1)) * 1024 if match else None


def shm_segments(pids: Collection[int], directory: Path = _SHM) -> set[str]:
    """``/dev/shm`` entries named ``nnrt*`` that embed one of ``pids`` (``nnrt-<pid>-...``)."""
    wanted = {str(p) for p in pids}
    try:
        names = os.listdir(directory)
    except OSError:
        return set()
    return {name for name in names if name.startswith("nnrt")
            and wanted.intersection(re.findall(r"\d+", name))}


def shm_segments_all(directory: Path = _SHM) -> set[str]:
    """Every ``/dev/shm`` entry named ``nnrt*`` (a snapshot to diff against)."""
    try:
        return {name for name in os.listdir(directory) if name.startswith("nnrt")}
    except OSError:
        return set()
