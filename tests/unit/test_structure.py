"""The layout's rules, checked from the source: no import cycles, no reaching into another
module's private attributes, client processes never load worker code (docs/architecture.md)."""

from __future__ import annotations

import ast
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

import nnrt

ROOT = Path(nnrt.__file__).parent

#: Cycles the architecture page justifies ("Import cycles"), as sorted module lists.
JUSTIFIED_CYCLES = [
    # Runtime.sync() returns the blocking facade, which wraps a Runtime (imported on first call).
    ["nnrt.runtime.runtime", "nnrt.runtime.sync"],
]


def _modules() -> dict[str, Path]:
    modules = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement except those under ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for other in node.orelse:
                yield from _runtime_imports(other)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        yield from _runtime_imports(node)


def import_graph() -> dict[str, set[str]]:
    """Module -> the nnrt modules it imports at run time (function-local imports included)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        edges = graph.setdefault(module, set())
        for node in _runtime_imports(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                           for alias in node.names]
            for target in targets:
                resolved = _resolve(target, modules) if target.startswith("nnrt") else None
                if resolved is not None and resolved != module:
                    edges.add(resolved)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycles_but_the_justified_ones() -> None:
    graph = import_graph()
    assert len(graph) > 200 and "nnrt.runtime.step" in graph["nnrt.runtime.compiled"]
    assert cycles(graph) == JUSTIFIED_CYCLES


def _private_names_defined(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)  # __slots__ entries
    return {n for n in names if n.startswith("_")}


def private_reach_ins(path: Path) -> list[str]:
    """``obj._name`` and ``from x import _name`` where ``_name`` is not defined in this module.

    ``self._x`` / ``cls._x`` are the class's own; dunders are public protocol.
    """
    tree = ast.parse(path.read_text())
    own = _private_names_defined(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            name = node.attr
            if (name.startswith("_") and not name.endswith("__") and name not in own
                    and not (isinstance(node.value, ast.Name)
                             and node.value.id in ("self", "cls"))):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("nnrt"):
            found += [f"{path.relative_to(ROOT)}:{node.lineno}: imports {alias.name}"
                      for alias in node.names
                      if alias.name.startswith("_") and not alias.name.endswith("__")]
    return found


def test_the_reach_in_lint_sees_one(tmp_path: Path) -> None:
    sample = ROOT / "runtime" / "_sample_for_lint.py"
    sample.write_text("def f(runtime):\n    return runtime._backend, runtime.public\n")
    try:
        assert private_reach_ins(sample) == [
            "runtime/_sample_for_lint.py:2: runtime._backend"]
    finally:
        sample.unlink()


def test_no_module_reaches_into_private_attributes_of_another() -> None:
    problems = [line for path in sorted(ROOT.rglob("*.py")) for line in private_reach_ins(path)]
    assert not problems, "\n".join(problems)


def test_a_client_process_never_imports_worker_modules() -> None:
    code = """
import sys, anyio, numpy as np, nnrt

async def main():
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 4))
    b.output(b.add(x, np.ones((1, 4), np.float32)))
    async with nnrt.Runtime(drivers=["reference"], workers=1) as rt:
        compiled = await rt.compile(b.build())
        (y,) = await compiled.execute([np.zeros((1, 4), np.float32)])
        (z,) = await compiled.execute([np.zeros((1, 4), np.float32)], outputs=[None])
    assert y.tolist() == z.tolist() == [[1.0] * 4]

anyio.run(main)
print(sorted(m for m in sys.modules if m.startswith(("nnrt.worker", "nnrt.serve"))))
print("nnrt.runtime.backends.embedded" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout.split("\n")
    assert out[:2] == ["[]", "True"], out


def test_the_old_driver_package_is_a_deprecated_alias() -> None:
    script = ("import warnings, sys\n"
              "warnings.simplefilter('always')\n"
              "with warnings.catch_warnings(record=True) as seen:\n"
              "    from nnrt.driver.base import Driver\n"
              "    from nnrt.driver.testing import check_driver\n"
              "    import nnrt.driver as old\n"
              "import nnrt.hal, nnrt.hal.conformance\n"
              "assert Driver is nnrt.hal.Driver and old.Driver is nnrt.hal.Driver\n"
              "assert check_driver is nnrt.hal.conformance.check_driver\n"
              "print([str(w.category.__name__) for w in seen])\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, timeout=60).stdout.strip()
    assert out == "['DeprecationWarning']", out


def test_the_old_worker_command_still_runs() -> None:
    done = subprocess.run([sys.executable, "-W", "ignore::DeprecationWarning", "-m",
                           "nnrt.driver", "--help"], capture_output=True, text=True,
                          check=False, timeout=60)
    assert done.returncode == 0 and "--driver" in done.stdout, done.stderr


def test_importing_the_alias_in_process_warns() -> None:
    sys.modules.pop("nnrt.driver", None)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        import nnrt.driver  # noqa: F401
    assert any(issubclass(w.category, DeprecationWarning) and "nnrt.hal" in str(w.message)
               for w in seen)


@pytest.mark.parametrize("module", ["nnrt.worker", "nnrt.hal.conformance", "nnrt.serve",
                                    "nnrt.runtime.compile", "nnrt.runtime.backends"])
def test_every_package_says_what_it_holds(module: str) -> None:
    import importlib

    doc = importlib.import_module(module).__doc__ or ""
    assert len(doc.split()) > 10, module
