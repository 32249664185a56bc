"""The reference driver: every registered operation on the numpy kernels; the CPU fallback.

It is the executable specification behind ``nnrt.reference.run`` served as a driver: its
prepared model keeps an :class:`~nnrt.reference.interpreter.ExecutionPlan` (definitions, operand
indices and constants looked up once), so a tiny model runs with a few µs of overhead, with
exactly the results and errors of ``nnrt.reference.run``. Given output destinations, the
operations that can (ADD, SUB, MUL, DIV on floats) compute model outputs straight into them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nnrt._version import __version__
from nnrt.errors import BadState, OpFailed
from nnrt.hal.base import (
    Driver,
    DriverInfo,
    ExecutionControl,
    PerformanceInfo,
    PreparedModel,
    PrepareOptions,
)
from nnrt.hal.buffers import IO, BufferSpec, DeviceBuffer, HostBuffer
from nnrt.model.model import Model
from nnrt.ops._framework.support import unsupported_reason
from nnrt.reference.interpreter import ExecutionPlan

__all__ = ["ReferenceDriver", "ReferencePreparedModel"]

Array = np.ndarray[Any, Any]

#: NNAPI feature level the reference kernels follow.
FEATURE_LEVEL = 8


class ReferenceDriver(Driver):
    """Runs every operation nnrt has a reference kernel for, in this process, with numpy.

    Device buffers live in host memory (:class:`~nnrt.hal.buffers.HostBuffer`).
    ``max_buffer_bytes`` limits their size (allocations of a known larger size are refused, and
    dynamic ones cannot grow past it); ``allow_unknown=False`` refuses buffers whose size is not
    known at allocation. Both are there for tests of drivers that refuse.
    """

    def __init__(self, max_buffer_bytes: int | None = None, *, allow_unknown: bool = True) -> None:
        self._max_buffer_bytes = max_buffer_bytes
        self._allow_unknown = allow_unknown

    def _info(self) -> DriverInfo:
        return DriverInfo(name="reference", version=__version__, device_type="cpu",
                          feature_level=FEATURE_LEVEL, performance=PerformanceInfo())

    def _supported_operations(self, model: Model) -> list[bool]:
        return [unsupported_reason(model, i) is None for i in range(len(model.operations))]

    def _unsupported_reason(self, model: Model, op_index: int) -> str | None:
        return unsupported_reason(model, op_index)

    def _prepare(self, model: Model, options: PrepareOptions, cache: Any) -> PreparedModel:
        return ReferencePreparedModel(model)

    def _allocate(self, spec: BufferSpec, roles: Sequence[tuple[PreparedModel, IO, int, float]]
                  ) -> DeviceBuffer:
        nbytes, limit = spec.nbytes, self._max_buffer_bytes
        if nbytes is None and not self._allow_unknown:
            raise OpFailed(f"driver reference: cannot allocate a buffer of unknown size (dims "
                           f"{'unknown' if spec.dims is None else list(spec.dims)})")
        if nbytes is not None and limit is not None and nbytes > limit:
            raise OpFailed(f"driver reference: a buffer of {nbytes} bytes exceeds the "
                           f"{limit}-byte limit")
        return HostBuffer(spec, limit)


class ReferencePreparedModel(PreparedModel):
    """A model ready to run on the reference kernels through a precomputed execution plan."""

    _checks_own_outputs = True  # the plan checks every operation's results

    def __init__(self, model: Model) -> None:
        super().__init__(model, driver_name="reference")
        self._plan: ExecutionPlan | None = ExecutionPlan(model)

    def _execute(self, inputs: list[Array], control: ExecutionControl) -> Sequence[Array]:
        plan = self._plan
        if plan is None:  # released meanwhile by another thread
            raise BadState("execute: this prepared model of driver reference has been "
                                "released")
        return plan.execute(inputs, control.check if control.active else None, control.outputs)

    def _release(self) -> None:
        self._plan = None
