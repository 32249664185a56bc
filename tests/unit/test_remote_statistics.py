"""Shared mode: allocation fallbacks happen in the client, so the client adds them to the
service's statistics."""

from __future__ import annotations

from nnrt.runtime.remote import RemoteBackend
from nnrt.runtime.stats import PoolStatistics, RuntimeStatistics


def test_client_fallbacks_are_added_to_the_service_figures() -> None:
    backend = RemoteBackend("/nonexistent.sock")  # never connected: statistics are local
    service = PoolStatistics("reference", 2, 2, 0, 0, 10, 1, 0, allocate_fallbacks=1)
    backend._stats = RuntimeStatistics({"reference": service})
    backend.count_fallback("reference")
    backend.count_fallback("reference")
    stats = backend.statistics()
    assert stats.pools["reference"].allocate_fallbacks == 3
    assert stats.allocate_fallbacks == 3 and stats.completed == 10
