"""Where the CPU goes at high concurrency: requests/s and CPU per request of each process.

Run: .venv/bin/python benchmarks/cpu_share.py [--workers 1 2] [--requests 60000] [--tasks 64]

Runs ``CompiledModel.execute`` of the 1x4 ADD model of ``benchmarks/latency.py`` from ``--tasks``
concurrent tasks (after a warm-up of the same size) and reports, for the measured run: requests/s,
wall time per request, and for the client and each worker process its user / system CPU per
request (``/proc/<pid>/stat``) and its migrations and voluntary / involuntary context switches
per 1,000 requests (``/proc/<pid>/sched``). When client + workers use about ``cores * wall``
per request, the machine is saturated; when a process's involuntary switches are high, it
shares a CPU with another busy process. Linux only.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

from latency import X, add_model

import nnrt

_TICK = os.sysconf("SC_CLK_TCK")
_SCHED = ("se.nr_migrations", "nr_voluntary_switches", "nr_involuntary_switches")


def _children() -> list[int]:
    pids: list[int] = []
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                pids += [int(p) for p in f.read().split()]
        except OSError:
            pass
    return pids


def _cpu(pid: int) -> tuple[float, float]:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) / _TICK, int(fields[12]) / _TICK


def _sched(pid: int) -> dict[str, float]:
    found: dict[str, float] = {}
    with open(f"/proc/{pid}/sched") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key.strip() in _SCHED:
                found[key.strip()] = float(value)
    return found


async def measure(workers: int, requests: int, tasks: int) -> None:
    async with nnrt.Runtime(workers=workers, max_in_flight=64, drivers=["reference"]) as rt:
        compiled = await rt.compile(add_model())
        per_task = max(requests // tasks, 1)

        async def task() -> None:
            for _ in range(per_task):
                await compiled.execute([X])

        await asyncio.gather(*[task() for _ in range(tasks)])  # warm-up: every worker prepared
        pids = [os.getpid(), *_children()]
        cpu0, sched0 = [_cpu(p) for p in pids], [_sched(p) for p in pids]
        start = time.perf_counter()
        await asyncio.gather(*[task() for _ in range(tasks)])
        elapsed = time.perf_counter() - start
        cpu1, sched1 = [_cpu(p) for p in pids], [_sched(p) for p in pids]
        n = per_task * tasks
        print(f"{workers} worker(s), {tasks} tasks: {n / elapsed:,.0f} req/s, wall "
              f"{elapsed / n * 1e6:.2f} µs per request")
        for k in range(len(pids)):
            name = "client" if k == 0 else f"worker {k - 1}"
            (u0, s0), (u1, s1) = cpu0[k], cpu1[k]
            before, after = sched0[k], sched1[k]
            counts = ", ".join(f"{key.split('.')[-1]} {(after[key] - before[key]) / n * 1e3:.1f}"
                               for key in _SCHED if key in before)
            print(f"  {name:9} user {(u1 - u0) / n * 1e6:5.2f} µs, system "
                  f"{(s1 - s0) / n * 1e6:5.2f} µs per request; per 1,000 requests: {counts}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--requests", type=int, default=60_000)
    parser.add_argument("--tasks", type=int, default=64)
    args = parser.parse_args()
    for workers in args.workers:
        asyncio.run(measure(workers, args.requests, args.tasks))


if __name__ == "__main__":
    main()
