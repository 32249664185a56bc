"""The command line's progress line: drawn on a terminal only, with a rate and an ETA."""

from __future__ import annotations

import io
import os
import pty

from nnrt.cli.progress import Progress


def _terminal() -> tuple[io.TextIOWrapper, int]:
    main, follower = pty.openpty()
    return io.TextIOWrapper(os.fdopen(follower, "wb", buffering=0), write_through=True), main


def test_a_terminal_gets_the_bar_with_rate_and_eta() -> None:
    stream, main = _terminal()
    try:
        progress = Progress(4, "benchmarking", stream=stream)
        for done in range(1, 5):
            progress.update(done)
        progress.close()
        shown = os.read(main, 65536).decode()
    finally:
        stream.close()
        os.close(main)
    assert "[" + "#" * 30 + "] 4/4" in shown and "/s" in shown and "benchmarking" in shown
    assert shown.endswith("\r")  # the line is wiped at the end


def test_pipes_and_quiet_runs_get_nothing() -> None:
    piped = io.StringIO()
    progress = Progress(3, "x", stream=piped)
    progress.update(2)
    progress.close()
    stream, main = _terminal()
    try:
        quiet = Progress(3, "x", stream=stream, quiet=True)
        quiet.update(3)
        quiet.close()
        os.set_blocking(main, False)
        try:
            written = os.read(main, 100)
        except BlockingIOError:
            written = b""
    finally:
        stream.close()
        os.close(main)
    assert piped.getvalue() == "" and written == b""
