"""``python -m nnrt ARGS`` in a real subprocess, as the CLI tests run it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def run_nnrt(*args: str | Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run the CLI to its end; its exit status, stdout and stderr (text)."""
    return subprocess.run([sys.executable, "-m", "nnrt", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, check=False)
