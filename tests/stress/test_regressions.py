"""Bugs the stress harness found, each pinned by a small real reproduction."""

from __future__ import annotations

from pathlib import Path

import anyio
import numpy as np
import pytest

import nnrt
from nnrt.stress.models import add_model, mlp_model


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_cancelled_first_use_of_a_memory_does_not_break_its_later_use() -> None:
    """A request cancelled while its pool's ``map`` is in flight left the client believing the
    pool unshared; the next request mapped it again and the worker refused with BadData "pool N
    is already mapped on this connection" (found by the stress run's cancellations). The map
    must complete (or be accounted for) whatever happens to the request that triggered it."""
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        compiled = await rt.compile(add_model())
        for k in range(60):
            memory = rt.memory.create(4096)
            try:
                x = memory.ndarray(np.float32, (1, 64))
                x[:] = k
                with anyio.move_on_after(k % 20 * 1e-4):
                    await compiled.execute([x])
                (y,) = await compiled.execute([x])
                assert np.array_equal(y, x + np.arange(64, dtype=np.float32) / 8)
            finally:
                memory.close()


@pytest.mark.anyio
async def test_concurrent_cached_compiles_of_one_model_in_one_process(tmp_path: Path) -> None:
    """Two compiles of the same model with one cache dir in one process: the second took the
    entry's file lock with a blocking wait *on the event loop thread* while the first held it
    awaiting its worker's reply — the loop froze for the lock timeout (10 s, stalling every
    other request of the process or of the whole service) and the compile failed with
    CacheError "cache busy". Waiting for the lock must not block the event loop."""
    async with nnrt.Runtime(drivers=("cpu",), workers=1) as rt:
        errors: list[BaseException] = []

        async def compile_one() -> None:
            try:
                await rt.compile(mlp_model(), devices=["cpu"], cache_dir=tmp_path)
            except nnrt.NnrtError as exc:
                errors.append(exc)

        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(compile_one)
        assert errors == []


@pytest.mark.anyio
async def test_cancelled_executes_on_fresh_memories_leave_no_descriptor() -> None:
    """Executions cancelled around the first share of a fresh memory left one memfd
    (``/memfd:nnrt``) open in the client after every memory and the runtime were closed (the
    ``no_leaks`` fixture reports it). Found with the stress run's cancellation traffic."""
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        compiled = await rt.compile(add_model())
        for k in range(40):
            memory = rt.memory.create(4096)
            try:
                x = memory.ndarray(np.float32, (1, 64))
                x[:] = 1
                with anyio.move_on_after(k % 20 * 1e-4):
                    await compiled.execute([x])
            finally:
                memory.close()


@pytest.mark.anyio
async def test_worker_killed_while_the_runtime_starts_gives_a_typed_error_at_most() -> None:
    """The stress killer SIGKILLed a worker of an embedded client whose runtime was still
    starting: ``Slot.supervise`` re-raises a failure of the first start, so ``async with
    Runtime`` raised a nested ExceptionGroup around ``UnavailableDevice`` (from the ``hello`` in
    ``pool.py`` ``_serve_one``) and the client died. A worker dying during start-up should be
    restarted like any other (or, at worst, surface as one typed ``UnavailableDevice``)."""
    import os
    import signal

    from nnrt.stress import procs

    async def kill_first_worker() -> None:
        while True:
            for pid in procs.workers_of(os.getpid()):
                if procs.is_alive(pid):
                    os.kill(pid, signal.SIGKILL)
                    return
            await anyio.sleep(0.001)

    outcome: BaseException | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(kill_first_worker)
        try:
            async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
                compiled = await rt.compile(add_model())
                (y,) = await compiled.execute([np.zeros((1, 64), np.float32)])
                assert np.array_equal(y, np.arange(64, dtype=np.float32).reshape(1, 64) / 8)
        except BaseException as exc:  # inspected below
            outcome = exc
    assert outcome is None or isinstance(outcome, nnrt.UnavailableDevice), repr(outcome)
