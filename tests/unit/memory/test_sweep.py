"""Blobs of dead processes are swept; those of live processes and other names never are."""

from __future__ import annotations

import os
import subprocess
import sys

from nnrt.memory import Memory
from nnrt.memory.sweep import SHM_DIR, sweep_blobs_of, sweep_stale_blobs

LEAVE_A_BLOB = (
    "import os, sys; from nnrt.memory import Memory; m = Memory.create_blob(4096); "
    "print(m.name, flush=True); os._exit(0)"  # dies without unlinking
)


def _orphan() -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-c", LEAVE_A_BLOB], capture_output=True, text=True,
                          check=True, timeout=60)
    name = done.stdout.strip().lstrip("/")
    pid = int(name.split("-")[1])
    assert os.path.exists(os.path.join(SHM_DIR, name))
    return pid, name


def test_the_blobs_of_a_dead_process_are_swept() -> None:
    pid, name = _orphan()
    assert sweep_blobs_of(pid) == [name]
    assert not os.path.exists(os.path.join(SHM_DIR, name))
    assert sweep_blobs_of(pid) == []


def test_live_processes_and_other_names_are_left_alone() -> None:
    with Memory.create_blob(4096) as mine, Memory.create_blob(4096, "/nnrt-user-named") as named:
        pid, orphan = _orphan()
        removed = sweep_stale_blobs()
        assert orphan in removed
        assert mine.name is not None and os.path.exists(SHM_DIR + mine.name)
        assert os.path.exists(SHM_DIR + "/nnrt-user-named") and named.owner
        assert sweep_blobs_of(os.getpid()) == []  # alive
        assert sweep_blobs_of(pid) == []


HOLD_A_BLOB = (
    "import os, sys, time; from nnrt.memory import Memory; m = Memory.create_blob(4096); "
    "print(m.name, flush=True); sys.stdin.read(); time.sleep(0.3); os._exit(0)"
)  # dies 0.3 s after its stdin closes, without unlinking (as a killed client)


def test_the_service_sweeps_a_client_that_is_still_exiting() -> None:
    import anyio

    from nnrt.serve.received import sweep_when_gone

    proc = subprocess.Popen([sys.executable, "-c", HOLD_A_BLOB], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    name = proc.stdout.readline().strip().lstrip("/")  # type: ignore[union-attr]
    proc.stdin.close()  # type: ignore[union-attr]  # it exits in 0.3 s: "still exiting"
    try:
        assert sweep_blobs_of(proc.pid) == []  # alive now: an immediate sweep misses it
        removed = anyio.run(sweep_when_gone, proc.pid, 10.0)  # waits until it is gone
        assert removed == [name] and not os.path.exists(os.path.join(SHM_DIR, name))
    finally:
        proc.wait(timeout=30)
        proc.stdout.close()  # type: ignore[union-attr]


def test_a_client_that_runs_on_keeps_its_blobs() -> None:
    import anyio

    from nnrt.serve.received import sweep_when_gone

    proc = subprocess.Popen([sys.executable, "-c", HOLD_A_BLOB], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    name = proc.stdout.readline().strip().lstrip("/")  # type: ignore[union-attr]
    try:
        assert anyio.run(sweep_when_gone, proc.pid, 0.2) == []  # still running after 0.2 s
        assert os.path.exists(os.path.join(SHM_DIR, name))
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        proc.wait(timeout=30)
        proc.stdout.close()  # type: ignore[union-attr]
        sweep_blobs_of(proc.pid)
