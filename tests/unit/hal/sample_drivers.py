"""Test drivers for the HAL tests (``tests/unit/hal``): real subclasses overriding one hook.

A plain module, not a test file: pytest's default ``prepend`` import mode puts this directory on
``sys.path``, so tests import it as ``sample_drivers`` and ``load_driver`` finds
``"sample_drivers:NoAddDriver"``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import nnrt
from nnrt import OperationType
from nnrt.hal.base import ExecutionControl, PreparedModel
from nnrt.reference.driver import ReferenceDriver, ReferencePreparedModel


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


class DoublingPrepared(PreparedModel):
    """Runs only ``chain(1)`` models (``x + x``), computing into ``control.outputs`` if asked.

    Keeps what it was offered (``offered``) and what it returned (``returned``) per execution.
    """

    def __init__(self, model: nnrt.Model, *, in_place: bool) -> None:
        super().__init__(model, driver_name="doubling")
        self.in_place = in_place
        self.offered: list[tuple[Any, ...] | None] = []
        self.returned: list[np.ndarray[Any, Any]] = []

    def _execute(self, inputs: list[np.ndarray[Any, Any]],
                 control: ExecutionControl) -> list[np.ndarray[Any, Any]]:
        self.offered.append(control.outputs)
        dest = control.outputs[0] if self.in_place and control.outputs is not None else None
        result = np.add(inputs[0], inputs[0], out=dest)
        self.returned.append(result)
        return [result]


class DoublingDriver(ReferenceDriver):
    """Prepares ``chain(1)`` models as :class:`DoublingPrepared` (in place unless told not to)."""

    def __init__(self, *, in_place: bool = True) -> None:
        self.in_place = in_place

    def _prepare(self, model: nnrt.Model, options: Any, cache: Any) -> DoublingPrepared:
        return DoublingPrepared(model, in_place=self.in_place)


class RecordingPrepared(ReferencePreparedModel):
    """The reference prepared model, keeping per execution the destinations it was offered
    (``offered``) and the arrays it returned (``returned``)."""

    def __init__(self, model: nnrt.Model) -> None:
        super().__init__(model)
        self.offered: list[tuple[Any, ...] | None] = []
        self.returned: list[list[np.ndarray[Any, Any]]] = []

    def _execute(self, inputs: list[np.ndarray[Any, Any]],
                 control: ExecutionControl) -> list[np.ndarray[Any, Any]]:
        self.offered.append(control.outputs)
        results = list(super()._execute(inputs, control))
        self.returned.append(results)
        return results


class RecordingDriver(ReferenceDriver):
    """The reference driver, preparing :class:`RecordingPrepared` models."""

    def _prepare(self, model: nnrt.Model, options: Any, cache: Any) -> RecordingPrepared:
        return RecordingPrepared(model)
