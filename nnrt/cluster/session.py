"""``RaySession``: nnrt's services on a Ray cluster's nodes while one runtime uses them.

It connects to Ray, starts one :class:`~nnrt.cluster.actor.NodeService` per chosen node
(pinned there by ``NodeAffinitySchedulingStrategy``), hands out nodes to requests
(:meth:`RaySession.acquire`: this node while it has capacity, else the least loaded other
node, else wait — per-node backpressure), follows nodes that fail (a lost node is asked again
until Ray has restarted its actor, or found dead for good) and stops every actor on close.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from typing import TYPE_CHECKING, Any

import anyio
import ray
from anyio.abc import TaskGroup
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from nnrt.cluster.actor import NodeService
from nnrt.cluster.lane import NodeLane
from nnrt.cluster.nodes import NodeHandle, choose_nodes, node_workers
from nnrt.cluster.process import sweep_stale
from nnrt.cluster.routing import ClusterRoute
from nnrt.cluster.waiting import NodeLost, remaining, resolve
from nnrt.errors import DeadlineMissed, NnrtError, UnavailableDevice
from nnrt.runtime.stats import NodeStatistics

if TYPE_CHECKING:
    from nnrt.cluster.options import RayCluster
    from nnrt.runtime.compiled import CompiledModel

__all__ = ["RaySession"]

log = logging.getLogger("nnrt.cluster")

#: Seconds between two attempts to reach a lost node's actor while Ray restarts it.
RESTART_POLL = 0.2
#: Seconds a node's actor gets to stop its service on close before it is killed.
STOP_TIMEOUT = 30.0
#: Seconds a lane gets to close its connection on close before it is killed.
LANE_STOP_TIMEOUT = 5.0


class RaySession:
    """The chosen nodes' services (see the module docstring); made by :meth:`start`."""

    def __init__(self, options: RayCluster, tg: TaskGroup, nodes: list[NodeHandle],
                 started_ray: bool) -> None:
        self.options = options
        self._tg = tg
        self.nodes = nodes
        #: Whether this session called ``ray.init`` (then it shuts Ray down on close).
        self._started_ray = started_ray
        self._changed = anyio.Event()
        #: Requests waiting in :meth:`acquire` for a node to have room.
        self._waiting = 0
        self._closed = False
        self._watching: set[str] = set()

    @classmethod
    async def start(cls, options: RayCluster, tg: TaskGroup) -> RaySession:
        """Connect to Ray (``ray.init`` unless connected) and start the nodes' services."""
        started = False
        if not ray.is_initialized():
            init = {"log_to_driver": False, **options.init}
            ray.init(address=options.address, **init)
            started = True
        elif options.address is not None:
            log.info("RayCluster: this process is connected to Ray already; address %r unused",
                     options.address)
        nodes: list[NodeHandle] = []
        try:
            local = ray.get_runtime_context().get_node_id()
            alive = [n for n in ray.nodes() if n.get("Alive")]  # type: ignore[no-untyped-call]
            tag = uuid.uuid4().hex[:8]
            for info in choose_nodes(alive, local, options.nodes):
                nodes.append(_place(options, info, local, tag))
            session = cls(options, tg, nodes, started)
            deadline = time.monotonic() + options.start_timeout
            async with anyio.create_task_group() as starting:
                for node in nodes:
                    starting.start_soon(session._started, node, deadline)
        except BaseException:
            for node in nodes:
                for lane in node.lanes:
                    ray.kill(lane, no_restart=True)
                ray.kill(node.actor, no_restart=True)
            if started:
                ray.shutdown()
            raise
        return session

    async def _started(self, node: NodeHandle, deadline: float) -> None:
        try:
            info = await resolve(node.actor.start.remote(), deadline, node.label)
        except DeadlineMissed:
            raise UnavailableDevice(f"{node.label}: nnrt's service did not start within "
                                    f"{self.options.start_timeout:.0f} s") from None
        if info.get("node") != node.node:
            raise UnavailableDevice(f"{node.label}: the actor runs on node "
                                    f"{str(info.get('node'))[:12]} instead")
        node.pid, node.socket, node.state = int(info["pid"]), str(info["socket"]), "up"

    @property
    def local_socket(self) -> str:
        """The Unix socket of the service on this process's node."""
        return self.nodes[0].socket

    @property
    def local(self) -> NodeHandle:
        """This process's node."""
        return self.nodes[0]

    def route(self, compiled: CompiledModel, options: dict[str, Any]) -> ClusterRoute:
        """The route of a model compiled on this node's service (``options``: the compile's)."""
        return ClusterRoute(self, compiled, options)

    def statistics(self) -> dict[str, NodeStatistics]:
        """Per node: see :class:`~nnrt.runtime.stats.NodeStatistics`."""
        return {node.node: node.snapshot() for node in self.nodes}

    async def acquire(self, tried: set[str], deadline: float | None) -> NodeHandle:
        """A node for one request, counted in flight there (give it back with
        :meth:`release`): this node while under its capacity, else the least loaded other
        node under its capacity, else the first to have room, by ``deadline``. Nodes in
        ``tried`` (those that failed this request) are skipped; ``UnavailableDevice`` when
        no other node is up or coming back."""
        local = self.nodes[0]  # this node while it has room: the common case, at once
        if (local.is_local and local.state == "up" and local.in_flight < local.capacity
                and not self._closed and local.node not in tried):
            local.in_flight += 1
            return local
        while True:
            if self._closed:
                raise UnavailableDevice("the cluster runtime is closed")
            usable = [n for n in self.nodes if n.node not in tried and n.state != "lost"]
            if not usable:
                raise UnavailableDevice("no node of the cluster is left to run the request ("
                                        + ", ".join(f"{n.label}: {n.state}"
                                                    for n in self.nodes) + ")")
            if not any(n.capacity for n in usable):
                raise UnavailableDevice("no node of the cluster that takes requests is left ("
                                        + ", ".join(f"{n.label}: {n.state}, capacity "
                                                    f"{n.capacity}" for n in self.nodes) + ")")
            room = [n for n in usable if n.state == "up" and n.in_flight < n.capacity]
            if room:
                node = room[0] if room[0].is_local else min(
                    room, key=lambda n: n.in_flight / n.capacity)  # capacity > 0: has room
                node.in_flight += 1
                return node
            changed = self._changed
            self._waiting += 1
            try:
                with anyio.move_on_after(None if deadline is None else remaining(deadline)):
                    await changed.wait()
                    continue
            finally:
                self._waiting -= 1
            raise DeadlineMissed("no node had room for the request before its deadline ("
                                 + ", ".join(f"{n.label}: {n.in_flight}/{n.capacity} in flight"
                                             for n in usable) + ")")

    def release(self, node: NodeHandle) -> None:
        """A request on ``node`` ended."""
        node.in_flight -= 1
        if self._waiting:  # room for a request waiting in acquire
            self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    def lost(self, node: NodeHandle, reason: NnrtError) -> None:
        """``node`` failed a request by its loss: no more requests go there until its actor
        answers again (restarted by Ray), which a background task finds out."""
        if node.state != "up" or self._closed:
            return
        log.warning("%s lost: %s", node.label, reason)
        node.state = "restarting"
        self._notify()
        if node.node not in self._watching:
            self._watching.add(node.node)
            self._tg.start_soon(self._watch, node)

    async def _watch(self, node: NodeHandle) -> None:
        """Ask a lost node's actor until it answers (restarted) or is dead for good."""
        deadline = time.monotonic() + self.options.start_timeout
        try:
            while not self._closed and time.monotonic() < deadline:
                try:
                    info = await resolve(node.actor.start.remote(), deadline, node.label)
                except NodeLost as exc:
                    if exc.dead:  # asked after its loss: Ray will not restart it
                        log.warning("%s is gone for good: %s", node.label, exc)
                        break
                    await anyio.sleep(RESTART_POLL)
                    continue
                except NnrtError as exc:
                    log.warning("%s did not come back: %s", node.label, exc)
                    break
                if int(info["pid"]) != node.pid:
                    node.restarts += 1
                # its service is a new one on a new socket: this client reaches it through Ray
                # from now on (its local connection went with the old service)
                node.pid, node.socket, node.is_local = int(info["pid"]), str(info["socket"]), False
                node.state = "up"
                return
            node.state = "lost"
        finally:
            self._watching.discard(node.node)
            self._notify()

    async def aclose(self) -> None:
        """Stop every node's service and actor; shut Ray down if this session started it."""
        if self._closed:
            return
        self._closed = True
        self._notify()
        async with anyio.create_task_group() as stopping:
            for node in self.nodes:
                stopping.start_soon(self._stop, node)
        # the directories of this node's actors that died (their services stopped by their
        # lifelines); those of other nodes go when a new actor starts there
        sweep_stale()
        if self._started_ray:
            ray.shutdown()

    async def _stop(self, node: NodeHandle) -> None:
        for lane in node.lanes:  # each closes its connection to the service first
            with contextlib.suppress(NnrtError):
                await resolve(lane.stop.remote(), time.monotonic() + LANE_STOP_TIMEOUT,
                              node.label)
        try:
            await resolve(node.actor.stop.remote(), time.monotonic() + STOP_TIMEOUT, node.label)
        except NnrtError as exc:  # dead already, or stuck: Ray ends it below either way
            log.info("%s: stopping its service: %s", node.label, exc)
        for lane in node.lanes:
            ray.kill(lane, no_restart=True)
        ray.kill(node.actor, no_restart=True)


def _place(options: RayCluster, info: Any, local: str, tag: str) -> NodeHandle:
    """Create the node's actor, pinned to it (not soft: it runs there or not at all)."""
    node_id = str(info["NodeID"])
    workers = node_workers(info, options.workers)
    resources = dict(options.resources)
    num_cpus, num_gpus = resources.pop("CPU", 0), resources.pop("GPU", 0)
    name = f"nnrt-{tag}-{node_id[:12]}"
    actor = ray.remote(NodeService).options(
        name=name, num_cpus=num_cpus, num_gpus=num_gpus, resources=resources or None,
        max_restarts=options.max_restarts, max_task_retries=0, max_concurrency=1000,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
    ).remote(options.serve_arguments(workers), options.start_timeout)
    capacity = options.max_in_flight or 2 * workers
    if node_id == local and options.local_in_flight is not None:
        capacity = options.local_in_flight
    lanes = [ray.remote(NodeLane).options(
        name=f"{name}-lane{k}", num_cpus=0, max_restarts=options.max_restarts,
        max_task_retries=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
    ).remote(list(options.drivers) if options.drivers else None, options.threads)
        for k in range(options.lanes)]
    return NodeHandle(node_id, actor, name, node_id == local, workers, capacity, lanes=lanes,
                      idle=list(range(len(lanes))))
