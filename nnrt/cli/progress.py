"""A progress line for long command-line work: ``[#####.....] 50/100 12.3/s eta 4.1 s — what``.

Written on stderr with carriage returns, and only when stderr is a terminal and ``-q`` was not
given (``quiet``): logs and pipes stay clean. Hand-written (40 lines) rather than a dependency:
nnrt needs one bar with a rate and an ETA, not a terminal library.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]

_BAR = 30


class Progress:
    """``update(done)`` redraws the line (at most 10 times a second); ``close()`` ends it."""

    def __init__(self, total: int, what: str = "", *, stream: TextIO | None = None,
                 quiet: bool = False) -> None:
        self.total = max(total, 0)
        self.what = what
        self.stream = sys.stderr if stream is None else stream
        self.shown = not quiet and self.total > 0 and self.stream.isatty()
        self.started = self._drawn = time.monotonic()

    def update(self, done: int, what: str | None = None) -> None:
        """Show ``done`` of ``total`` (and ``what`` is being done now)."""
        if what is not None:
            self.what = what
        now = time.monotonic()
        if not self.shown or (now - self._drawn < 0.1 and done < self.total):
            return
        self._drawn = now
        elapsed = now - self.started
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = f" eta {(self.total - done) / rate:.1f} s" if 0 < done < self.total else ""
        filled = _BAR * min(done, self.total) // self.total
        line = (f"[{'#' * filled}{'.' * (_BAR - filled)}] {done}/{self.total} {rate:.1f}/s"
                f"{eta}{' — ' + self.what if self.what else ''}")
        self.stream.write("\r" + line[:110].ljust(110))
        self.stream.flush()

    def close(self) -> None:
        """End the line (nothing when it was never shown)."""
        if self.shown:
            self.stream.write("\r" + " " * 110 + "\r")
            self.stream.flush()
