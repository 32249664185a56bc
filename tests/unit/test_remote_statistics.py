"""Shared mode: allocation fallbacks happen in the client, so the client adds them to the
service's statistics."""

from __future__ import annotations

from nnrt.runtime.backends.remote import RemoteBackend
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


def test_statistics_cross_the_wire_with_the_packing_state() -> None:
    for packing in (True, False):
        stats = RuntimeStatistics({"reference": PoolStatistics(
            "reference", 2, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, prepared=12, packing=packing)})
        assert RuntimeStatistics.from_wire(stats.to_wire()) == stats


def test_malformed_statistics_rows_are_dropped() -> None:
    good = RuntimeStatistics({"reference": PoolStatistics("reference", 2, 2, 0, 0, 1, 0, 0)})
    row = good.to_wire()["reference"]
    for bad in (row[:13], [*row, 0], [*row[:13], True], [*row[:13], "1"], [1, *row[1:]]):
        assert RuntimeStatistics.from_wire({"reference": bad}).pools == {}
    assert RuntimeStatistics.from_wire({"reference": row}) == good
