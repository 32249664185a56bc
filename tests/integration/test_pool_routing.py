"""Routing between a pool's workers: a request never waits behind a prepare that another
worker, holding the model already, makes unnecessary."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import numpy as np
import pytest
from models import add_model

import nnrt

PREPARE_SECONDS = 1.5


@pytest.mark.anyio
async def test_requests_go_to_the_worker_that_has_the_model_while_another_prepares_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NNRT_TEST_PREPARE_SECONDS", str(PREPARE_SECONDS))
    driver = "flaky_driver:SlowPrepareDriver"
    x = np.ones((1, 4), np.float32)
    async with nnrt.Runtime(drivers=[driver], workers=2) as rt:
        compiled = await rt.compile(add_model())  # prepared on one worker (slowly)
        pool = rt._core.backend.pools[driver]  # type: ignore[union-attr]
        key = compiled.ref.key[0]
        assert sum(slot.handle_of(key) is not None for slot in pool.slots) == 1
        started = time.monotonic()
        async with anyio.create_task_group() as tg:
            for _ in range(16):
                tg.start_soon(compiled.execute, [x])
        took = time.monotonic() - started
        assert took < PREPARE_SECONDS / 2, f"requests waited {took:.2f} s behind a prepare"
        with anyio.fail_after(30):  # ...which the other worker made in the background
            while not all(slot.handle_of(key) is not None for slot in pool.slots):
                await anyio.sleep(0.05)
        (y,) = await compiled.execute([x])
        np.testing.assert_array_equal(y, x + np.arange(1, 5, dtype=np.float32))


def _weights_model() -> nnrt.Model:
    """y = x @ W^T with W (64 KiB) travelling by reference: preparing it maps a pool first."""
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 128))
    w = np.random.default_rng(0).standard_normal((128, 128)).astype(np.float32)
    b.output(b.fully_connected(x, w, np.zeros(128, np.float32)))
    return b.build()


@pytest.mark.anyio
async def test_concurrent_first_requests_on_a_worker_prepare_the_model_once(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    log = tmp_path / "prepares"
    monkeypatch.setenv("NNRT_TEST_PREPARE_SECONDS", "0.2")
    monkeypatch.setenv("NNRT_TEST_PREPARE_LOG", str(log))
    driver = "flaky_driver:SlowPrepareDriver"
    async with nnrt.Runtime(drivers=[driver], workers=2) as rt:
        compiled = await rt.compile(_weights_model())
        pool = rt._core.backend.pools[driver]  # type: ignore[union-attr]
        key = compiled.ref.key
        (fresh,) = [slot for slot in pool.slots if slot.handle_of(key[0]) is None]
        async with anyio.create_task_group() as tg:
            for _ in range(8):
                tg.start_soon(fresh.ensure_prepared, key)
        assert fresh.handle_of(key[0]) is not None
        assert fresh.process is not None
        pids = log.read_text().split()
        assert pids.count(str(fresh.process.pid)) == 1, pids  # one prepare, not eight
