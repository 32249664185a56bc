"""Entry point of the ``nnrt`` command: demo, serve, drivers, ops, run, inspect, compile, cache,
stress, version.

Exit codes: 0 done; 1 an error (one line on stderr: what, where, why) or, for ``stress`` and
``cache verify``, something found wrong; 2 a usage error (argparse); 130 interrupted (Ctrl-C,
after cleanup: workers stopped, temporary files removed). A bare ``nnrt`` prints the help.
Warnings (such as a model splitting into many partitions) print as one ``warning:`` line.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from typing import Any, TextIO

from nnrt.cli.cache import add_cache_parser
from nnrt.cli.inspect import add_inspect_parser
from nnrt.cli.run import add_import_arguments, add_run_parser
from nnrt.cli.stress import add_stress_parser

__all__ = ["main"]


def _ops(args: argparse.Namespace) -> int:
    from nnrt.cli.optable import render_markdown, render_text  # noqa: PLC0415

    sys.stdout.write(render_markdown() if args.markdown else render_text())
    return 0


def _demo(_: argparse.Namespace) -> int:
    from nnrt.cli.demo import demo  # noqa: PLC0415

    return demo(sys.stdout)


def _drivers(args: argparse.Namespace) -> int:
    import json  # noqa: PLC0415

    from nnrt.errors import BadData  # noqa: PLC0415
    from nnrt.hal.discovery import available_drivers, default_drivers, load_driver  # noqa: PLC0415
    from nnrt.model.types import OperationType  # noqa: PLC0415
    from nnrt.ops._framework.registry import definitions  # noqa: PLC0415

    rows: list[dict[str, Any]] = []
    defaults = default_drivers()
    for name in available_drivers():
        try:
            info = load_driver(name).info()
        except BadData as exc:  # installed but not loadable here (e.g. litert without wheels)
            rows.append({"name": name, "available": False, "reason": str(exc)})
            continue
        rows.append({"name": info.name, "available": True, "version": info.version,
                     "type": info.device_type, "feature_level": info.feature_level,
                     "default": name in defaults,
                     "operations": len(definitions()) if name == "reference" else None})
    if args.json:
        print(json.dumps({"drivers": rows, "defaults": defaults,
                          "operation_types": len(OperationType)}, indent=2))
        return 0
    print(f"{'name':<20} {'version':<24} {'type':<12} {'level':>5}  supported ops")
    for row in rows:
        if not row["available"]:
            print(f"{row['name']:<20} {'-':<24} {'-':<12} {'-':>5}  unavailable: "
                  f"{row['reason']}")
            continue
        count = "?" if row["operations"] is None else row["operations"]
        print(f"{row['name']:<20} {row['version']:<24} {row['type']:<12} "
              f"{row['feature_level']:>5}  {count} of {len(OperationType)}")
    print(f"default: {', '.join(defaults)}")
    return 0


def _serve(args: argparse.Namespace) -> int:
    import anyio  # noqa: PLC0415

    from nnrt.errors import NnrtError, first_error  # noqa: PLC0415
    from nnrt.hal.discovery import default_drivers  # noqa: PLC0415
    from nnrt.serve.server import ClientLimits, serve  # noqa: PLC0415

    drivers = args.driver or default_drivers()
    workers = {d: args.workers for d in [*drivers, "reference"]} if args.workers else None
    limits = ClientLimits(max_pools=args.max_pools, max_device_bytes=args.max_device_bytes,
                          max_in_flight=args.max_in_flight)
    try:
        metrics = None if args.metrics_port is None else (args.metrics_host, args.metrics_port)
        anyio.run(lambda: serve(args.socket, drivers=drivers, workers=workers, limits=limits,
                                max_queue=args.max_queue, threads=args.threads,
                                metrics=metrics))
    except (NnrtError, OSError) as exc:
        print(f"nnrt serve: {exc}", file=sys.stderr)
        return 1
    except BaseExceptionGroup as group:  # raised inside the service's task group
        leaf = first_error(group, (NnrtError, OSError))
        if not isinstance(leaf, NnrtError | OSError):
            raise
        print(f"nnrt serve: {leaf}", file=sys.stderr)
        return 1
    return 0



def _port(text: str) -> int:
    """A TCP port number from the command line (0: any free one)."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is a number from 0 to 65535, got {text!r}")
    return port


def _compile(args: argparse.Namespace) -> int:
    from nnrt.cli.compile import compile_file  # noqa: PLC0415
    from nnrt.cli.run import parse_shapes  # noqa: PLC0415
    from nnrt.errors import NnrtError  # noqa: PLC0415

    try:
        return compile_file(args.model, args.output, args.driver or None, args.soc, sys.stderr,
                            input_shapes=parse_shapes(args.input_shape),
                            step_cost=args.step_cost, quiet=args.quiet,
                            signature=args.signature)
    except (NnrtError, OSError, ImportError) as exc:
        print(f"nnrt compile: {exc}", file=sys.stderr)
        return 1


def _version(_: argparse.Namespace) -> int:
    import nnrt  # noqa: PLC0415

    print(f"nnrt {nnrt.__version__}")
    return 0


def _one_line(message: Warning | str, category: type[Warning], filename: str, lineno: int,
              file: TextIO | None = None, line: str | None = None) -> None:
    """``warnings.showwarning`` for the command line: ``warning: <message>``, no source line."""
    print(f"warning: {message}", file=sys.stderr if file is None else file)


def _quiet(message: Warning | str, category: type[Warning], filename: str, lineno: int,
           file: TextIO | None = None, line: str | None = None) -> None:
    """``warnings.showwarning`` under ``-q``: nothing."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``nnrt`` command line; returns the exit code (see the module docstring)."""
    from nnrt._version import __version__  # noqa: PLC0415

    parser = argparse.ArgumentParser(prog="nnrt", description="nnrt neural-network runtime")
    parser.add_argument("--version", action="version", version=f"nnrt {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="log more (-v: info, -vv: debug)")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="errors only: no warnings, no progress")
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("demo", help="run an example CNN through worker processes, verified "
                        "against numpy").set_defaults(func=_demo)
    ops = commands.add_parser("ops", help="list NNAPI operations and their kernel status")
    ops.add_argument("--markdown", action="store_true", help="print the docs/ops.md table")
    ops.set_defaults(func=_ops)
    drivers = commands.add_parser("drivers", help="list the installed drivers")
    drivers.add_argument("--json", action="store_true", help="print JSON")
    drivers.set_defaults(func=_drivers)
    serve = commands.add_parser("serve", help="run driver pools as a shared service")
    serve.add_argument("--socket", required=True, help="Unix socket path to listen on (0600)")
    serve.add_argument("--driver", action="append", help="driver to serve (repeatable; "
                       "default: every installed built-in driver, litert, cpu, reference, or "
                       "$NNRT_DRIVERS)")
    serve.add_argument("--workers", type=int, default=None, help="workers per driver "
                       "(default: CPU count)")
    serve.add_argument("--threads", type=int, default=None, help="threads of each worker's "
                       "kernels: LiteRT's XNNPACK, BLAS, OpenMP (default 1)")
    serve.add_argument("--max-pools", type=int, default=1024,
                       help="shared-memory pools one client may map (default 1024)")
    serve.add_argument("--max-device-bytes", type=int, default=4 << 30,
                       help="device-memory bytes one client may allocate (default 4 GiB)")
    serve.add_argument("--max-in-flight", type=int, default=4096,
                       help="requests one client may have unanswered (default 4096)")
    serve.add_argument("--max-queue", type=int, default=10_000,
                       help="requests that may wait for a worker, per driver (default 10000)")
    serve.add_argument("--metrics-port", type=_port, default=None, metavar="PORT",
                       help="serve Prometheus metrics (text format 0.0.4) at GET /metrics on "
                       "this TCP port: pools, per-worker load, and per compiled model "
                       "requests, errors by kind and latency histograms (0: any free port, "
                       "logged; default: no metrics endpoint)")
    serve.add_argument("--metrics-host", default="127.0.0.1", metavar="HOST",
                       help="address the metrics endpoint listens on (default 127.0.0.1: this "
                       "host only; the endpoint has no authentication)")
    serve.set_defaults(func=_serve)
    add_run_parser(commands)
    add_inspect_parser(commands)
    aot = commands.add_parser("compile", help="compile a .nnrt, .onnx or .tflite model ahead "
                              "of time with compiler plugins, into a .nnrt file")
    aot.add_argument("model", help="the .nnrt, .onnx or .tflite model file to compile")
    add_import_arguments(aot)
    aot.add_argument("-o", "--output", required=True, help="the .nnrt file to write")
    aot.add_argument("--driver", action="append", help="plugin driver to compile for "
                     "(repeatable; default: the compiler plugins among the default drivers, "
                     "litert and cpu; operations none takes run on the fallback)")
    aot.add_argument("--step-cost", type=float, default=None, metavar="US",
                     help="microseconds the placement charges per step (default 50; 0: every "
                     "operation on its fastest driver)")
    aot.add_argument("--soc", default=None, help="SoC model to compile for (default: the "
                     "plugin's first)")
    aot.set_defaults(func=_compile)
    add_cache_parser(commands)
    add_stress_parser(commands)
    commands.add_parser("version", help="print the version").set_defaults(func=_version)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    import logging  # noqa: PLC0415

    quietest = logging.INFO if args.command == "serve" else logging.WARNING  # a service logs
    level = (logging.ERROR if args.quiet else
             (quietest, logging.INFO, logging.DEBUG)[min(args.verbose, 2)])
    logging.basicConfig(level=level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger().setLevel(level)
    shown: Any = warnings.showwarning
    warnings.showwarning = _quiet if args.quiet else _one_line
    try:
        code: int = args.func(args)
    except KeyboardInterrupt:
        print(f"nnrt {args.command}: interrupted", file=sys.stderr)
        return 130
    finally:
        warnings.showwarning = shown
    return code


if __name__ == "__main__":
    sys.exit(main())
