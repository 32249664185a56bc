"""The nodes a cluster runtime uses: which ones (:func:`choose_nodes`) and what the client
knows of each (:class:`NodeHandle`: its actor, state, load and counts)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nnrt.errors import BadData
from nnrt.runtime.stats import NodeStatistics

__all__ = ["NodeHandle", "choose_nodes", "node_workers"]


def choose_nodes(alive: Sequence[Mapping[str, Any]], local: str,
                 wanted: int | Sequence[str] | None) -> list[Mapping[str, Any]]:
    """The nodes to serve on, this node first: from ``alive`` (``ray.nodes()`` entries that
    are alive), every one, the first ``wanted`` or those named (``BadData`` naming the
    available ones when one is missing, or when the client's node ``local`` is not chosen)."""
    by_id = {str(n["NodeID"]): n for n in alive}
    known = ", ".join(sorted(i[:12] for i in by_id)) or "none"
    if local not in by_id:
        raise BadData(f"RayCluster: this process's node {local[:12]} is not an alive node of "
                      f"the cluster (alive: {known})")
    order = [local, *sorted(i for i in by_id if i != local)]
    if wanted is None:
        ids = order
    elif isinstance(wanted, int):
        if wanted > len(order):
            raise BadData(f"RayCluster: nodes={wanted}, but the cluster has {len(order)} "
                          f"alive node(s): {known}")
        ids = order[:wanted]
    else:
        missing = [n[:12] for n in wanted if n not in by_id]
        if missing:
            raise BadData(f"RayCluster: nodes {missing} are not alive nodes of the cluster "
                          f"(alive: {known})")
        if local not in wanted:
            raise BadData(f"RayCluster: the client's node {local[:12]} must be among nodes: the "
                          "client talks to its own node's service over its Unix socket")
        ids = [local, *(n for n in wanted if n != local)]
    return [by_id[i] for i in ids]


def node_workers(node: Mapping[str, Any], workers: int | None) -> int:
    """Workers of a node's service: ``workers``, else the node's CPU resource (at least 1)."""
    if workers is not None:
        return workers
    cpus = node.get("Resources", {}).get("CPU", 1)
    return max(1, int(cpus))


@dataclass
class NodeHandle:
    """One node as the client sees it (mutated by the session, in the event loop only)."""

    node: str
    #: The node's ``NodeService`` actor handle, and its name.
    actor: Any
    name: str
    is_local: bool
    workers: int
    capacity: int
    state: str = "starting"
    #: The actor's process id when last started (a different one: Ray restarted it).
    pid: int = -1
    socket: str = ""
    in_flight: int = 0
    local: int = 0
    via_ray: int = 0
    failed: int = 0
    retried: int = 0
    restarts: int = 0
    #: The node's lanes (``NodeLane`` actor handles) and the indices of those free now.
    lanes: list[Any] = field(default_factory=list)
    idle: list[int] = field(default_factory=list)

    def take_lane(self) -> int | None:
        """A free lane's index, now taken (give it back with :meth:`give_lane`), or None."""
        return self.idle.pop() if self.idle else None

    def give_lane(self, lane: int) -> None:
        """Lane ``lane`` is free again."""
        self.idle.append(lane)

    @property
    def label(self) -> str:
        """How messages name the node."""
        return f"node {self.node[:12]}{' (this node)' if self.is_local else ''}"

    def snapshot(self) -> NodeStatistics:
        """The node's statistics now."""
        return NodeStatistics(self.node, self.name, self.is_local, self.state, self.workers,
                              self.capacity, self.in_flight, self.local, self.via_ray,
                              self.failed, self.retried, self.restarts)
