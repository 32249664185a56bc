"""``nnrt stress``: the stress harness from the command line (see docs/reliability.md)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["add_stress_parser", "run_stress_command"]


def add_stress_parser(commands: Any) -> None:
    """Register ``stress`` on ``commands`` (an argparse sub-parsers object)."""
    stress = commands.add_parser(
        "stress", help="mixed traffic from many client processes with workers killed under "
        "it; exit 1 if anything is lost, wrong or leaked")
    stress.add_argument("--duration", type=float, default=60.0, help="seconds of traffic "
                        "(default 60)")
    stress.add_argument("--clients", type=int, default=4, help="client processes (default 4)")
    stress.add_argument("--kill-every", type=float, default=5.0, help="SIGKILL a random "
                        "driver worker every S seconds (0: never; default 5)")
    stress.add_argument("--connect", default=None, metavar="PATH", help="use this running "
                        "service instead of starting one")
    stress.add_argument("--workers", type=int, default=2, help="workers per driver (the "
                        "service's and each embedded client's; default 2)")
    stress.add_argument("--mode", choices=("shared", "embedded", "both"), default="both",
                        help="clients of the shared service, embedded runtimes, or half each "
                        "(default)")
    stress.add_argument("--concurrency", type=int, default=3, help="request loops per client "
                        "(default 3)")
    stress.add_argument("--seed", type=int, default=0, help="seed of the traffic and the killer")
    stress.add_argument("--ray", action="store_true", help="soak a cluster runtime instead: "
                        "on a local Ray cluster of --nodes nodes (or the one at --address), "
                        "the actor of a random other node killed every --kill-every seconds "
                        "(needs ray: pip install nnrt[ray])")
    stress.add_argument("--nodes", type=int, default=3, help="nodes of the local Ray cluster "
                        "of --ray (1 CPU each; default 3)")
    stress.add_argument("--address", default=None, help="with --ray: the Ray cluster to use "
                        "(HOST:PORT or auto) instead of starting one")
    stress.add_argument("--json", default=None, metavar="FILE",
                        help="write the full report as JSON to FILE ('-': stdout)")
    stress.set_defaults(func=run_stress_command)


def run_stress_command(args: argparse.Namespace) -> int:
    """Run a parsed ``nnrt stress``; 0 when nothing was lost, wrong or leaked."""
    from nnrt.stress.harness import StressConfig, run_stress  # noqa: PLC0415

    if args.duration <= 0 or args.clients < 1 or args.kill_every < 0 or args.workers < 1 or (
            args.concurrency < 1):
        print("nnrt stress: --duration and --kill-every must be positive (kill-every may be "
              "0), --clients, --workers and --concurrency at least 1", file=sys.stderr)
        return 2
    if args.ray:
        return _run_ray(args)
    config = StressConfig(duration=args.duration, clients=args.clients,
                          kill_every=args.kill_every, connect=args.connect,
                          workers=args.workers, seed=args.seed, mode=args.mode,
                          concurrency=args.concurrency)
    from nnrt.cli.progress import Progress  # noqa: PLC0415

    progress = Progress(int(args.duration), "seconds of traffic",
                        quiet=getattr(args, "quiet", False))
    try:
        report = run_stress(config, ["nnrt", *sys.argv[1:]],
                            tick=lambda seconds: progress.update(int(seconds)))
    finally:
        progress.close()
    return _report(report, args.json)


def _report(report: Any, json_path: str | None) -> int:
    """Print a stress report's lines (on stderr when stdout carries the JSON), write its JSON
    where ``--json`` says, and return the exit code (1 if anything was lost, wrong or
    leaked)."""
    for line in report.lines():
        print(line, flush=True, file=sys.stderr if json_path == "-" else sys.stdout)
    if json_path == "-":
        json.dump(report.to_json(), sys.stdout, indent=1)
        print()
    elif json_path is not None:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(report.to_json(), f, indent=1)
    return 1 if report.failed else 0


def _run_ray(args: argparse.Namespace) -> int:
    """``nnrt stress --ray``: see :mod:`nnrt.cluster.soak`."""
    try:
        from nnrt.cluster.soak import RaySoakConfig, run_ray_soak  # noqa: PLC0415
    except ImportError as exc:
        print(f"nnrt stress --ray: needs ray ({exc}); pip install nnrt[ray]", file=sys.stderr)
        return 2
    if args.nodes < 1:
        print("nnrt stress: --nodes must be at least 1", file=sys.stderr)
        return 2
    report = run_ray_soak(RaySoakConfig(duration=args.duration, kill_every=args.kill_every,
                                        nodes=args.nodes, address=args.address,
                                        concurrency=args.concurrency, seed=args.seed))
    return _report(report, args.json)
