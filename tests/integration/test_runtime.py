"""The async runtime with real worker processes, sockets and signals (asyncio and trio)."""

from __future__ import annotations

import os
import time

import anyio
import numpy as np
import pytest
from models import add_model, dynamic_add_model, slow_input, slow_model

import nnrt

pytestmark = pytest.mark.anyio

X = np.array([[1.0, 2.0, 3.0, 4.0]], np.float32)
EXPECTED = X + np.arange(1, 5, dtype=np.float32)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_compile_and_execute() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=2) as rt:
        compiled = await rt.compile(add_model())
        assert compiled.device == "reference"
        (y,) = await compiled.execute([X])
        np.testing.assert_array_equal(y, EXPECTED)
        (y,) = await compiled.execute({"x": X})
        np.testing.assert_array_equal(y, EXPECTED)
        assert [d.name for d in rt.devices] == ["reference"]


async def test_thousand_concurrent_executes() -> None:
    results: dict[int, np.ndarray] = {}
    async with nnrt.Runtime(drivers=["reference"], workers=2) as rt:
        compiled = await rt.compile(add_model())

        async def one(k: int) -> None:
            (results[k],) = await compiled.execute([X * k])

        async with anyio.create_task_group() as tg:
            for k in range(1000):
                tg.start_soon(one, k)
        stats = rt.statistics()
    assert len(results) == 1000
    for k, y in results.items():
        np.testing.assert_array_equal(y, X * k + [1, 2, 3, 4])
    assert stats.completed >= 1000 and stats.failed == 0


async def test_dynamic_output_shapes() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        compiled = await rt.compile(dynamic_add_model())
        for n in (1, 5):
            (y,) = await compiled.execute([np.ones((n, 3), np.float32)])
            assert y.shape == (n, 3)


async def test_caller_output_buffers_and_insufficient_size() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        compiled = await rt.compile(dynamic_add_model())
        buffer = np.zeros((4, 3), np.float32)
        (y,) = await compiled.execute([np.ones((2, 3), np.float32)], outputs=[buffer])
        assert y.shape == (2, 3) and np.shares_memory(y, buffer)
        np.testing.assert_array_equal(buffer[:2], 2.0)
        with pytest.raises(nnrt.OutputInsufficientSize) as info:
            await compiled.execute([np.ones((5, 3), np.float32)], outputs=[buffer])
        assert info.value.shapes == [(5, 3)]


async def test_bad_inputs_are_bad_data_and_do_not_hurt_workers() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        compiled = await rt.compile(add_model())
        with pytest.raises(nnrt.BadData, match="shape"):
            await compiled.execute([np.ones((2, 4), np.float32)])
        (y,) = await compiled.execute([X])
        np.testing.assert_array_equal(y, EXPECTED)


async def test_dict_inputs_by_name_run_as_by_position_and_bad_ones_name_the_input() -> None:
    b = nnrt.ModelBuilder()
    x_in = b.input("x", (2, 3))
    n_in = b.input("n", (2,), "int64")  # TENSOR_INT32 inside, int64 at the boundary
    b.output(b.add(x_in, np.ones((1, 3), np.float32)), b.add(n_in, np.ones(2, np.int32)),
             io_dtypes=[None, "int64"])
    model = b.build()
    x, n = np.arange(6, dtype=np.float32).reshape(2, 3), np.array([5, 6], np.int64)
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        compiled = await rt.compile(model)
        fast = await compiled.execute({"x": x, "n": n})
        general = await compiled.execute({0: x, 1: n})  # by position: the general path
        for a, b in zip(fast, general, strict=True):
            np.testing.assert_array_equal(a, b)
        assert fast[1].dtype == np.int64 and list(fast[1]) == [6, 7]
        with pytest.raises(nnrt.BadData, match="'n'"):
            await compiled.execute({"x": x, "n": np.array([5, 2**40], np.int64)})


async def test_compile_rejects_unfinished_and_unsupported_models() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        with pytest.raises(nnrt.BadState, match="not finished"):
            await rt.compile(nnrt.Model())
        m = nnrt.Model()
        a = m.add_operand(nnrt.OperandType.TENSOR_QUANT8_ASYMM, (2,), 0.5, 0)
        out = m.add_operand(nnrt.OperandType.TENSOR_QUANT8_ASYMM, (2,), 0.5, 0)
        # a variant without a kernel (quantised RSQRT, NNAPI feature level 7): the workers run
        # every kernel nnrt has
        m.add_operation(nnrt.OperationType.RSQRT, [a], [out])
        m.identify_inputs_and_outputs([a], [out])
        with pytest.raises(nnrt.Unsupported, match=r"RSQRT\).*not implemented"):
            await rt.compile(m.finish())
        with pytest.raises(nnrt.BadData, match="unknown devices"):
            await rt.compile(add_model(), devices=["npu"])


async def test_unknown_driver_lists_known_ones() -> None:
    with pytest.raises(nnrt.BadData, match="reference"):
        async with nnrt.Runtime(drivers=["com.example.missing"]):
            pass


async def test_worker_killed_mid_execute_fails_only_its_requests_then_recovers() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=2, max_in_flight=1) as rt:
        slow = await rt.compile(slow_model())
        fast = await rt.compile(add_model())
        pool = rt._core.backend.pools["reference"]  # type: ignore[union-attr]
        outcomes: dict[int, object] = {}

        async def run(k: int) -> None:
            try:
                await slow.execute([slow_input()])
                outcomes[k] = "ok"
            except nnrt.UnavailableDevice:
                outcomes[k] = (time.monotonic(), "unavailable")

        async with anyio.create_task_group() as tg:
            for k in range(2):
                tg.start_soon(run, k)
            await anyio.sleep(0.3)
            victim = pool.slots[0]
            assert victim.in_flight == 1
            killed_at = time.monotonic()
            victim.kill()
        failed = [v for v in outcomes.values() if v != "ok"]
        assert len(failed) == 1, outcomes
        assert failed[0][0] - killed_at < 1.0  # type: ignore[index]
        assert list(outcomes.values()).count("ok") == 1
        for _ in range(4):  # later requests succeed, re-preparing on the new worker
            (y,) = await fast.execute([X])
            np.testing.assert_array_equal(y, EXPECTED)
        with anyio.fail_after(10):
            while sum(s.alive for s in pool.slots) < 2:
                await anyio.sleep(0.05)
        await slow.execute([slow_input()])
        assert rt.statistics().restarts == 1


async def test_cancellation_frees_the_worker_promptly() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        slow = await rt.compile(slow_model())
        fast = await rt.compile(add_model())
        with anyio.move_on_after(0.2):
            await slow.execute([slow_input()])
        start = time.monotonic()
        (y,) = await fast.execute([X])
        assert time.monotonic() - start < 1.0
        np.testing.assert_array_equal(y, EXPECTED)


async def test_deadline_missed() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        slow = await rt.compile(slow_model())
        fast = await rt.compile(add_model())
        start = time.monotonic()
        with pytest.raises(nnrt.DeadlineMissed):
            await slow.execute([slow_input()], timeout=0.1)
        assert time.monotonic() - start < 1.0
        (y,) = await fast.execute([X], timeout=5)
        np.testing.assert_array_equal(y, EXPECTED)


async def test_priority_ordering_when_workers_are_busy() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=1, max_in_flight=1) as rt:
        slow = await rt.compile(slow_model(ops=4))
        low = await rt.compile(add_model(), priority=nnrt.Priority.LOW)
        high = await rt.compile(add_model(), priority=nnrt.Priority.HIGH)
        order: list[str] = []

        async def run(name: str, compiled: nnrt.CompiledModel) -> None:
            await compiled.execute([X])
            order.append(name)

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow.execute, [slow_input()])
            await anyio.sleep(0.05)
            for k in range(3):
                tg.start_soon(run, f"low{k}", low)
            await anyio.sleep(0.02)
            tg.start_soon(run, "high", high)
        assert order[0] == "high", order


async def test_children_reaped_when_body_raises() -> None:
    pids: list[int] = []
    with pytest.raises(RuntimeError, match="boom"):
        async with nnrt.Runtime(drivers=["reference"], workers=2) as rt:
            pool = rt._core.backend.pools["reference"]  # type: ignore[union-attr]
            pids = [s.process.pid for s in pool.slots]  # type: ignore[union-attr]
            raise RuntimeError("boom")
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


async def test_children_reaped_when_cancelled() -> None:
    pids: list[int] = []
    with anyio.CancelScope() as scope:
        async with nnrt.Runtime(drivers=["reference"], workers=2) as rt:
            pool = rt._core.backend.pools["reference"]  # type: ignore[union-attr]
            pids = [s.process.pid for s in pool.slots]  # type: ignore[union-attr]
            scope.cancel()
            await anyio.sleep_forever()
    assert scope.cancelled_caught
    assert pids
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_sync_facade() -> None:
    (y,) = nnrt.run_sync(add_model(), [X])
    np.testing.assert_array_equal(y, EXPECTED)
    with nnrt.Runtime.sync(workers=1) as rt:
        compiled = rt.compile(add_model())
        for _ in range(3):
            (y,) = compiled.execute([X])
        np.testing.assert_array_equal(y, EXPECTED)
        assert rt.statistics().completed >= 3


async def test_pool_that_cannot_restart_fails_fast_then_recovers(
        tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "broken"  # type: ignore[operator]
    monkeypatch.setenv("NNRT_TEST_BROKEN_MARKER", str(marker))
    async with nnrt.Runtime(drivers=["flaky_driver:factory"], workers=1) as rt:
        compiled = await rt.compile(add_model())
        pool = rt._core.backend.pools["flaky_driver:factory"]  # type: ignore[union-attr]
        marker.write_text("x")
        pool.slots[0].kill()
        with anyio.fail_after(20):
            while not pool.broken:
                await anyio.sleep(0.05)
        start = time.monotonic()
        with pytest.raises(nnrt.UnavailableDevice, match="worker can be started"):
            await compiled.execute([X])
        assert time.monotonic() - start < 1.0
        marker.unlink()
        with anyio.fail_after(20):
            while not pool.slots[0].alive:
                await anyio.sleep(0.05)
        (y,) = await compiled.execute([X])
        np.testing.assert_array_equal(y, EXPECTED)


async def test_worker_stuck_after_cancel_is_killed_and_requests_move_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NNRT_TEST_STUCK_SECONDS", "30")
    async with nnrt.Runtime(drivers=["flaky_driver:StuckDriver"], workers=1,
                            cancel_grace=0.5) as rt:
        compiled = await rt.compile(add_model())
        start = time.monotonic()
        with pytest.raises(nnrt.DeadlineMissed):
            await compiled.execute([X], timeout=0.2)
        pool = rt._core.backend.pools["flaky_driver:StuckDriver"]  # type: ignore[union-attr]
        with anyio.fail_after(10):
            while pool.restarts < 1 or not pool.slots[0].alive:
                await anyio.sleep(0.05)
        assert time.monotonic() - start < 5  # killed after the grace, not after 30 s
        monkeypatch.setenv("NNRT_TEST_STUCK_SECONDS", "0")  # the restarted worker inherits it
        pool.slots[0].kill()  # restart once more so the new worker sees the new setting
        with anyio.fail_after(10):
            while pool.restarts < 2 or not pool.slots[0].alive:
                await anyio.sleep(0.05)
            (y,) = await compiled.execute([X])
        np.testing.assert_array_equal(y, EXPECTED)


async def test_compiled_models_dropped_without_release_are_freed() -> None:
    # a worker holds at most 4096 prepared models (nnrt.worker.connection.MAX_HANDLES): a
    # service compiling per request must not run out because it drops what it compiled
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        for _ in range(4200):  # distinct model objects: no compile shares another's
            compiled = await rt.compile(add_model())
        (y,) = await compiled.execute([X])
        np.testing.assert_array_equal(y, X + X)
        kept = await rt.compile(add_model())
        await kept.release()  # released explicitly: its finalizer queues nothing more
        del kept
        assert not rt._core.dropped


async def test_a_compiled_model_describes_its_inputs_and_outputs() -> None:
    model = add_model()
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        compiled = await rt.compile(model)
        assert compiled.inputs == model.input_info and compiled.outputs == model.output_info
        (x,) = compiled.inputs
        feed = {x.name: np.ones([d or 1 for d in x.shape], x.dtype)}  # type: ignore[union-attr]
        (y,) = await compiled.execute(feed)
        assert y.dtype == compiled.outputs[0].dtype
