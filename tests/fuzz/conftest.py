"""Hypothesis profiles for the fuzzers, and a count of the cases each fuzzer ran.

``ci`` (the default) is derandomized and bounded: the whole folder runs in well under a minute.
``HYPOTHESIS_PROFILE=long`` runs many more, randomized examples (the documented long command,
docs/reliability.md "Fuzzing"). Every fuzz body calls :func:`fuzz_kit.count`; the totals are
printed at the end of the session.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).parent))

import fuzz_kit

_SUPPRESSED = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
               HealthCheck.function_scoped_fixture, HealthCheck.large_base_example]
settings.register_profile("ci", derandomize=True, deadline=None, database=None,
                          suppress_health_check=_SUPPRESSED, print_blob=True)
settings.register_profile("long", derandomize=False, deadline=None, database=None,
                          suppress_health_check=_SUPPRESSED, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long profile runs for minutes per test: lift the suite's per-test timeout."""
    if fuzz_kit.PROFILE == "long":
        for item in items:
            item.add_marker(pytest.mark.timeout(7200))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print how many fuzz cases ran, per fuzzer (the long run reports these)."""
    if not fuzz_kit.CASES:
        return
    total = sum(fuzz_kit.CASES.values())
    terminalreporter.write_sep("-", f"fuzz cases: {total} in total "
                                    f"(profile {fuzz_kit.PROFILE})")
    for name, n in sorted(fuzz_kit.CASES.items()):
        terminalreporter.write_line(f"  {name}: {n}")
