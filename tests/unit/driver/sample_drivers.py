"""Test drivers for the HAL tests (``tests/unit/driver``): real subclasses overriding one hook.

A plain module, not a test file: pytest's default ``prepend`` import mode puts this directory on
``sys.path``, so tests import it as ``sample_drivers`` and ``load_driver`` finds
``"sample_drivers:NoAddDriver"``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import nnrt
from nnrt import OperationType
from nnrt.drivers.reference import ReferenceDriver


class NoAddDriver(ReferenceDriver):
    """The reference driver, except that it refuses every ADD."""

    def _supported_operations(self, model: nnrt.Model) -> list[bool]:
        return [op.type != OperationType.ADD for op in model.operations]


def not_a_driver() -> object:
    """A factory returning something that is not a driver."""
    return object()


def chain(ops: int) -> nnrt.Model:
    """``x`` plus itself ``ops`` times: one [1, 4] float input, ``ops`` ADD operations."""
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 4))
    y = x
    for _ in range(ops):
        y = b.add(y, x)
    b.output(y)
    return b.build()


def add_mul() -> nnrt.Model:
    """Two [2, 3] float inputs; outputs ``a + b`` and ``a * b`` (then ``+ a`` again)."""
    b = nnrt.ModelBuilder()
    a = b.input("a", (2, 3))
    c = b.input("c", (2, 3))
    s = b.add(a, c)
    p = b.mul(a, c)
    b.output(s)
    b.output(b.add(p, a))
    return b.build()


ONES = np.ones((1, 4), np.float32)


class CrashingDriver(ReferenceDriver):
    """The reference driver with a bug in its prepare hook."""

    def _prepare(self, model: nnrt.Model, options: Any, cache: Any) -> Any:
        raise RuntimeError("compiler crashed")
