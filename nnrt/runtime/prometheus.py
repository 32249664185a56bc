"""Runtime statistics as Prometheus text exposition (format 0.0.4).

:func:`prometheus_text` writes a :class:`~nnrt.runtime.stats.RuntimeStatistics` in the text
format Prometheus scrapes (https://prometheus.io/docs/instrumenting/exposition_formats/):
``# HELP`` / ``# TYPE`` lines, then one sample per line, label values escaped (backslash,
double quote, newline). ``nnrt serve --metrics-port`` serves it; an application embedding
nnrt serves ``nnrt.prometheus_text(rt.statistics())`` from its own HTTP server.

nnrt writes the format itself rather than depending on ``prometheus_client``: the format is a
few lines per series, the statistics are already frozen snapshots (no collector registry is
needed), and the service answers scrapes from its own event loop, where a client library's
threaded HTTP server has no place. The series (``docs/runtime.md``, "Metrics"):

- per pool (label ``driver``): ``nnrt_pool_workers``, ``nnrt_pool_workers_alive``,
  ``nnrt_pool_queue_depth``, ``nnrt_pool_in_flight``, ``nnrt_pool_packing`` (gauges);
  ``nnrt_pool_completed_total``, ``nnrt_pool_failed_total``, ``nnrt_pool_restarts_total``,
  ``nnrt_pool_prepared_total``, ``nnrt_pool_cache_hits_total``, ``nnrt_pool_cache_misses_total``,
  ``nnrt_pool_cache_load_failures_total``, ``nnrt_pool_allocate_fallbacks_total`` (counters);
- per worker (labels ``driver``, ``worker``): ``nnrt_worker_load`` (CPUs busy),
  ``nnrt_worker_in_flight``;
- per compiled model (labels ``model``, ``driver``): ``nnrt_model_requests_total``,
  ``nnrt_model_errors_total`` (and label ``kind``), ``nnrt_model_requests_per_second``,
  histograms ``nnrt_model_latency_seconds``, ``nnrt_model_queue_wait_seconds``,
  ``nnrt_model_batch_size``, ``nnrt_model_execution_seconds``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nnrt.runtime.metrics import HistogramSnapshot, ModelStatistics
    from nnrt.runtime.stats import PoolStatistics, RuntimeStatistics

__all__ = ["CONTENT_TYPE", "prometheus_text"]

#: The HTTP ``Content-Type`` of the text this module writes.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

Labels = tuple[tuple[str, str], ...]

#: Per-pool series: (name, type, help, value of a pool).
_POOL_SERIES: tuple[tuple[str, str, str, Callable[[PoolStatistics], float]], ...] = (
    ("nnrt_pool_workers", "gauge", "Worker processes of the pool.", lambda p: p.workers),
    ("nnrt_pool_workers_alive", "gauge", "Workers connected and ready.",
     lambda p: p.workers_alive),
    ("nnrt_pool_queue_depth", "gauge", "Requests waiting for a worker.",
     lambda p: p.queue_depth),
    ("nnrt_pool_in_flight", "gauge", "Requests sent to workers, not yet answered.",
     lambda p: p.in_flight),
    ("nnrt_pool_packing", "gauge", "1 while light requests are packed onto the first worker.",
     lambda p: int(p.packing)),
    ("nnrt_pool_completed_total", "counter", "Requests answered successfully.",
     lambda p: p.completed),
    ("nnrt_pool_failed_total", "counter", "Requests that failed.", lambda p: p.failed),
    ("nnrt_pool_restarts_total", "counter", "Worker restarts.", lambda p: p.restarts),
    ("nnrt_pool_prepared_total", "counter", "Models (steps) prepared.", lambda p: p.prepared),
    ("nnrt_pool_cache_hits_total", "counter", "Prepares served from the compilation cache.",
     lambda p: p.cache_hits),
    ("nnrt_pool_cache_misses_total", "counter", "Prepares compiled and saved to the cache.",
     lambda p: p.cache_misses),
    ("nnrt_pool_cache_load_failures_total", "counter",
     "Cache loads the driver rejected (compiled again).", lambda p: p.cache_load_failures),
    ("nnrt_pool_allocate_fallbacks_total", "counter",
     "Device-memory allocations served from shared memory instead.",
     lambda p: p.allocate_fallbacks),
)

#: Per-model histograms: (name, help, the histogram of a model).
_MODEL_HISTOGRAMS: tuple[tuple[str, str, Callable[[ModelStatistics], HistogramSnapshot]],
                         ...] = (
    ("nnrt_model_latency_seconds", "End-to-end seconds of each execute.", lambda m: m.latency),
    ("nnrt_model_queue_wait_seconds", "Seconds a request waited to join an execution.",
     lambda m: m.queue_wait),
    ("nnrt_model_batch_size", "Requests per execution sent to the workers.",
     lambda m: m.batch_size),
    ("nnrt_model_execution_seconds", "Seconds of each execution sent to the workers.",
     lambda m: m.execution),
)


def prometheus_text(stats: RuntimeStatistics) -> str:
    """``stats`` in the Prometheus text format 0.0.4 (series in the module docstring); ends
    with a newline."""
    lines: list[str] = []
    pools = sorted(stats.pools.items())
    for name, kind, text, value in _POOL_SERIES:
        _family(lines, name, kind, text, [((("driver", pool),), value(p)) for pool, p in pools])
    _family(lines, "nnrt_worker_load", "gauge",
            "CPUs the worker kept busy serving, from its latest load report.",
            [((("driver", pool), ("worker", str(i))), load)
             for pool, p in pools for i, load in enumerate(p.worker_load)])
    _family(lines, "nnrt_worker_in_flight", "gauge", "Requests sent to the worker, unanswered.",
            [((("driver", pool), ("worker", str(i))), n)
             for pool, p in pools for i, n in enumerate(p.worker_in_flight)])
    models = sorted(stats.models.items())
    _family(lines, "nnrt_model_requests_total", "counter", "Executes that finished.",
            [(_model(m), m.requests) for _, m in models])
    _family(lines, "nnrt_model_errors_total", "counter", "Executes that raised, by error kind.",
            [((*_model(m), ("kind", kind)), n)
             for _, m in models for kind, n in sorted(m.errors.items())])
    _family(lines, "nnrt_model_requests_per_second", "gauge",
            "Executes finished per second over the last 10 seconds.",
            [(_model(m), m.requests_per_second) for _, m in models])
    for name, text, histogram in _MODEL_HISTOGRAMS:
        if models:
            lines.append(f"# HELP {name} {_help(text)}")
            lines.append(f"# TYPE {name} histogram")
        for _, m in models:
            _histogram(lines, name, _model(m), histogram(m))
    return "\n".join(lines) + "\n" if lines else ""


def _model(m: ModelStatistics) -> Labels:
    return (("model", m.name), ("driver", m.driver))


def _family(lines: list[str], name: str, kind: str, text: str,
            samples: Sequence[tuple[Labels, float]]) -> None:
    """One metric family: its HELP and TYPE lines, then its samples (none: nothing)."""
    if samples:
        lines.append(f"# HELP {name} {_help(text)}")
        lines.append(f"# TYPE {name} {kind}")
    for labels, value in samples:
        lines.append(f"{name}{_labels(labels)} {_number(value)}")


def _histogram(lines: list[str], name: str, labels: Labels, h: HistogramSnapshot) -> None:
    for bound, count in zip(h.bounds, h.counts, strict=True):
        lines.append(f"{name}_bucket{_labels((*labels, ('le', _number(bound))))} {count}")
    lines.append(f"{name}_bucket{_labels((*labels, ('le', '+Inf')))} {h.count}")
    lines.append(f"{name}_sum{_labels(labels)} {_number(h.sum)}")
    lines.append(f"{name}_count{_labels(labels)} {h.count}")


def _labels(labels: Labels) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{key}="{_escape(value)}"' for key, value in labels) + "}"


def _escape(value: str) -> str:
    """A label value as the format writes it: backslash, double quote and newline escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _help(text: str) -> str:
    """HELP text as the format writes it: backslash and newline escaped."""
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
    """A sample value: ints as they are, floats in full precision, ``+Inf``, ``-Inf``, ``NaN``."""
    if isinstance(value, int):  # bool too
        return str(int(value))
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))
