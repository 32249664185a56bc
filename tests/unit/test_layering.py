"""Dependencies point downward: model/ops at the bottom, nothing there imports higher layers."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import nnrt

ROOT = Path(nnrt.__file__).parent
# package -> packages it must never import
FORBIDDEN = {
    "model": {"runtime", "hal", "worker", "drivers", "reference", "ipc", "memory", "cache", "cli",
              "onnx", "testing", "serve", "cluster"},
    "ops": {"runtime", "hal", "worker", "drivers", "reference", "ipc", "memory", "cache", "cli",
            "onnx", "testing", "serve", "cluster"},
    "testing": {"runtime", "cli", "worker", "serve", "cluster"},
    "hal": {"runtime", "worker", "serve", "cli", "cluster"},
    "worker": {"runtime", "serve", "cli", "cluster"},
    "drivers": {"runtime", "worker", "serve", "cli", "cluster"},
    "reference": {"runtime", "worker", "serve", "cli", "cluster"},
    "ipc": {"runtime", "worker", "serve", "cli", "hal", "cluster"},
    "memory": {"runtime", "worker", "serve", "cli", "hal", "cluster"},
    "runtime": {"worker", "serve", "cli", "cluster"},
}
# file -> packages it may import despite FORBIDDEN: the .nnrt loader maps the file as an
# ``mmap_fd`` Memory (nnrt.memory imports nothing of nnrt.model, so no cycle arises).
EXCEPTIONS = {"model/file.py": {"memory"}}


@functools.cache  # five tests walk the same files: each is parsed once
def _imports(path: Path) -> frozenset[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return frozenset(names)


def test_lower_layers_do_not_import_higher_ones() -> None:
    problems = []
    for package, forbidden in FORBIDDEN.items():
        for path in (ROOT / package).rglob("*.py"):
            for name in _imports(path):
                parts = name.split(".")
                allowed = EXCEPTIONS.get(str(path.relative_to(ROOT)), set())
                if (parts[0] == "nnrt" and len(parts) > 1 and parts[1] in forbidden
                        and parts[1] not in allowed):
                    problems.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not problems, problems


def test_case_files_never_import_the_kernels() -> None:
    for path in (ROOT / "testing" / "cases").glob("*.py"):
        for name in _imports(path):
            assert not name.startswith("nnrt.ops"), f"{path.name} imports {name}"


def test_no_pickle_anywhere() -> None:
    for path in ROOT.rglob("*.py"):
        names = _imports(path)
        assert "pickle" not in names and "cloudpickle" not in names, path


def test_worker_process_imports_no_client_code() -> None:
    import subprocess
    import sys

    code = ("import sys, nnrt.worker.service, nnrt.reference.driver, nnrt.model.wire; "
            "bad = sorted(m for m in sys.modules if m.startswith(('nnrt.runtime', 'nnrt.serve', "
            "'anyio'))); "
            "print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout.strip()
    assert out == "[]", out


def test_driver_layer_never_imports_runtime() -> None:
    for package in ("hal", "worker", "drivers", "reference", "ipc"):
        for path in (ROOT / package).rglob("*.py"):
            for name in _imports(path):
                assert not name.startswith(("nnrt.runtime", "nnrt.cli")), f"{path} -> {name}"


def test_only_declared_runtime_dependencies_are_imported() -> None:
    import sys
    import tomllib

    project = tomllib.loads((ROOT.parent / "pyproject.toml").read_text())["project"]
    declared = {dep.split(">")[0].split("=")[0].split("<")[0].strip().lower().replace("-", "_")
                for dep in project["dependencies"]}
    allowed = declared | set(sys.stdlib_module_names) | {"nnrt", "__future__"}
    # extras, imported only inside their package: onnx in nnrt.onnx, ray in nnrt.cluster
    optional = {"onnx": "onnx", "onnxruntime": "onnx", "ray": "cluster"}
    problems = []
    for path in ROOT.rglob("*.py"):
        for name in _imports(path):
            top = name.split(".")[0]
            if top not in allowed and not (top in optional and optional[top] in path.parts):
                problems.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not problems, f"undeclared runtime imports: {problems}"
