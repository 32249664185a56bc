"""nnrt on a Ray cluster (``Runtime(cluster=nnrt.RayCluster(...))``) against its peers.

Run: .venv/bin/python benchmarks/cluster.py [--requests N] [--concurrency C] [--big-runs R]

One run, on a local ``ray.cluster_utils.Cluster`` of three nodes of 1 CPU and a 1 GiB object
store each on this machine (every node shares its cores: the figures say what each path
costs, not what a real cluster of separate machines serves), with the issue's four
comparisons (issue 29):

1. node-local: a 1x4 ADD through a cluster runtime's own node (``nodes=1``: over its Unix
   socket) vs nnrt's shared mode (``nnrt serve --workers 1`` + ``Runtime(connect=...)``):
   p50 / p99 of sequential round trips, and requests/s with C in flight (the four ADD paths
   measured in turn, ``--rounds`` times, medians reported: the machine's load drifts);
2. cross-node: the same ADD sent to another node (``local_in_flight=0``) vs a plain Ray actor
   on that node doing the same numpy work (``x + c``), called the same way, and vs the same
   work in an async actor (served concurrently, as nnrt's node actor is);
3. a 64 MiB float32 tensor through a RELU on another node vs a plain Ray actor returning
   ``np.maximum(x, 0)`` of the same array put with ``ray.put``, in turns (and, for scale, a
   local ``ray.get(ray.put(x))``): medians of R round trips and of the turns' ratios;
4. throughput of a real model (magika's classifier from the test cache, 8 rows; the demo CNN
   when it is not cached) with 1, 2 and 3 nodes at C in flight, with this client's ceiling of
   calls through Ray (a no-op actor call, pipelined) and what the cost model of
   docs/cluster.md predicts from them for nodes that are separate machines.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import ray
from ray.cluster_utils import Cluster
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

import nnrt

Array = np.ndarray[Any, Any]
CONSTANT = np.arange(1, 5, dtype=np.float32).reshape(1, 4)
X = np.ones((1, 4), np.float32)
BIG = (4096, 4096)  # 64 MiB of float32
NODES = 3
#: Bytes of each node's object store: ``ray.cluster_utils`` gives 150 MiB by default, where a
#: 64 MiB input, its result and the previous result already overflow (Ray then spills and
#: both paths measure the disk); a real node has ~30 % of its RAM.
STORE = 1 << 30
MAGIKA = (Path.home() / ".cache" / "nnrt" / "test-models" / "magika-1.0.3" / "magika"
          / "models" / "standard_v3_3" / "model.onnx")


class Peer:
    """The plain Ray actor the cross-node figures compare with: the same numpy work."""

    def add(self, x: Array) -> Array:
        return x + CONSTANT

    def relu(self, x: Array) -> Array:
        return np.maximum(x, 0)

    def noop(self) -> None:
        return None


class AsyncPeer:
    """The same ADD in an async actor: Ray serves its calls concurrently, as it serves nnrt's
    node actor (which must, to keep a node's workers busy); a call costs more than a plain
    actor's (Ray's event-loop thread), which the cross-node figures separate."""

    async def add(self, x: Array) -> Array:
        return x + CONSTANT


def add_model() -> nnrt.Model:
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 4))
    b.output(b.add(x, CONSTANT), names=["y"])
    return b.build()


def relu_model() -> nnrt.Model:
    b = nnrt.ModelBuilder()
    x = b.input("x", BIG)
    b.output(b.relu(x), names=["y"])
    return b.build()


def real_model() -> tuple[str, nnrt.Model, list[Array]]:
    """magika at 8 rows when cached, else the demo CNN at 16 images."""
    rng = np.random.default_rng(0)
    if MAGIKA.exists():
        import onnx  # noqa: PLC0415

        import nnrt.onnx  # noqa: PLC0415

        model = nnrt.onnx.load(onnx.load(str(MAGIKA)), input_shapes={"bytes": [8, 2048]})
        return "magika (8 rows)", model, [rng.integers(0, 257, (8, 2048)).astype(np.int32)]
    from nnrt.cli.demo import build_demo_model, demo_weights  # noqa: PLC0415

    images = rng.random((16, 28, 28, 1), dtype=np.float32)
    return "demo CNN (16 images)", build_demo_model(demo_weights()), [images]


async def latency(call: Callable[[], Awaitable[Any]], n: int) -> tuple[float, float]:
    """p50, p99 of ``n`` sequential calls, in microseconds (after n // 10 warm-up calls)."""
    for _ in range(max(10, n // 10)):
        await call()
    times = []
    for _ in range(n):
        start = time.perf_counter()
        await call()
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2] * 1e6, times[int(len(times) * 0.99)] * 1e6


async def throughput(call: Callable[[], Awaitable[Any]], n: int, concurrency: int) -> float:
    """Calls per second with ``concurrency`` loops sharing ``n`` calls."""
    left = [n]

    async def loop() -> None:
        while left[0] > 0:
            left[0] -= 1
            await call()

    async with anyio.create_task_group() as tg:  # warm-up: every loop once
        for _ in range(concurrency):
            tg.start_soon(call)
    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(concurrency):
            tg.start_soon(loop)
    return n / (time.perf_counter() - start)


async def median_s(call: Callable[[], Awaitable[Any]], runs: int) -> float:
    """Median seconds of ``runs`` calls after as many warm-up calls (arenas and object
    stores grown, compiled)."""
    for _ in range(runs):
        await call()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        await call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@contextlib.asynccontextmanager
async def shared_mode() -> AsyncIterator[nnrt.Runtime]:
    """A runtime connected to ``nnrt serve --workers 1`` (shared mode)."""
    with tempfile.TemporaryDirectory(prefix="nnrt-bench-") as directory:
        path = os.path.join(directory, "nnrt.sock")
        service = subprocess.Popen([sys.executable, "-m", "nnrt", "-q", "serve", "--socket",
                                    path, "--workers", "1"])
        try:
            while not os.path.exists(path):
                await anyio.sleep(0.05)
            await anyio.sleep(0.2)
            async with nnrt.Runtime(connect=path) as rt:
                yield rt
        finally:
            service.terminate()
            service.wait()


async def add_calls(rt: nnrt.Runtime) -> Callable[[], Awaitable[Any]]:
    compiled = await rt.compile(add_model())

    async def call() -> Any:
        return await compiled.execute([X])

    return call


async def add_figures(args: argparse.Namespace, peer: Any, async_peer: Any
                      ) -> dict[str, list[Any]]:
    """The ADD through the four paths, measured in turn for ``args.rounds`` rounds (the
    machine's load drifts: each path meets it alike)."""
    async with contextlib.AsyncExitStack() as stack:
        shared = await stack.enter_async_context(shared_mode())
        local = await stack.enter_async_context(
            nnrt.Runtime(cluster=nnrt.RayCluster(nodes=1, max_in_flight=64)))
        cross = await stack.enter_async_context(nnrt.Runtime(cluster=nnrt.RayCluster(
            nodes=2, local_in_flight=0, max_in_flight=64)))

        async def plain() -> Any:
            return await peer.add.remote(X)

        async def plain_async() -> Any:
            return await async_peer.add.remote(X)

        calls = {"shared": await add_calls(shared), "local": await add_calls(local),
                 "cross": await add_calls(cross), "peer": plain, "async_peer": plain_async}
        figures: dict[str, list[Any]] = {name: [] for name in calls}
        for _ in range(args.rounds):
            for name, call in calls.items():
                n = args.requests if name in ("shared", "local") else args.requests // 4
                p50, p99 = await latency(call, n)
                figures[name].append((p50, p99, await throughput(call, n, args.concurrency)))
        for name, runtime in (("local", local), ("cross", cross)):
            routes = [(s.local, s.via_ray) for s in runtime.statistics().nodes.values()]
            print(f"#   {name} routes (local, via Ray): {routes}", file=sys.stderr)
    return figures


async def peer_figures(peer: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The plain Ray actor: the local put/get of 64 MiB, the no-op ceiling."""
    big = np.random.default_rng(1).standard_normal(BIG).astype(np.float32)

    async def put_get() -> Any:
        return ray.get(ray.put(big))

    async def noop() -> Any:
        return await peer.noop.remote()

    return {"put_get": await median_s(put_get, args.big_runs),
            "noop_rate": await throughput(noop, args.requests, 64)}


async def big_cross_node(peer: Any, runs: int) -> tuple[float, float, float]:
    """The 64 MiB RELU on another node through nnrt and through the plain Ray actor
    (``ray.put`` + call), in turns (the machine's load drifts over a run of seconds each):
    their medians and the median of the turns' ratios."""
    big = np.random.default_rng(1).standard_normal(BIG).astype(np.float32)
    async with nnrt.Runtime(cluster=nnrt.RayCluster(nodes=2, local_in_flight=0)) as rt:
        compiled = await rt.compile(relu_model())

        async def ours() -> Any:
            (y,) = await compiled.execute([big], timeout=120)
            return y

        async def plain() -> Any:
            return await peer.relu.remote(ray.put(big))

        np.testing.assert_array_equal(await ours(), np.maximum(big, 0))
        for _ in range(2):  # arenas and object stores grown
            await ours()
            await plain()
        pairs = []
        for _ in range(runs):
            start = time.perf_counter()
            await plain()
            middle = time.perf_counter()
            await ours()
            pairs.append((middle - start, time.perf_counter() - middle))
    return (statistics.median(p for p, _ in pairs), statistics.median(o for _, o in pairs),
            statistics.median(o / p for p, o in pairs))


async def real_throughput(nodes: int, concurrency: int, seconds: float
                          ) -> tuple[str, float, list[tuple[int, int]]]:
    name, model, inputs = real_model()
    async with nnrt.Runtime(cluster=nnrt.RayCluster(nodes=nodes, max_in_flight=4)) as rt:
        compiled = await rt.compile(model)
        async with anyio.create_task_group() as tg:  # warm every node
            for _ in range(concurrency):
                tg.start_soon(compiled.execute, inputs)
        done = [0]
        end = time.perf_counter() + seconds

        async def loop() -> None:
            while time.perf_counter() < end:
                await compiled.execute(inputs, timeout=60)
                done[0] += 1

        start = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for _ in range(concurrency):
                tg.start_soon(loop)
        rate = done[0] / (time.perf_counter() - start)
        routes = [(s.local, s.via_ray) for s in rt.statistics().nodes.values()]
    return name, rate, routes


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    me = ray.get_runtime_context().get_node_id()
    remote = sorted(x["NodeID"] for x in ray.nodes() if x["Alive"] and x["NodeID"] != me)[0]
    peer = ray.remote(Peer).options(  # type: ignore[attr-defined]
        num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(remote, soft=False)
    ).remote()
    async_peer = ray.remote(AsyncPeer).options(  # type: ignore[attr-defined]
        num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(remote, soft=False)
    ).remote()
    out: dict[str, Any] = {"add": await add_figures(args, peer, async_peer)}
    out["peer"] = await peer_figures(peer, args)
    out["big"] = await big_cross_node(peer, args.big_runs)
    ray.kill(peer)
    ray.kill(async_peer)
    out["real"] = [await real_throughput(k, args.real_concurrency, args.seconds)
                   for k in range(1, NODES + 1)]
    return out


def _median(rows: list[Any]) -> tuple[float, ...]:
    return tuple(statistics.median(column) for column in zip(*rows, strict=True))


def report(out: dict[str, Any]) -> None:
    add = out["add"]
    sp50, sp99, srate = _median(add["shared"])
    lp50, lp99, lrate = _median(add["local"])
    cp50, cp99, crate = _median(add["cross"])
    pp50, pp99, prate = _median(add["peer"])
    ap50, ap99, arate = _median(add["async_peer"])
    rounds = len(add["shared"])
    print(f"# {platform.machine()}, {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}, ray {ray.__version__}, nnrt {nnrt.__version__}; "
          f"{NODES} local nodes of 1 CPU; medians of {rounds} interleaved rounds")
    print("\n| path (1x4 ADD) | p50 µs | p99 µs | req/s at C | ratio p50 / req/s |")
    print("|---|---|---|---|---|")
    print(f"| shared mode (nnrt serve + connect) | {sp50:.0f} | {sp99:.0f} | {srate:.0f} | |")
    print(f"| cluster, node-local | {lp50:.0f} | {lp99:.0f} | {lrate:.0f} | "
          f"{lp50 / sp50:.2f}x / {srate / lrate:.2f}x |")
    print(f"| plain Ray actor call, other node | {pp50:.0f} | {pp99:.0f} | {prate:.0f} | |")
    print(f"| plain Ray async actor call, other node | {ap50:.0f} | {ap99:.0f} | {arate:.0f} "
          f"| {ap50 / pp50:.2f}x / {prate / arate:.2f}x |")
    print(f"| cluster, cross-node | {cp50:.0f} | {cp99:.0f} | {crate:.0f} | "
          f"{cp50 / pp50:.2f}x / {prate / crate:.2f}x (vs the async actor: "
          f"{cp50 / ap50:.2f}x / {arate / crate:.2f}x) |")
    (relu, big, turns), put_get = out["big"], out["peer"]["put_get"]
    print("\n| 64 MiB float32, RELU on another node | median ms | ratio (median of turns) |")
    print("|---|---|---|")
    print(f"| plain Ray: ray.put + actor np.maximum + result | {relu * 1e3:.0f} | |")
    print(f"| nnrt cluster, cross-node execute | {big * 1e3:.0f} | {turns:.2f}x |")
    print(f"| (local ray.get(ray.put(x)), for scale) | {put_get * 1e3:.1f} | |")
    noop = out["peer"]["noop_rate"]
    one = out["real"][0][1]
    print(f"\n| {out['real'][0][0]}, nodes | req/s measured | (local, via Ray) per node | "
          f"predicted, separate machines |")
    print("|---|---|---|---|")
    for k, (_, rate, routes) in enumerate(out["real"], start=1):
        predicted = one + min((k - 1) * one, crate)
        print(f"| {k} | {rate:.0f} | {routes} | {predicted:.0f} |")
    print(f"\nthis client's ceiling of Ray calls (no-op, 64 in flight): {noop:.0f}/s; of nnrt "
          f"cross-node executes: {crate:.0f}/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--big-runs", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--real-concurrency", type=int, default=12)
    parser.add_argument("--seconds", type=float, default=8.0)
    args = parser.parse_args()
    node = {"num_cpus": 1, "object_store_memory": STORE}
    cluster = Cluster(initialize_head=True, head_node_args=node)
    try:
        for _ in range(NODES - 1):
            cluster.add_node(**node)
        ray.init(address=cluster.address, log_to_driver=False)
        cluster.wait_for_nodes()
        report(anyio.run(measure, args))
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    main()
