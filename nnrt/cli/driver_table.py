"""Where each operation and type runs, for ``docs/ops.md``: read off the conformance cases.

For every case variant (with constant weights: the ``consts`` variant where a case has one),
the one-operation model is offered to each built-in compiling driver's partition rule; a driver
*takes* an operation and type when it selects at least one such model. The conformance kit
(``check_driver``) runs exactly those models on the driver and compares them with the
expected values, so the table lists what is checked, not what is hoped for.
"""

from __future__ import annotations

import importlib
from collections import defaultdict
from collections.abc import Callable

from nnrt.errors import NnrtError
from nnrt.model.model import Model
from nnrt.model.operation import operation_name
from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.registry import definitions
from nnrt.testing.cases import all_cases
from nnrt.testing.check import build
from nnrt.testing.coverage import GAPS, beyond_nnapi_1_3, vector_coverage
from nnrt.testing.spec import expand

__all__ = ["DRIVERS", "driver_coverage"]

#: The built-in compiling drivers, in preference order (reference runs every kernel type).
DRIVERS = ("cpu", "litert")

Reason = Callable[[Model, int], "str | None"]


def _rules() -> dict[str, Reason | None]:
    rules: dict[str, Reason | None] = {}
    for name in DRIVERS:
        try:
            module = importlib.import_module(f"nnrt.drivers.{name}.support")
        except ImportError:  # litert without ai-edge-litert
            rules[name] = None
            continue
        rules[name] = module.unsupported_reason
    return rules


def driver_coverage() -> dict[OperationType, dict[str, set[OperandType]]]:
    """Per operation: for ``"reference"`` and each of :data:`DRIVERS`, the types (of the
    kernel-selecting input) it takes in at least one conformance case."""
    rules = _rules()
    table: dict[OperationType, dict[str, set[OperandType]]] = defaultdict(
        lambda: defaultdict(set))
    defs = definitions()
    for case in all_cases():
        definition = defs.get(case.op)
        if definition is None:
            continue
        variants = {v.variant: v for v in expand(case)}
        chosen = [variants.get("consts") or variants.get("base"), variants.get("float16")]
        for variant in chosen:
            if variant is None or definition.type_input >= len(variant.inputs):
                continue
            arg = variant.inputs[definition.type_input]
            if arg.omitted:
                continue
            row = table[case.op]
            row["reference"].add(arg.type)
            try:
                model, _ = build(variant)
            except NnrtError:
                continue
            for name, rule in rules.items():
                if rule is not None and rule(model, 0) is None:
                    row[name].add(arg.type)
    return table


def render_section(short: Callable[[OperandType], str]) -> str:
    """The markdown section of ``docs/ops.md``."""
    coverage = driver_coverage()
    rules = _rules()
    lines = [
        "\n## Where each operation and type runs\n",
        "Read off the conformance cases by `nnrt ops --markdown` (`nnrt/cli/driver_table.py`): "
        "a driver lists a type when its partition step takes that operation in at least one "
        "case (with constant weights), and `check_driver` runs every such case on it "
        "(docs/driver-conformance.md). Everything else falls back to the reference kernels. "
        "Types are those of the input that selects the kernel.\n",
        "| operation | reference | " + " | ".join(DRIVERS) + " |",
        "|---|---|" + "---|" * len(DRIVERS),
    ]
    for op in sorted(coverage, key=int):
        row = coverage[op]
        cells = [" ".join(short(t) for t in sorted(row.get(name, ()))) or "—"
                 for name in ("reference", *DRIVERS)]
        lines.append(f"| {operation_name(op)} | " + " | ".join(cells) + " |")
    missing = [name for name, rule in rules.items() if rule is None]
    if missing:
        lines.append(f"\n(not installed when generated: {', '.join(missing)})")
    return "\n".join(lines) + "\n" + _vectors_section()


def _vectors_section() -> str:
    """How many operation and type variants of NNAPI 1.3 have cases from NNAPI's own test
    vectors (``nnrt.testing.coverage``), and why the others have none."""
    rows = vector_coverage()
    covered = sum(1 for r in rows if r.nnapi_cases)
    lines = [
        "\n## NNAPI's test vectors per operation and type\n",
        f"Of the {len(rows)} operation and type variants NNAPI 1.3 defines (a per-channel filter "
        "and each conversion pair counted apart), "
        f"{covered} have conformance cases transcribed from NNAPI's published test vectors "
        "(`nnrt.testing.coverage.vector_coverage()`; every variant also has nnrt's own cases "
        "or NNAPI's). The others, and why:\n",
        "| operation | type | why no NNAPI vector |",
        "|---|---|---|",
    ]
    for (op, t, detail), reason in sorted(GAPS.items(), key=lambda g: (int(g[0][0]),
                                                                      g[0][1], g[0][2])):
        label = f"{t.name} ({detail})" if detail else t.name
        lines.append(f"| {operation_name(op)} | {label} | {reason} |")
    beyond = sorted({operation_name(r.op) for r in beyond_nnapi_1_3()})
    lines.append(f"\nBeyond NNAPI 1.3 (later feature levels), with kernels and nnrt's or NNAPI's "
                 f"cases: {', '.join(beyond)}. Not implemented: quantised RSQRT (feature level "
                 "7).")
    return "\n".join(lines) + "\n"
