"""What ``Runtime(cluster=...)`` needs from a cluster, as protocols (no cluster engine imported).

The runtime knows a cluster only through these: :class:`nnrt.RayCluster` (``nnrt/cluster``)
implements them on Ray. :meth:`ClusterLink.open` places nnrt's service on the cluster's
nodes and returns a :class:`ClusterSession`; the runtime connects to the service of its own
node (``local_socket``) as in shared mode, and gives every compiled model a
:class:`ExecuteRoute`, which sends each execute to that service or to another node's
(docs/cluster.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from anyio.abc import TaskGroup

if TYPE_CHECKING:
    from nnrt.model.binding import Inputs
    from nnrt.runtime.compiled import CompiledModel
    from nnrt.runtime.stats import NodeStatistics

__all__ = ["ClusterLink", "ClusterSession", "ExecuteRoute"]


class ExecuteRoute(Protocol):
    """Where one compiled model's executes go: this node's service or another node's."""

    async def execute(self, inputs: Inputs, outputs: Sequence[Any] | None,
                      timeout: float | None, copy: bool, priority: int | None) -> list[Any]:
        """Run one execute on the node the route picks (see ``CompiledModel.execute``)."""
        ...

    async def release(self) -> None:
        """Let go of the model on the other nodes that prepared it (``CompiledModel.release``)."""
        ...


class ClusterSession(Protocol):
    """The nnrt services of a cluster's nodes while a runtime uses them."""

    @property
    def local_socket(self) -> str:
        """The Unix socket of the service on the client's own node."""
        ...

    def route(self, compiled: CompiledModel, options: dict[str, Any]) -> ExecuteRoute:
        """The route of a model just compiled on the local service with ``options``."""
        ...

    def statistics(self) -> dict[str, NodeStatistics]:
        """Per node: requests sent locally and through the cluster, failures, restarts."""
        ...

    async def aclose(self) -> None:
        """Stop the services this session started and release what it holds (idempotent)."""
        ...


class ClusterLink(Protocol):
    """A cluster to run on (``Runtime(cluster=...)``): opens a :class:`ClusterSession`."""

    async def open(self, tg: TaskGroup) -> ClusterSession:
        """Start nnrt's service on the chosen nodes; background work runs in ``tg``."""
        ...
