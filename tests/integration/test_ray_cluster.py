"""``Runtime(cluster=nnrt.RayCluster(...))`` on a local three-node Ray cluster (1 CPU each).

The cluster and one runtime on it start once for the module (a Ray cluster takes seconds to
start); each test runs its coroutine on that runtime's event loop through a blocking portal.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from models import add_model, slow_model

import nnrt

ray = pytest.importorskip("ray", reason="the cluster tests need ray (pip install nnrt[ray])")
cluster_utils = pytest.importorskip("ray.cluster_utils")

pytestmark = pytest.mark.timeout(180)

NODES = 3
#: What the add model adds.
STEP = np.arange(1, 5, dtype=np.float32)


class Served:
    """The module's runtime, run on a portal's event loop."""

    def __init__(self, portal: BlockingPortal, runtime: nnrt.Runtime) -> None:
        self.portal = portal
        self.runtime = runtime

    def run(self, function: Callable[[nnrt.Runtime], Awaitable[Any]]) -> Any:
        return self.portal.call(function, self.runtime)

    def nodes(self) -> dict[str, Any]:
        """The runtime's per-node statistics (read on its event loop)."""
        async def read(rt: nnrt.Runtime) -> dict[str, Any]:
            return rt.statistics().nodes

        return dict(self.run(read))


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """Three Ray nodes of 1 CPU each on this machine (this process's node first)."""
    made = cluster_utils.Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    try:
        for _ in range(NODES - 1):
            made.add_node(num_cpus=1)
        ray.init(address=made.address, log_to_driver=False)
        made.wait_for_nodes()
        yield made
    finally:
        ray.shutdown()
        made.shutdown()


@pytest.fixture(scope="module")
def served(cluster: Any) -> Iterator[Served]:
    with start_blocking_portal() as portal:
        runtime = nnrt.Runtime(cluster=nnrt.RayCluster(max_in_flight=2))
        with portal.wrap_async_context_manager(runtime):
            yield Served(portal, runtime)


def _tcp_inodes() -> set[str]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as lines:
            inodes.update(line.split()[9] for line in list(lines)[1:])
    return inodes


def _descriptors() -> dict[int, str]:
    found = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            found[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
    return found


def _children() -> set[int]:
    pids: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        try:
            pids.update(int(p) for p in (task / "children").read_text().split())
        except OSError:
            continue
    return pids


def _segments() -> set[str]:
    """This process's nnrt shared memories (their names embed the creator's pid; the actors'
    own belong to live actor processes)."""
    pid = str(os.getpid())
    return {n for n in os.listdir("/dev/shm") if n.startswith("nnrt") and pid in n}


@pytest.fixture(autouse=True)
def no_leaks() -> Iterator[None]:
    """The suite's leak check (tests/conftest.py), but for Ray's own TCP connections and the
    module runtime's arena: Ray's core worker keeps gRPC channels to every raylet and actor
    it has talked to, for as long as the Ray connection lives, and the runtime shared by the
    tests keeps the arena chunks it grew until it closes (the last test closes a runtime of
    its own and checks what is left). Unix sockets (nnrt's connection to its node's
    service), other files, pipes, child processes and nnrt shared memories still count."""
    before, children = _descriptors(), _children()
    segments = _segments()
    yield
    deadline = time.monotonic() + 2.0
    while True:
        tcp = _tcp_inodes()
        leaked = {fd: target for fd, target in _descriptors().items()
                  if before.get(fd) != target and not target.startswith(
                      ("/dev/pts", "/dev/null", "/memfd:nnrt-arena"))
                  and not (target.startswith("socket:[") and target[8:-1] in tcp)}
        if not leaked or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert not leaked, f"test leaked file descriptors {leaked}"
    assert not _children() - children, "test leaked child processes"
    assert not _segments() - segments


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").exists() and Path(
        f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def _wait_until(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _actor_statistics(name: str) -> dict[str, Any]:
    return dict(ray.get(ray.get_actor(name).statistics.remote(), timeout=30))


def test_every_node_returns_correct_results(served: Served) -> None:
    nodes_before = served.nodes()
    assert len(nodes_before) == NODES

    async def body(rt: nnrt.Runtime) -> dict[int, np.ndarray]:
        compiled = await rt.compile(add_model())
        results: dict[int, np.ndarray] = {}

        async def one(k: int) -> None:
            (results[k],) = await compiled.execute([np.full((1, 4), k, np.float32)])

        async with anyio.create_task_group() as tg:
            for k in range(60):
                tg.start_soon(one, k)
        await compiled.release()
        return results

    results = served.run(body)
    for k, y in results.items():
        np.testing.assert_array_equal(y, np.full((1, 4), k) + STEP)
    nodes = served.nodes()
    for stats in nodes.values():  # released on the nodes (actors and lanes) that prepared it
        for name in (stats.actor, f"{stats.actor}-lane0"):
            assert _wait_until(lambda n=name: _actor_statistics(n)["models"] == 0, 10), name
    for node, stats in nodes.items():
        before = nodes_before[node]
        ran = stats.local + stats.via_ray - before.local - before.via_ray
        assert ran >= 1, (node, stats)
        assert stats.failed == before.failed and stats.in_flight == 0
    assert sum(s.local + s.via_ray for s in nodes.values()) - sum(
        s.local + s.via_ray for s in nodes_before.values()) == 60


def test_node_local_requests_never_go_through_ray(served: Served) -> None:
    before = served.nodes()

    async def body(rt: nnrt.Runtime) -> None:
        compiled = await rt.compile(add_model())
        for k in range(20):  # one at a time: this node always has room
            (y,) = await compiled.execute([np.full((1, 4), k, np.float32)])
            np.testing.assert_array_equal(y, np.full((1, 4), k) + STEP)
        await compiled.release()

    served.run(body)
    after = served.nodes()
    local = [n for n, s in after.items() if s.is_local]
    assert len(local) == 1
    (mine,) = local
    assert after[mine].local - before[mine].local == 20
    assert after[mine].via_ray == before[mine].via_ray == 0
    for node, stats in after.items():
        if node != mine:
            assert (stats.local, stats.via_ray) == (before[node].local, before[node].via_ray)
    # and this node's actor never received an execute through Ray
    assert _actor_statistics(after[mine].actor)["received"] == 0


def test_a_killed_actor_loses_no_accepted_request(served: Served) -> None:
    nodes = served.nodes()
    victim = next(s for s in nodes.values() if not s.is_local)
    old = _actor_statistics(victim.actor)
    model = slow_model(ops=3, size=192)
    x = np.ones((1, 192, 192), np.float32)
    expected = x * 0.125
    killed: list[float] = []

    async def body(rt: nnrt.Runtime) -> list[np.ndarray]:
        compiled = await rt.compile(model)
        results: list[np.ndarray] = []

        async def stream() -> None:
            for _ in range(40):
                (y,) = await compiled.execute([x], timeout=60)
                results.append(y)

        async def kill() -> None:
            while rt.statistics().nodes[victim.node].via_ray < 3:  # mid-stream, work on it
                await anyio.sleep(0.005)
            ray.kill(ray.get_actor(victim.actor), no_restart=False)
            killed.append(time.monotonic())

        async with anyio.create_task_group() as tg:
            tg.start_soon(kill)
            for _ in range(8):
                tg.start_soon(stream)
        await compiled.release()
        return results

    results = served.run(body)
    assert killed and len(results) == 8 * 40  # every accepted request answered
    for y in results:
        np.testing.assert_allclose(y, expected)
    after = served.nodes()[victim.node]
    assert after.retried == after.failed - victim.failed  # each one lost there ran elsewhere
    # the killed actor's service stopped with it (lifeline), its workers too
    assert _wait_until(lambda: not _alive(old["service_pid"]), 20), old
    # Ray restarts the actor; the client finds it back and sends it work again
    assert _wait_until(lambda: served.nodes()[victim.node].state == "up",
                       60)
    assert served.nodes()[victim.node].restarts == 1
    new = _actor_statistics(victim.actor)
    assert new["pid"] != old["pid"]
    assert not Path(old["directory"]).exists()  # swept by the new actor

    async def again(rt: nnrt.Runtime) -> None:
        compiled = await rt.compile(model)  # prepared again on the new actor, on demand
        start = rt.statistics().nodes[victim.node].via_ray

        async def one() -> None:
            (y,) = await compiled.execute([x], timeout=60)
            np.testing.assert_allclose(y, expected)

        while rt.statistics().nodes[victim.node].via_ray == start:
            async with anyio.create_task_group() as tg:
                for _ in range(8):
                    tg.start_soon(one)
        await compiled.release()

    served.run(again)
    assert _actor_statistics(victim.actor)["received"] >= 1


def test_executes_from_other_nodes_run_on_a_free_lane(cluster: Any) -> None:
    """One execute at a time to the other node runs on its lane, not through its actor; a
    model the lane cannot run whole (dims known only at run time) goes to the actor; the
    lane serves on while the node's actor is killed and restarted; a lane that dies fails
    only its request, which is not retried elsewhere, and is used no more; close removes the
    lanes' directories."""
    x = np.full((1, 4), 5, np.float32)
    dynamic = _dynamic_add_model()

    async def body() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with nnrt.Runtime(cluster=nnrt.RayCluster(nodes=2, local_in_flight=0)) as rt:
            compiled = await rt.compile(add_model())
            (other,) = [s for s in rt.statistics().nodes.values() if not s.is_local]
            lane = f"{other.actor}-lane0"
            for _ in range(10):
                (y,) = await compiled.execute([x], timeout=30)
                np.testing.assert_array_equal(y, x + STEP)
            first, actor = _actor_statistics(lane), _actor_statistics(other.actor)
            assert (first["received"], first["models"]) == (10, 1), first
            assert (actor["received"], actor["models"]) == (0, 0), actor  # all on the lane

            flexible = await rt.compile(dynamic)  # dims known at run time: the actor runs it
            for rows in (1, 3):
                (y,) = await flexible.execute([np.ones((rows, 4), np.float32)], timeout=30)
                np.testing.assert_array_equal(y, np.ones((rows, 4)) + STEP)
            assert _actor_statistics(other.actor)["received"] == 2
            assert _actor_statistics(lane)["models"] == 1

            ray.kill(ray.get_actor(other.actor), no_restart=False)  # the lane goes on
            for _ in range(10):
                (y,) = await compiled.execute([x], timeout=60)
                np.testing.assert_array_equal(y, x + STEP)
            after = rt.statistics().nodes[other.node]
            assert (after.via_ray, after.failed, after.retried) == (22, 0, 0)
            assert _actor_statistics(lane)["received"] == 20

            ray.kill(ray.get_actor(lane), no_restart=True)  # as if its driver crashed
            assert await anyio.to_thread.run_sync(  # ray.kill returns before the actor is gone
                lambda: _wait_until(lambda: not _answers(lane), 30))
            with pytest.raises(nnrt.UnavailableDevice, match="lane running the request died"):
                await compiled.execute([x], timeout=30)
            assert (rt.statistics().nodes[other.node].retried, other.state) == (0, "up")
            # the node's actor runs the rest, once Ray has restarted it
            assert await anyio.to_thread.run_sync(lambda: _wait_until(
                lambda: _answers(other.actor), 60))
            (y,) = await compiled.execute([x], timeout=60)
            np.testing.assert_array_equal(y, x + STEP)
            return first, actor, _actor_statistics(other.actor)

    first, _, last = anyio.run(body)
    assert last["received"] >= 1
    assert not Path(first["directory"]).exists()


def _answers(name: str) -> bool:
    """Whether the actor named ``name`` answers (Ray has restarted it)."""
    try:
        ray.get(ray.get_actor(name).statistics.remote(), timeout=5)
    except Exception:
        return False
    return True


def _dynamic_add_model() -> nnrt.Model:
    """The add model with its rows known only at run time."""
    b = nnrt.ModelBuilder()
    x = b.input("x", (0, 4))
    b.output(b.add(x, STEP.reshape(1, 4)), names=["y"])
    return b.build()


def test_a_lost_local_service_fails_only_what_needs_it_and_close_leaves_nothing(
        cluster: Any) -> None:
    """A second runtime on two nodes, under trio: its own node's actor killed, plain executes
    go to the other node, an execute into caller buffers says the node was lost; after close
    no service, worker or directory of it is left."""
    x = np.full((1, 4), 3, np.float32)

    async def body() -> dict[str, Any]:
        async with nnrt.Runtime(cluster=nnrt.RayCluster(nodes=2, max_restarts=0)) as rt:
            compiled = await rt.compile(add_model())
            nodes = rt.statistics().nodes
            seen = {n: _actor_statistics(s.actor) for n, s in nodes.items()}
            (mine,) = [n for n, s in nodes.items() if s.is_local]
            ray.kill(ray.get_actor(nodes[mine].actor), no_restart=True)
            while _alive(seen[mine]["service_pid"]):  # the lifeline stops the service
                await anyio.sleep(0.02)
            for _ in range(10):  # the first fails here and is retried; then the other node
                (y,) = await compiled.execute([x], timeout=30)
                np.testing.assert_array_equal(y, x + STEP)
            with pytest.raises(nnrt.UnavailableDevice, match="this node's nnrt service was lost"):
                await compiled.execute([x], outputs=[np.empty((1, 4), np.float32)])
            after = rt.statistics().nodes
            assert after[mine].state == "lost"
            assert (after[mine].failed, after[mine].retried) == (1, 1)
            others = [s for n, s in after.items() if n != mine]
            assert sum(s.via_ray for s in others) >= 10
            return seen

    seen = anyio.run(body, backend="trio")  # trio: Ray's results awaited in threads
    for info in seen.values():
        assert _wait_until(lambda info=info: not _alive(info["service_pid"]), 20), info
        assert not Path(info["directory"]).exists(), info
    left = [p for p in Path(tempfile.gettempdir()).glob("nnrt-ray-*")
            if any(Path(i["directory"]).name == p.name for i in seen.values())]
    assert not left


@pytest.mark.slow
def test_stress_ray_loses_nothing() -> None:
    """``nnrt stress --ray`` on its own local cluster: other nodes' actors killed under
    traffic, nothing lost, wrong or leaked."""
    import json
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "nnrt", "stress", "--ray", "--duration", "8", "--kill-every",
         "2.5", "--concurrency", "4", "--json", "-"],
        capture_output=True, text=True, timeout=170, check=False)
    report = json.loads(out.stdout)
    assert (report["lost"], report["wrong"], report["leaked"]) == (0, 0, 0), out.stderr[-2000:]
    assert report["kills"] >= 2 and report["ok"] == report["requests"] > 0
