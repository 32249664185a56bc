"""Stopping an execution early: its deadline and its ``should_stop`` poll.

A driver's ``_execute`` hook calls :meth:`ExecutionControl.check` between operations (or
whatever units of work it has); the check raises ``DeadlineMissed`` once the deadline has passed
and :class:`Cancelled` once ``should_stop()`` returns true. It also carries the caller's output
destinations (:attr:`ExecutionControl.outputs`) for drivers that can write results in place.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from nnrt.errors import BadData, DeadlineMissed, NnrtError, OpFailed

__all__ = ["Cancelled", "ExecutionControl"]

Array = np.ndarray[Any, Any]


class Cancelled(OpFailed):
    """Raised by ``PreparedModel.execute`` when its ``should_stop()`` poll returns true.

    The execution stops at the next operation boundary; its partial results are dropped.
    """


class ExecutionControl:
    """The deadline (absolute ``time.monotonic()`` seconds) and stop poll of one execution.

    :attr:`outputs` is None when the caller gave no output destinations; otherwise a tuple with
    one entry per model output: a writable array in the caller's buffer, typed and shaped as the
    output's statically inferred shape, or None (no destination, the shape is not fully known
    before running, or it does not fit). A driver may compute an output straight into its entry
    (``np.add(a, b, out=dest)``) and return that array; it never has to — ``execute`` copies
    whatever the driver returns into the caller's buffer.
    """

    __slots__ = ("_deadline", "_should_stop", "active", "outputs")

    def __init__(self, deadline: float | None = None,
                 should_stop: Callable[[], bool] | None = None) -> None:
        if deadline is not None and not _finite_number(deadline):
            raise BadData(f"execute: deadline must be a finite time.monotonic() value or None, "
                          f"got {deadline!r:.80}")
        if should_stop is not None and not callable(should_stop):
            raise BadData(f"execute: should_stop must be callable or None, got "
                          f"{type(should_stop).__name__}")
        self._deadline = None if deadline is None else float(deadline)
        self._should_stop = should_stop
        #: Whether there is anything to check (a deadline or a stop poll).
        self.active = deadline is not None or should_stop is not None
        #: Per model output, a typed in-place destination or None; None when there are none.
        self.outputs: tuple[Array | None, ...] | None = None

    def check_deadline(self, when: str) -> None:
        """Raise ``DeadlineMissed`` if the deadline has passed; ``when`` says at which point."""
        if self._deadline is not None:
            late = time.monotonic() - self._deadline
            if late >= 0:
                raise DeadlineMissed(f"the execution's deadline passed {late * 1e3:.3f} ms "
                                     f"ago, {when}")

    def check(self) -> None:
        """Between two operations: raise ``DeadlineMissed`` or ``Cancelled`` if it is time."""
        if self._deadline is not None:
            self.check_deadline("between two operations")
        if self._should_stop is not None:
            try:
                stop = self._should_stop()
            except NnrtError:
                raise
            except Exception as exc:
                raise OpFailed(f"execute: should_stop() raised {exc!r}") from exc
            if stop:
                raise Cancelled("execution cancelled: should_stop() returned true")


def _finite_number(value: Any) -> bool:
    """Whether ``value`` is a finite int or float (not a bool); floats are checked first."""
    if value.__class__ is float:
        return math.isfinite(value)
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
