"""The ``nnrt`` command in a real subprocess."""

from __future__ import annotations

import subprocess
import sys


def _nnrt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nnrt", *args], capture_output=True, text=True,
                          timeout=120, check=False)


def test_demo_runs_and_verifies() -> None:
    result = _nnrt("demo")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok: matches an independent numpy computation" in result.stdout


def test_ops_lists_every_operation() -> None:
    result = _nnrt("ops")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any("REVERSE" in line for line in lines)
    assert any("com.nnrt.ERF" in line for line in lines)  # the extension operations too
    assert "of 109 operations have reference kernels" in lines[-1]


def test_unknown_command_fails_cleanly() -> None:
    result = _nnrt("frobnicate")
    assert result.returncode == 2
    assert "invalid choice" in result.stderr


def test_docs_op_table_is_current() -> None:
    from pathlib import Path

    from nnrt.cli.optable import render_markdown

    path = Path(__file__).resolve().parents[2] / "docs" / "ops.md"
    assert path.read_text() == render_markdown(), "regenerate: nnrt ops --markdown > docs/ops.md"


def test_drivers_lists_the_reference_driver() -> None:
    result = _nnrt("drivers")
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if line.startswith("reference"))
    from nnrt.model.types import OperationType
    from nnrt.ops._framework.registry import definitions

    assert "cpu" in line and f"{len(definitions())} of {len(OperationType)}" in line
