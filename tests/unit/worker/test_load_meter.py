"""The worker's load meter (nnrt.worker.load): spans, accumulation, reset."""

from __future__ import annotations

from nnrt.worker.load import REPORT_INTERVAL, LoadMeter


def test_a_report_is_due_once_the_interval_has_passed() -> None:
    meter = LoadMeter(100.0)
    assert not meter.due(100.0 + REPORT_INTERVAL * 0.99)
    assert meter.due(100.0 + REPORT_INTERVAL * 1.01)


def test_take_reports_the_span_and_what_accumulated_then_starts_over() -> None:
    meter = LoadMeter(10.0)
    meter.busy += 0.001
    meter.executes += 3
    meter.busy += 0.0005
    meter.executes += 2
    assert meter.take(10.004) == [10.004 - 10.0, 0.0015, 5]
    assert (meter.busy, meter.executes, meter.since) == (0.0, 0, 10.004)
    assert not meter.due(10.004 + REPORT_INTERVAL / 2)
    assert meter.take(10.010) == [10.010 - 10.004, 0.0, 0]


def test_a_span_is_never_zero() -> None:
    # a report with span 0 is refused by the client (check_load_report): never send one
    meter = LoadMeter(5.0)
    span, busy, executes = meter.take(5.0)
    assert span > 0 and (busy, executes) == (0.0, 0)
