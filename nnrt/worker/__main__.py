"""``python -m nnrt.worker --driver SPEC (--fd N | --socket PATH) [--max-frame BYTES]
[--poll-window SECONDS]``.

Runs one worker service process serving one driver: on an inherited connected socket (embedded
mode: the process exits when that connection closes) or on a listening Unix socket (shared
mode: many connections, mode 0600). SIGTERM closes everything and exits 0.
"""

from __future__ import annotations

import argparse
import faulthandler
import gc
import logging
import signal
import sys
from collections.abc import Sequence
from types import FrameType

from nnrt.errors import NnrtError
from nnrt.hal.discovery import load_driver
from nnrt.ipc.framing import DEFAULT_MAX_FRAME, HEADER
from nnrt.ipc.polling import DEFAULT_POLL_WINDOW, MAX_POLL_WINDOW
from nnrt.ops.floats import ignore_float_errors_here
from nnrt.worker.service import Service

_MIN_FRAME = 1 << 10
_MAX_FRAME = 2**(8 * HEADER.size) - 1


def _frame_size(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not _MIN_FRAME <= value <= _MAX_FRAME:
        raise argparse.ArgumentTypeError(f"must be in [{_MIN_FRAME}, {_MAX_FRAME}], got {value}")
    return value


def _poll_window(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= MAX_POLL_WINDOW:
        raise argparse.ArgumentTypeError(f"must be in [0, {MAX_POLL_WINDOW}], got {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m nnrt.worker",
                                     description="Serve one nnrt driver in this process.")
    parser.add_argument("--driver", required=True,
                        help="entry-point name in group nnrt.drivers, or module.path:factory")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--fd", type=int, help="an inherited connected Unix stream socket")
    where.add_argument("--socket", metavar="PATH", help="listen on a Unix socket at PATH")
    parser.add_argument("--max-frame", type=_frame_size, default=DEFAULT_MAX_FRAME,
                        metavar="BYTES", help=f"largest frame accepted or sent "
                                              f"(default {DEFAULT_MAX_FRAME})")
    parser.add_argument("--poll-window", type=_poll_window, default=DEFAULT_POLL_WINDOW,
                        metavar="SECONDS", help="keep polling this long after the last execute "
                                                f"before sleeping (default {DEFAULT_POLL_WINDOW})")
    return parser


def _exit_now(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the service until its connection ends or SIGTERM; returns the exit status."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="nnrt.worker[%(process)d] %(levelname)s %(name)s: %(message)s")
    signal.signal(signal.SIGTERM, _exit_now)  # until the service can stop cleanly
    # SIGUSR1 prints every thread's stack to stderr: what a worker that does not stop is
    # doing (the conformance kit's stop check sends it before it gives up and kills)
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    ignore_float_errors_here()  # executions run on this thread: NNAPI float semantics
    try:
        driver = load_driver(args.driver)
        with Service(driver, max_frame=args.max_frame, poll_window=args.poll_window) as service:

            def stop(signum: int, frame: FrameType | None) -> None:
                service.request_stop()

            signal.signal(signal.SIGTERM, stop)
            if args.fd is not None:
                # embedded: the runtime owns shutdown (it closes the socket); ^C is for it
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                service.serve_fd(args.fd)
            else:
                signal.signal(signal.SIGINT, stop)
                service.listen(args.socket)
            # What start-up created (modules, the driver) lives as long as the process: out of
            # the collector's sight, so that its collections scan only what requests leave.
            gc.collect()
            gc.freeze()
            service.run()
    except (NnrtError, OSError) as exc:
        print(f"nnrt.worker: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
