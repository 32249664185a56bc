"""``python -m nnrt.cluster.lifeline FD ARGS...``: ``nnrt serve ARGS`` that stops with its actor.

A node's actor (:mod:`nnrt.cluster.actor`) starts its service through this module with the
read end of a pipe whose write end only the actor holds. When the actor's process ends — also
by SIGKILL (``ray.kill``), when nothing of it runs any more — the pipe reaches end of file and
the service is sent SIGTERM: it stops its workers and removes its socket as on any SIGTERM
(``nnrt/serve/server.py``).
"""

from __future__ import annotations

import os
import signal
import sys
import threading

__all__ = ["main"]


def _watch(fd: int) -> None:
    """Block until every write end of the lifeline is closed, then stop this process."""
    try:
        while os.read(fd, 4096):
            pass  # the actor never writes; anything read is ignored
    except OSError:
        pass  # a broken lifeline means the same as a closed one
    os.kill(os.getpid(), signal.SIGTERM)


def main(argv: list[str]) -> int:
    """Watch the lifeline ``argv[0]`` (an inherited fd) and run ``nnrt serve argv[1:]``."""
    if not argv or not argv[0].isdigit():
        print("usage: python -m nnrt.cluster.lifeline FD [nnrt serve options]", file=sys.stderr)
        return 2
    fd = int(argv[0])
    threading.Thread(target=_watch, args=(fd,), name="nnrt-lifeline", daemon=True).start()
    from nnrt.cli.main import main as nnrt_main  # noqa: PLC0415 - after the watch starts

    return nnrt_main(["serve", *argv[1:]])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
