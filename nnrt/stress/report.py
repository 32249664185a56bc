"""The stress report: the summary line, the lines above it, and the JSON form."""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass, field
from typing import Any

from nnrt.stress.leaks import LeakAccount, RssSeries
from nnrt.stress.outcomes import Tally

__all__ = ["StressReport", "machine_line"]


def machine_line() -> str:
    """Python, OS and CPU count of this machine (for the committed figures)."""
    import os  # noqa: PLC0415

    return (f"Python {platform.python_version()} on {platform.system()} {platform.release()} "
            f"{platform.machine()}, {os.cpu_count()} CPUs")


@dataclass
class StressReport:
    """Everything one ``nnrt stress`` run measured."""

    command: list[str]
    duration: float
    tally: Tally = field(default_factory=Tally)
    leaks: LeakAccount = field(default_factory=LeakAccount)
    rss: list[RssSeries] = field(default_factory=list)
    kills: int = 0
    lost_clients: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    elapsed: float = 0.0

    @property
    def lost(self) -> int:
        """Requests without an answer, plus one per client that hung or died without a report."""
        return self.tally.total("lost") + len(self.lost_clients)

    @property
    def failed(self) -> bool:
        """Whether the run failed: something lost, wrong or leaked."""
        return self.lost > 0 or self.tally.total("wrong") > 0 or self.leaks.leaked > 0

    def summary(self) -> str:
        """THE summary line: ``requests=… ok=… errors=… lost=… wrong=… leaked=…``."""
        t = self.tally
        return (f"requests={t.total() + len(self.lost_clients)} ok={t.total('ok')} "
                f"errors={t.total('error')} lost={self.lost} wrong={t.total('wrong')} "
                f"leaked={self.leaks.leaked}")

    def lines(self) -> list[str]:
        """The human-readable report, ending with :meth:`summary`."""
        t = self.tally
        p50, p99 = t.latency.percentile(50), t.latency.percentile(99)
        out = [f"duration {self.duration:g} s (elapsed {self.elapsed:.1f} s), "
               f"{self.kills} workers killed"]
        out.append("latency " + (f"p50={p50 * 1e3:.2f}ms p99={p99 * 1e3:.2f}ms"
                                 if p50 is not None and p99 is not None else "n/a"))
        for request in sorted(t.outcomes):
            c = t.outcomes[request]
            out.append(f"  {request:<17} " + " ".join(f"{k}={v}" for k, v in c.items()))
        errors = " ".join(f"{k}={v}" for k, v in sorted(t.errors.items())) or "none"
        out.append(f"errors by kind: {errors}")
        for key, examples in sorted(t.wrong.items()):
            out.append(f"wrong {key}: {examples[0] if examples else ''}")
        for name in self.lost_clients:
            out.append(f"lost client: {name}")
        for finding in self.leaks.findings:
            out.append(f"leak {finding.kind} {finding.owner}: {finding.detail}")
        for series in self.rss:
            growth = series.growth()
            flat = series.flat(self.duration)
            verdict = "not judged (run < 2 min)" if flat is None else (
                "flat" if flat else "NOT flat")
            last = series.samples[-1][1] / 2**20 if series.samples else 0.0
            out.append(f"rss {series.name}: last {last:.1f} MiB"
                       + (f", {growth:+.1%} since 1 min" if growth is not None else "")
                       + f" ({verdict})")
        out.extend(self.notes)
        out.append(self.summary())
        return out

    def to_json(self) -> dict[str, Any]:
        """The full report as a JSON object."""
        t = self.tally
        return {"command": self.command, "machine": machine_line(),
                "python": sys.version.split()[0], "duration": self.duration,
                "elapsed": self.elapsed, "kills": self.kills, "summary": self.summary(),
                "requests": t.total() + len(self.lost_clients), "ok": t.total("ok"),
                "errors": t.total("error"), "lost": self.lost, "wrong": t.total("wrong"),
                "leaked": self.leaks.leaked,
                "latency": {"p50": t.latency.percentile(50), "p99": t.latency.percentile(99)},
                "tally": t.to_json(), "leaks": self.leaks.to_json(),
                "lost_clients": self.lost_clients,
                "rss": [s.to_json(self.duration) for s in self.rss], "notes": self.notes}
