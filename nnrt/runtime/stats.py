"""Frozen statistics records returned by ``Runtime.statistics()``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from nnrt.runtime.metrics import ModelStatistics

__all__ = ["LOAD_REPORT_STALE", "ModelStatistics", "NodeStatistics", "PoolStatistics",
           "RuntimeStatistics"]

#: Seconds after which a worker's latest load report no longer tells its load.
LOAD_REPORT_STALE = 1.0


@dataclass(frozen=True)
class PoolStatistics:
    """One driver's worker pool at one moment."""

    driver: str
    workers: int
    workers_alive: int
    queue_depth: int
    in_flight: int
    completed: int
    failed: int
    restarts: int
    #: Device-memory allocations the driver refused, served from a shared memfd instead.
    allocate_fallbacks: int = 0
    #: Prepares served from the compilation cache.
    cache_hits: int = 0
    #: Prepares that compiled and saved into the compilation cache.
    cache_misses: int = 0
    #: Cache loads the driver rejected (corrupt, stale, unreadable): compiled again instead.
    cache_load_failures: int = 0
    #: Models (steps) prepared on this driver: compiled, loaded from the cache or from a
    #: model file — one per compile, and one per input shape of a model prepared per shape.
    prepared: int = 0
    #: Whether light requests go to the first worker right now rather than to the least-loaded
    #: one (the pool decides by trying both; see ``nnrt.runtime.backends.steering``).
    packing: bool = False
    #: Per worker: the CPUs it kept busy serving (busy / span of its latest load report, see
    #: ``nnrt.worker.load``; above 1 when its kernels run threads). A worker sends no report
    #: while idle, nor while one long execute runs: a report older than
    #: :data:`LOAD_REPORT_STALE` counts as 0 with nothing in flight, and 1 otherwise.
    worker_load: tuple[float, ...] = ()
    #: Per worker: requests sent to it and not yet answered.
    worker_in_flight: tuple[int, ...] = ()


@dataclass(frozen=True)
class NodeStatistics:
    """One node of a cluster runtime (``Runtime(cluster=...)``, docs/cluster.md) at one moment.

    ``local`` counts the executes this client sent to its own node's service over the Unix
    socket (shared mode's path); ``via_ray`` those sent to the node's actor through Ray. A
    request retried elsewhere after its node was lost counts once per node it was sent to.
    """

    node: str
    #: The name of the node's Ray actor (``ray.get_actor(name)``).
    actor: str
    #: Whether this client's requests reach the node over its Unix socket (the client's node).
    is_local: bool
    #: "up", "restarting" (its actor died and Ray restarts it) or "lost" (for good).
    state: str
    workers: int
    #: Requests this client keeps in flight on the node at most (per-node backpressure).
    capacity: int
    in_flight: int
    local: int = 0
    via_ray: int = 0
    #: Requests that failed on this node (its loss included).
    failed: int = 0
    #: Requests in flight when the node was lost, then sent to another node.
    retried: int = 0
    #: Times the node's actor came back after dying.
    restarts: int = 0


@dataclass(frozen=True)
class RuntimeStatistics:
    """Every pool of a runtime (or of the shared service it is connected to)."""

    pools: dict[str, PoolStatistics] = field(default_factory=dict)
    #: The runtime's live compiled models by name (:class:`~nnrt.runtime.metrics.
    #: ModelStatistics`); in shared mode those of this client, recorded in this process.
    models: dict[str, ModelStatistics] = field(default_factory=dict)
    #: A cluster runtime's nodes by node id (empty otherwise; see :class:`NodeStatistics`).
    nodes: dict[str, NodeStatistics] = field(default_factory=dict)

    @property
    def completed(self) -> int:
        """Requests answered successfully, all pools."""
        return sum(p.completed for p in self.pools.values())

    @property
    def failed(self) -> int:
        """Requests that failed, all pools."""
        return sum(p.failed for p in self.pools.values())

    @property
    def allocate_fallbacks(self) -> int:
        """Device-memory allocations served from shared memory instead, all pools."""
        return sum(p.allocate_fallbacks for p in self.pools.values())

    @property
    def cache_hits(self) -> int:
        """Prepares served from the compilation cache, all pools."""
        return sum(p.cache_hits for p in self.pools.values())

    @property
    def cache_misses(self) -> int:
        """Prepares that compiled and saved into the cache, all pools."""
        return sum(p.cache_misses for p in self.pools.values())

    @property
    def cache_load_failures(self) -> int:
        """Rejected cache loads (recompiled instead), all pools."""
        return sum(p.cache_load_failures for p in self.pools.values())

    @property
    def prepared(self) -> int:
        """Models (steps) prepared, all pools."""
        return sum(p.prepared for p in self.pools.values())

    @property
    def restarts(self) -> int:
        """Worker restarts, all pools."""
        return sum(p.restarts for p in self.pools.values())

    def to_wire(self) -> dict[str, list[object]]:
        """Plain data for the wire: the pools (models stay in the process that recorded them)."""
        return {name: [p.driver, p.workers, p.workers_alive, p.queue_depth, p.in_flight,
                       p.completed, p.failed, p.restarts, p.allocate_fallbacks, p.cache_hits,
                       p.cache_misses, p.cache_load_failures, p.prepared, int(p.packing),
                       list(p.worker_load), list(p.worker_in_flight)]
                for name, p in self.pools.items()}

    @classmethod
    def from_wire(cls, data: object) -> RuntimeStatistics:
        """Rebuild from :meth:`to_wire` output (checked: a malformed pool row is dropped; the
        per-worker lists, missing — an older service — or malformed, are left empty)."""
        pools: dict[str, PoolStatistics] = {}
        if isinstance(data, dict):
            for name, row in data.items():
                if (isinstance(name, str) and isinstance(row, list) and len(row) in (14, 16)
                        and isinstance(row[0], str)
                        and all(_is_int(v) for v in row[1:14])):
                    load, in_flight = row[14:16] if len(row) == 16 else ((), ())
                    pools[name] = replace(PoolStatistics(row[0], *row[1:13]),
                                          packing=row[13] == 1,
                                          worker_load=_per_worker(load, row[1], float),
                                          worker_in_flight=_per_worker(in_flight, row[1], int))
        return cls(pools)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _per_worker(values: object, workers: int, kind: type[float] | type[int]
                ) -> tuple[Any, ...]:
    """A per-worker list from the wire: one finite non-negative number per worker, else ()."""
    if not (isinstance(values, list) and len(values) == workers):
        return ()
    if kind is int and all(_is_int(v) for v in values):
        return tuple(values)
    if kind is float and all(isinstance(v, int | float) and not isinstance(v, bool)
                             and math.isfinite(v) and v >= 0 for v in values):
        return tuple(float(v) for v in values)
    return ()
