"""Every fenced Python block of README.md and docs/*.md marked ``<!-- runnable -->`` runs as
written, in a fresh interpreter from the repository root (exit 0)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_BLOCK = re.compile(r"^<!-- runnable -->\n```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def _blocks() -> list[tuple[str, str]]:
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text()
        for match in _BLOCK.finditer(text):
            line = text.count("\n", 0, match.start()) + 2
            found.append((f"{path.relative_to(ROOT)}:{line}", match.group(1)))
    return found


BLOCKS = _blocks()


def test_the_readme_and_getting_started_have_runnable_blocks() -> None:
    where = {name.split(":")[0] for name, _ in BLOCKS}
    assert {"README.md", "docs/getting-started.md"} <= where, where


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("where", "code"), BLOCKS, ids=[name for name, _ in BLOCKS])
def test_a_runnable_block_runs_as_written(where: str, code: str) -> None:
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, timeout=240, check=False)
    assert result.returncode == 0, f"{where}:\n{result.stdout}\n{result.stderr}"
