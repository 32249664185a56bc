"""The Prometheus text exposition (format 0.0.4), parsed back line by line, and the per-worker
statistics on the service's wire."""

from __future__ import annotations

import math
import re

import pytest

from nnrt import prometheus_text
from nnrt.errors import BadData
from nnrt.runtime.metrics import ModelMetrics
from nnrt.runtime.stats import PoolStatistics, RuntimeStatistics

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)')

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> tuple[Samples, dict[str, str]]:
    """Samples by (name, labels) and the TYPE of each family; fails on any malformed line."""
    assert text.endswith("\n")
    samples: Samples = {}
    types: dict[str, str] = {}
    helped: set[str] = set()
    for line in text.splitlines():
        if line.startswith("# HELP "):
            helped.add(line.split(" ")[2])
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert kind in ("counter", "gauge", "histogram") and name in helped
            assert name not in types, f"family {name} declared twice"
            types[name] = kind
            continue
        match = _SAMPLE.match(line)
        assert match, f"malformed sample line {line!r}"
        name, _, body, value = match.groups()
        labels: list[tuple[str, str]] = []
        rest = body or ""
        while rest:
            label = _LABEL.match(rest)
            assert label, f"malformed labels in {line!r}"
            raw = label.group(2)
            unescaped = re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1),
                               raw)
            labels.append((label.group(1), unescaped))
            rest = rest[label.end():]
        family = re.sub(r"_(bucket|sum|count)$", "", name)
        assert name in types or family in types, f"sample {name} before its TYPE"
        key = (name, frozenset(labels))
        assert key not in samples, f"duplicate sample {line!r}"
        samples[key] = float(value)
    return samples, types


def _stats() -> tuple[RuntimeStatistics, ModelMetrics]:
    m = ModelMetrics('od "yolo"\\v2\nx', "cpu")
    for latency in (0.0003, 0.0004, 0.002, 0.5, 120.0):
        m.request_done(latency, None)
    m.request_done(0.001, BadData("wrong shape"))
    m.execution_done(4, [0.0001, 0.0002, 0.0, 0.0], 0.003)
    m.execution_done(1, [0.0], 0.0005)
    pools = {"cpu": PoolStatistics("cpu", 2, 2, 1, 3, 40, 2, 1, prepared=5, packing=True,
                                   worker_load=(0.75, 0.125), worker_in_flight=(2, 1))}
    return RuntimeStatistics(pools, {m.name: m.snapshot()}), m


def test_exposition_parses_back_to_the_statistics() -> None:
    stats, m = _stats()
    samples, types = parse(prometheus_text(stats))
    pool = frozenset({("driver", "cpu")})
    assert samples[("nnrt_pool_workers", pool)] == 2
    assert samples[("nnrt_pool_queue_depth", pool)] == 1
    assert samples[("nnrt_pool_in_flight", pool)] == 3
    assert samples[("nnrt_pool_completed_total", pool)] == 40
    assert samples[("nnrt_pool_failed_total", pool)] == 2
    assert samples[("nnrt_pool_restarts_total", pool)] == 1
    assert samples[("nnrt_pool_prepared_total", pool)] == 5
    assert samples[("nnrt_pool_packing", pool)] == 1
    assert types["nnrt_pool_completed_total"] == "counter"
    assert types["nnrt_pool_queue_depth"] == "gauge"
    for worker, (load, n) in enumerate(((0.75, 2), (0.125, 1))):
        labels = frozenset({("driver", "cpu"), ("worker", str(worker))})
        assert samples[("nnrt_worker_load", labels)] == load
        assert samples[("nnrt_worker_in_flight", labels)] == n
    model = {("model", m.name), ("driver", "cpu")}  # the escaped name comes back as it was
    assert samples[("nnrt_model_requests_total", frozenset(model))] == 6
    assert samples[("nnrt_model_errors_total",
                    frozenset({*model, ("kind", "BadData")}))] == 1
    assert samples[("nnrt_model_requests_per_second", frozenset(model))] > 0
    snapshot = stats.models[m.name]
    for family, histogram in (("nnrt_model_latency_seconds", snapshot.latency),
                              ("nnrt_model_queue_wait_seconds", snapshot.queue_wait),
                              ("nnrt_model_batch_size", snapshot.batch_size),
                              ("nnrt_model_execution_seconds", snapshot.execution)):
        assert types[family] == "histogram"
        buckets = {float(dict(labels)["le"]): value for (name, labels), value in samples.items()
                   if name == f"{family}_bucket" and set(labels) >= model}
        assert sorted(buckets) == [*histogram.bounds, math.inf]
        counts = [buckets[b] for b in sorted(buckets)]
        assert counts == sorted(counts)  # cumulative
        assert counts[:-1] == list(histogram.counts)
        assert counts[-1] == samples[(f"{family}_count", frozenset(model))] == histogram.count
        assert samples[(f"{family}_sum", frozenset(model))] == pytest.approx(histogram.sum)
    latency = {float(dict(labels)["le"]): v for (name, labels), v in samples.items()
               if name == "nnrt_model_latency_seconds_bucket"}
    assert latency[0.0005] == 2 and latency[0.001] == 3 and latency[60.0] == 5
    assert latency[math.inf] == 6  # 120 s: above the last bound


def test_labels_are_escaped() -> None:
    stats, _ = _stats()
    text = prometheus_text(stats)
    assert 'model="od \\"yolo\\"\\\\v2\\nx"' in text
    assert all(line.count('"') % 2 == 0 for line in text.splitlines())  # no raw quote or newline


def test_empty_statistics_expose_nothing() -> None:
    assert prometheus_text(RuntimeStatistics()) == ""
    only_pool = RuntimeStatistics({"reference": PoolStatistics("reference", 1, 1, 0, 0, 0, 0, 0)})
    samples, types = parse(prometheus_text(only_pool))
    assert "nnrt_model_requests_total" not in types and "nnrt_worker_load" not in types
    assert samples[("nnrt_pool_workers", frozenset({("driver", "reference")}))] == 1


def test_per_worker_statistics_cross_the_wire() -> None:
    stats, _ = _stats()
    back = RuntimeStatistics.from_wire(stats.to_wire())
    assert back.pools == stats.pools
    assert back.models == {}  # models stay in the process that recorded them


def test_per_worker_fields_missing_or_malformed_are_left_empty() -> None:
    stats, _ = _stats()
    row = stats.to_wire()["cpu"]
    old = RuntimeStatistics.from_wire({"cpu": row[:14]}).pools["cpu"]  # an older service
    assert (old.worker_load, old.worker_in_flight) == ((), ())
    assert old.completed == 40
    for load, in_flight in (([0.5], [1, 1]), (["x", 1.0], [1, 1]), ([math.nan, 1.0], [1, 1]),
                            ([-1.0, 1.0], [1, 1]), ([1.0, 1.0], [True, 1]), ("ab", [1, -1]),
                            (None, {"a": 1})):
        pool = RuntimeStatistics.from_wire({"cpu": [*row[:14], load, in_flight]}).pools["cpu"]
        assert pool.completed == 40
        assert pool.worker_load in ((), (1.0, 1.0))
        assert pool.worker_in_flight in ((), (1, 1))
    for bad in ([*row, 0], row[:15], [*row[:13], -1, *row[14:]], "row", None):
        assert RuntimeStatistics.from_wire({"cpu": bad}).pools == {}
    assert RuntimeStatistics.from_wire(["not", "a", "map"]).pools == {}
