"""``nnrt stress``: a service, N client processes, a killer, leak accounting, one report.

The harness process runs no nnrt traffic itself: it starts (or connects to) the shared
service, starts the clients (fresh interpreters, ``python -m nnrt.stress.client``; with
``mode="both"`` half of them embedded), SIGKILLs a random driver worker of the service and of
the embedded clients every ``kill_every`` seconds, samples RSS, and at the end merges the
clients' reports and checks what was left behind (fds, processes, ``/dev/shm`` segments).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nnrt.stress import procs
from nnrt.stress.leaks import RssSeries
from nnrt.stress.outcomes import Tally
from nnrt.stress.report import StressReport
from nnrt.stress.service import Service

__all__ = ["StressConfig", "run_stress"]

#: Seconds a client may take beyond the duration (start-up, compiles, tail, shutdown).
CLIENT_SLACK = 90.0
#: Seconds the service gets to return to its fd baseline once the clients are gone.
SETTLE = 15.0


@dataclass(frozen=True)
class StressConfig:
    """The parameters of one run (see ``nnrt stress --help``)."""

    duration: float
    clients: int
    kill_every: float
    connect: str | None = None
    workers: int = 2
    seed: int = 0
    mode: str = "both"
    concurrency: int = 3
    sample_every: float = 5.0


@dataclass
class _Client:
    name: str
    proc: subprocess.Popen[bytes]
    result: Path
    log: Path
    embedded: bool
    rss: RssSeries


def _modes(config: StressConfig) -> list[bool]:
    """Per client, whether it is embedded."""
    if config.mode == "embedded":
        return [True] * config.clients
    if config.mode == "shared":
        return [False] * config.clients
    return [k % 2 == 1 for k in range(config.clients)]


def run_stress(config: StressConfig, command: list[str],
               tick: Callable[[float], None] | None = None) -> StressReport:
    """Run the stress test described by ``config``; the report says what happened.
    ``tick`` is called with the seconds of traffic so far, a few times a second."""
    if config.mode not in ("shared", "embedded", "both"):
        raise ValueError(f"mode must be shared, embedded or both, got {config.mode!r}")
    report = StressReport(command=command, duration=config.duration)
    workdir = Path(tempfile.mkdtemp(prefix="nnrt-stress-"))
    env = dict(os.environ, NNRT_INTEGRITY_DIR=str(workdir / "integrity"),
               NNRT_CACHE_DIR=str(workdir / "cache"))
    started = time.monotonic()
    shm_before = procs.shm_segments_all()
    service: Service | None = None
    clients: list[_Client] = []
    seen: set[int] = set()
    try:
        try:
            modes = _modes(config)
            if not all(modes):
                service = Service(config.connect or str(workdir / "nnrt.sock"),
                                  workers=config.workers, env=env,
                                  owned=config.connect is None)
                service.start()
                _settle(service.pid, config.workers * 2)
            service_fds = procs.fd_count(service.pid) if service else None
            service_rss = RssSeries(f"service (pid {service.pid})") if service else None
            for k, embedded in enumerate(modes):
                clients.append(_start_client(k, embedded, config, service, workdir, env))
            _drive(config, report, service, clients, service_rss, seen, tick)
            if service is not None and service_rss is not None:
                _check_service(report, service, service_fds, config.workers * 2, seen)
                report.rss.append(service_rss)
            for client in clients:
                _collect(report, client)
                report.rss.append(client.rss)
        finally:
            for client in clients:  # only still running after an error in the harness
                if client.proc.poll() is None:
                    _kill_tree(client.proc.pid)
                    client.proc.wait()
            if service is not None:
                code = service.stop()
                if service.owned and code != 0:
                    report.notes.append(f"nnrt serve exited with {code}: {service.log_tail(500)}")
    except KeyboardInterrupt:  # Ctrl-C: the processes are gone, nothing is left to read
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    deadline = time.monotonic() + 10
    while any(procs.is_alive(p) and procs.is_worker(p) for p in seen) and (
            time.monotonic() < deadline):
        time.sleep(0.1)
    report.leaks.processes("workers", {p for p in seen if procs.is_alive(p)
                                       and procs.is_worker(p)})
    pids = seen | {c.proc.pid for c in clients} | ({service.pid} if service else set())
    report.leaks.segments("/dev/shm", procs.shm_segments(pids) - shm_before)
    for series in report.rss:
        report.leaks.rss(series, config.duration)
    report.elapsed = time.monotonic() - started
    if report.failed:  # the clients' and the service's logs tell what happened
        report.notes.append(f"logs kept in {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return report


def _settle(pid: int, workers: int, timeout: float = SETTLE) -> None:
    """Wait until ``pid`` has ``workers`` live driver workers (restarts take a moment)."""
    deadline = time.monotonic() + timeout
    while len({p for p in procs.workers_of(pid) if procs.is_alive(p)}) < workers and (
            time.monotonic() < deadline):
        time.sleep(0.05)


def _start_client(k: int, embedded: bool, config: StressConfig, service: Service | None,
                  workdir: Path, env: dict[str, str]) -> _Client:
    result, log = workdir / f"client{k}.json", workdir / f"client{k}.log"
    argv = [sys.executable, "-m", "nnrt.stress.client", "--result", str(result),
            "--duration", str(config.duration), "--concurrency", str(config.concurrency),
            "--seed", str(config.seed * 1000 + k), "--cache-dir", str(workdir / "cache")]
    if embedded:
        argv += ["--workers", str(config.workers)]
    else:
        if service is None:  # _modes starts a service whenever a client is shared
            raise RuntimeError("stress: a shared client without a service")
        argv += ["--connect", service.path]
    with open(log, "wb") as f:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=f,
                                stderr=subprocess.STDOUT, env=env)
    mode = "embedded" if embedded else "shared"
    return _Client(f"client {k} ({mode}, pid {proc.pid})", proc, result, log, embedded,
                   RssSeries(f"client {k} ({mode}, pid {proc.pid})"))


def _drive(config: StressConfig, report: StressReport, service: Service | None,
           clients: list[_Client], service_rss: RssSeries | None, seen: set[int],
           tick: Callable[[float], None] | None = None) -> None:
    """Kill workers and sample RSS until every client has exited (or must be given up)."""
    rng = random.Random(config.seed)
    _wait_ready(clients)
    start = time.monotonic()
    next_kill = start + config.kill_every if config.kill_every > 0 else float("inf")
    next_sample = start
    give_up = start + config.duration + CLIENT_SLACK
    while any(c.proc.poll() is None for c in clients):
        now = time.monotonic()
        if service is not None:
            seen.update(procs.workers_of(service.pid))
        for client in clients:
            if client.embedded:
                seen.update(procs.workers_of(client.proc.pid))
        if now >= next_kill and now < start + config.duration:
            next_kill += config.kill_every
            report.kills += _kill_one(rng, [service.pid] if service else [])
            report.kills += _kill_one(rng, [c.proc.pid for c in clients
                                            if c.embedded and c.proc.poll() is None])
        if now >= next_sample:
            next_sample += config.sample_every
            at = now - start
            if service is not None and service_rss is not None:
                service_rss.add(at, procs.rss_bytes(service.pid))
            for client in clients:
                if client.proc.poll() is None:
                    client.rss.add(at, procs.rss_bytes(client.proc.pid))
        if now > give_up:
            for client in clients:
                if client.proc.poll() is None:
                    with contextlib.suppress(OSError):  # its tasks' stacks into its log
                        os.kill(client.proc.pid, signal.SIGUSR1)
                        time.sleep(0.5)
                    tail = (client.log.read_text(errors="replace")[-3000:]
                            if client.log.exists() else "")
                    report.lost_clients.append(f"{client.name}: still running "
                                               f"{CLIENT_SLACK:g} s after the duration, killed; "
                                               f"its log ends: {tail}")
                    _kill_tree(client.proc.pid)
                    client.proc.wait()
        if tick is not None:
            tick(min(now - start, config.duration))
        time.sleep(0.05)


def _wait_ready(clients: list[_Client], timeout: float = CLIENT_SLACK) -> None:
    """Wait until every client has its runtime running (or exited, or ``timeout``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not all(
            c.proc.poll() is not None or c.result.with_suffix(".json.ready").exists()
            for c in clients):
        time.sleep(0.05)


def _kill_one(rng: random.Random, parents: list[int]) -> int:
    """SIGKILL one random driver worker of one of ``parents``; 1 if one was killed."""
    targets = sorted({w for p in parents for w in procs.workers_of(p) if procs.is_alive(w)})
    if not targets:
        return 0
    with contextlib.suppress(ProcessLookupError):
        os.kill(rng.choice(targets), signal.SIGKILL)
        return 1
    return 0


def _kill_tree(pid: int) -> None:
    for child in procs.children(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _check_service(report: StressReport, service: Service, fds_before: int | None,
                   workers: int, seen: set[int]) -> None:
    """Once the clients are gone: the service back to its fds and its workers."""
    deadline = time.monotonic() + SETTLE
    while True:
        _settle(service.pid, workers, max(0.0, deadline - time.monotonic()))
        fds = procs.fd_count(service.pid)
        if fds is None or fds_before is None or fds <= fds_before or (
                time.monotonic() > deadline):
            break
        time.sleep(0.1)
    report.leaks.fds(f"service (pid {service.pid})", fds_before, fds)
    live = {p for p in procs.workers_of(service.pid) if procs.is_alive(p)}
    seen.update(live)
    if len(live) > workers:
        report.leaks.processes(f"service (pid {service.pid}): extra workers",
                               sorted(live)[workers:])
    elif len(live) < workers:
        report.notes.append(f"service has {len(live)} of {workers} workers at the end")


def _collect(report: StressReport, client: _Client) -> None:
    """Merge a finished client's report (untrusted JSON, type-checked)."""
    code = client.proc.returncode
    try:
        data = json.loads(client.result.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        tally = Tally.from_json(data.get("tally"))
        fds_before, fds_after = data.get("fds_before"), data.get("fds_after")
        left = data.get("children_after")
        shm = data.get("shm_after")
        if not (isinstance(left, list) and all(isinstance(p, int) for p in left)
                and isinstance(shm, list) and all(isinstance(s, str) for s in shm)):
            raise ValueError("children_after / shm_after must be lists of ints / strings")
    except (OSError, ValueError) as exc:
        if not any(name.startswith(client.name) for name in report.lost_clients):
            tail = client.log.read_text(errors="replace")[-800:] if client.log.exists() else ""
            report.lost_clients.append(f"{client.name}: exit {code}, no report ({exc}): "
                                       f"{tail}")
        return
    report.tally.merge(tally)
    report.leaks.fds(client.name, fds_before if isinstance(fds_before, int) else None,
                     fds_after if isinstance(fds_after, int) else None)
    report.leaks.processes(client.name, left)
    report.leaks.segments(client.name, shm)
    if code != 0:
        report.notes.append(f"{client.name} exited with {code}")
