"""Memory domains through the runtime: every allocation rule, every use rule, state, scope.

Real worker processes hold the buffers; the client only ever has tokens. Each rule of SEEDS §2
(memory domains) has a case here; the worker-side checks are also exercised over a raw socket in
test_worker_buffers.py.
"""

from __future__ import annotations

import math
import mmap
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_memory_runtime import mul_model

import nnrt
from nnrt import BufferDesc, BufferRole

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def state_model(n: int = 4) -> nnrt.Model:
    """new_state = state + x: inputs (x, state), output new_state — an RNN-style step."""
    b = nnrt.ModelBuilder()
    x = b.input("x", (n,))
    state = b.input("state", (n,))
    b.output(b.add(state, x), names=["new_state"])
    return b.build()


def int_div_model() -> nnrt.Model:
    """q = a // b on int32 [4] (fails at execution when b holds a zero)."""
    b = nnrt.ModelBuilder()
    a = b.input("a", (4,), dtype=np.dtype(np.int32))
    d = b.input("b", (4,), dtype=np.dtype(np.int32))
    b.output(b.div(a, d))
    return b.build()


def dynamic_model() -> nnrt.Model:
    """y = x + x with x of shape [?, 3]."""
    b = nnrt.ModelBuilder()
    x = b.input("x", (0, 3))
    b.output(b.add(x, x))
    return b.build()


# -- allocation --------------------------------------------------------------------------------

async def test_allocation_rejections() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt, \
            nnrt.Runtime(drivers=["reference"], workers=1) as other:
        step = await rt.compile(state_model())
        step2 = await rt.compile(state_model())
        wide = await rt.compile(state_model(8))
        ints = await rt.compile(int_div_model())
        foreign = await other.compile(state_model())
        d = BufferDesc()
        cases: list[tuple[str, object, list[BufferRole], list[BufferRole]]] = [
            ("at least one role", d, [], []),
            ("out of range", d, [BufferRole(step, 2)], []),
            ("out of range", d, [], [BufferRole(step, 1)]),
            ("frequency", d, [BufferRole(step, 1, 0.0)], []),
            ("frequency", d, [BufferRole(step, 1, 1.5)], []),
            ("frequency", d, [BufferRole(step, 1, math.nan)], []),
            ("twice", d, [BufferRole(step, 1), BufferRole(step, 1)], []),
            ("twice", d, [BufferRole(step, 0), BufferRole(step, 1)], []),
            ("type", d, [BufferRole(step, 1), BufferRole(ints, 0)], []),
            ("dims", d, [BufferRole(step, 1), BufferRole(wide, 1)], []),
            ("dims", BufferDesc((5,)), [BufferRole(step, 1)], []),
            ("rank", BufferDesc((4, 1)), [BufferRole(step, 1)], []),
            ("another runtime", d, [BufferRole(foreign, 1)], []),
            ("BufferDesc", "not a desc", [BufferRole(step, 1)], []),
            ("BufferRole", d, [(step, 1)], []),  # type: ignore[list-item]
        ]
        for message, desc, inputs, outputs in cases:
            with pytest.raises(nnrt.BadData, match=message):
                await rt.allocate(desc, inputs, outputs)  # type: ignore[arg-type]
        # two compiled models may share a buffer, in and out of the same one too
        shared = await rt.allocate(d, [BufferRole(step, 1), BufferRole(step2, 1)],
                                   [BufferRole(step, 0)])
        assert shared.dims == (4,) and shared.dtype == np.float32
        await step2.release()
        with pytest.raises(nnrt.BadState):
            await rt.allocate(d, [BufferRole(step2, 1)])


async def test_roles_of_two_drivers_are_rejected() -> None:
    async with nnrt.Runtime(drivers=["reference", "flaky_driver:NoBlobDriver"],
                            workers=1) as rt:
        a = await rt.compile(state_model(), devices=["reference"])
        b = await rt.compile(state_model(), devices=["flaky_driver:NoBlobDriver"])
        with pytest.raises(nnrt.BadData, match="different drivers"):
            await rt.allocate(BufferDesc(), [BufferRole(a, 1), BufferRole(b, 1)])


# -- state and use -----------------------------------------------------------------------------

async def test_rnn_state_stays_in_the_worker() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=2) as rt:
        step = await rt.compile(state_model())
        roles = dict(input_roles=[BufferRole(step, 1)], output_roles=[BufferRole(step, 0)])
        a = await rt.allocate(BufferDesc((4,)), **roles)
        b = await rt.allocate(BufferDesc((4,)), **roles)
        await a.copy_from(np.zeros(4, np.float32))
        x = np.array([1, 2, 3, 4], np.float32)
        for k in range(10):  # ping-pong: a buffer may not be input and output of one request
            src, dst = (a, b) if k % 2 == 0 else (b, a)
            (result,) = await step.execute([x, src], outputs=[dst])
            assert result is dst
        np.testing.assert_array_equal(await a.copy_to(), x * 10)


async def test_invalid_uses_fail_immediately() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        step = await rt.compile(state_model())
        other = await rt.compile(state_model())
        buf = await rt.allocate(BufferDesc(), [BufferRole(step, 1)], [BufferRole(step, 0)])
        out2 = await rt.allocate(BufferDesc(), [], [BufferRole(step, 0)])
        await buf.copy_from(np.ones(4, np.float32))
        x = np.ones(4, np.float32)
        with pytest.raises(nnrt.BadData, match="input 0"):  # wrong input index
            await step.execute([buf, x])
        with pytest.raises(nnrt.BadData, match="input 1"):  # another compiled model
            await other.execute([x, buf])
        with pytest.raises(nnrt.BadData, match="both an input and an output"):
            await step.execute([x, buf], outputs=[buf])
        with pytest.raises(nnrt.BadData, match="allocated for output"):
            await other.execute([x, x], outputs=[out2])
        with pytest.raises(nnrt.BadData, match="input"):  # declared as output only
            await step.execute([x, out2])
        (y,) = await step.execute([x, buf], outputs=[out2])  # a valid use still works
        np.testing.assert_array_equal(await y.copy_to(), np.full(4, 2, np.float32))
        await buf.free()
        await buf.free()  # idempotent
        with pytest.raises(nnrt.BadState):
            await step.execute([x, buf])
        with pytest.raises(nnrt.BadState):
            await buf.copy_to()


async def test_uninitialised_reads_and_reinitialisation() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        step = await rt.compile(state_model())
        buf = await rt.allocate(BufferDesc(), [BufferRole(step, 1)])
        x = np.ones(4, np.float32)
        with pytest.raises(nnrt.OpFailed, match="uninitiali"):
            await step.execute([x, buf])
        with pytest.raises(nnrt.OpFailed, match="uninitiali"):
            await buf.copy_to()
        await buf.copy_from(np.full(4, 5, np.float32))
        (y,) = await step.execute([x, buf])
        np.testing.assert_array_equal(y, np.full(4, 6, np.float32))
        await buf.copy_from(np.full(4, 7, np.float32))  # re-initialise after success
        (y,) = await step.execute([x, buf])
        np.testing.assert_array_equal(y, np.full(4, 8, np.float32))


async def test_copy_checks() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        step = await rt.compile(state_model())
        buf = await rt.allocate(BufferDesc(), [BufferRole(step, 1)])
        with pytest.raises(nnrt.BadData, match="int32"):
            await buf.copy_from(np.ones(4, np.int32))
        with pytest.raises(nnrt.BadData, match="shape"):
            await buf.copy_from(np.ones(5, np.float32))
        await buf.copy_from(np.arange(4, dtype=np.float32))
        with rt.memory.create(64) as memory:
            with pytest.raises(nnrt.BadData):
                await buf.copy_to(nnrt.TensorRef(memory, 0, (2,), np.float32))  # too small
            view = await buf.copy_to(memory.ndarray(np.float32, (4,)))
            np.testing.assert_array_equal(view, np.arange(4, dtype=np.float32))
            del view


async def test_failed_execution_leaves_the_output_uninitialised() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        div = await rt.compile(int_div_model())
        out = await rt.allocate(BufferDesc(), [], [BufferRole(div, 0)])
        a = np.array([8, 6, 4, 2], np.int32)
        (q,) = await div.execute([a, np.full(4, 2, np.int32)], outputs=[out])
        np.testing.assert_array_equal(await q.copy_to(), a // 2)
        with pytest.raises(nnrt.NnrtError, match="division by zero"):
            await div.execute([a, np.array([1, 0, 1, 1], np.int32)], outputs=[out])
        with pytest.raises(nnrt.OpFailed, match="uninitiali"):
            await out.copy_to()


async def test_dynamic_output_resizes() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        model = await rt.compile(dynamic_model())
        out = await rt.allocate(BufferDesc(), [], [BufferRole(model, 0)])
        assert out.dims in (None, (0, 3))  # unknown until written
        for rows in (1, 5, 2):
            x = np.ones((rows, 3), np.float32) * rows
            await model.execute([x], outputs=[out])
            assert out.dims == (rows, 3)
            np.testing.assert_array_equal(await out.copy_to(), x * 2)


async def test_round_trip_shared_device_device_shared_bit_for_bit() -> None:
    rng = np.random.default_rng(3)
    data = rng.standard_normal(4096).astype(np.float32)
    data[:4] = [np.nan, -0.0, np.inf, np.finfo(np.float32).smallest_subnormal]
    b = nnrt.ModelBuilder()
    x = b.input("x", (4096,))
    b.output(b.mul(x, np.ones(1, np.float32)))  # bit-exact pass-through: device -> device
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        identity = await rt.compile(b.build())
        first = await rt.allocate(BufferDesc(), [BufferRole(identity, 0)])
        second = await rt.allocate(BufferDesc(), [], [BufferRole(identity, 0)])
        with rt.memory.create(2 * data.nbytes) as memory:
            src = memory.ndarray(np.float32, (4096,))
            dst = memory.ndarray(np.float32, (4096,), data.nbytes)
            src[:] = data
            await first.copy_from(src)
            await identity.execute([first], outputs=[second])
            await second.copy_to(dst)
            assert dst.view(np.uint32).tolist() == data.view(np.uint32).tolist()
            del src, dst


# -- refusal, fallback, worker loss ------------------------------------------------------------

async def test_refused_allocation_falls_back_to_shared_memory() -> None:
    async with nnrt.Runtime(drivers=["flaky_driver:SmallBufferDriver"], workers=1) as rt:
        step = await rt.compile(state_model(1 << 19))  # 2 MiB state: over the 1 MiB limit
        roles = dict(input_roles=[BufferRole(step, 1)], output_roles=[BufferRole(step, 0)])
        a = await rt.allocate(BufferDesc(), **roles)
        b = await rt.allocate(BufferDesc(), **roles)
        assert a.fallback is not None and rt.statistics().allocate_fallbacks == 2
        x = np.ones(1 << 19, np.float32)
        with pytest.raises(nnrt.OpFailed, match="uninitiali"):
            await step.execute([x, a], outputs=[b])
        await a.copy_from(np.zeros(1 << 19, np.float32))
        await step.execute([x, a], outputs=[b])
        await step.execute([x, b], outputs=[a])
        np.testing.assert_array_equal(await a.copy_to(), x * 2)
        dyn = await rt.compile(dynamic_model())
        with pytest.raises(nnrt.OpFailed, match="unknown"):  # no size: no fallback either
            await rt.allocate(BufferDesc(), [], [BufferRole(dyn, 0)])


async def test_token_after_worker_restart_is_unavailable() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        step = await rt.compile(state_model())
        buf = await rt.allocate(BufferDesc(), [BufferRole(step, 1)])
        await buf.copy_from(np.ones(4, np.float32))
        pool = rt._core.backend.pools["reference"]  # type: ignore[union-attr]
        pool.slots[0].kill()
        for _ in range(200):
            if pool.slots[0].alive and pool.slots[0].client is not buf.handle.client:
                break
            await __import__("anyio").sleep(0.05)
        with pytest.raises(nnrt.UnavailableDevice):
            await step.execute([np.ones(4, np.float32), buf])
        with pytest.raises(nnrt.UnavailableDevice):
            await buf.copy_to()
        (y,) = await step.execute([np.ones(4, np.float32), np.ones(4, np.float32)])
        np.testing.assert_array_equal(y, np.full(4, 2, np.float32))


async def test_mul_model_buffer_with_plain_and_memory_sources() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        mul = await rt.compile(mul_model((4,)))
        buf = await rt.allocate(BufferDesc((4,)), [BufferRole(mul, 0)])
        with rt.memory.create(64) as memory:
            memory.ndarray(np.float32, (4,))[:] = [1, 2, 3, 4]
            await buf.copy_from(nnrt.TensorRef(memory, 0, (4,), np.float32))
            (y,) = await mul.execute([buf])
            np.testing.assert_array_equal(y, [2, 4, 6, 8])
            await buf.copy_from(memory)  # a whole Memory of the buffer's size
            (y,) = await mul.execute([buf])
            np.testing.assert_array_equal(y, [2, 4, 6, 8])


async def test_concurrent_reads_of_one_buffer() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=2) as rt:
        step = await rt.compile(state_model())
        buf = await rt.allocate(BufferDesc(), [BufferRole(step, 1)])
        await buf.copy_from(np.full(4, 10, np.float32))

        async def one(k: int) -> None:
            (y,) = await step.execute([np.full(4, k, np.float32), buf])
            np.testing.assert_array_equal(y, np.full(4, 10 + k, np.float32))

        import anyio

        async with anyio.create_task_group() as tg:
            for k in range(50):
                tg.start_soon(one, k)


async def test_copies_with_every_memory_kind(tmp_path: Path) -> None:
    data = np.arange(16, dtype=np.float32)
    path = tmp_path / "state.bin"
    path.write_bytes(bytes(64))
    fd = os.open(path, os.O_RDWR)
    try:
        async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
            mul = await rt.compile(mul_model((16,)))
            buf = await rt.allocate(BufferDesc(), [BufferRole(mul, 0)])
            memfd = rt.memory.create(64)
            blob = rt.memory.create_blob(64)
            mapped = rt.memory.from_fd(fd, 0, 64, mmap.PROT_READ | mmap.PROT_WRITE)
            for source, target in ((memfd, blob), (blob, mapped), (mapped, memfd)):
                source.ndarray(np.float32, (16,))[:] = data
                await buf.copy_from(source)
                target.ndarray(np.float32, (16,))[:] = 0
                view = await buf.copy_to(target)
                assert view.tobytes() == data.tobytes()
                np.testing.assert_array_equal(target.ndarray(np.float32, (16,)), data)
                data = data + 1
                del view
    finally:
        os.close(fd)
    assert np.frombuffer(path.read_bytes(), np.float32).tolist() == (data - 1).tolist()


def test_stateful_rnn_example_runs() -> None:
    example = Path(__file__).parents[2] / "examples" / "stateful_rnn.py"
    result = subprocess.run([sys.executable, str(example), "--steps", "20", "--units", "256"],
                            check=False, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "identical both ways" in result.stdout
