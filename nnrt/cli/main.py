"""Entry point of the ``nnrt`` command: ``nnrt demo``, ``nnrt ops``, ``nnrt version``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main"]


def _ops(args: argparse.Namespace) -> int:
    from nnrt.cli.optable import render_markdown, render_text  # noqa: PLC0415

    sys.stdout.write(render_markdown() if args.markdown else render_text())
    return 0


def _demo(_: argparse.Namespace) -> int:
    from nnrt.cli.demo import demo  # noqa: PLC0415

    return demo(sys.stdout)


def _version(_: argparse.Namespace) -> int:
    import nnrt  # noqa: PLC0415

    print(f"nnrt {nnrt.__version__}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``nnrt`` command line; returns the exit code."""
    parser = argparse.ArgumentParser(prog="nnrt", description="nnrt neural-network runtime")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="build and run an example model, verified against numpy"
                        ).set_defaults(func=_demo)
    ops = commands.add_parser("ops", help="list NNAPI operations and their kernel status")
    ops.add_argument("--markdown", action="store_true", help="print the docs/ops.md table")
    ops.set_defaults(func=_ops)
    commands.add_parser("version", help="print the version").set_defaults(func=_version)
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
