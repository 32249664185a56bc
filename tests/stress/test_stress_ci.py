"""The CI stress run: ``nnrt stress --duration 60 --clients 4 --kill-every 5`` must come out
with nothing lost, wrong or leaked (the full run is documented in docs/reliability.md)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

SUMMARY = re.compile(r"^requests=(\d+) ok=(\d+) errors=(\d+) lost=(\d+) wrong=(\d+) "
                     r"leaked=(\d+)$")
KINDS = {"execute", "execute_memory", "deadline", "cancel", "compile", "release",
         "device_allocate", "device_copy_from", "device_execute", "device_copy_to",
         "device_free"}


@pytest.mark.timeout(240)
def test_stress_60_seconds(tmp_path: Path) -> None:
    report_path = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "nnrt", "stress", "--duration", "60",
                           "--clients", "4", "--kill-every", "5", "--json", str(report_path)],
                          capture_output=True, text=True, timeout=230, check=False)
    lines = proc.stdout.strip().splitlines()
    assert lines, proc.stderr
    match = SUMMARY.match(lines[-1])
    assert match, (lines[-1], proc.stderr)
    requests, ok, errors, lost, wrong, leaked = map(int, match.groups())
    assert (lost, wrong, leaked) == (0, 0, 0), proc.stdout
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert requests == ok + errors and ok > 1000
    report = json.loads(report_path.read_text())
    assert report["summary"] == lines[-1]
    assert report["kills"] >= 10  # every 5 s for 60 s, service and embedded workers
    assert set(report["tally"]["outcomes"]) == KINDS
    assert report["latency"]["p50"] is not None
