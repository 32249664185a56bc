"""Every conformance variant whose single operation the cpu driver selects, run through it.

This is the cpu driver's one full run of the case variants (held to the reference's exact
quantised rounding where a case pins it, and leaving the caller's inputs alone);
``check_driver("cpu")`` runs a representative subset (tests/conformance/test_drivers.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nnrt.drivers.cpu import CpuDriver
from nnrt.model.model import Model
from nnrt.testing import build, check_variant, expand
from nnrt.testing.cases import all_cases

#: At least this many variants must run (1052 when written): a drop means the cpu driver
#: stopped selecting operations it used to accelerate.
MIN_VARIANTS = 2300


def test_supported_conformance_variants_pass_on_the_cpu_driver() -> None:
    ran, failures = 0, []
    driver = CpuDriver()
    for case in all_cases():
        for variant in expand(case):
            model, _ = build(variant)
            if not all(driver.supported_operations(model)):
                continue

            def run(m: Model, feed: list[Any], driver: CpuDriver = driver,
                    where: str = variant.id) -> Sequence[Any]:
                given = [np.array(v, copy=True) if isinstance(v, np.ndarray) else v
                         for v in feed]
                with driver.prepare(m) as prepared:
                    outputs = prepared.execute(given).outputs
                for k, (after, before) in enumerate(zip(given, feed, strict=True)):
                    if isinstance(before, np.ndarray) and not np.array_equal(
                            after, before, equal_nan=before.dtype.kind == "f"):
                        raise AssertionError(f"{where}: execute changed input {k}")
                return outputs

            ran += 1
            try:
                check_variant(variant, run)
            except AssertionError as exc:
                failures.append(str(exc)[:300])
    assert not failures, f"{len(failures)} of {ran} variants failed:\n" + "\n".join(failures[:20])
    assert ran >= MIN_VARIANTS, ran
