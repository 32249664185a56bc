"""Leak accounting: fds before vs after, processes and shm segments left, RSS growth.

Each finding counts towards the ``leaked=`` figure of the summary: one per fd, per process
left behind, per ``/dev/shm`` segment, and one per process whose RSS is not flat.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FLAT_AFTER", "FLAT_TOLERANCE", "LeakAccount", "LeakFinding", "RssSeries"]

#: RSS is judged from the sample at this many seconds on (the warm-up is over by then).
FLAT_AFTER = 60.0
#: "Flat": the last sample within this fraction of the sample at :data:`FLAT_AFTER`.
FLAT_TOLERANCE = 0.10
#: RSS is judged only for runs at least this long (seconds).
FLAT_MIN_DURATION = 120.0


@dataclass
class RssSeries:
    """RSS samples of one process: (seconds since the run started, bytes)."""

    name: str
    samples: list[tuple[float, int]] = field(default_factory=list)

    def add(self, at: float, rss: int | None) -> None:
        """Record a sample (``None``: the process was gone, nothing recorded)."""
        if rss is not None:
            self.samples.append((at, rss))

    def reference(self) -> tuple[float, int] | None:
        """The first sample taken at or after :data:`FLAT_AFTER` seconds."""
        return next((s for s in self.samples if s[0] >= FLAT_AFTER), None)

    def growth(self) -> float | None:
        """Last sample / reference sample - 1 (None without both)."""
        ref = self.reference()
        if ref is None or not self.samples or self.samples[-1][0] <= ref[0]:
            return None
        return self.samples[-1][1] / ref[1] - 1.0

    def flat(self, duration: float) -> bool | None:
        """Whether RSS stayed within ±10% after the first minute (None: run too short)."""
        if duration < FLAT_MIN_DURATION:
            return None
        growth = self.growth()
        return None if growth is None else abs(growth) <= FLAT_TOLERANCE

    def to_json(self, duration: float) -> dict[str, Any]:
        """First, reference and last samples, growth and the verdict."""
        ref = self.reference()
        return {"first": self.samples[0] if self.samples else None, "at_1min": ref,
                "last": self.samples[-1] if self.samples else None,
                "samples": len(self.samples), "growth": self.growth(),
                "flat": self.flat(duration)}


@dataclass(frozen=True)
class LeakFinding:
    """One leak: what (``fds``, ``children``, ``shm``, ``rss``), whose, how many, details."""

    kind: str
    owner: str
    amount: int
    detail: str


@dataclass
class LeakAccount:
    """The findings of one run; :attr:`leaked` is the summary's ``leaked=`` figure."""

    findings: list[LeakFinding] = field(default_factory=list)

    def fds(self, owner: str, before: int | None, after: int | None) -> None:
        """Compare an fd count before and after (unknown counts are findings too)."""
        if before is None or after is None:
            self.findings.append(LeakFinding("fds", owner, 1, f"fd count unknown "
                                             f"(before={before}, after={after})"))
        elif after > before:
            self.findings.append(LeakFinding("fds", owner, after - before,
                                             f"{before} fds before, {after} after"))

    def processes(self, owner: str, left: Iterable[int]) -> None:
        """Processes still alive that should be gone."""
        pids = sorted(left)
        if pids:
            self.findings.append(LeakFinding("children", owner, len(pids), f"pids {pids}"))

    def segments(self, owner: str, names: Iterable[str]) -> None:
        """``/dev/shm`` segments still there."""
        found = sorted(names)
        if found:
            self.findings.append(LeakFinding("shm", owner, len(found), ", ".join(found)))

    def rss(self, series: RssSeries, duration: float) -> None:
        """A process whose RSS is not flat after the first minute (long runs only)."""
        if series.flat(duration) is False:
            growth = series.growth() or 0.0
            self.findings.append(LeakFinding("rss", series.name, 1,
                                             f"RSS changed by {growth:+.1%} after the first "
                                             f"minute (limit ±{FLAT_TOLERANCE:.0%})"))

    @property
    def leaked(self) -> int:
        """Total leaked items."""
        return sum(f.amount for f in self.findings)

    def to_json(self) -> list[dict[str, Any]]:
        """The findings as JSON objects."""
        return [{"kind": f.kind, "owner": f.owner, "amount": f.amount, "detail": f.detail}
                for f in self.findings]
