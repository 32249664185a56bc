"""A :class:`Step`: one model prepared on one driver, and the execute fast path.

A compiled model that runs whole on one driver has one step; a model split across drivers runs
the steps of its plan (:mod:`nnrt.runtime.stepper`). Small requests whose tensors all travel
inline take the first branch of :meth:`Step.execute` (the wire form worked out once per model by
:class:`~nnrt.runtime.inline.InlineCodec`); anything else is an
:class:`~nnrt.runtime.execution.Execution`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from nnrt.model.binding import InputBinder, Inputs
from nnrt.model.operand import dtype_of
from nnrt.runtime.core import RuntimeCore, deadline_after
from nnrt.runtime.execution import Execution
from nnrt.runtime.inline import InlineCodec

if TYPE_CHECKING:
    from nnrt.memory import TensorRef
    from nnrt.model.model import Model
    from nnrt.runtime.backends.base import CompiledRef

__all__ = ["Step"]

Array = np.ndarray[Any, Any]


class Step:
    """A model prepared on one driver: what its executes send and how their replies read.

    ``key`` is the identity device memories' roles name (the owning compiled model's ``id``).
    """

    __slots__ = ("binder", "codec", "core", "key", "model", "out_dtypes", "out_names",
                 "priority", "ref")

    def __init__(self, core: RuntimeCore, model: Model, ref: CompiledRef, priority: int,
                 key: int) -> None:
        self.core = core
        self.model = model
        self.ref = ref
        self.priority = priority
        self.key = key
        self.binder = InputBinder(model)
        self.out_dtypes = tuple(dtype_of(model.operands[i].type) for i in model.outputs)
        self.out_names = tuple(dt.name for dt in self.out_dtypes)
        #: The wire form of small all-inline requests and the outputs' static shapes, once.
        self.codec = InlineCodec(model)

    async def execute(self, inputs: Inputs,
                      outputs: Sequence[Array | TensorRef | None] | None = None,
                      timeout: float | None = None, copy: bool = False) -> list[Array]:
        """Run the step once (see :meth:`nnrt.CompiledModel.execute` for the arguments)."""
        core = self.core
        backend = core.backend
        if backend is None:
            backend = core.require_backend()  # raises, saying why
        memory = core.memory
        if memory.pending:  # unmap notes of memories closed since the last request
            memory.flush()
        if outputs is None and (inputs.__class__ is list or inputs.__class__ is dict):
            tensors = self.codec.encode(inputs)
            if tensors is not None:  # the common small request: everything inline both ways
                reply = await backend.execute(self.ref, tensors, None, self.priority,
                                              None if timeout is None else
                                              deadline_after(timeout))
                return self.codec.decode(reply)
        return await Execution(self, backend, inputs, outputs).run(timeout, copy)
