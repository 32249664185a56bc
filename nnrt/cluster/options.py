"""``RayCluster``: which Ray cluster nnrt runs on, on which nodes, with what per node.

Only validated options live here; nothing imports Ray until :meth:`RayCluster.open` (called
by ``Runtime.__aenter__``), so ``nnrt.RayCluster(...)`` reports bad options as ``BadData``
even where Ray is not installed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nnrt.errors import BadData

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from nnrt.cluster.session import RaySession

__all__ = ["RayCluster"]

#: ``host:port`` of a cluster's GCS, as ``ray start --address`` takes it.
_GCS_ADDRESS = re.compile(r"[A-Za-z0-9_.\-\[\]:]+:[0-9]{1,5}")
#: The most lanes a node may have (each is a process on the node).
MAX_LANES = 64
#: A Ray node id: 56 hex digits.
_NODE_ID = re.compile(r"[0-9a-f]{56}")


@dataclass(frozen=True)
class RayCluster:
    """Run ``Runtime(cluster=nnrt.RayCluster(...))`` on a Ray cluster (docs/cluster.md).

    ``address``: None (the Ray instance this process is connected to, else a new local one,
    as ``ray.init()``), ``"auto"`` (the cluster started on this machine with ``ray start``),
    or ``"HOST:PORT"`` of a cluster's head. ``ray://`` (Ray Client) addresses are refused:
    the client must run on a node of the cluster, next to that node's service.
    ``nodes``: None (every alive node), a count (this node first, then others) or node ids
    (``ray.nodes()``); the client's node must be among them. ``workers`` per node
    (``nnrt serve --workers``; default the node's CPU resource), ``drivers`` and ``threads``
    as ``nnrt serve`` takes them. ``max_in_flight`` is how many requests this client keeps
    in flight per node (default twice its workers): a node at that bound takes no more until
    one ends (per-node backpressure); ``local_in_flight`` is that bound for this process's own
    node (default ``max_in_flight``; 0: plain executes always go to other nodes, this node's
    service runs only what needs it — caller outputs, device memories). ``lanes`` per node
    are plain Ray actors that run executes from other nodes one at a time without Ray's
    hand-off to an async actor's event loop (default 1; 0: every such execute goes to the
    node's actor; docs/cluster.md, "Lanes"). ``max_restarts`` is
    Ray's for each node's actor (-1: always restart). ``resources`` are Ray resources each
    actor reserves (default none: the service's workers use the node's CPUs, not Ray's
    accounting). ``init`` is passed to
    ``ray.init`` when this runtime connects (``runtime_env`` and friends); a Ray instance
    the runtime started is shut down with it. ``start_timeout`` bounds the services' start.
    """

    address: str | None = None
    nodes: int | Sequence[str] | None = None
    workers: int | None = None
    drivers: Sequence[str] | None = None
    threads: int | None = None
    max_in_flight: int | None = None
    local_in_flight: int | None = None
    lanes: int = 1
    max_restarts: int = 3
    resources: Mapping[str, float] = field(default_factory=dict)
    init: Mapping[str, Any] = field(default_factory=dict)
    start_timeout: float = 120.0

    def __post_init__(self) -> None:
        _check_address(self.address)
        _check_nodes(self.nodes)
        for name in ("workers", "threads", "max_in_flight"):
            value = getattr(self, name)
            if value is not None and (value.__class__ is not int or value < 1):
                raise BadData(f"RayCluster: {name} must be a positive int or None, got "
                              f"{value!r:.40}")
        if self.local_in_flight is not None and (self.local_in_flight.__class__ is not int
                                                 or self.local_in_flight < 0):
            raise BadData(f"RayCluster: local_in_flight must be an int of at least 0 or None, "
                          f"got {self.local_in_flight!r:.40}")
        if self.lanes.__class__ is not int or not 0 <= self.lanes <= MAX_LANES:
            raise BadData(f"RayCluster: lanes must be an int from 0 to {MAX_LANES}, got "
                          f"{self.lanes!r:.40}")
        if self.drivers is not None and (isinstance(self.drivers, str) or not self.drivers
                                         or not all(isinstance(d, str) and d
                                                    for d in self.drivers)):
            raise BadData(f"RayCluster: drivers must be a non-empty list of driver names, got "
                          f"{self.drivers!r:.60}")
        if self.max_restarts.__class__ is not int or self.max_restarts < -1:
            raise BadData(f"RayCluster: max_restarts must be an int of at least -1 (always), "
                          f"got {self.max_restarts!r:.40}")
        if not isinstance(self.resources, Mapping) or not all(
                isinstance(k, str) and isinstance(v, int | float) and not isinstance(v, bool)
                and math.isfinite(v) and v >= 0 for k, v in self.resources.items()):
            raise BadData(f"RayCluster: resources must map resource names to non-negative "
                          f"amounts, got {self.resources!r:.60}")
        if not isinstance(self.init, Mapping) or not all(isinstance(k, str) for k in self.init):
            raise BadData(f"RayCluster: init must be a mapping of ray.init keyword arguments, "
                          f"got {self.init!r:.60}")
        if "address" in self.init:
            raise BadData("RayCluster: give the address as address=, not in init")
        if not (isinstance(self.start_timeout, int | float) and not isinstance(
                self.start_timeout, bool) and 0 < self.start_timeout < math.inf):
            raise BadData(f"RayCluster: start_timeout must be a positive number of seconds, "
                          f"got {self.start_timeout!r:.40}")

    def serve_arguments(self, workers: int) -> list[str]:
        """The ``nnrt serve`` options of one node's service with ``workers`` workers."""
        arguments = ["--workers", str(workers)]
        for driver in self.drivers or ():
            arguments += ["--driver", driver]
        if self.threads is not None:
            arguments += ["--threads", str(self.threads)]
        return arguments

    async def open(self, tg: TaskGroup) -> RaySession:
        """Connect to Ray and start nnrt's service on the chosen nodes (``Runtime`` calls
        this; see :class:`nnrt.runtime.clustering.ClusterLink`)."""
        from nnrt.cluster.session import RaySession  # noqa: PLC0415 - imports ray

        return await RaySession.start(self, tg)


def _check_address(address: object) -> None:
    if address is None or address == "auto":
        return
    if not isinstance(address, str):
        raise BadData(f"RayCluster: address must be None, 'auto' or 'HOST:PORT', got "
                      f"{address!r:.60}")
    if address.startswith("ray://"):
        raise BadData(f"RayCluster: {address!r:.60} is a Ray Client address; nnrt's cluster "
                      "client runs on a node of the cluster (next to that node's service): "
                      "run the program there (ray job submit), with address='auto'")
    if not _GCS_ADDRESS.fullmatch(address):
        raise BadData(f"RayCluster: address must be None, 'auto' or 'HOST:PORT' of the "
                      f"cluster's head, got {address!r:.60}")


def _check_nodes(nodes: object) -> None:
    if nodes is None:
        return
    if nodes.__class__ is int:
        if int(str(nodes)) < 1:
            raise BadData(f"RayCluster: nodes must be at least 1, got {nodes}")
        return
    if isinstance(nodes, str) or not isinstance(nodes, Sequence) or not nodes:
        raise BadData(f"RayCluster: nodes must be None, a count or a list of node ids, got "
                      f"{nodes!r:.60}")
    bad = [n for n in nodes if not (isinstance(n, str) and _NODE_ID.fullmatch(n))]
    if bad:
        raise BadData(f"RayCluster: node ids are 56 hex digits (ray.nodes()[i]['NodeID']); "
                      f"got {bad[:3]!r:.80}")
    if len(set(nodes)) != len(nodes):
        raise BadData("RayCluster: a node is named twice in nodes")
