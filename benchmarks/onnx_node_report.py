"""Per-operator pass counts of onnx's backend node tests on nnrt, for ``docs/onnx.md``.

Run: .venv/bin/python benchmarks/onnx_node_report.py [--write] [--check-oracle]

Runs ``tests/onnx_backend/test_node_suite.py`` in process (the same tests, cache and expected-
failure list as the test suite) and prints, per listed operator, how many of its node tests pass
and why the others fail: an element type NNAPI has no tensor for, another reviewed cause from
``expected_failures.toml``, or unexpectedly (a listed test that passes counts as passed). Then
the tests that fail outside the list (with their error) and the listed ones that now pass, for
whoever updates ``expected_failures.toml``. ``--write`` puts the table into ``docs/onnx.md``
between its ``node-report`` markers.

``--check-oracle`` instead compares the stored outputs of every node test whose oracle is onnx
with onnxruntime's outputs on the same inputs and prints the tests where they disagree (each
one is reviewed and, if onnxruntime is right, added to ``onnx_node_cases.DISPUTED``; training-
mode Dropout is random and always differs).
"""

from __future__ import annotations

import argparse
import collections
import platform
import re
import sys
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import numpy_helper
from onnx.backend.test.runner import Runner

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "tests" / "onnx_backend"
DOC = ROOT / "docs" / "onnx.md"
START, END = "<!-- node-report:start -->", "<!-- node-report:end -->"
sys.path.insert(0, str(SUITE))

import onnx_node_cases as node_cases  # noqa: E402

TYPES_KEY = "unrepresentable-types"


@dataclass
class Outcome:
    """How one node test ended: ``passed``, ``xfailed`` (with its entry), ``failed`` or
    ``xpassed`` (a listed test that passes), and the error of a failure."""

    status: str
    entry: str = ""
    error: str = ""


class _Collector:
    """A pytest plugin recording the outcome of every node test by test name."""

    def __init__(self) -> None:
        self.outcomes: dict[str, Outcome] = {}

    def pytest_runtest_logreport(self, report: Any) -> None:
        match = re.search(r"::(test_\w+)_cpu$", report.nodeid)
        if match is None or (report.when != "call" and report.outcome == "passed"):
            return
        name = match.group(1)
        if hasattr(report, "wasxfail"):
            entry = re.match(r"\[([\w-]+)\]", report.wasxfail)
            status = "xfailed" if report.outcome == "skipped" else "xpassed"
            self.outcomes[name] = Outcome(status, entry.group(1) if entry else "")
        elif report.outcome == "failed" and "XPASS(strict)" in str(report.longrepr):
            self.outcomes[name] = Outcome("xpassed")
        elif report.outcome == "failed":
            crash = getattr(report.longrepr, "reprcrash", None)
            message = crash.message if crash is not None else str(report.longrepr)
            self.outcomes[name] = Outcome("failed", error=" ".join(message.split())[:300])
        elif name not in self.outcomes:
            self.outcomes[name] = Outcome(report.outcome)


def run_suite() -> dict[str, Outcome]:
    """Run the node suite in this process; the outcome of each test by name."""
    collector = _Collector()
    code = pytest.main([str(SUITE / "test_node_suite.py"), "-q", "-rN", "--tb=no",
                        "-p", "no:cacheprovider"], plugins=[collector])
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        raise SystemExit(f"the node suite did not run (pytest exit code {code})")
    return collector.outcomes


def table(cases: list[node_cases.NodeCase], outcomes: dict[str, Outcome]) -> str:
    """The per-operator markdown table and its totals."""
    rows: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for case in cases:
        if case.variant:
            continue
        outcome = outcomes.get(case.name, Outcome("missing"))
        counts = rows[case.op]
        counts["tests"] += 1
        counts["expanded"] += case.expanded
        if outcome.status in ("passed", "xpassed"):  # xpassed: listed, yet passes
            counts["passed"] += 1
            counts["expanded passed"] += case.expanded
        elif outcome.status == "xfailed" and outcome.entry == TYPES_KEY:
            counts["types"] += 1
        elif outcome.status == "xfailed":
            counts["other"] += 1
        else:
            counts["unexpected"] += 1
    lines = ["| Operator | Node tests | Passed | *_expanded passed | NNAPI has no such type "
             "| Other listed cause | Unexpected |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    total: collections.Counter[str] = collections.Counter()
    for op in node_cases.LISTED_OPS:
        c = rows[op]
        total.update(c)
        lines.append(f"| {op} | {c['tests']} | {c['passed']} | "
                     f"{c['expanded passed']}/{c['expanded']} | {c['types']} | {c['other']} | "
                     f"{c['unexpected']} |")
    lines.append(f"| **all** | **{total['tests']}** | **{total['passed']}** | "
                 f"**{total['expanded passed']}/{total['expanded']}** | **{total['types']}** | "
                 f"**{total['other']}** | **{total['unexpected']}** |")
    representable = total["tests"] - total["types"]
    variants = [c for c in cases if c.variant]
    passed_variants = sum(outcomes.get(c.name, Outcome("missing")).status in ("passed", "xpassed")
                          for c in variants)
    lines += ["",
              f"- Passed: **{total['passed']} of {total['tests']}** node tests of the listed "
              f"operators ({_percent(total['passed'], total['tests'])}); "
              f"{total['passed']} of the {representable} whose values NNAPI can represent "
              f"({_percent(total['passed'], representable)}).",
              f"- Without the `*_expanded` tests (function bodies of other operators): "
              f"{total['passed'] - total['expanded passed']} of "
              f"{total['tests'] - total['expanded']}.",
              f"- Older-opset variants checked against onnxruntime (Softmax / LogSoftmax at "
              f"opset 11, BatchNormalization at opset 9): {passed_variants} of {len(variants)}.",
              f"- onnx {version('onnx')}, onnxruntime {version('onnxruntime')}, Python "
              f"{platform.python_version()}, {platform.machine()}."]
    return "\n".join(lines)


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "n/a"


def write_doc(text: str) -> None:
    """Replace the text between the node-report markers of ``docs/onnx.md``."""
    doc = DOC.read_text()
    if START not in doc or END not in doc:
        raise SystemExit(f"{DOC} has no {START} ... {END} markers")
    head, rest = doc.split(START, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(f"{head}{START}\n{text}\n{END}{tail}")


def check_oracle(cases: list[node_cases.NodeCase]) -> int:
    """Print the node tests whose stored outputs onnxruntime disputes; how many there are."""
    onnxruntime.set_default_logger_severity(4)
    disputed = 0
    for case in cases:
        if case.oracle != "onnx":
            continue
        model = onnx.load(str(case.directory / "model.onnx"))
        try:
            inputs, outputs = (
                [numpy_helper.to_array(onnx.load_tensor(str(path)))
                 for path in sorted((case.directory / "test_data_set_0").glob(f"{kind}_*.pb"),
                                    key=lambda p: int(p.stem.split("_")[1]))]
                for kind in ("input", "output"))
            session = onnxruntime.InferenceSession(model.SerializeToString(),
                                                   providers=["CPUExecutionProvider"])
            names = [i.name for i in session.get_inputs()]
            got = session.run(None, dict(zip(names, inputs, strict=True)))
        except Exception as exc:  # onnxruntime lacks the opset or type: no second opinion
            print(f"skipped  {case.name}: {' '.join(str(exc).split())[:120]}")
            continue
        try:
            Runner.assert_similar_outputs(outputs, [np.asarray(g) for g in got], 1e-3, 1e-7)
        except AssertionError as exc:
            disputed += 1
            print(f"DISPUTED {case.name}: {' '.join(str(exc).split())[:300]}")
    return disputed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="update docs/onnx.md")
    parser.add_argument("--check-oracle", action="store_true",
                        help="compare the stored outputs with onnxruntime's instead")
    args = parser.parse_args()
    cases = node_cases.load_cases()
    if args.check_oracle:
        print(f"{check_oracle(cases)} disputed node tests")
        return
    outcomes = run_suite()
    text = table(cases, outcomes)
    print(text)
    unexpected = sorted((n, o) for n, o in outcomes.items() if o.status == "failed")
    passing = sorted(n for n, o in outcomes.items() if o.status == "xpassed")
    print(f"\n{len(unexpected)} failures outside expected_failures.toml:")
    for name, outcome in unexpected:
        print(f"  {name}: {outcome.error}")
    print(f"\n{len(passing)} tests listed in expected_failures.toml that pass:")
    for name in passing:
        print(f"  {name}")
    if args.write:
        write_doc(text)
        print(f"\nwrote the table into {DOC}")


if __name__ == "__main__":
    main()
