"""``nnrt inspect MODEL``: what a ``.onnx``, ``.tflite`` or ``.nnrt`` model holds and where it
would run.

Prints the inputs and outputs, the operation counts per type, the constants, the ahead-of-time
partitions of a ``.nnrt`` file, and the placement: the model compiled through a runtime on the
given drivers (default: every installed driver), with per driver the operations it takes and
those it does not support (and why), then the plan's steps (``--operations``: every
operation's line of the placement report). An ONNX or TFLite model that cannot be imported
prints every node (operator) that stops it, and exits 1.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from nnrt.model.model import Model
    from nnrt.runtime.compile.placement import PlacementReport

__all__ = ["add_inspect_parser", "describe_model", "describe_placement", "inspect_command"]


def add_inspect_parser(commands: Any) -> None:
    """Register ``inspect`` on ``commands`` (an argparse sub-parsers object)."""
    from nnrt.cli.run import add_import_arguments  # noqa: PLC0415

    inspect = commands.add_parser("inspect", help="print a .onnx, .tflite or .nnrt model's "
                                  "inputs, outputs, operations, placement per driver and "
                                  "unsupported ONNX nodes / TFLite operators")
    inspect.add_argument("model", help="the .onnx, .tflite or .nnrt model file")
    add_import_arguments(inspect)
    inspect.add_argument("--driver", action="append", help="driver to place on (repeatable; "
                         "default: every installed built-in driver, litert, cpu, reference, or "
                         "$NNRT_DRIVERS)")
    inspect.add_argument("--no-placement", action="store_true",
                         help="do not compile: no worker processes, no placement")
    inspect.add_argument("--operations", action="store_true",
                         help="also print where each operation runs and why")
    inspect.add_argument("--json", action="store_true", help="print JSON (inputs, outputs, "
                         "operation counts, steps, every operation's placement)")
    inspect.set_defaults(func=lambda args: inspect_command(args, sys.stdout, sys.stderr))


def inspect_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run a parsed ``nnrt inspect``: 0 done, 1 an error or an ONNX model nnrt cannot import."""
    import anyio  # noqa: PLC0415

    from nnrt.cli.run import load_model_file, parse_shapes  # noqa: PLC0415
    from nnrt.errors import NnrtError  # noqa: PLC0415
    from nnrt.hal.discovery import default_drivers  # noqa: PLC0415
    from nnrt.runtime.compile.specialize import open_inputs  # noqa: PLC0415

    try:
        try:
            model = load_model_file(args.model, parse_shapes(args.input_shape),
                                    quiet=getattr(args, "quiet", False),
                                    signature=args.signature)
        except NnrtError as exc:
            nodes = getattr(exc, "nodes", None)  # UnsupportedOnnxModel
            kind = "ONNX node(s)"
            if nodes is None:
                nodes, kind = getattr(exc, "operators", None), "TFLite operator(s)"
            if nodes is None:
                raise
            if args.json:
                print(json.dumps({"model": args.model, "importable": False, "unsupported": [
                    str(node) for node in nodes]}, indent=2), file=out)
                return 1
            print(f"{args.model}: cannot be imported: {len(nodes)} {kind} unsupported",
                  file=out)
            for node in nodes:
                print(f"  - {node}", file=out)
            if any("input_shapes" in node.reason for node in nodes):
                print("  (fix dynamic input dims with --input-shape NAME=DIMS, e.g. "
                      "input=1x512)", file=out)
            return 1
        report = None
        if not args.no_placement:
            drivers = args.driver or default_drivers()
            with warnings.catch_warnings():
                warnings.simplefilter("always")  # shown (stderr), never raised
                report = anyio.run(_place, model, drivers)
        if args.json:
            print(json.dumps(model_json(args.model, model, report), indent=2), file=out)
            return 0
        print(f"{args.model}:", file=out)
        for line in describe_model(model):
            print(line, file=out)
        if report is not None:
            if open_inputs(model):
                print("  inputs of unknown dims: the runtime prepares a static variant per "
                      "input shape; below, the model as it is (--input-shape NAME=DIMS shows "
                      "one shape's placement)", file=out)
            for line in describe_placement(model, report, operations=args.operations):
                print(line, file=out)
    except (NnrtError, OSError, ImportError) as exc:
        print(f"nnrt inspect: {exc}", file=err)
        return 1
    return 0


async def _place(model: Model, drivers: Sequence[str]) -> PlacementReport:
    import nnrt  # noqa: PLC0415

    async with nnrt.Runtime(drivers=drivers, workers=1) as rt:
        compiled = await rt.compile(model)
        report = compiled.placement()
        await compiled.release()
    return report


def model_json(source: str, model: Model, report: PlacementReport | None) -> dict[str, Any]:
    """What ``nnrt inspect --json`` prints: the model's inputs and outputs, operation counts,
    whether the runtime prepares it per input shape (inputs of unknown dims), and (when
    placed) its steps and every operation's driver and reasons."""
    from nnrt.model.operation import operation_name  # noqa: PLC0415
    from nnrt.runtime.compile.specialize import open_inputs  # noqa: PLC0415

    def tensor(info: Any) -> dict[str, Any]:
        return {"name": info.name, "shape": None if info.shape is None else list(info.shape),
                "dtype": str(info.dtype), "type": info.type.name}

    found: dict[str, Any] = {
        "model": source, "importable": True,
        "inputs": [tensor(i) for i in model.input_info],
        "outputs": [tensor(o) for o in model.output_info],
        "operations": dict(Counter(operation_name(op.type) for op in model.operations)),
        "extensions": sorted(model.extensions),
        "prepared_per_shape": bool(open_inputs(model)),
    }
    if report is not None:
        found["steps"] = [{"index": s.index, "driver": s.driver, "source": s.source,
                           "operations": list(s.operations), "note": s.note}
                          for s in report.steps]
        found["placement"] = [{"operation": o.operation, "type": o.type_name,
                               "driver": o.driver, "step": o.step, "rejected": dict(o.rejected)}
                              for o in report.operations]
    return found


def describe_model(model: Model) -> list[str]:
    """Inputs, outputs, operation counts, the nnrt extensions used, constants and AOT
    partitions, one line each."""
    from nnrt.model.operation import operation_name  # noqa: PLC0415
    from nnrt.runtime.compile.placement import index_ranges  # noqa: PLC0415

    lines = []
    for title, indices in (("inputs", model.inputs), ("outputs", model.outputs)):
        lines.append(f"  {title}:")
        for k, i in enumerate(indices):
            operand = model.operands[i]
            lines.append(f"    {k} {operand.name or '(unnamed)'!r}: {operand.describe()}")
    counts = Counter(operation_name(op.type) for op in model.operations)
    listed = ", ".join(f"{name} {n}" for name, n in counts.most_common())
    lines.append(f"  operations: {len(model.operations)} ({listed})")
    lines.append("  extensions: " + (", ".join(sorted(model.extensions))
                                     or "none (NNAPI operations and ranks only)"))
    constants = [o for o in model.operands if o.is_constant]
    size = sum(o.byte_size() for o in constants if o.fully_specified)
    lines.append(f"  operands: {len(model.operands)}, {len(constants)} constant "
                 f"({_bytes(size)})")
    if model.aot is not None:
        for record in model.aot.dispatches:
            lines.append(f"  compiled ahead of time for {record.driver}: "
                         f"{len(record.operations)} operation(s): "
                         f"{index_ranges(record.operations)}")
    return lines


def describe_placement(model: Model, report: PlacementReport, *,
                       operations: bool = False) -> list[str]:
    """Per driver, what it takes and what it does not support; the steps; optionally every
    operation's line."""
    from nnrt.runtime.compile.placement import index_ranges  # noqa: PLC0415

    steps = report.steps
    lines = [f"  placement: {len(steps)} step(s) on {', '.join(report.drivers())}"]
    drivers = list(dict.fromkeys([*report.drivers(), *(d for op in report.operations
                                                        for d in op.rejected)]))
    for driver in drivers:
        taken = [op for op in report.operations if op.driver == driver]
        refused = Counter((op.type_name, op.rejected[driver]) for op in report.operations
                          if driver in op.rejected and "preferred" not in op.rejected[driver])
        if not taken and not refused:
            continue  # supports everything, but another driver is preferred for all of it
        in_steps = sum(step.driver == driver for step in steps)
        lines.append(f"    {driver}: {len(taken)} operation(s) in {in_steps} step(s)")
        for (type_name, reason), n in sorted(refused.items()):
            lines.append(f"      not taken: {n} x {type_name}: {reason}")
    lines.append("  steps:")
    for step in steps:
        note = f" ({step.note})" if step.note else ""
        lines.append(f"    step {step.index}: {step.driver} [{step.source}] "
                     f"{len(step.operations)} operation(s): {index_ranges(step.operations)}"
                     f"{note}")
    if operations:
        lines.append("  operations:")
        lines += [f"  {line}" for line in report.describe(verbose=True).splitlines()
                  if line.startswith("  operation ")]
    return lines


def _bytes(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    size = float(n)
    for unit in ("KiB", "MiB", "GiB"):
        size /= 1024
        if size < 1024 or unit == "GiB":
            break
    return f"{size:.1f} {unit}"
