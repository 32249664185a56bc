"""Shared memory through ``nnrt serve``: pools from client processes, scoped and released."""

from __future__ import annotations

import mmap
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import numpy as np
import pytest
from test_device_memory import state_model
from test_memory_runtime import add_weights_model, mul_model
from test_shared import running_service

import nnrt

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class Service:
    def __init__(self, path: str, proc: subprocess.Popen[bytes]) -> None:
        self.path = path
        self.proc = proc

    def workers(self) -> list[int]:
        pids: list[int] = []
        for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
            pids.extend(int(p) for p in (task / "children").read_text().split())
        return pids

    def footprint(self) -> tuple[int, int]:
        """(fds of the service, memfd mappings of its workers)."""
        fds = len(os.listdir(f"/proc/{self.proc.pid}/fd"))
        maps = 0
        for pid in self.workers():
            with open(f"/proc/{pid}/maps") as f:
                maps += sum(1 for line in f if "memfd:" in line)
        return fds, maps


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """One service for the module's tests, each with clients of its own (footprints and
    statistics are compared with the test's own baseline)."""
    path = str(tmp_path_factory.mktemp("shm") / "nnrt.sock")
    with running_service(path, workers=1) as proc:
        yield Service(path, proc)


async def test_memfd_in_place_through_the_service(service: Service) -> None:
    async with nnrt.Runtime(connect=service.path) as rt:
        compiled = await rt.compile(mul_model((2, 3)))
        with rt.memory.create(4096) as memory:
            x = memory.ndarray(np.float32, (2, 3))
            y = memory.ndarray(np.float32, (2, 3), 512)
            x[:] = 4
            (result,) = await compiled.execute([x], outputs=[y])
            np.testing.assert_array_equal(y, np.full((2, 3), 8, np.float32))
            assert np.shares_memory(result, y)
            del x, y, result


async def test_weights_by_reference_through_the_service(service: Service,
                                                        tmp_path: Path) -> None:
    weights = np.arange(512, dtype=np.float32)
    path = tmp_path / "w.bin"
    path.write_bytes(weights.tobytes())
    fd = os.open(path, os.O_RDONLY)
    try:
        async with nnrt.Runtime(connect=service.path) as rt:
            memory = rt.memory.from_fd(fd, 0, weights.nbytes, mmap.PROT_READ)
            compiled = await rt.compile(add_weights_model(memory, 512))
            (y,) = await compiled.execute([np.ones(512, np.float32)])
            np.testing.assert_array_equal(y, weights + 1)
    finally:
        os.close(fd)


async def test_unknown_pool_ids_stay_scoped_to_their_client(service: Service) -> None:
    async with nnrt.Runtime(connect=service.path) as first, \
            nnrt.Runtime(connect=service.path) as second:
        compiled = await second.compile(mul_model((4,)))
        with first.memory.create(256) as memory:
            x = memory.ndarray(np.float32, (4,))
            x[:] = 1
            await (await first.compile(mul_model((4,)))).execute([x])  # shared by `first` only
            body = {"handle": compiled.ref.key[0], "priority": 100,
                    "inputs": [["float32", [4], memory.id, 0, 16]]}
            client = second._core.backend._require()  # type: ignore[union-attr]
            with pytest.raises(nnrt.BadData, match="unknown pool"):
                await client.request("execute", body)
            del x


CLIENT = textwrap.dedent("""
    import sys, os, anyio, numpy as np, nnrt
    sys.path.insert(0, {tests!r})
    from test_memory_runtime import add_weights_model, mul_model

    async def main():
        async with nnrt.Runtime(connect={path!r}) as rt:
            compiled = await rt.compile(mul_model((4,)))
            memories = [rt.memory.create(4096) for _ in range(8)]
            for memory in memories:
                x = memory.ndarray(np.float32, (4,))
                x[:] = 1
                await compiled.execute([x], outputs=[memory.ndarray(np.float32, (4,), 64)])
            print("mapped", flush=True)
            await anyio.sleep(60)

    anyio.run(main)
""")


def test_pools_of_a_killed_client_are_released(service: Service) -> None:
    fds, maps = settled_footprint(service)
    tests = str(Path(__file__).parent)
    client = subprocess.Popen([sys.executable, "-c", CLIENT.format(tests=tests,
                                                                   path=service.path)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert client.stdout is not None and client.stdout.readline().strip() == "mapped"
        during_fds, during_maps = service.footprint()
        assert during_fds >= fds + 8 and during_maps >= maps + 8
    finally:
        client.kill()
        client.wait()
        client.stdout.close()  # type: ignore[union-attr]
    deadline = time.monotonic() + 10
    while not released(service, fds, maps) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert released(service, fds, maps), (service.footprint(), "baseline", (fds, maps))


def settled_footprint(service: Service) -> tuple[int, int]:
    """The footprint once the earlier tests' clients are gone: the service releases a closed
    client's pools in the worker after the client has left, so a baseline read at once may
    still count one of them (and then see it vanish)."""
    deadline = time.monotonic() + 10
    readings = [service.footprint()]
    while time.monotonic() < deadline:
        time.sleep(0.05)
        readings.append(service.footprint())
        if len(readings) >= 5 and len(set(readings[-5:])) == 1:
            break
    return readings[-1]


def released(service: Service, fds: int, maps: int) -> bool:
    """No more service fds and worker mappings than before the client came (the eight it
    mapped are gone; the baseline may still count an earlier test's pool or probe connection
    that the service lets go of meanwhile)."""
    now_fds, now_maps = service.footprint()
    return now_fds <= fds and now_maps <= maps


async def test_device_memory_through_the_service(service: Service) -> None:
    async with nnrt.Runtime(connect=service.path) as rt:
        step = await rt.compile(state_model())
        roles = dict(input_roles=[nnrt.BufferRole(step, 1)],
                     output_roles=[nnrt.BufferRole(step, 0)])
        a = await rt.allocate(nnrt.BufferDesc(), **roles)
        b = await rt.allocate(nnrt.BufferDesc(), **roles)
        await a.copy_from(np.zeros(4, np.float32))
        x = np.array([1, 2, 3, 4], np.float32)
        for k in range(4):
            src, dst = (a, b) if k % 2 == 0 else (b, a)
            await step.execute([x, src], outputs=[dst])
        np.testing.assert_array_equal(await a.copy_to(), x * 4)
        with rt.memory.create(64) as memory:
            view = await a.copy_to(memory.ndarray(np.float32, (4,)))
            np.testing.assert_array_equal(view, x * 4)
            del view
        await a.free()
        with pytest.raises(nnrt.BadState):
            await a.copy_to()


async def test_device_tokens_stay_with_their_client(service: Service) -> None:
    async with nnrt.Runtime(connect=service.path) as first, \
            nnrt.Runtime(connect=service.path) as second:
        mine = await first.compile(state_model())
        buf = await first.allocate(nnrt.BufferDesc(), [nnrt.BufferRole(mine, 1)])
        await buf.copy_from(np.ones(4, np.float32))
        theirs = await second.compile(state_model())
        client = second._core.backend._require()  # type: ignore[union-attr]
        body = {"handle": theirs.ref.key[0], "priority": 100,
                "inputs": [["float32", [4], np.ones(4, np.float32).tobytes()],
                           ["device", buf.handle]]}
        with pytest.raises(nnrt.BadData, match="unknown device memory token"):
            await client.request("execute", body)
        with pytest.raises(nnrt.BadData, match="unknown device memory token"):
            await client.request("copy_to", {"token": buf.handle, "target": None})
        (y,) = await mine.execute([np.ones(4, np.float32), buf])  # the owner still can
        np.testing.assert_array_equal(y, np.full(4, 2, np.float32))


async def test_large_plain_arrays_through_the_service(service: Service) -> None:
    x = np.random.default_rng(5).standard_normal((256, 1024)).astype(np.float32)  # 1 MiB
    async with nnrt.Runtime(connect=service.path) as rt:
        compiled = await rt.compile(mul_model(x.shape))
        for _ in range(3):  # the arena is shared with the service once, then reused
            (y,) = await compiled.execute([x])
            np.testing.assert_array_equal(y, x * 2)
        (owned,) = await compiled.execute([x], copy=True)
        np.testing.assert_array_equal(owned, x * 2)


async def test_statistics_in_shared_mode_are_never_empty_and_catch_up(service: Service) -> None:
    async with nnrt.Runtime(connect=service.path) as rt:
        first = rt.statistics()  # fetched at connect
        assert first.pools and all(p.workers >= 1 for p in first.pools.values())
        compiled = await rt.compile(mul_model((4,)))
        for _ in range(5):
            await compiled.execute([np.ones(4, np.float32)])
        with anyio.fail_after(10):
            while rt.statistics().completed < first.completed + 5:  # refreshed in the background
                await anyio.sleep(0.2)
        assert (await rt.refresh_statistics()).completed >= first.completed + 5
