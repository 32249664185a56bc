"""The worker's load meter: CPU spent serving and executes run, reported every few ms.

A client that asks for load reports in its ``hello`` (the runtime's pools do) receives one
``[0, 0, {"load": [span, busy, executes]}]`` at most every :data:`REPORT_INTERVAL` while the
worker serves requests: the wall seconds since the previous report, the CPU seconds the process
spent serving in them (reading, running, answering; never the polling window or sleep) and the
executes it ran. The pool steers requests by them (``nnrt.runtime.backends.pool``): busy / span
is how much of a CPU the worker needs for its current traffic, busy / executes its cost per execute.
A worker with no traffic sends nothing; its next report covers the idle time too.
"""

from __future__ import annotations

__all__ = ["REPORT_INTERVAL", "LoadMeter"]

#: Shortest span between two load reports of a worker (seconds).
REPORT_INTERVAL = 0.002


class LoadMeter:
    """Accumulates one worker's serving CPU time and executes between two load reports."""

    __slots__ = ("busy", "executes", "since")

    def __init__(self, now: float) -> None:
        #: CPU seconds spent serving since :attr:`since`.
        self.busy = 0.0
        #: Executes run since :attr:`since`.
        self.executes = 0
        #: When (``time.monotonic()``) the current span began.
        self.since = now

    def due(self, now: float) -> bool:
        """Whether a report is due at ``now``."""
        return now - self.since >= REPORT_INTERVAL

    def take(self, now: float) -> list[float | int]:
        """The report for the span ending at ``now`` (``[span, busy, executes]``); starts the
        next span."""
        report: list[float | int] = [max(now - self.since, 1e-9), self.busy, self.executes]
        self.busy, self.executes, self.since = 0.0, 0, now
        return report
