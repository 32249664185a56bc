"""Shared memory through the runtime: real workers, real fds, real mappings (asyncio and trio).

What is asserted is the absence of copies where docs/memory.md promises it: outputs written by the
worker appear in the caller's own mapping, and weights by reference never travel as bytes.
"""

from __future__ import annotations

import mmap
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import posix_ipc
import pytest

import nnrt
from nnrt.memory import find_memory

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def mul_model(shape: tuple[int, ...]) -> nnrt.Model:
    """y = x * 2."""
    b = nnrt.ModelBuilder()
    x = b.input("x", shape)
    b.output(b.mul(x, np.array([2.0], np.float32)), names=["y"])
    return b.build()


def add_weights_model(weights: nnrt.Memory, n: int) -> nnrt.Model:
    """y = x + w with w (operand 1) read from ``weights`` by reference."""
    model = nnrt.Model()
    x = model.add_operand(nnrt.OperandType.TENSOR_FLOAT32, (n,))
    w = model.add_operand(nnrt.OperandType.TENSOR_FLOAT32, (n,))
    act = model.add_operand(nnrt.OperandType.INT32)
    y = model.add_operand(nnrt.OperandType.TENSOR_FLOAT32, (n,))
    model.set_operand_value_from_memory(w, weights, 0, n * 4)
    model.set_operand_value(act, 0)
    model.add_operation(nnrt.OperationType.ADD, [x, w, act], [y])
    model.identify_inputs_and_outputs([x], [y])
    model.finish()
    return model


def worker_pids(rt: nnrt.Runtime) -> list[int]:
    pools = rt._core.backend.pools  # type: ignore[union-attr]
    return [slot.process.pid for pool in pools.values() for slot in pool.slots
            if slot.process is not None]


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def own_segments() -> list[str]:
    """This process's /dev/shm segments (nnrt names embed the creator's pid)."""
    return sorted(n for n in os.listdir("/dev/shm") if str(os.getpid()) in n)


def mapped_memfds(pid: int) -> int:
    with open(f"/proc/{pid}/maps") as maps:
        return sum(1 for line in maps if "memfd:" in line)


async def test_memfd_input_and_output_in_place() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        compiled = await rt.compile(mul_model((2, 3)))
        memory = rt.memory.create(4096)
        x = memory.ndarray(np.float32, (2, 3))
        y = memory.ndarray(np.float32, (2, 3), offset=1024)
        x[:] = np.arange(6, dtype=np.float32).reshape(2, 3)
        (result,) = await compiled.execute([x], outputs=[y])
        expected = np.arange(6, dtype=np.float32).reshape(2, 3) * 2
        np.testing.assert_array_equal(y, expected)  # written by the worker into our mapping
        assert np.shares_memory(result, y)
        # the worker sees later writes through the same pool: no re-send, no copy
        x[:] = 10
        await compiled.execute([x], outputs=[y])
        np.testing.assert_array_equal(y, np.full((2, 3), 20, np.float32))
        (pid,) = worker_pids(rt)
        assert mapped_memfds(pid) >= 1


async def test_tensor_refs_and_dict_inputs() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        compiled = await rt.compile(mul_model((4,)))
        with rt.memory.create(256) as memory:
            memory.ndarray(np.float32, (4,))[:] = [1, 2, 3, 4]
            x_ref = nnrt.TensorRef(memory, 0, (4,), np.float32)
            y_ref = nnrt.TensorRef(memory, 64, (4,), np.float32)
            (result,) = await compiled.execute({"x": x_ref}, outputs=[y_ref])
            np.testing.assert_array_equal(result, [2, 4, 6, 8])
            np.testing.assert_array_equal(memory.ndarray(np.float32, (4,), 64), [2, 4, 6, 8])


async def test_blob_written_by_a_producer_process() -> None:
    name = f"/nnrt-test-producer-{os.getpid()}"
    producer = (
        "import sys, mmap, numpy as np, posix_ipc\n"
        "shm = posix_ipc.SharedMemory(sys.argv[1], posix_ipc.O_CREX, mode=0o600, size=4096)\n"
        "m = mmap.mmap(shm.fd, 4096); shm.close_fd()\n"
        "np.frombuffer(m, np.float32, 8)[:] = np.arange(8, dtype=np.float32)\n"
        "m.close()\n")
    subprocess.run([sys.executable, "-c", producer, name], check=True)
    try:
        async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
            compiled = await rt.compile(mul_model((8,)))
            frames = rt.memory.open_blob(name)
            assert frames.kind == "blob" and not frames.owner
            (y,) = await compiled.execute([frames.ndarray(np.float32, (8,))])
            np.testing.assert_array_equal(y, np.arange(8, dtype=np.float32) * 2)
    finally:
        posix_ipc.unlink_shared_memory(name)


async def test_weights_served_from_a_file_by_reference(tmp_path: Path) -> None:
    weights = np.arange(1024, dtype=np.float32)
    path = tmp_path / "weights.bin"
    path.write_bytes(b"\0" * 100 + weights.tobytes())  # not page aligned on purpose
    fd = os.open(path, os.O_RDONLY)
    try:
        async with nnrt.Runtime(drivers=["reference"], workers=2) as rt:
            memory = rt.memory.from_fd(fd, 100, weights.nbytes, mmap.PROT_READ)
            compiled = await rt.compile(add_weights_model(memory, 1024))
            wire_operand = compiled.ref.key[1]["model"]["operands"][1]
            assert "value" not in wire_operand and wire_operand["ref"][0] == memory.id
            ones = np.ones(1024, np.float32)
            for _ in range(4):  # lands on both workers: each maps the file once
                (out,) = await compiled.execute([ones])
                np.testing.assert_array_equal(out, weights + 1)
    finally:
        os.close(fd)


async def test_large_in_process_constants_travel_in_a_pool() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (256,))
    b.output(b.add(x, np.arange(256, dtype=np.float32)))
    model = b.build()
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        compiled = await rt.compile(model)
        assert compiled.constants is not None
        operands = compiled.ref.key[1]["model"]["operands"]
        assert all("value" not in o or len(o["value"]) <= 128 for o in operands)
        (y,) = await compiled.execute([np.ones(256, np.float32)])
        np.testing.assert_array_equal(y, np.arange(256, dtype=np.float32) + 1)
        await compiled.release()
        assert compiled.constants.closed


async def test_plain_arrays_go_through_the_arena() -> None:
    shape = (512, 1024)  # 2 MiB: above the inline limit
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        compiled = await rt.compile(mul_model(shape))
        (view,) = await compiled.execute([x])
        np.testing.assert_array_equal(view, x * 2)
        arena = rt._core.arena
        assert arena is not None and arena.capacity >= 2 * x.nbytes
        found = find_memory(view)  # written by the worker into the arena, handed out as is
        assert found is not None and found[0].kind == "memfd"
        (again,) = await compiled.execute([x + 1])  # the view's region is still held
        np.testing.assert_array_equal(view, x * 2)
        np.testing.assert_array_equal(again, (x + 1) * 2)
        (owned,) = await compiled.execute([x], copy=True)
        np.testing.assert_array_equal(owned, x * 2)
        assert find_memory(owned) is None and owned.flags.owndata
        small = np.ones(4, np.float32)  # small tensors travel inline: no arena involved
        assert find_memory((await (await rt.compile(mul_model((4,)))).execute([small]))[0]) is None


async def test_plain_output_buffer_gets_a_copy() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        compiled = await rt.compile(mul_model((4,)))
        out = np.zeros(4, np.float32)
        (y,) = await compiled.execute([np.ones(4, np.float32)], outputs=[out])
        np.testing.assert_array_equal(out, [2, 2, 2, 2])
        assert np.shares_memory(y, out)


async def test_bad_uses_are_clear_errors() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        compiled = await rt.compile(mul_model((4,)))
        readonly = rt.memory.create(64)
        fd = readonly.fileno()
        view_only = rt.memory.from_fd(fd, 0, 64, mmap.PROT_READ)
        with pytest.raises(nnrt.BadData, match="read-only"):
            await compiled.execute([np.ones(4, np.float32)],
                                   outputs=[nnrt.TensorRef(view_only, 0, (4,), np.float32)])
        closed = rt.memory.create(64)
        ref = nnrt.TensorRef(closed, 0, (4,), np.float32)
        closed.close()
        with pytest.raises((nnrt.BadState, nnrt.BadData)):
            await compiled.execute([ref])
        with pytest.raises(nnrt.BadData):
            nnrt.TensorRef(readonly, 2, (4,), np.float32)  # misaligned
        with pytest.raises(nnrt.BadData):
            nnrt.TensorRef(readonly, 2**63, (4,), np.float32)
        # the worker is still there and fine
        (y,) = await compiled.execute([np.ones(4, np.float32)])
        np.testing.assert_array_equal(y, [2, 2, 2, 2])


async def test_closed_memory_is_unmapped_from_workers() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        compiled = await rt.compile(mul_model((4,)))
        (pid,) = worker_pids(rt)
        await compiled.execute([np.ones(4, np.float32)])
        base_maps = mapped_memfds(pid)
        memory = rt.memory.create(4096)
        x = memory.ndarray(np.float32, (4,))
        x[:] = 1
        await compiled.execute([x])
        assert mapped_memfds(pid) == base_maps + 1
        del x
        memory.close()
        await compiled.execute([np.ones(4, np.float32)])  # unmap rides before this request
        assert mapped_memfds(pid) == base_maps


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_ten_thousand_cycles_leak_nothing() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        compiled = await rt.compile(mul_model((4,)))
        (pid,) = worker_pids(rt)

        async def cycle() -> None:
            with rt.memory.create(4096) as memory:
                x = memory.ndarray(np.float32, (4,))
                y = memory.ndarray(np.float32, (4,), 64)
                x[:] = 3
                await compiled.execute([x], outputs=[y])
                assert y[0] == 6
                del x, y

        for _ in range(20):
            await cycle()
        await compiled.execute([np.ones(4, np.float32)])
        worker_fds, worker_maps = fd_count(pid), mapped_memfds(pid)
        own_fds = len(os.listdir("/proc/self/fd"))
        shm = own_segments()
        for _ in range(10_000):
            await cycle()
        await compiled.execute([np.ones(4, np.float32)])
        assert fd_count(pid) == worker_fds
        assert mapped_memfds(pid) == worker_maps
        assert len(os.listdir("/proc/self/fd")) == own_fds
        assert own_segments() == shm


def test_memory_pools_example_runs() -> None:
    example = Path(__file__).parents[2] / "examples" / "memory_pools.py"
    result = subprocess.run([sys.executable, str(example), "--frames", "2"], check=False,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["memfd", "mmap_fd", "blob", "blob",
                                                       "arena"], lines
    assert "frame 1: mean of y = 2.0" in result.stdout


async def test_driver_that_cannot_map_a_kind() -> None:
    """SEEDS §2: such a driver says so for constants (prepare) and fails executions on it."""
    async with nnrt.Runtime(drivers=["flaky_driver:NoBlobDriver", "reference"],
                            workers=1) as rt:
        with rt.memory.create_blob(4096) as blob, rt.memory.create(4096) as memfd:
            blob.ndarray(np.float32, (16,))[:] = 1
            compiled = await rt.compile(mul_model((16,)), devices=["flaky_driver:NoBlobDriver"])
            with pytest.raises(nnrt.OpFailed, match="cannot access blob memory"):
                await compiled.execute([blob.ndarray(np.float32, (16,))])
            x = memfd.ndarray(np.float32, (16,))
            x[:] = 3
            (y,) = await compiled.execute([x])  # the same worker, still serving
            np.testing.assert_array_equal(y, np.full(16, 6, np.float32))
            # weights in a blob: that driver refuses the operation, the next device takes it
            weights = add_weights_model(blob, 16)
            with pytest.raises(nnrt.Unsupported, match="constant in blob memory"):
                await rt.compile(weights, devices=["flaky_driver:NoBlobDriver"],
                                 allow_fallback=False)
            placed = await rt.compile(weights, devices=["flaky_driver:NoBlobDriver"])
            assert placed.device == "reference"
            assert "constant in blob memory" in placed.placement().operations[0].rejected[
                "flaky_driver:NoBlobDriver"]
            fallback = await rt.compile(weights)
            assert fallback.device == "reference"
            (z,) = await fallback.execute([np.ones(16, np.float32)])
            np.testing.assert_array_equal(z, np.full(16, 2, np.float32))
            del x


def test_sync_facade_with_memory_closed_from_another_thread() -> None:
    with nnrt.Runtime.sync(drivers=["reference"], workers=1) as rt:
        compiled = rt.compile(mul_model((4,)))
        pid = rt._require()[1]._core.backend.pools["reference"].slots[0].process.pid  # type: ignore[union-attr]
        compiled.execute([np.ones(4, np.float32)])
        base = mapped_memfds(pid)
        memory = rt.memory.create(4096)
        x = memory.ndarray(np.float32, (4,))
        x[:] = 5
        (y,) = compiled.execute([x], outputs=[memory.ndarray(np.float32, (4,), 64)])
        np.testing.assert_array_equal(y, np.full(4, 10, np.float32))
        assert mapped_memfds(pid) == base + 1
        del x, y
        memory.close()  # this thread is not the runtime's loop thread
        compiled.execute([np.ones(4, np.float32)])
        deadline = time.monotonic() + 5
        while mapped_memfds(pid) != base and time.monotonic() < deadline:
            time.sleep(0.01)
        assert mapped_memfds(pid) == base
