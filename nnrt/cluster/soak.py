"""``nnrt stress --ray``: a cluster runtime under traffic while other nodes' actors are killed.

One client (this process) runs ``concurrency`` request loops over the stress models
(:mod:`nnrt.stress.models`, results checked against :func:`nnrt.reference.run`) on
``Runtime(cluster=nnrt.RayCluster(...))`` — on a local ``ray.cluster_utils.Cluster`` of
``nodes`` nodes of 1 CPU each that it starts and stops, or on the cluster at ``address``.
Every ``kill_every`` seconds it ``ray.kill``s the actor of a random node other than its own
(Ray restarts it). At the end it counts what was lost (an accepted request that failed), wrong
(a result that differs from the reference) and leaked (a node service or directory of this
run left after close, a child process or an nnrt shared memory of this process).
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import ray

from nnrt.cluster.options import RayCluster
from nnrt.cluster.waiting import resolve
from nnrt.errors import NnrtError
from nnrt.reference.interpreter import run as reference_run
from nnrt.runtime.runtime import Runtime
from nnrt.stress.models import MODELS, random_inputs
from nnrt.stress.outcomes import results_match
from nnrt.stress.procs import children, is_alive, shm_segments

__all__ = ["RaySoakConfig", "RaySoakReport", "run_ray_soak"]

#: Input sets per model, each checked against the reference once (before the traffic).
INPUT_SETS = 8
#: Seconds one request may take (its deadline; retries on another node included).
REQUEST_TIMEOUT = 60.0


@dataclass(frozen=True)
class RaySoakConfig:
    """The parameters of one run (``nnrt stress --ray --help``)."""

    duration: float
    kill_every: float
    nodes: int = 3
    address: str | None = None
    concurrency: int = 4
    seed: int = 0


@dataclass
class RaySoakReport:
    """What a run did and found."""

    requests: int = 0
    ok: int = 0
    lost: int = 0
    wrong: int = 0
    kills: int = 0
    leaks: list[str] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    elapsed: float = 0.0

    @property
    def leaked(self) -> int:
        """How many leaks were found."""
        return len(self.leaks)

    @property
    def failed(self) -> bool:
        """Whether anything was lost, wrong or leaked."""
        return bool(self.lost or self.wrong or self.leaks)

    def lines(self) -> list[str]:
        """The report as text lines, the verdict last."""
        out = [f"requests {self.requests} in {self.elapsed:.1f} s, ok {self.ok}, "
               f"{self.kills} actors killed"]
        for node, stats in sorted(self.nodes.items()):
            out.append(f"  node {node[:12]}{' (this node)' if stats['is_local'] else ''}: "
                       f"local={stats['local']} via_ray={stats['via_ray']} "
                       f"failed={stats['failed']} retried={stats['retried']} "
                       f"restarts={stats['restarts']} state={stats['state']}")
        out.append("errors by kind: " + (" ".join(f"{k}={v}" for k, v in
                                                  sorted(self.errors.items())) or "none"))
        out.extend(f"leak: {leak}" for leak in self.leaks)
        out.append(f"{'FAILED' if self.failed else 'OK'}: lost {self.lost}, wrong {self.wrong}, "
                   f"leaked {self.leaked}")
        return out

    def to_json(self) -> dict[str, Any]:
        """The report as a JSON object."""
        return {"requests": self.requests, "ok": self.ok, "lost": self.lost,
                "wrong": self.wrong, "leaked": self.leaked, "leaks": self.leaks,
                "kills": self.kills, "errors": self.errors, "nodes": self.nodes,
                "elapsed": self.elapsed}


def run_ray_soak(config: RaySoakConfig) -> RaySoakReport:
    """Run the soak described by ``config`` (blocking; starts and stops its own local cluster
    unless ``config.address`` names one)."""
    from ray.cluster_utils import Cluster  # noqa: PLC0415 - only for a local cluster

    local = None
    shm_before = shm_segments([os.getpid()])
    children_before = children(os.getpid())
    if config.address is None:
        local = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
        for _ in range(config.nodes - 1):
            local.add_node(num_cpus=1)
    try:
        ray.init(address=local.address if local is not None else config.address,
                 log_to_driver=False)
        if local is not None:
            local.wait_for_nodes()
        report = anyio.run(_soak, config)
    finally:
        ray.shutdown()
        if local is not None:
            local.shutdown()  # type: ignore[no-untyped-call]
    if local is not None:  # the cluster's own processes are this process's children
        left = children(os.getpid()) - children_before
        report.leaks += [f"child process {pid}" for pid in sorted(left)]
    report.leaks += [f"shared memory {name}" for name in
                     sorted(shm_segments([os.getpid()]) - shm_before)]
    return report


async def _soak(config: RaySoakConfig) -> RaySoakReport:
    rng = random.Random(config.seed)
    report = RaySoakReport()
    cases = _cases(config.seed)
    seen: dict[str, dict[str, Any]] = {}  # actor pid -> its service's pid and directory
    start = time.monotonic()
    async with Runtime(cluster=RayCluster(max_restarts=-1)) as rt:
        compiled = {name: await rt.compile(model) for name, (model, _) in cases.items()}
        end = time.monotonic() + config.duration

        async def loop(k: int) -> None:
            pick = random.Random(config.seed * 1000 + k)
            while time.monotonic() < end:
                name = pick.choice(sorted(cases))
                inputs, expected = pick.choice(cases[name][1])
                report.requests += 1
                try:
                    actual = await compiled[name].execute(inputs, timeout=REQUEST_TIMEOUT)
                except NnrtError as exc:
                    report.lost += 1
                    kind = type(exc).__name__
                    report.errors[kind] = report.errors.get(kind, 0) + 1
                    continue
                if results_match(actual, expected, exact=False) is not None:
                    report.wrong += 1
                else:
                    report.ok += 1

        async def killer() -> None:
            while config.kill_every > 0 and time.monotonic() + config.kill_every < end:
                await anyio.sleep(config.kill_every)
                others = [s for s in rt.statistics().nodes.values()
                          if not s.is_local and s.state == "up"]
                if others:
                    victim = rng.choice(others)
                    await _record(seen, victim.actor)
                    ray.kill(ray.get_actor(victim.actor), no_restart=False)
                    report.kills += 1

        for stats in rt.statistics().nodes.values():
            await _record(seen, stats.actor)
        async with anyio.create_task_group() as tg:
            tg.start_soon(killer)
            for k in range(config.concurrency):
                tg.start_soon(loop, k)
        for stats in rt.statistics().nodes.values():
            if stats.state == "up":
                await _record(seen, stats.actor)
        report.nodes = {n: vars(s) for n, s in rt.statistics().nodes.items()}
    report.elapsed = time.monotonic() - start
    report.leaks += await anyio.to_thread.run_sync(_left_behind, seen)
    return report


def _cases(seed: int) -> dict[str, tuple[Any, list[tuple[list[Any], list[Any]]]]]:
    """Per stress model: the model and input sets with their reference outputs."""
    rng = np.random.default_rng(seed)
    cases = {}
    for name, make in MODELS.items():
        model = make()
        sets = []
        for _ in range(INPUT_SETS):
            inputs = random_inputs(model, rng)
            sets.append((inputs, reference_run(model, inputs)))
        cases[name] = (model, sets)
    return cases


async def _record(seen: dict[str, dict[str, Any]], actor: str) -> None:
    """Note an actor's service pid and directory (checked after close)."""
    try:
        handle: Any = ray.get_actor(actor)
        info = await resolve(handle.statistics.remote(), time.monotonic() + 30, actor)
    except (NnrtError, ValueError):
        return  # restarting: recorded on the next call
    seen[str(info["pid"])] = {"service_pid": info["service_pid"],
                              "directory": info["directory"]}


def _left_behind(seen: dict[str, dict[str, Any]]) -> list[str]:
    """The services and directories of this run still there after close (a few seconds'
    grace: a killed actor's service stops by its lifeline)."""
    deadline = time.monotonic() + 20
    while True:
        leaks = [f"node service pid {i['service_pid']}" for i in seen.values()
                 if is_alive(int(i["service_pid"]))]
        leaks += [f"directory {i['directory']}" for i in seen.values()
                  if Path(i["directory"]).exists()]
        if not leaks or time.monotonic() > deadline:
            return leaks
        time.sleep(0.2)
