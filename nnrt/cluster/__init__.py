"""nnrt on a Ray cluster: ``nnrt.Runtime(cluster=nnrt.RayCluster(...))`` (docs/cluster.md).

:mod:`~nnrt.cluster.options` holds ``RayCluster`` (validated options; no Ray import until a
runtime opens it). The rest imports Ray: :mod:`~nnrt.cluster.session` (``RaySession``: the
nodes' actors, which node a request goes to, lost nodes followed), :mod:`~nnrt.cluster.nodes`
(what the client knows of each node), :mod:`~nnrt.cluster.routing` (``ClusterRoute``: one
compiled model's executes, this node's socket or another node's actor, retries),
:mod:`~nnrt.cluster.shipping` (what crosses the network and its checks),
:mod:`~nnrt.cluster.waiting` (Ray results awaited from asyncio or trio),
:mod:`~nnrt.cluster.actor` (``NodeService``, the actor on each node),
:mod:`~nnrt.cluster.process` (its ``nnrt serve`` process and private directory) and
:mod:`~nnrt.cluster.lifeline` (the service stopping when its actor dies).
"""

from nnrt.cluster.options import RayCluster as RayCluster

__all__ = ["RayCluster"]
