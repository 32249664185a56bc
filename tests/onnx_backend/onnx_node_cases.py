"""The ONNX backend node tests, cached on disk, and a ``BackendTest`` over the listed operators.

onnx >= 1.20 ships no node-test data: ``onnx.backend.test.BackendTest`` builds all ~1,900 node
cases in memory by running every exporter under ``onnx.backend.test.case.node`` (about 12 s; no
filter by operator skips that work). This module writes them once, in a subprocess, into a cache
keyed by the onnx and onnxruntime versions and this file's hash, in the layout onnx used to ship
(``node/<test>/model.onnx``, ``node/<test>/test_data_set_0/{input,output}_<i>.pb``), with a
``manifest.json`` giving each test's operator (for ``*_expanded`` tests: the operator whose
function body they expand), opset and oracle. The directory is written under a temporary name
and renamed into place, so concurrent runs never see half a cache.

Oracle: the stored outputs are those of onnx's exporters, except where onnx's reference
implementation is known to be wrong (:func:`needs_onnxruntime_oracle`: BatchNormalization
before opset 14, Softmax / LogSoftmax before opset 13, GlobalMaxPool, and the tests in
:data:`DISPUTED`, each with the reason onnxruntime is right): for those tests the cache
stores onnxruntime's outputs on the same inputs instead, and the manifest says so. The node
tests of operators whose semantics changed at an opset onnx's tests no longer reach
(``_OLDER_OPSETS``: Softmax and LogSoftmax before 13, BatchNormalization before 14) are also
cached at that older opset (``<test>_opset<N>``, ``variant`` in the manifest), with onnxruntime's
outputs as the oracle.

Run ``python tests/onnx_backend/onnx_node_cases.py`` to (re)build the cache and print where it is.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import tomllib
import unittest.mock
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["LISTED_OPS", "ExpectedFailure", "NodeCase", "backend_test", "cache_dir",
           "expected_failures", "load_cases", "load_expected_failures",
           "needs_onnxruntime_oracle"]

#: The operators nnrt's importer targets (docs/onnx.md); their node tests are the suite's target.
LISTED_OPS = tuple("""
Add Sub Mul Div Pow Sqrt Reciprocal Exp Erf Tanh Sigmoid HardSigmoid Relu LeakyRelu Clip Max Min
Abs Neg Floor Ceil Cast Equal Greater GreaterOrEqual Less Not And Or Where IsNaN MatMul Gemm Conv
ConvTranspose MaxPool AveragePool GlobalAveragePool GlobalMaxPool BatchNormalization
LayerNormalization InstanceNormalization Softmax LogSoftmax ReduceMean ReduceSum ReduceMax
ReduceMin ReduceL2 ArgMax Reshape Flatten Squeeze Unsqueeze Transpose Concat Split Slice Gather
GatherND Expand Tile Pad Resize Shape Size Range ConstantOfShape Constant Identity Dropout
DepthToSpace SpaceToDepth TopK LSTM If QuantizeLinear DequantizeLinear QLinearConv QLinearMatMul
DynamicQuantizeLinear MatMulInteger ConvInteger
""".split())

HERE = Path(__file__).resolve().parent
EXPECTED_FAILURES = HERE / "expected_failures.toml"

_NAME = re.compile(r"^test_[A-Za-z0-9_]+$")
_EXPANDED = re.compile(r"^(?P<base>.+?)_expanded(_ver\d+)?$")

_ALIGN_CORNERS = (
    "Resize's align_corners maps x_resized to x_resized * (length_original - 1) / "
    "(length_resized - 1), length_resized being the length of the output axis (an integer); "
    "onnx's exporter uses the unrounded length_original * scale instead, onnxruntime (and nnrt) "
    "the output length")

#: Operators whose semantics changed at an opset the node tests no longer cover: their node
#: tests are also run at this older opset, with onnxruntime's outputs as the oracle.
_OLDER_OPSETS = {"Softmax": 11, "LogSoftmax": 11, "BatchNormalization": 9}


@dataclass(frozen=True)
class NodeCase:
    """One cached node test: its name, the operator it tests and where its files are."""

    name: str
    #: The operator tested (for ``*_expanded`` tests, the one whose function they expand).
    op: str
    opset: int
    expanded: bool
    #: Made here, not by onnx: an onnx node test rerun at an older opset (see _OLDER_OPSETS).
    variant: bool
    #: Whose outputs the test compares with: ``onnx`` (stored) or ``onnxruntime``.
    oracle: str
    #: The element types of the graph's inputs and outputs.
    types: tuple[str, ...]
    directory: Path


#: Node tests whose stored outputs onnxruntime disputes, and why onnxruntime is right (found by
#: ``benchmarks/onnx_node_report.py --check-oracle``, reviewed one by one).
DISPUTED = {
    "test_resize_downsample_scales_cubic_align_corners": _ALIGN_CORNERS,
    "test_resize_downsample_scales_linear_align_corners": _ALIGN_CORNERS,
}


def needs_onnxruntime_oracle(name: str, op: str, opset: int) -> bool:
    """Whether the stored outputs of node test ``name`` (of ``op`` at ``opset``) come from a
    part of onnx's reference implementation known to be wrong, so onnxruntime is the oracle."""
    return ((op == "BatchNormalization" and opset < 14)
            or (op in ("Softmax", "LogSoftmax") and opset < 13)
            or op == "GlobalMaxPool"
            or name in DISPUTED)


# -- the cache ----------------------------------------------------------------------------------

def cache_dir() -> Path:
    """This onnx/onnxruntime pair's cache directory, built first if it is missing.

    The root is ``$NNRT_ONNX_NODE_TESTS`` or ``$XDG_CACHE_HOME/nnrt/onnx-node-tests`` (default
    ``~/.cache``), or a directory under the system's temporary one when that cannot be created;
    building takes ~20 s, once per onnx / onnxruntime pair and edit of this file.
    """
    import onnx
    import onnxruntime

    root = Path(os.environ.get("NNRT_ONNX_NODE_TESTS") or Path(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nnrt" / "onnx-node-tests")
    # the key: both versions and this file, whose oracle rules decide the stored outputs
    source = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]
    target = root / f"onnx-{onnx.__version__}_ort-{onnxruntime.__version__}_{source}"
    if not (target / "manifest.json").is_file():
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError:  # a read-only home: fall back to the temporary directory
            root = Path(tempfile.gettempdir()) / f"nnrt-onnx-node-tests-{os.getuid()}"
            root.mkdir(mode=0o700, exist_ok=True)
            if root.stat().st_uid != os.getuid():
                raise RuntimeError(f"{root} belongs to another user; "
                                   "set NNRT_ONNX_NODE_TESTS") from None
            target = root / target.name
            if (target / "manifest.json").is_file():
                return target
        staging = Path(tempfile.mkdtemp(prefix=".building-", dir=root))
        try:
            subprocess.run([sys.executable, __file__, "--write", str(staging)], check=True,
                           timeout=600, stdout=subprocess.DEVNULL)
            try:
                staging.rename(target)
            except OSError:  # another run finished first: keep its cache
                if not (target / "manifest.json").is_file():
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def load_cases(ops: Iterable[str] | None = LISTED_OPS, *,
               expanded: bool = True) -> list[NodeCase]:
    """The cached node tests of ``ops`` (None: every operator), sorted by name; ``expanded``
    keeps the ``*_expanded`` tests of their function bodies."""
    directory = cache_dir()
    manifest = json.loads((directory / "manifest.json").read_text())
    wanted = None if ops is None else set(ops)
    cases = []
    for name, info in sorted(manifest["cases"].items()):
        if not _NAME.match(name):  # the cache is untrusted input: names become paths
            raise RuntimeError(f"{directory}: bad test name {name!r} in the manifest")
        if (wanted is None or info["op"] in wanted) and (expanded or not info["expanded"]):
            cases.append(NodeCase(name, str(info["op"]), int(info["opset"]),
                                  bool(info["expanded"]), bool(info["variant"]),
                                  str(info["oracle"]), tuple(map(str, info["types"])),
                                  directory / "node" / name))
    return cases


def _write_cache(staging: Path) -> None:
    """Generate every node case of the installed onnx into ``staging`` (run in a subprocess:
    the exporters import ~200 modules and reseed numpy's global generator)."""
    import onnx
    import onnxruntime
    from onnx.backend.test.loader import load_model_tests

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the exporters overflow and divide by zero on purpose
        generated = load_model_tests(kind="node")
    single_ops = {c.name: c.model.graph.node[0].op_type for c in generated
                  if len(c.model.graph.node) == 1 and not _EXPANDED.match(c.name)}
    cases: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}

    def add(name: str, model: Any, inputs: list[Any], outputs: list[Any], op: str,
            expanded: bool, variant: bool) -> None:
        opset = _opset(model)
        oracle = ("onnxruntime" if variant or needs_onnxruntime_oracle(name, op, opset)
                  else "onnx")
        try:
            if oracle == "onnxruntime":
                outputs = _onnxruntime_outputs(model, inputs)
            _write_case(staging / "node" / name, model, inputs, outputs)
        except (TypeError, ValueError) as exc:
            skipped[name] = str(exc)
            return
        cases[name] = {"op": op, "opset": opset, "expanded": expanded, "variant": variant,
                       "oracle": oracle, "types": _value_types(model.graph)}

    for case in generated:
        match = _EXPANDED.match(case.name)
        op = single_ops.get(match.group("base") if match else case.name, "(model)")
        ((inputs, outputs),) = case.data_sets
        add(case.name, case.model, list(inputs), list(outputs), op, bool(match), False)
        older = _OLDER_OPSETS.get(op)
        if older is not None and not match and _opset(case.model) > older:
            variant = _at_opset(case.model, older)
            if variant is not None and f"{case.name}_opset{older}" not in single_ops:
                add(f"{case.name}_opset{older}", variant, list(inputs), [], op, False, True)
    manifest = {"onnx": onnx.__version__,
                "onnxruntime": onnxruntime.__version__, "cases": cases, "unwritable": skipped}
    (staging / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))


def _opset(model: Any) -> int:
    return next((int(o.version) for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def _at_opset(model: Any, opset: int) -> Any:
    """``model`` importing default-domain ``opset`` instead, or None if it is invalid there."""
    import onnx

    older = onnx.ModelProto()
    older.CopyFrom(model)
    for entry in older.opset_import:
        if entry.domain in ("", "ai.onnx"):
            entry.version = opset
    try:
        onnx.checker.check_model(older)
    except onnx.checker.ValidationError:
        return None
    return older


def _value_types(graph: Any) -> list[str]:
    """The element types (``TensorProto.DataType`` names) of the graph's inputs and outputs;
    ``SEQUENCE``, ``OPTIONAL``, ... for values that are not tensors."""
    from onnx import TensorProto

    names = set()
    for value in (*graph.input, *graph.output):
        kind = value.type.WhichOneof("value")
        names.add(TensorProto.DataType.Name(value.type.tensor_type.elem_type)
                  if kind == "tensor_type" else str(kind).removesuffix("_type").upper())
    return sorted(names)


def _onnxruntime_outputs(model: Any, inputs: list[Any]) -> list[Any]:
    import onnxruntime

    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return list(session.run(None, dict(zip(names, inputs, strict=True))))


def _write_case(directory: Path, model: Any, inputs: list[Any], outputs: list[Any]) -> None:
    from onnx import TensorProto, numpy_helper

    data = directory / "test_data_set_0"
    data.mkdir(parents=True)
    (directory / "model.onnx").write_bytes(model.SerializeToString())
    for kind, values in (("input", inputs), ("output", outputs)):
        for i, value in enumerate(values):
            if value is None:
                raise ValueError(f"{kind} {i} is an absent optional value")
            proto = (value if isinstance(value, TensorProto)
                     else numpy_helper.from_list(value) if isinstance(value, list)
                     else numpy_helper.from_array(np.asarray(value)))
            (data / f"{kind}_{i}.pb").write_bytes(proto.SerializeToString())


# -- the suite ----------------------------------------------------------------------------------

def backend_test(backend: Any, module: str, cases: Iterable[NodeCase]) -> Any:
    """An ``onnx.backend.test.BackendTest`` of ``backend`` over ``cases`` only.

    ``BackendTest`` takes its cases from ``onnx.backend.test.loader.load_model_tests``, which
    generates every node case in memory and lists onnx's model tests; while it is constructed,
    the loader returns the cached cases instead (the runner reads their files from disk as it
    did when onnx shipped them) and no model tests.
    """
    from onnx.backend.test import BackendTest, runner
    from onnx.backend.test.case.test_case import TestCase

    test_cases = [TestCase(name=c.name, model_name=c.name, url=None,
                           model_dir=str(c.directory), model=None, data_sets=None, kind="node",
                           rtol=1e-3, atol=1e-7) for c in cases]

    def cached(data_dir: str = "", kind: str | None = None) -> list[Any]:
        return test_cases if kind == "node" else []

    with unittest.mock.patch.object(runner, "load_model_tests", cached):
        suite = BackendTest(backend, module)
    registered = {name.removesuffix("_cpu")
                  for case in suite.test_cases.values() for name in dir(case)
                  if name.startswith("test_") and name.endswith("_cpu")}
    missing = {c.name for c in test_cases} - registered
    if missing:  # onnx changed how BackendTest finds its cases
        raise RuntimeError(f"BackendTest did not register {len(missing)} cached node tests, "
                           f"e.g. {sorted(missing)[:3]}")
    return suite


@dataclass(frozen=True)
class ExpectedFailure:
    """One entry of ``expected_failures.toml``: why nnrt fails some tests, and which ones."""

    key: str
    reason: str
    #: Tests named one by one.
    tests: frozenset[str]
    #: Every test whose graph inputs or outputs have one of these types.
    element_types: frozenset[str]

    def matches(self, case: NodeCase) -> bool:
        """Whether this entry covers ``case``."""
        return case.name in self.tests or bool(self.element_types.intersection(case.types))


def load_expected_failures(path: Path = EXPECTED_FAILURES) -> list[ExpectedFailure]:
    """The entries of ``expected_failures.toml``, in file order."""
    entries = []
    seen: set[str] = set()
    for key, table in tomllib.loads(path.read_text()).items():
        reason = " ".join(str(table.get("reason", "")).split())
        unknown = set(table) - {"reason", "tests", "element_types"}
        if not reason or unknown:
            raise ValueError(f"{path.name}: [{key}] needs a reason (and no keys {unknown})")
        tests = frozenset(map(str, table.get("tests", [])))
        twice = seen & tests
        if twice:
            raise ValueError(f"{path.name}: [{key}] lists {sorted(twice)} again")
        seen |= tests
        entries.append(ExpectedFailure(key, reason, tests,
                                       frozenset(map(str, table.get("element_types", [])))))
    return entries


def expected_failures(cases: Iterable[NodeCase],
                      entries: Iterable[ExpectedFailure] | None = None) -> dict[str, str]:
    """Test name -> why nnrt is expected to fail it (the first entry covering the test; the
    reason shortened to a line: the full text is in the file)."""
    entries = load_expected_failures() if entries is None else list(entries)
    reasons = {}
    for case in cases:
        entry = next((e for e in entries if e.matches(case)), None)
        if entry is not None:
            reasons[case.name] = textwrap.shorten(f"[{entry.key}] {entry.reason}", 100)
    return reasons


if __name__ == "__main__":
    if sys.argv[1:2] == ["--write"] and len(sys.argv) == 3:
        _write_cache(Path(sys.argv[2]))
    else:
        print(cache_dir())
