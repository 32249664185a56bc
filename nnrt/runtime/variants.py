"""Per-shape variants of a compiled model whose inputs have unknown dims.

A model may leave input dims unknown (an ONNX model's batch, image size or sequence length);
the drivers that compile ahead need static shapes. ``rt.compile`` of such a model prepares
nothing yet; the first ``execute`` of each concrete input shape specializes the model to it
(:func:`~nnrt.runtime.compile.specialize.specialize`: shapes inferred, shape computations
folded) and compiles that variant like any static model — placement, prepare, the compile
cache on disk. Later executes of that shape go straight to its variant. At most ``limit``
variants stay prepared; the least recently used one is released when another is needed (after
its in-flight executes finish). Concurrent first requests of one shape prepare it once.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import numpy as np

from nnrt.errors import BadState, DeadlineMissed
from nnrt.memory import TensorRef
from nnrt.model.binding import InputBinder, Inputs
from nnrt.model.operand import MemoryLocation
from nnrt.runtime.compile.specialize import specialize
from nnrt.runtime.core import deadline_after

if TYPE_CHECKING:
    from nnrt.memory import Memory
    from nnrt.model.model import Model
    from nnrt.runtime.backends.base import CompiledRef
    from nnrt.runtime.compile.placement import PlacementReport
    from nnrt.runtime.compiled import CompiledModel

__all__ = ["DEFAULT_SHAPE_VARIANTS", "ShapeVariants", "packed_locations"]

Array = np.ndarray[Any, Any]
Shapes = tuple[tuple[int, ...], ...]
#: Variants a compiled model keeps prepared by default (``rt.compile(shape_variants=)``).
DEFAULT_SHAPE_VARIANTS = 8


class _Variant:
    __slots__ = ("active", "compiled", "evicted")

    def __init__(self, compiled: CompiledModel) -> None:
        self.compiled = compiled
        #: Executes running on it now (an evicted variant is released when they end).
        self.active = 0
        self.evicted = False


class ShapeVariants:
    """The variants of one compiled model, by input shapes; runs each execute on its shape's.

    ``compile(model, timeout)`` compiles a specialized model with the owner's options;
    ``locations`` are the shared-memory places of the model's packed constants (every variant
    refers to them: weights are never copied per shape).
    """

    def __init__(self, model: Model, compile: Callable[[Model, float | None], Any],
                 locations: dict[int, MemoryLocation], limit: int) -> None:
        self._model = model
        self._compile = compile
        self._locations = locations
        self._binder = InputBinder(model)
        self.limit = limit
        self._ready: OrderedDict[Shapes, _Variant] = OrderedDict()
        self._pending: dict[Shapes, anyio.Event] = {}
        self._latest: _Variant | None = None
        self.closed = False
        #: Variants prepared so far (one per new input shape, and again after an eviction).
        self.prepared = 0

    @property
    def shapes(self) -> list[Shapes]:
        """The input shapes with a prepared variant, least recently used first."""
        return list(self._ready)

    @property
    def latest(self) -> CompiledModel:
        """The variant used last (``BadState`` before the first execute)."""
        if self._latest is None:
            raise BadState("this model has inputs of unknown dims: it is prepared per input "
                           "shape on its first execute of each (none yet)")
        return self._latest.compiled

    @property
    def ref(self) -> CompiledRef:
        """The latest variant's reference of its first step."""
        return self.latest.ref

    def placement(self) -> PlacementReport:
        """The latest variant's placement."""
        return self.latest.placement()

    async def execute(self, inputs: Inputs, outputs: Sequence[Array | TensorRef | None] | None,
                      timeout: float | None, copy: bool) -> list[Array]:
        """Bind ``inputs``, find (or prepare) their shape's variant and execute it."""
        bound = self._binder.bind(inputs, keep=TensorRef)
        key = tuple(tuple(int(d) for d in np.shape(value)) if not isinstance(value, TensorRef)
                    else value.shape for value in bound)
        deadline = deadline_after(timeout)
        variant = self._ready.get(key)
        if variant is None:
            variant = await self._prepare(key, deadline)
        else:
            self._ready.move_to_end(key)
        self._latest = variant
        variant.active += 1
        try:
            return await variant.compiled.execute(bound, outputs=outputs,
                                                  timeout=_remaining(deadline), copy=copy)
        finally:
            variant.active -= 1
            if variant.evicted and variant.active == 0:
                with anyio.CancelScope(shield=True):
                    await variant.compiled.release()

    async def _prepare(self, key: Shapes, deadline: float | None) -> _Variant:
        while True:
            self._require_open()
            ready = self._ready.get(key)
            if ready is not None:
                return ready
            pending = self._pending.get(key)
            if pending is None:
                break
            with anyio.move_on_after(_remaining(deadline)) as waited:
                await pending.wait()  # then ready, or failed: try again here
            if waited.cancelled_caught:
                raise DeadlineMissed(f"the deadline passed while the variant for input shapes "
                                     f"{[list(shape) for shape in key]} was being prepared")
        event = self._pending[key] = anyio.Event()
        try:
            model = await anyio.to_thread.run_sync(specialize, self._model, key,
                                                   self._locations)
            compiled = await self._compile(model, _remaining(deadline))
        finally:
            del self._pending[key]
            event.set()
        variant = _Variant(compiled)
        if self.closed:  # released while it was being prepared
            with anyio.CancelScope(shield=True):
                await compiled.release()
        self._require_open()
        self.prepared += 1
        self._ready[key] = variant
        while len(self._ready) > self.limit:
            _, oldest = self._ready.popitem(last=False)
            oldest.evicted = True
            if oldest.active == 0:
                with anyio.CancelScope(shield=True):
                    await oldest.compiled.release()
        return variant

    def _require_open(self) -> None:
        if self.closed:
            raise BadState("this compiled model was released")

    async def release(self) -> None:
        """Release every variant (those executing now when their executes end)."""
        self.closed = True
        ready, self._ready = self._ready, OrderedDict()
        for variant in ready.values():
            variant.evicted = True
            if variant.active == 0:
                await variant.compiled.release()


def _remaining(deadline: float | None) -> float | None:
    if deadline is None:
        return None
    return max(deadline - time.monotonic(), 0.0)


def packed_locations(refs: dict[int, tuple[int, int, int]],
                     memories: Sequence[Memory]) -> dict[int, MemoryLocation]:
    """Where each constant of ``refs`` (operand -> (pool, offset, length)) lives, for those in
    the runtime's packed memory among ``memories``."""
    by_id = {memory.id: memory for memory in memories}
    return {index: MemoryLocation(by_id[pool], offset, length)
            for index, (pool, offset, length) in refs.items() if pool in by_id}
