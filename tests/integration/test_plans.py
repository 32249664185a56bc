"""Models split across drivers: placement, multi-step execution plans, per-partition fallback,
a worker dying mid-plan, strict device control — real worker processes throughout."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import anyio
import numpy as np
import pytest
from models import slow_input
from plugin_drivers import ACME, VENDOR
from service_client import running_service

import nnrt
from nnrt.model.builder import ModelBuilder

pytestmark = pytest.mark.anyio

RNG = np.random.default_rng(7)
X = (RNG.random((2, 3)) + 1).astype(np.float32)
Y = RNG.random((2, 3)).astype(np.float32)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def mixed_model() -> nnrt.Model:
    """ADD -> TANH -> MUL -> DIV -> ADD: acme takes ADD/MUL, the rest falls back."""
    b = ModelBuilder()
    x, y = b.input("x", (2, 3)), b.input("y", (2, 3))
    a = b.add(x, y)
    t = b.tanh(a)
    m = b.mul(t, y)
    d = b.div(m, x)
    b.output(b.add(d, t))
    return b.build()


def branches_model() -> nnrt.Model:
    """Two independent ADD->MUL branches joined by a DIV: one acme partition per branch would
    be LiteRT's needless split; both branches share one partition here."""
    b = ModelBuilder()
    x, y = b.input("x", (2, 3)), b.input("y", (2, 3))
    left = b.mul(b.add(x, y), y)
    right = b.mul(b.add(y, y), x)
    b.output(b.div(left, right))
    return b.build()


async def test_mixed_model_runs_across_acme_and_reference() -> None:
    model = mixed_model()
    async with nnrt.Runtime(drivers=[ACME, "reference"], workers=1) as rt:
        compiled = await rt.compile(model, step_cost=0)
        report = compiled.placement()
        assert [op.driver for op in report.operations] == [ACME, "reference", ACME,
                                                           "reference", ACME]
        assert "TANH is not accelerated" in report.operations[1].rejected[ACME]
        assert "preferred" in report.operations[0].rejected["reference"]
        assert compiled.steps == 5
        for _ in range(3):
            (out,) = await compiled.execute({"x": X, "y": Y})
            np.testing.assert_array_equal(out, nnrt.reference.run(model, [X, Y])[0])
        await compiled.release()


async def test_independent_branches_share_one_partition_and_run() -> None:
    model = branches_model()
    async with nnrt.Runtime(drivers=[ACME, "reference"], workers=1) as rt:
        compiled = await rt.compile(model, step_cost=0)
        steps = compiled.placement().steps
        assert [(s.driver, len(s.operations)) for s in steps] == [(ACME, 4), ("reference", 1)]
        (out,) = await compiled.execute([X, Y])
        np.testing.assert_array_equal(out, nnrt.reference.run(model, [X, Y])[0])


async def test_large_intermediates_travel_through_shared_memory() -> None:
    b = ModelBuilder()
    x = b.input("x", (256, 256))
    t = b.tanh(b.add(x, x))          # acme ADD, reference TANH
    b.output(b.mul(t, x))            # acme MUL
    model = b.build()
    big = RNG.random((256, 256)).astype(np.float32)
    async with nnrt.Runtime(drivers=[ACME, "reference"], workers=1) as rt:
        compiled = await rt.compile(model, step_cost=0)
        assert compiled.steps == 3
        (out,) = await compiled.execute([big])
        np.testing.assert_allclose(out, nnrt.reference.run(model, [big])[0], rtol=1e-6)
        # the 256 KiB result came back as a view of the runtime's shared arena (zero-copy)
        from nnrt.memory import find_memory
        assert find_memory(out) is not None


async def test_a_partition_whose_compile_fails_falls_back_alone() -> None:
    model = mixed_model()
    crash = "plugin_drivers:mul_crash"
    async with nnrt.Runtime(drivers=[crash, "reference"], workers=1) as rt:
        compiled = await rt.compile(model, step_cost=0)
        steps = compiled.placement().steps
        assert [s.driver for s in steps] == [crash, "reference", "reference", "reference",
                                             crash]
        assert "MUL lowering crashed" in (steps[2].note or "")
        assert steps[0].note is None and steps[4].note is None
        (out,) = await compiled.execute([X, Y])
        np.testing.assert_array_equal(out, nnrt.reference.run(model, [X, Y])[0])


async def test_strict_devices_without_fallback_list_every_unsupported_operation() -> None:
    async with nnrt.Runtime(drivers=[ACME, "reference"], workers=1) as rt:
        with pytest.raises(nnrt.Unsupported) as caught:
            await rt.compile(mixed_model(), devices=[ACME], allow_fallback=False)
        message = str(caught.value)
        assert "operation 1 (TANH)" in message and "operation 3 (DIV)" in message
        compiled = await rt.compile(mixed_model(), devices=[ACME])  # fallback allowed
        assert {s.driver for s in compiled.placement().steps} == {ACME, "reference"}
        only_reference = await rt.compile(mixed_model(), devices=["reference"])
        assert only_reference.steps == 1 and only_reference.device == "reference"


async def test_many_partitions_draw_a_warning() -> None:
    b = ModelBuilder()
    y = b.input("x", (2, 3))
    for _ in range(6):
        y = b.tanh(b.add(y, y))
    b.output(y)
    async with nnrt.Runtime(drivers=[ACME, "reference"], workers=1) as rt:
        with pytest.warns(nnrt.PartitionWarning, match="12 partitions"):
            compiled = await rt.compile(b.build(), step_cost=0)
        (out,) = await compiled.execute([X])
        np.testing.assert_allclose(out, nnrt.reference.run(compiled.model, [X])[0])


async def test_device_memories_need_a_one_step_model() -> None:
    async with nnrt.Runtime(drivers=[ACME, "reference"], workers=1) as rt:
        compiled = await rt.compile(mixed_model(), step_cost=0)
        with pytest.raises(nnrt.BadData, match="steps on several drivers"):
            await rt.allocate(nnrt.BufferDesc((2, 3)), [nnrt.BufferRole(compiled, 0)])


async def test_a_worker_dying_mid_plan_fails_the_execution_cleanly() -> None:
    size = slow_input().shape[1]
    b = ModelBuilder()
    x = b.input("x", (1, size, size))
    w = b.constant(np.eye(size, dtype=np.float32).reshape(1, size, size) * 0.5)
    y = b.add(x, x)                                      # acme
    for _ in range(30):                                  # reference, about a second
        y = b.operation(nnrt.OperationType.BATCH_MATMUL, y, w, False, False)[0]
    b.output(b.add(y, y))                                # acme
    model = b.build()
    async with nnrt.Runtime(drivers=[ACME, "reference"], workers=1) as rt:
        compiled = await rt.compile(model, step_cost=0)
        assert compiled.steps == 3
        pool = rt._core.backend.pools["reference"]  # type: ignore[union-attr]
        outcome: list[object] = []

        async def run() -> None:
            try:
                await compiled.execute([slow_input()])
                outcome.append("ok")
            except nnrt.UnavailableDevice:
                outcome.append(time.monotonic())

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            with anyio.fail_after(10):
                while pool.slots[0].in_flight == 0:
                    await anyio.sleep(0.01)
            killed_at = time.monotonic()
            pool.slots[0].kill()
        assert outcome and outcome[0] != "ok"
        assert outcome[0] - killed_at < 1.0  # type: ignore[operator]
        (out,) = await compiled.execute([slow_input()])  # recovered on a new worker
        np.testing.assert_allclose(out, nnrt.reference.run(model, [slow_input()])[0])


async def test_a_model_runs_across_acme_cpu_and_reference() -> None:
    rng = np.random.default_rng(11)
    b = ModelBuilder()
    x = b.input("image", (1, 4, 4, 2))
    y = b.conv2d(x, b.constant(rng.standard_normal((3, 3, 3, 2)).astype(np.float32) * 0.3),
                 b.constant(np.zeros(3, np.float32)), padding="same", activation="relu")
    a = b.add(y, y)                                         # acme
    e = b.operation(nnrt.OperationType.L2_NORMALIZATION, a)[0]  # reference only
    m = b.mul(e, y)                                             # acme
    flat = b.reshape(m, (1, 48))                            # cpu
    b.output(b.fully_connected(flat, b.constant(rng.standard_normal((5, 48)).astype(
        np.float32)), b.constant(np.zeros(5, np.float32))))
    model = b.build()
    image = rng.standard_normal((1, 4, 4, 2)).astype(np.float32)
    async with nnrt.Runtime(drivers=[ACME, "cpu", "reference"], workers=1) as rt:
        compiled = await rt.compile(model, step_cost=0)
        report = compiled.placement()
        drivers = {op.type_name: op.driver for op in report.operations}
        assert drivers == {"CONV_2D": "cpu", "ADD": ACME, "L2_NORMALIZATION": "reference",
                           "MUL": ACME, "RESHAPE": "cpu", "FULLY_CONNECTED": "cpu"}
        norm = next(op for op in report.operations if op.type_name == "L2_NORMALIZATION")
        assert "L2_NORMALIZATION is not accelerated" in norm.rejected[ACME]
        assert "not accelerated" in norm.rejected["cpu"]
        assert "not supported" in next(op for op in report.operations
                                       if op.type_name == "CONV_2D").rejected[ACME]
        assert set(report.drivers()) == {ACME, "cpu", "reference"}
        (out,) = await compiled.execute([image])
        np.testing.assert_allclose(out, nnrt.reference.run(model, [image])[0], rtol=1e-4,
                                   atol=1e-5)


async def test_shared_mode_partitions_over_the_service_pools(tmp_path: Path) -> None:
    path = str(tmp_path / "nnrt.sock")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([VENDOR, *sys.path])}
    with running_service(path, workers=1, extra=["--driver", ACME], env=env):
        model = mixed_model()
        async with nnrt.Runtime(connect=path) as rt:
            compiled = await rt.compile(model, step_cost=0)
            assert [op.driver for op in compiled.placement().operations] == [
                ACME, "reference", ACME, "reference", ACME]
            (out,) = await compiled.execute([X, Y])
            np.testing.assert_array_equal(out, nnrt.reference.run(model, [X, Y])[0])
            await compiled.release()
