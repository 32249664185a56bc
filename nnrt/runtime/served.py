"""Batching in shared mode, client side: a model the ``nnrt serve`` service batches across clients.

``rt.compile(model, batching=...)`` with ``Runtime(connect=PATH)`` compiles the model as usual
(what runs alone: requests with caller output buffers, device memories or tensor references, or
more rows than ``max_batch``) and also hands the model and its batching options to the service
(``compile_batched``), which keeps one batched model per identical model, options and compile
options for all its clients. The compiled model's batcher is then a :class:`ServedBatcher`: it
checks each request here, as the embedded batcher does (a bad request fails before it travels),
and sends it to the service (``execute_batched``): inputs inline when small, else by reference to
this client's pools or arena; outputs inline when small, else written by the service into arena
regions of this client. See docs/batching-shared.md.
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import numpy as np

from nnrt.errors import BadData, BadState
from nnrt.model.binding import widen, widened_outputs
from nnrt.model.operand import dtype_of
from nnrt.model.wire import model_to_wire
from nnrt.runtime.batcher import Batcher
from nnrt.runtime.batching import Batching
from nnrt.runtime.compile.constants import place_constants
from nnrt.runtime.compile.specialize import specialize
from nnrt.runtime.core import deadline_after
from nnrt.runtime.transfer import Transfer

if TYPE_CHECKING:
    from nnrt.model.model import Model
    from nnrt.runtime.backends.remote import RemoteBackend
    from nnrt.runtime.batching import BatchLayout
    from nnrt.runtime.compiled import CompiledModel
    from nnrt.runtime.core import RuntimeCore

__all__ = ["ServedBatcher", "batching_from_wire", "batching_to_wire", "serve_batched"]

Array = np.ndarray[Any, Any]
_BATCHING_KEYS = frozenset({"max_batch", "max_delay", "dim", "dims", "preferred",
                            "max_in_flight"})
#: Most per-name batch axes, preferred sizes and characters of a name a service accepts.
_MAX_DIMS = 1024
_MAX_SIZES = 64
_MAX_NAME = 256
#: Input shapes whose output shapes a served batcher remembers.
_MAX_SHAPES = 256


def batching_to_wire(batching: Batching) -> dict[str, Any]:
    """``batching`` as plain data (a ``compile_batched`` request's ``batching``)."""
    return {"max_batch": batching.max_batch, "max_delay": float(batching.max_delay),
            "dim": batching.dim, "dims": dict(batching.dims),
            "preferred": None if batching.preferred is None else list(batching.preferred),
            "max_in_flight": batching.max_in_flight}


def batching_from_wire(data: Any) -> Batching:
    """The :class:`Batching` of untrusted wire data (``BadData`` saying what is wrong)."""
    if data.__class__ is not dict or set(data) != _BATCHING_KEYS:
        raise BadData(f"compile_batched: batching must be a map of {sorted(_BATCHING_KEYS)}")
    dims = data["dims"]
    if dims.__class__ is not dict or len(dims) > _MAX_DIMS or not all(
            name.__class__ is str and len(name) <= _MAX_NAME for name in dims):
        raise BadData(f"compile_batched: batching.dims must map at most {_MAX_DIMS} names (of "
                      f"at most {_MAX_NAME} characters) to an axis or None")
    preferred = data["preferred"]
    if preferred is not None and (preferred.__class__ is not list
                                  or not 0 < len(preferred) <= _MAX_SIZES):
        raise BadData(f"compile_batched: batching.preferred must be 1 to {_MAX_SIZES} sizes")
    # Batching checks every value (ints in range, not bools; axes; sizes) and raises BadData
    return Batching(max_batch=data["max_batch"], max_delay=data["max_delay"], dim=data["dim"],
                    dims=dims, preferred=None if preferred is None else tuple(preferred),
                    max_in_flight=data["max_in_flight"])


async def serve_batched(core: RuntimeCore, compiled: CompiledModel, layout: BatchLayout,
                        batching: Batching, options: Mapping[str, Any],
                        shape_variants: int) -> None:
    """Have the service batch ``compiled`` (shared mode): send it the model with its constants
    and the batching options, and give ``compiled`` a :class:`ServedBatcher`."""
    backend: RemoteBackend = core.require_backend()  # type: ignore[assignment]
    model = compiled.model
    # the constants travel in a memory of this client: the service copies them into its own
    placed = None
    try:
        placed = await anyio.to_thread.run_sync(place_constants, model)
        for memory in placed.memories:
            core.memory.watch(memory)
        handle = await backend.compile_batched(
            model_to_wire(model, placed.place), batching_to_wire(batching),
            {"preference": int(options["preference"]), "priority": int(options["priority"]),
             "devices": list(options["devices"]), "shape_variants": int(shape_variants)},
            placed.memories)
    except BaseException:
        with anyio.CancelScope(shield=True):  # the caller gets no compiled model to release
            await compiled.release()
        raise
    finally:
        if placed is not None and placed.packed is not None:
            placed.packed.close()
    batcher = ServedBatcher(model, layout, core, handle, compiled.priority)
    compiled.batcher = batcher
    weakref.finalize(compiled, batcher.close_soon)


class ServedBatcher(Batcher):
    """The batcher of a model batched by the service: checks requests here (as
    :meth:`Batcher.check`) and sends them to the service, which merges them with those of
    every client; it runs no dispatcher of its own (its ``executions`` stay 0: the service's
    ``statistics`` count them)."""

    def __init__(self, model: Model, layout: BatchLayout, core: RuntimeCore,
                 handle: int, priority: int) -> None:
        super().__init__(model, layout, _never, None, 1)
        self._core = core
        self._priority = priority
        #: The service's handle of the batched model (scoped to this connection).
        self.handle = handle
        operands = model.operands
        self._out_dtypes = tuple(dtype_of(operands[i].type) for i in model.outputs)
        self._out_names = tuple(dt.name for dt in self._out_dtypes)
        self._model = model
        #: Per input shapes: each output's shape (None: unknown before it runs).
        self._shapes: dict[tuple[tuple[int, ...], ...], list[tuple[int, ...] | None]] = {}
        self._widened = widened_outputs(model)

    async def execute(self, bound: list[Array], rows: int, key: tuple[Any, ...],
                      timeout: float | None, copy: bool, urgent: bool,
                      origin: Hashable = None) -> list[Array]:
        """Send one checked request to the service; its rows of a batch come back."""
        if self.closed:
            raise BadState("this compiled model was released")
        core = self._core
        backend: RemoteBackend = core.require_backend()  # type: ignore[assignment]
        if core.memory.pending:  # unmap notes of memories closed since the last request
            core.memory.flush()
        transfer = Transfer(core.arena)
        try:
            tensors = [transfer.input(np.ascontiguousarray(a), a.dtype.name) for a in bound]
            shapes = self._out_shapes(bound)
            refs = [transfer.output_ref(j, None, dtype, self._out_names[j], shapes[j])
                    for j, dtype in enumerate(self._out_dtypes)]
            memories = list(transfer.memories.values())
            for memory in memories:
                core.memory.watch(memory)
            reply = await backend.execute_batched(
                self.handle, tensors, refs if any(r is not None for r in refs) else None,
                self._priority + 1 if urgent else self._priority, deadline_after(timeout),
                memories)
            results = transfer.decode(reply, self._out_names, not copy, None)
        finally:
            transfer.close()
        return widen(results, self._widened) if self._widened else results

    def _out_shapes(self, bound: list[Array]) -> list[tuple[int, ...] | None]:
        """Each output's shape for a request of these inputs, where the model tells it (shape
        inference with the inputs' shapes pinned, once per input shapes): what the service
        writes into a region of this client's arena when large."""
        key = tuple(a.shape for a in bound)
        shapes = self._shapes.get(key)
        if shapes is None:
            model = self._model
            if all(all(d > 0 for d in model.operands[i].dims) for i in model.inputs):
                inferred = model.inferred_dims
            else:
                inferred = specialize(model, list(key)).inferred_dims
            shapes = [tuple(dims) if dims and all(d > 0 for d in dims) else None
                      for dims in (tuple(inferred[i]) for i in model.outputs)]
            if len(self._shapes) >= _MAX_SHAPES:
                self._shapes.clear()
            self._shapes[key] = shapes
        return shapes

    def close(self) -> None:
        """Tell the service this client is done with the model (no reply awaited)."""
        if not self.closed:
            self.closed = True
            backend = self._core.backend
            if backend is not None:
                backend.release_batched(self.handle)  # type: ignore[attr-defined]

    def close_soon(self) -> None:
        """From a finalizer (any thread): released with the next batched compile or at
        disconnect."""
        if not self.closed:
            self.closed = True
            backend = self._core.backend
            if backend is not None:
                backend.dropped_batched.append(self.handle)  # type: ignore[attr-defined]


async def _never(inputs: list[Array], timeout: float | None, copy: bool) -> list[Array]:
    raise BadState("a served batcher runs nothing itself")
