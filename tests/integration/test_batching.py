"""Dynamic batching with real workers: merged executions equal unbatched ones, and each request
keeps its own deadline, priority, cancellation and errors."""

from __future__ import annotations

import time
from typing import Any

import anyio
import numpy as np
import pytest

import nnrt
from nnrt.model.types import OperationType as Op

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(0)
W = (RNG.standard_normal((4, 8)) * 0.5).astype(np.float32)
TABLE = RNG.standard_normal((10, 4)).astype(np.float32)


def mlp() -> nnrt.Model:
    """softmax(relu(x W^T + b)) on x [?, 8] (rows independent)."""
    b = nnrt.ModelBuilder()
    x = b.input("x", (0, 8))
    y = b.fully_connected(x, W, np.arange(4, dtype=np.float32), activation="relu")
    b.output(b.softmax(y), names=["y"])
    return b.build()


def stateful() -> nnrt.Model:
    """As silero VAD's layout: x [?, 4] batched on axis 0, state [2, ?, 3] on axis 1, a scale
    [1] every request of a batch shares; y = x * scale, state_out = state + 1."""
    b = nnrt.ModelBuilder()
    x = b.input("x", (0, 4))
    state = b.input("state", (2, 0, 3))
    scale = b.input("scale", (1,))
    b.output(b.mul(x, scale), b.add(state, np.ones((1,), np.float32)), names=["y", "state_out"])
    return b.build()


def lookup() -> nnrt.Model:
    """GATHER of rows of a constant table by an index per row: an index out of range fails."""
    b = nnrt.ModelBuilder()
    ids = b.input("ids", (0,), "int32")
    (rows,) = b.operation(Op.GATHER, TABLE, 0, ids)
    b.output(rows, names=["rows"])
    return b.build()


async def _gather(compiled: nnrt.CompiledModel, requests: list[Any], **kwargs: Any
                  ) -> list[Any]:
    """Execute every request concurrently; each result is its outputs or the exception."""
    results: list[Any] = [None] * len(requests)

    async def one(k: int) -> None:
        try:
            results[k] = await compiled.execute(requests[k], **kwargs)
        except nnrt.NnrtError as exc:
            results[k] = exc

    async with anyio.create_task_group() as tg:
        for k in range(len(requests)):
            tg.start_soon(one, k)
    return results


@pytest.mark.anyio
@pytest.mark.parametrize("driver", ["reference", "cpu", "litert"])
async def test_batched_results_equal_unbatched_ones_bit_for_bit(driver: str) -> None:
    """Bit for bit on the reference and cpu drivers (row-independent kernels); LiteRT's
    XNNPACK kernels tile matrix products by rows, so litert is held to float32 rounding."""
    if driver == "litert":
        pytest.importorskip("ai_edge_litert", reason="ai-edge-litert has no wheel here")
    requests = [[RNG.standard_normal((1 + k % 3, 8)).astype(np.float32)] for k in range(40)]
    async with nnrt.Runtime(drivers=[driver]) as rt:
        plain = await rt.compile(mlp())
        expected = [await plain.execute(r) for r in requests]
        batched = await rt.compile(mlp(), batching=nnrt.Batching(max_batch=16, max_delay=0.05))
        results = await _gather(batched, requests)
        batcher = batched.batcher
        assert batcher is not None
        assert batcher.requests == 40 and batcher.executions < 40 / 2  # really merged
        assert {s.driver for s in batched.placement().steps} == {driver}
        for got, want in zip(results, expected, strict=True):
            if driver == "litert":
                np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-7)
            else:
                np.testing.assert_array_equal(got[0], want[0])
        stats = batched.metrics.snapshot()
        assert stats.requests == 40 and stats.latency.count == 40
        assert stats.batch_size.count == batcher.executions  # one per batched execution
        assert stats.batch_size.sum == sum(len(r[0]) for r in requests)  # rows, unpadded
        assert stats.queue_wait.count == 40
        # padded to the preferred sizes (powers of two): one prepared variant per size
        assert all(shape[0][0] in (1, 2, 4, 8, 16) for shape in batched.variants.shapes)


@pytest.mark.anyio
async def test_direct_mode_sends_each_request_alone_with_the_same_results() -> None:
    """Where trials find batching serves less (a compute-bound model), requests go straight to
    a worker each, as unbatched ones do: pinned here, the mode the trials would switch to."""
    requests = [[RNG.standard_normal((1 + k % 3, 8)).astype(np.float32)] for k in range(12)]
    async with nnrt.Runtime(drivers=["reference"]) as rt:
        plain = await rt.compile(mlp())
        expected = [await plain.execute(r) for r in requests]
        batched = await rt.compile(mlp(), batching=nnrt.Batching(max_batch=16, max_delay=0.05))
        batcher = batched.batcher
        assert batcher is not None and batcher.batching  # batched until trials say otherwise
        batcher.fix_modes(batched=False)
        assert not batcher.batching
        started = time.monotonic()
        results = await _gather(batched, requests)
        assert time.monotonic() - started < 0.05 * 3  # nobody waited out max_delay
        assert batcher.direct == 12 and batcher.executions == 0
        for got, want in zip(results, expected, strict=True):
            np.testing.assert_array_equal(got[0], want[0])
        stats = batched.metrics.snapshot()
        assert stats.requests == 12 and stats.batch_size.count == 12  # batches of one request
        assert stats.batch_size.sum == sum(len(r[0]) for r in requests)
        (bad,) = await _gather(batched, [[np.ones((2, 7), np.float32)]])
        assert isinstance(bad, nnrt.BadData)  # checked as before: the wrong shape, alone
        batcher.fix_modes(batched=True)
        assert batcher.batching
        await _gather(batched, requests)
        assert batcher.executions >= 1


def conv_rows() -> nnrt.Model:
    """Three 3x3 convolutions of 64x64x16 images: an image costs as much in a batch as alone
    (compute-bound, as magika is; 20-70 ms each on the reference driver)."""
    b = nnrt.ModelBuilder()
    y = b.input("x", (0, 64, 64, 16))
    for _ in range(3):
        y = b.conv2d(y, (RNG.standard_normal((16, 3, 3, 16)) * 0.1).astype(np.float32),
                     np.zeros(16, np.float32), padding="same", activation="relu")
    b.output(y, names=["y"])
    return b.build()


@pytest.mark.anyio
async def test_batching_that_saves_nothing_turns_direct_and_batching_that_pays_stays() -> None:
    """The batcher times executions of sizes four or more apart: a model whose row costs as
    much in a batch of 8 as alone is served direct from then on, a model dominated by its
    per-request cost stays batched (neither is tried the other way)."""
    model = conv_rows()
    images = [RNG.standard_normal((1, 64, 64, 16)).astype(np.float32) for _ in range(4)]
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        expected = await (await rt.compile(model)).execute([images[2]])
        heavy = await rt.compile(model, batching=nnrt.Batching(max_batch=8))
        light = await rt.compile(mlp(), batching=nnrt.Batching(max_batch=8))
        for compiled, shape in ((heavy, (64, 64, 16)), (light, (8,))):
            for rows in (1, 8) * 4:  # one request of 8 rows is a batch of 8; the first of
                # each size is not counted, the three others are
                await compiled.execute([np.ones((rows, *shape), np.float32)])
        assert heavy.batcher is not None and light.batcher is not None
        assert not heavy.batcher.batching and light.batcher.batching
        assert light.batcher.direct == 0
        before = heavy.batcher.direct
        results = await _gather(heavy, [[image] for image in images])
        assert heavy.batcher.direct == before + 4
        np.testing.assert_array_equal(results[2][0], expected[0])


@pytest.mark.anyio
async def test_under_load_single_requests_alone_time_a_small_execution() -> None:
    """Eight tasks sending single images in a loop make only full batches; the batcher then
    runs a request alone now and then until a small execution is timed, and the costs send
    the compute-bound model direct."""
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        heavy = await rt.compile(conv_rows(), batching=nnrt.Batching(max_batch=8,
                                                                     max_delay=0.5))
        batcher = heavy.batcher
        assert batcher is not None
        image = np.ones((1, 64, 64, 16), np.float32)

        async def task() -> None:
            for _ in range(8):
                await heavy.execute([image])

        async with anyio.create_task_group() as tg:
            for _ in range(8):
                tg.start_soon(task)
        assert batcher.executions >= 4 and batcher.direct >= 4
        assert not batcher.batching


@pytest.mark.anyio
async def test_per_input_batch_axes_and_shared_inputs() -> None:
    layout = nnrt.Batching(max_batch=8, max_delay=0.05,
                           dims={"state": 1, "state_out": 1, "scale": None})

    def request(k: int) -> list[Array]:
        return [np.full((1, 4), k, np.float32), np.full((2, 1, 3), k, np.float32),
                np.array([2.0 if k % 2 else 3.0], np.float32)]

    async with nnrt.Runtime(drivers=["reference"]) as rt:
        compiled = await rt.compile(stateful(), batching=layout)
        results = await _gather(compiled, [request(k) for k in range(12)])
        for k, (y, state) in enumerate(results):
            np.testing.assert_array_equal(y, np.full((1, 4), k * (2.0 if k % 2 else 3.0)))
            np.testing.assert_array_equal(state, np.full((2, 1, 3), k + 1.0))
        batcher = compiled.batcher
        assert batcher is not None
        # requests with different scales never share a batch: at least one batch per scale
        assert 2 <= batcher.executions < 12


@pytest.mark.anyio
async def test_a_static_batch_is_padded_and_padded_rows_never_leak() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (4, 2))
    b.output(b.add(x, x), names=["y"])
    async with nnrt.Runtime(drivers=["reference"]) as rt:
        compiled = await rt.compile(b.build(), batching=nnrt.Batching(max_batch=16))
        assert compiled.batcher is not None and compiled.batcher.layout.max_batch == 4
        (y,) = await compiled.execute([np.array([[1, 2]], np.float32)])
        np.testing.assert_array_equal(y, [[2, 4]])
        results = await _gather(compiled, [[np.full((1, 2), k, np.float32)] for k in range(7)])
        for k, (y,) in enumerate(results):
            np.testing.assert_array_equal(y, np.full((1, 2), 2.0 * k))


@pytest.mark.anyio
async def test_one_bad_request_fails_alone() -> None:
    async with nnrt.Runtime(drivers=["reference"]) as rt:
        compiled = await rt.compile(lookup(), batching=nnrt.Batching(max_batch=8,
                                                                     max_delay=0.05))
        requests: list[Any] = [[np.array([k], np.int32)] for k in range(6)]
        requests[2] = [np.array([99], np.int32)]  # out of the table: fails on its data
        requests[4] = [np.array([[1]], np.int32)]  # wrong rank: refused before it queues
        results = await _gather(compiled, requests)
        assert isinstance(results[2], nnrt.NnrtError) and "99" in str(results[2])
        assert isinstance(results[4], nnrt.BadData)
        for k in (0, 1, 3, 5):
            np.testing.assert_array_equal(results[k][0], TABLE[[k]])


@pytest.mark.anyio
async def test_a_deadline_is_never_spent_waiting_for_a_batch() -> None:
    async with nnrt.Runtime(drivers=["reference"]) as rt:
        compiled = await rt.compile(mlp(), batching=nnrt.Batching(max_batch=64, max_delay=5.0))
        x = np.ones((1, 8), np.float32)
        await compiled.execute([x], priority=nnrt.Priority.HIGH)  # warm the batch-1 variant
        started = time.monotonic()
        (y,) = await compiled.execute([x], timeout=1.0)  # alone: it starts before its deadline
        assert time.monotonic() - started < 1.0
        assert y.shape == (1, 4)


@pytest.mark.anyio
async def test_a_request_past_its_deadline_leaves_the_queue() -> None:
    async with nnrt.Runtime(drivers=["reference"]) as rt:
        compiled = await rt.compile(mlp(), batching=nnrt.Batching(max_batch=64, max_delay=5.0))
        x = np.ones((1, 8), np.float32)
        batcher = compiled.batcher
        assert batcher is not None
        with pytest.raises(nnrt.DeadlineMissed):
            # cannot start before max_delay... but its deadline comes first: the dispatcher
            # sends it early, unless its deadline is too short for any execution
            await compiled.execute([x], timeout=0.0)
        assert batcher._queue == []


@pytest.mark.anyio
async def test_a_high_priority_request_starts_its_batch_at_once() -> None:
    async with nnrt.Runtime(drivers=["reference"]) as rt:
        compiled = await rt.compile(mlp(), batching=nnrt.Batching(max_batch=64, max_delay=3.0))
        x = np.ones((1, 8), np.float32)
        await compiled.execute([x], priority=nnrt.Priority.HIGH)  # warm the batch-1 variant
        results: list[Any] = []

        async def waiting() -> None:
            results.append(await compiled.execute([x]))

        started = time.monotonic()
        async with anyio.create_task_group() as tg:
            tg.start_soon(waiting)
            await anyio.sleep(0.05)  # queued, waiting for more
            results.append(await compiled.execute([x], priority=nnrt.Priority.HIGH))
        assert time.monotonic() - started < 2.0  # neither waited out the 3 s max_delay
        assert len(results) == 2


@pytest.mark.anyio
async def test_a_cancelled_request_leaves_the_queue_and_others_run() -> None:
    async with nnrt.Runtime(drivers=["reference"]) as rt:
        compiled = await rt.compile(mlp(), batching=nnrt.Batching(max_batch=8, max_delay=0.3))
        batcher = compiled.batcher
        assert batcher is not None
        x = np.ones((1, 8), np.float32)
        kept: list[Any] = []
        with anyio.move_on_after(0.05):
            await compiled.execute([x])  # cancelled while it waits for the batch
        assert batcher._queue == []
        kept.append(await compiled.execute([x]))
        assert kept[0][0].shape == (1, 4)
        assert batcher.requests == 1


@pytest.mark.anyio
async def test_caller_buffers_and_device_memories_run_alone() -> None:
    async with nnrt.Runtime(drivers=["reference"]) as rt:
        compiled = await rt.compile(mlp(), batching=nnrt.Batching(max_batch=8, max_delay=0.05))
        batcher = compiled.batcher
        assert batcher is not None
        x = np.ones((1, 8), np.float32)
        out = np.empty((1, 4), np.float32)
        (y,) = await compiled.execute([x], outputs=[out])
        assert y is out or np.shares_memory(y, out)
        (z,) = await compiled.execute([np.ones((9, 8), np.float32)])  # more than max_batch
        assert z.shape == (9, 4)
        assert batcher.requests == 0


@pytest.mark.anyio
async def test_release_and_close_fail_queued_requests_without_a_hang() -> None:
    async with nnrt.Runtime(drivers=["reference"]) as rt:
        compiled = await rt.compile(mlp(), batching=nnrt.Batching(max_batch=8, max_delay=5.0))
        x = np.ones((1, 8), np.float32)
        failures: list[BaseException] = []

        async def queued() -> None:
            try:
                await compiled.execute([x])
            except nnrt.BadState as exc:
                failures.append(exc)

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(queued)
                await anyio.sleep(0.05)
                await compiled.release()
        assert len(failures) == 1
        other = await rt.compile(mlp(), batching=nnrt.Batching(max_batch=8, max_delay=5.0))
        assert other.batcher is not None


def test_batching_options_and_layouts_are_checked() -> None:
    with pytest.raises(nnrt.BadData, match="max_batch"):
        nnrt.Batching(max_batch=0)
    with pytest.raises(nnrt.BadData, match="max_delay"):
        nnrt.Batching(max_delay=float("nan"))
    with pytest.raises(nnrt.BadData, match="preferred"):
        nnrt.Batching(preferred=(0,))
    with pytest.raises(nnrt.BadData, match="dims"):
        nnrt.Batching(dims={"x": -1})


@pytest.mark.anyio
async def test_a_model_whose_batch_cannot_vary_is_refused_at_compile() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 8))
    b.output(b.relu(x))
    async with nnrt.Runtime(drivers=["reference"]) as rt:
        with pytest.raises(nnrt.BadData, match="fixed at 1"):
            await rt.compile(b.build(), batching=nnrt.Batching())
        with pytest.raises(nnrt.BadData, match="not inputs or outputs"):
            await rt.compile(mlp(), batching=nnrt.Batching(dims={"nope": 0}))
        with pytest.raises(nnrt.BadData, match="no axis 2"):
            await rt.compile(mlp(), batching=nnrt.Batching(dim=2))
