"""Fault injection: kernels that raise, workers stopped with SIGSTOP, a full disk under the
cache, clients dying with pools and device buffers live. Every request ends with a result or a
typed error within its deadline; workers restart; dead clients' resources are reclaimed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import anyio
import numpy as np
import pytest
from models import add_model
from service_client import running_service

import nnrt

pytestmark = pytest.mark.anyio
HERE = Path(__file__).resolve().parent
X = np.array([[1.0, 2.0, 3.0, 4.0]], np.float32)
EXPECTED = X + np.arange(1, 5, dtype=np.float32)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_kernel_that_raises_fails_only_that_request() -> None:
    async with nnrt.Runtime(drivers=["flaky_driver:RaisingDriver"], workers=1) as rt:
        compiled = await rt.compile(add_model())
        with pytest.raises(nnrt.OpFailed, match="kernel exploded"):
            await compiled.execute([-X])
        for _ in range(3):  # the same worker goes on serving
            (y,) = await compiled.execute([X])
            np.testing.assert_array_equal(y, EXPECTED)
        assert rt.statistics().restarts == 0


async def test_a_stopped_worker_misses_deadlines_then_is_replaced() -> None:
    async with nnrt.Runtime(drivers=["reference"], workers=1, cancel_grace=1.0) as rt:
        compiled = await rt.compile(add_model())
        await compiled.execute([X])
        pool = rt._core.backend.pools["reference"]  # type: ignore[union-attr]
        pid = pool.slots[0].process.pid
        os.kill(pid, signal.SIGSTOP)
        try:
            start = time.monotonic()
            with pytest.raises(nnrt.DeadlineMissed):
                await compiled.execute([X], timeout=0.5)
            assert time.monotonic() - start < 1.5
            with anyio.fail_after(15):  # the watchdog kills it (SIGKILL ends a stopped one)
                while pool.restarts < 1 or not pool.slots[0].alive:
                    await anyio.sleep(0.05)
        finally:
            if pool.slots[0].process is not None and pool.slots[0].process.pid == pid:
                os.kill(pid, signal.SIGCONT)
        (y,) = await compiled.execute([X], timeout=10)
        np.testing.assert_array_equal(y, EXPECTED)



async def test_a_runtime_closed_while_a_worker_restarts_stops_the_new_worker() -> None:
    """The runtime closed while a killed worker's successor starts: the successor is told to
    stop too. (It was not, and the close waited for its connection to end: a client of
    ``nnrt stress --kill-every 2`` hung at exit now and then.)"""
    with anyio.fail_after(30):
        async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
            compiled = await rt.compile(add_model())
            await compiled.execute([X])
            slot = rt._core.backend.pools["reference"].slots[0]  # type: ignore[union-attr]
            old = slot.process
            slot.kill()
            while slot.restarts < 1:  # the old worker's end is seen; a new one starts
                await anyio.sleep(0.001)
        assert old is not None and old.process.poll() is not None
        new = slot.process
        assert new is not old and new is not None and new.process.poll() is not None


FULL_DISK = textwrap.dedent("""
    import sys, anyio, numpy as np, nnrt
    sys.path.insert(0, {here!r})
    driver = sys.argv[1]
    rng = np.random.default_rng(0)
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 256))
    b.output(b.relu(b.fully_connected(x, rng.standard_normal((256, 256)).astype(np.float32),
                                      np.zeros(256, np.float32))))
    model = b.build()
    async def main():
        async with nnrt.Runtime(drivers=[driver], workers=1) as rt:
            compiled = await rt.compile(model, cache_dir={cache!r})
            inputs = [rng.standard_normal((1, 256)).astype(np.float32)]
            (y,) = await compiled.execute(inputs)
            assert np.allclose(y, nnrt.reference.run(model, inputs)[0], rtol=1e-4, atol=1e-4)
            s = rt.statistics()
            print(s.cache_hits, s.cache_misses, s.cache_load_failures)
    anyio.run(main)
""")


def test_a_full_disk_under_the_cache_never_fails_a_compile(tmp_path: Path) -> None:
    script = FULL_DISK.format(here=str(HERE), cache=str(tmp_path / "cache"))
    env = {**os.environ, "NNRT_INTEGRITY_DIR": str(tmp_path / "integrity"),
           "NNRT_CPU_OPTIMIZE_AFTER": "0"}

    def run(driver: str) -> list[str]:
        done = subprocess.run([sys.executable, "-c", script, driver], env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.split()

    # the worker's files may not grow past 16 KiB: the weights (256 KiB) are not saved
    assert run("flaky_driver:small_disk_cpu") == ["0", "1", "0"]
    # the torn entry is rejected, recompiled and rewritten; then it loads
    assert run("cpu") == ["0", "1", "1"]
    assert run("cpu") == ["1", "0", "0"]


DOOMED_CLIENT = textwrap.dedent("""
    import sys, time, anyio, numpy as np, nnrt
    sys.path.insert(0, {here!r})
    from models import add_model
    async def main():
        async with nnrt.Runtime(connect={path!r}) as rt:
            compiled = await rt.compile(add_model())
            memfd = rt.memory.create(4096)
            blob = rt.memory.create_blob(4096)
            x = memfd.ndarray(np.float32, (1, 4)); x[:] = 1
            out = blob.ndarray(np.float32, (1, 4))
            device = await rt.allocate(nnrt.BufferDesc((1, 4)),
                                       output_roles=[nnrt.BufferRole(compiled, 0)])
            await compiled.execute([x], outputs=[out])
            await compiled.execute([x], outputs=[device])
            print(blob.name, flush=True)
            await anyio.sleep(3600)  # killed here, everything live
    anyio.run(main)
""")


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found.update(int(p) for p in (task / "children").read_text().split())
    return found


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _maps_of(pid: int, client: int) -> list[str]:
    lines = Path(f"/proc/{pid}/maps").read_text().splitlines()
    return [line for line in lines if "memfd:nnrt" in line or f"nnrt-{client}-" in line]


def test_a_client_dying_with_pools_and_device_buffers_live_is_cleaned_up(tmp_path: Path
                                                                         ) -> None:
    path = str(tmp_path / "nnrt.sock")
    with running_service(path, workers=1) as service:
        time.sleep(0.5)
        workers = _children(service.pid)
        before = {pid: _fds(pid) for pid in {service.pid, *workers}}
        client = subprocess.Popen([sys.executable, "-c", DOOMED_CLIENT.format(
            here=str(HERE), path=path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        blob = client.stdout.readline().strip()  # type: ignore[union-attr]
        assert blob.startswith("/nnrt-"), client.stderr.read()  # type: ignore[union-attr]
        assert any(_maps_of(w, client.pid) for w in workers)  # its pools are mapped there
        client.kill()
        client.wait()
        client.stdout.close()  # type: ignore[union-attr]
        client.stderr.close()  # type: ignore[union-attr]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            now = {pid: _fds(pid) for pid in before}
            leftover = [m for w in workers for m in _maps_of(w, client.pid)]
            if now == before and not leftover and not os.path.exists("/dev/shm" + blob):
                break
            time.sleep(0.1)
        assert {pid: _fds(pid) for pid in before} == before  # fds reclaimed
        assert not [m for w in workers for m in _maps_of(w, client.pid)]  # pools unmapped
        assert not os.path.exists("/dev/shm" + blob)  # the dead client's blob swept
        assert _children(service.pid) == workers  # no worker died
        check = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
            import sys, anyio, numpy as np, nnrt
            sys.path.insert(0, {str(HERE)!r})
            from models import add_model
            async def main():
                async with nnrt.Runtime(connect={path!r}) as rt:
                    c = await rt.compile(add_model())
                    (y,) = await c.execute([np.ones((1, 4), np.float32)])
                    print(y.tolist())
            anyio.run(main)""")], capture_output=True, text=True, timeout=60, check=False)
        assert check.returncode == 0 and "[[2.0, 3.0, 4.0, 5.0]]" in check.stdout, check.stderr
