"""One stress client process: ``python -m nnrt.stress.client --result FILE ...``.

Runs :class:`~nnrt.stress.traffic.Traffic` against a shared service (``--connect PATH``) or
its own embedded pools (``--workers W``), then writes a JSON report to ``--result``: its pid,
the tally, and its own leak figures (fds before opening the runtime and after closing it,
children and ``/dev/shm`` segments left). The harness reads the report as untrusted input.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

import anyio

from nnrt.runtime.backends.framed import running_asyncio
from nnrt.runtime.runtime import Runtime
from nnrt.stress.procs import children, fd_count, shm_segments
from nnrt.stress.traffic import Traffic, TrafficConfig

__all__ = ["dump_tasks", "main", "run_client"]


async def run_client(config: TrafficConfig, connect: str | None, workers: int,
                     ready: str | None = None) -> dict[str, Any]:
    """Run the traffic in a runtime and account for what it left behind."""
    pid = os.getpid()
    if running_asyncio():  # the harness asks a client that does not finish what it awaits
        asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, dump_tasks)
    gc.collect()
    fds_before = fd_count(pid)
    runtime = (Runtime(connect=connect) if connect is not None
               else Runtime(drivers=("cpu", "reference"), workers=workers))
    async with runtime as rt:
        if ready is not None:  # the harness starts its killer once every client is running
            with open(ready, "w", encoding="utf-8"):
                pass
        tally = await Traffic(rt, config).run()
    del rt, runtime
    gc.collect()
    return {"pid": pid, "mode": "shared" if connect is not None else "embedded",
            "tally": tally.to_json(), "fds_before": fds_before, "fds_after": fd_count(pid),
            "children_after": sorted(children(pid)),
            "shm_after": sorted(shm_segments([pid]))}


def dump_tasks() -> None:
    """Write what every task of this client awaits to stderr (the client's log)."""
    tasks = asyncio.all_tasks()
    print(f"--- SIGUSR1: {len(tasks)} tasks", file=sys.stderr)
    for task in tasks:
        print(f"task {task.get_name()}:", file=sys.stderr)
        for line in awaiting(task.get_coro()):
            print(f"  {line}", file=sys.stderr)
    sys.stderr.flush()


def awaiting(coroutine: Any) -> list[str]:
    """Where a suspended coroutine and what it awaits stand, outermost first, down to the
    future at the bottom (asyncio's own stack dump shows one frame of a suspended task)."""
    lines: list[str] = []
    while coroutine is not None and len(lines) < 60:
        frame = getattr(coroutine, "cr_frame", None) or getattr(coroutine, "gi_frame", None)
        if frame is None:
            lines.append(f"awaits {coroutine!r:.200}")
            break
        lines.append(f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}")
        coroutine = getattr(coroutine, "cr_await", None) or getattr(coroutine, "gi_yieldfrom",
                                                                     None)
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the arguments, run, write the report; 0 when the report was written."""
    parser = argparse.ArgumentParser(prog="python -m nnrt.stress.client")
    parser.add_argument("--result", required=True, help="where to write the JSON report")
    parser.add_argument("--duration", type=float, required=True)
    parser.add_argument("--connect", default=None, help="the service's socket (shared mode)")
    parser.add_argument("--workers", type=int, default=2, help="workers per driver (embedded)")
    parser.add_argument("--concurrency", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache-dir", default=None)
    args = parser.parse_args(argv)
    config = TrafficConfig(duration=args.duration, concurrency=args.concurrency,
                           seed=args.seed, cache_dir=args.cache_dir)
    report = anyio.run(run_client, config, args.connect, args.workers, f"{args.result}.ready")
    tmp = f"{args.result}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(report, f)
    os.replace(tmp, args.result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
