"""``check_driver``: the conformance kit a driver or plugin author runs against their driver.

A plugin's test is one line::

    from nnrt.hal.conformance import check_driver

    def test_conformance() -> None:
        check_driver(make_acme_driver)            # or check_driver("com.example.acme")

It runs, through the public HAL:

1. **Operation cases** — every variant of :mod:`nnrt.testing`'s per-operation cases (or a
   seeded sample) whose one-operation model the driver supports, compared by
   :func:`nnrt.testing.check_variant`; unsupported variants are skipped
   (:mod:`nnrt.hal.conformance.operations`).
2. **HAL protocol checks** — info, support answers, errors for bad requests, deadlines, output
   destinations, concurrency, independent prepares (:mod:`nnrt.hal.conformance.checks`).
3. **Process checks** — the driver served by ``python -m nnrt.worker`` in a child process,
   driven over its socket (:mod:`nnrt.hal.conformance.process`); needs a driver spec string or
   a factory importable as ``module:qualname``.

Then it returns a :class:`ConformanceReport`, or raises ``AssertionError`` summarising the
failures. See ``docs/driver-conformance.md``.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from nnrt.errors import BadData
from nnrt.hal.base import Driver
from nnrt.hal.conformance.checks import HAL_CHECKS, HalContext, SkipCheck
from nnrt.hal.conformance.operations import (
    Failure,
    find_probe,
    run_variants,
    select_variants,
)
from nnrt.hal.conformance.process import factory_spec, process_checks
from nnrt.hal.discovery import load_driver

__all__ = ["ConformanceReport", "check_driver"]

#: Failures listed in the ``AssertionError`` message (the report keeps all of them).
SHOWN_FAILURES = 20
_MAX_DETAIL = 600


@dataclass(frozen=True)
class ConformanceReport:
    """What :func:`check_driver` ran and found.

    ``variants_run`` counts the case variants the driver supports, each prepared and executed
    (``variants_failed`` of them failed); ``variants_skipped`` those it does not support.
    ``checks_run`` counts the HAL and process checks that applied (``checks_failed`` failed);
    ``checks_skipped`` says which did not apply and why. ``failures`` holds one message per
    failure: ``"<variant id or check name>: <what went wrong>"``.
    """

    driver: str
    variants_run: int
    variants_skipped: int
    variants_failed: int
    checks_run: int
    checks_failed: int
    checks_skipped: tuple[str, ...]
    failures: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """Whether nothing failed."""
        return not self.failures

    def summary(self) -> str:
        """One line of counts."""
        return (f"driver {self.driver!r}: {self.variants_run} case variants run "
                f"({self.variants_failed} failed, {self.variants_skipped} skipped as "
                f"unsupported); {self.checks_run} protocol checks run ({self.checks_failed} "
                f"failed, {len(self.checks_skipped)} skipped)")


def check_driver(factory: Callable[[], Driver] | str, *, variants: int | None = None,
                 seed: int = 0, process: bool = True) -> ConformanceReport:
    """Check the driver made by ``factory`` (or ``load_driver(factory)`` for a spec string).

    ``variants`` samples that many case variants (seeded by ``seed``; None runs all of them);
    ``process=False`` leaves out the worker-process checks. Returns the report when everything
    passed; raises ``AssertionError`` listing the first failures otherwise.
    """
    make = _factory(factory)
    if variants is not None and (isinstance(variants, bool) or not isinstance(variants, int)
                                 or variants < 0):
        raise BadData(f"check_driver: variants must be None or an int >= 0, got {variants!r}")
    driver = make()
    name = driver.info().name
    ops = run_variants(driver, select_variants(variants, seed))
    failures = list(ops.failures)
    probe = find_probe(driver)
    context = HalContext(driver, make, probe, ops.unsupported)
    checks: list[tuple[str, Callable[[], None]]] = [
        (check_name, functools.partial(check, context)) for check_name, check in HAL_CHECKS]
    run, skipped, check_failures = _run_checks(checks)
    if process:
        spec = factory_spec(factory)
        if spec is None:
            skipped.append(f"process: {factory!r:.80} is not importable as 'module:qualname' "
                           "(define the factory at module level or pass a driver spec)")
        else:
            steps = process_checks(spec, probe, driver.info())
            with contextlib.closing(steps):
                more_run, more_skipped, more_failures = _run_checks(steps)
            run += more_run
            skipped += more_skipped
            check_failures += more_failures
    failures += check_failures
    report = ConformanceReport(
        driver=name, variants_run=ops.run, variants_skipped=ops.skipped,
        variants_failed=len(ops.failures), checks_run=run, checks_failed=len(check_failures),
        checks_skipped=tuple(skipped), failures=tuple(str(f) for f in failures))
    if failures:
        raise AssertionError(_describe(report, failures))
    return report


def _factory(factory: Callable[[], Driver] | str) -> Callable[[], Driver]:
    """A checked factory: each call returns a new Driver (``BadData`` if it does not)."""
    if isinstance(factory, str):
        spec = factory
        return lambda: load_driver(spec)
    if not callable(factory):
        raise BadData(f"check_driver: factory must be a callable returning a Driver or a driver "
                      f"spec string, got {type(factory).__name__}")

    def make() -> Driver:
        driver = factory()
        if not isinstance(driver, Driver):
            raise BadData(f"check_driver: the factory returned {type(driver).__name__}, "
                          "expected an nnrt.hal.Driver")
        return driver

    return make


def _run_checks(checks: Iterable[tuple[str, Callable[[], None]]]
                ) -> tuple[int, list[str], list[Failure]]:
    """Run named checks; (how many applied, "name: why" of those skipped, failures)."""
    run, skipped, failures = 0, [], []
    for name, check in checks:
        try:
            check()
        except SkipCheck as exc:
            skipped.append(f"{name}: {exc}")
            continue
        except AssertionError as exc:
            failures.append(Failure(name, str(exc)))
        except Exception as exc:
            failures.append(Failure(name, f"{type(exc).__name__}: {exc}"))
        run += 1
    return run, skipped, failures


def _describe(report: ConformanceReport, failures: list[Failure]) -> str:
    """The report's summary and its first failures, identical details folded together."""
    groups: dict[str, list[str]] = {}
    for failure in failures:
        groups.setdefault(failure.detail, []).append(failure.where)
    lines = [f"{report.summary()}; {len(failures)} failures:"]
    for detail, wheres in list(groups.items())[:SHOWN_FAILURES]:
        more = ""
        if len(wheres) > 1:
            more = (f" (and {len(wheres) - 1} more: {', '.join(wheres[1:4])}"
                    f"{', ...' if len(wheres) > 4 else ''})")
        text = detail if len(detail) <= _MAX_DETAIL else detail[:_MAX_DETAIL] + "..."
        lines.append(f"  - {wheres[0]}{more}: {text}")
    if len(groups) > SHOWN_FAILURES:
        lines.append(f"  ... and {len(groups) - SHOWN_FAILURES} more distinct failures")
    return "\n".join(lines)
