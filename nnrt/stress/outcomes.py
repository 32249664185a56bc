"""The checker: how each stress request ended, and the tally of many requests.

A request ends as one of:

- ``ok`` — a result equal to the reference (exactly for the ``reference`` driver, allclose for
  others), or a cancellation that took effect;
- ``error`` — a typed nnrt error the runtime documents for that situation (by kind: a killed
  worker's ``UnavailableDevice``, a tiny timeout's ``DeadlineMissed``, ...);
- ``lost`` — no answer within the request's deadline plus the grace;
- ``wrong`` — a result that does not match, or an error that a valid request must never get
  (``BadData``, ``BadState``, a non-nnrt exception...).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nnrt.errors import NnrtError

__all__ = ["OUTCOMES", "LatencyHistogram", "Tally", "classify_error", "results_match"]

Array = np.ndarray[Any, Any]

OUTCOMES = ("ok", "error", "lost", "wrong")
#: Tolerances of results from drivers other than ``reference``.
RTOL, ATOL = 1e-4, 1e-5
#: How many example messages of each wrong kind a tally keeps.
_SAMPLES = 5


def results_match(actual: Sequence[Any], expected: Sequence[Array], exact: bool) -> str | None:
    """None when ``actual`` matches ``expected``; else what differs (output, shape or values)."""
    if len(actual) != len(expected):
        return f"{len(actual)} outputs, expected {len(expected)}"
    for j, (got, want) in enumerate(zip(actual, expected, strict=True)):
        if not isinstance(got, np.ndarray):
            return f"output {j}: got {type(got).__name__}, expected an ndarray"
        if got.shape != want.shape or got.dtype != want.dtype:
            return (f"output {j}: got {got.dtype}{list(got.shape)}, expected "
                    f"{want.dtype}{list(want.shape)}")
        same = (np.array_equal(got, want, equal_nan=True) if exact
                else np.allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True))
        if not same:
            worst = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
            return f"output {j}: values differ (max abs difference {worst:.3g})"
    return None


def classify_error(exc: BaseException, allowed: Iterable[type[NnrtError]]) -> tuple[str, str]:
    """``("error", kind)`` for an nnrt error of an allowed kind, else ``("wrong", kind)``."""
    kind = type(exc).__name__
    if isinstance(exc, NnrtError) and isinstance(exc, tuple(allowed)):
        return "error", kind
    return "wrong", kind


class LatencyHistogram:
    """Latencies in log buckets 5% wide from 10 µs: mergeable, percentiles within 5%."""

    BASE = 1e-5
    RATIO = 1.05

    def __init__(self, buckets: Mapping[int, int] | None = None) -> None:
        self.buckets: dict[int, int] = dict(buckets or {})

    def add(self, seconds: float) -> None:
        """Count one latency."""
        index = 0 if seconds <= self.BASE else int(math.log(seconds / self.BASE)
                                                    / math.log(self.RATIO)) + 1
        self.buckets[index] = self.buckets.get(index, 0) + 1

    @property
    def count(self) -> int:
        """How many latencies were counted."""
        return sum(self.buckets.values())

    def merge(self, other: LatencyHistogram) -> None:
        """Add ``other``'s counts to this histogram."""
        for index, n in other.buckets.items():
            self.buckets[index] = self.buckets.get(index, 0) + n

    def percentile(self, p: float) -> float | None:
        """The upper edge of the bucket holding the ``p``-th percentile (None when empty)."""
        total = self.count
        if total == 0:
            return None
        rank = max(1, math.ceil(total * p / 100))
        seen = 0
        for index in sorted(self.buckets):
            seen += self.buckets[index]
            if seen >= rank:
                return float(self.BASE * self.RATIO ** index)
        raise AssertionError("unreachable: rank <= total")  # pragma: no cover


@dataclass
class Tally:
    """Counts of outcomes per request kind, errors by kind, latencies and wrong examples."""

    outcomes: dict[str, dict[str, int]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    wrong: dict[str, list[str]] = field(default_factory=dict)
    latency: LatencyHistogram = field(default_factory=LatencyHistogram)

    def record(self, request: str, outcome: str, *, latency: float | None = None,
               kind: str | None = None, detail: str = "") -> None:
        """Count one request of type ``request`` that ended as ``outcome``."""
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {outcome!r}; known: {OUTCOMES}")
        counts = self.outcomes.setdefault(request, dict.fromkeys(OUTCOMES, 0))
        counts[outcome] += 1
        if outcome == "error" and kind is not None:
            self.errors[kind] = self.errors.get(kind, 0) + 1
        if outcome == "wrong":
            examples = self.wrong.setdefault(f"{request}: {kind or 'mismatch'}", [])
            if len(examples) < _SAMPLES:
                examples.append(detail[:300])
        if latency is not None and outcome in ("ok", "error"):
            self.latency.add(latency)

    def total(self, outcome: str | None = None) -> int:
        """Requests counted (all of them, or those that ended as ``outcome``)."""
        return sum(sum(c.values()) if outcome is None else c[outcome]
                   for c in self.outcomes.values())

    def merge(self, other: Tally) -> None:
        """Add ``other``'s counts to this tally."""
        for request, counts in other.outcomes.items():
            mine = self.outcomes.setdefault(request, dict.fromkeys(OUTCOMES, 0))
            for outcome, n in counts.items():
                mine[outcome] += n
        for kind, n in other.errors.items():
            self.errors[kind] = self.errors.get(kind, 0) + n
        for key, examples in other.wrong.items():
            mine_examples = self.wrong.setdefault(key, [])
            mine_examples.extend(examples[:max(0, _SAMPLES - len(mine_examples))])
        self.latency.merge(other.latency)

    def to_json(self) -> dict[str, Any]:
        """A JSON-able form (see :meth:`from_json`)."""
        return {"outcomes": self.outcomes, "errors": self.errors, "wrong": self.wrong,
                "latency": {str(k): v for k, v in self.latency.buckets.items()}}

    @classmethod
    def from_json(cls, data: Any) -> Tally:
        """Rebuild a tally written by another process: every field is type-checked."""
        if not isinstance(data, dict):
            raise ValueError("a tally must be a JSON object")
        tally = cls()
        outcomes = _mapping(data.get("outcomes"), "outcomes")
        for request, counts in outcomes.items():
            counts = _mapping(counts, f"outcomes[{request!r}]")
            if set(counts) != set(OUTCOMES):
                raise ValueError(f"outcomes[{request!r}]: expected the keys {OUTCOMES}")
            tally.outcomes[request] = {k: _count(v, f"outcomes[{request!r}][{k!r}]")
                                       for k, v in counts.items()}
        tally.errors = {k: _count(v, f"errors[{k!r}]")
                        for k, v in _mapping(data.get("errors"), "errors").items()}
        for key, examples in _mapping(data.get("wrong"), "wrong").items():
            if not isinstance(examples, list) or not all(isinstance(e, str) for e in examples):
                raise ValueError(f"wrong[{key!r}]: expected a list of strings")
            tally.wrong[key] = examples[:_SAMPLES]
        for key, n in _mapping(data.get("latency"), "latency").items():
            if not key.lstrip("-").isdigit():
                raise ValueError(f"latency: bucket {key!r} is not an integer")
            tally.latency.buckets[int(key)] = _count(n, f"latency[{key!r}]")
        return tally


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ValueError(f"{where}: expected an object with string keys")
    return value


def _count(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{where}: expected a non-negative integer, got {value!r:.40}")
    return value
