"""Routing between a pool's workers: a request never waits behind a prepare that another
worker, holding the model already, makes unnecessary."""

from __future__ import annotations

import time

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
