"""Reclaiming the POSIX-shm blobs of processes that died without unlinking them.

Blobs nnrt creates are named ``/nnrt-<pid>-<16 hex digits>`` after the creating process. A
process killed with its blobs alive cannot unlink them, and POSIX shared memory outlives every
process. :func:`sweep_blobs_of` removes the nnrt blobs of one process that is gone (the shared
service calls it when a client's connection ends and the client's pid no longer exists);
:func:`sweep_stale_blobs` does so for every such process (``nnrt serve`` at start). A process
still running is never touched; blobs named by the user (any other name) never are either.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re

__all__ = ["SHM_DIR", "pid_alive", "sweep_blobs_of", "sweep_stale_blobs"]

#: Where Linux exposes POSIX shared memory.
SHM_DIR = "/dev/shm"
_NAME = re.compile(r"nnrt-(\d{1,10})-[0-9a-f]{16}")
_log = logging.getLogger("nnrt.memory")


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs (one of another user counts; a zombie does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rpartition(b")")[2].split()[:1]
    except OSError:
        return True
    return state != [b"Z"]


def _sweep(wanted: int | None) -> list[str]:
    removed: list[str] = []
    try:
        names = os.listdir(SHM_DIR)
    except OSError:
        return removed
    dead: dict[int, bool] = {}
    for name in names:
        match = _NAME.fullmatch(name)
        if match is None:
            continue
        pid = int(match.group(1))
        if (wanted is not None and pid != wanted) or pid == os.getpid():
            continue
        if pid not in dead:
            dead[pid] = not pid_alive(pid)
        if dead[pid]:
            with contextlib.suppress(FileNotFoundError, PermissionError):
                os.unlink(os.path.join(SHM_DIR, name))
                removed.append(name)
    if removed:
        _log.info("removed %d shared-memory blob(s) of dead process(es): %s", len(removed),
                  ", ".join(removed[:8]))
    return removed


def sweep_blobs_of(pid: int) -> list[str]:
    """Unlink the nnrt blobs created by ``pid`` if that process is gone; their names."""
    if pid <= 0 or pid_alive(pid):
        return []
    return _sweep(pid)


def sweep_stale_blobs() -> list[str]:
    """Unlink the nnrt blobs of every process that is gone; their names."""
    return _sweep(None)
