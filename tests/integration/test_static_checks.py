"""ruff and mypy are part of the test suite, so CI enforces them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _tool(name: str) -> str:
    path = shutil.which(name, path=str(Path(sys.executable).parent))
    if path is None:
        pytest.fail(f"{name} is not installed in the test environment (pip install -e '.[test]')")
    return path


def test_ruff_clean() -> None:
    result = subprocess.run([_tool("ruff"), "check", "nnrt", "tests", "examples"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.timeout(600)
def test_mypy_clean() -> None:
    result = subprocess.run([_tool("mypy"), "nnrt/"], cwd=ROOT, capture_output=True, text=True,
                            timeout=600, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.timeout(300)
def test_code_outside_the_repository_type_checks_against_nnrt(tmp_path: Path) -> None:
    # the README installs nnrt editable in compat mode: a path entry mypy follows (the default
    # editable mode's import hook is invisible to type checkers)
    app = tmp_path / "app.py"
    app.write_text("import nnrt\n\n\nasync def main() -> None:\n"
                   "    async with nnrt.Runtime(threads='two') as rt:\n"
                   "        print(rt.devices)\n")
    result = subprocess.run([_tool("mypy"), "--no-incremental", str(app)], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300, check=False)
    assert "import-not-found" not in result.stdout, result.stdout
    # nnrt's types are seen: the str given for an int is caught
    assert 'Argument "threads" to "Runtime" has incompatible type "str"' in result.stdout, \
        result.stdout
