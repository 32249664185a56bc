"""Memory domains on the client side: ``rt.allocate`` and :class:`DeviceMemory`.

A device memory is a buffer the driver manages inside one worker process (NNAPI memory
domains): state tensors and intermediates stay there between executions instead of
round-tripping through the client. The client holds an opaque token; every use is checked by the
worker against the roles declared at allocation (``docs/memory.md``). When the driver refuses the
allocation, the runtime falls back to a shared memfd of the deduced size (counted in
``statistics()``) — same API, the data then lives in shared memory.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from nnrt.errors import BadData, BadState, OpFailed, UnavailableDevice
from nnrt.hal.buffers import IO, BufferDesc, BufferSpec, RoleOperand, check_roles
from nnrt.ipc.framing import ProtocolError
from nnrt.ipc.messages import decode_tensor, is_shape
from nnrt.memory import Memory, TensorRef, find_memory
from nnrt.model.operand import dtype_of
from nnrt.runtime.transfer import Transfer, deliver

if TYPE_CHECKING:
    from nnrt.runtime.compiled import CompiledModel
    from nnrt.runtime.core import RuntimeCore

__all__ = ["BufferRole", "DeviceMemory", "check_allocation"]

Array = np.ndarray[Any, Any]


@dataclass(frozen=True)
class BufferRole:
    """One way a device memory will be used: as input or output ``io_index`` of ``compiled``.

    ``frequency`` in (0, 1] says how often (a hint for the driver, as in NNAPI).
    """

    compiled: CompiledModel
    io_index: int
    frequency: float = 1.0


def check_allocation(core: RuntimeCore, desc: BufferDesc, input_roles: Sequence[BufferRole],
                     output_roles: Sequence[BufferRole]
                     ) -> tuple[BufferSpec, str, list[tuple[CompiledModel, str, int, float]]]:
    """Client-side allocation checks: the spec, the driver and the roles (``BadData`` if bad)."""
    if not isinstance(desc, BufferDesc):
        raise BadData(f"allocate: desc must be an nnrt.BufferDesc, got {type(desc).__name__}")
    operands: list[RoleOperand] = []
    roles: list[tuple[CompiledModel, str, int, float]] = []
    drivers: set[str] = set()
    directions: tuple[tuple[IO, Sequence[BufferRole]], ...] = (
        ("input", input_roles), ("output", output_roles))
    for io, given in directions:
        for position, role in enumerate(given):
            where = f"{io}_roles[{position}]"
            if not isinstance(role, BufferRole):
                raise BadData(f"allocate: {where} must be an nnrt.BufferRole, got "
                              f"{type(role).__name__}")
            compiled = role.compiled
            if compiled.core is not core:
                raise BadData(f"allocate: {where} names a model compiled by another runtime")
            if compiled.ref.released:
                raise BadState(f"allocate: {where} names a released compiled model")
            if compiled.steps > 1:
                raise BadData(f"allocate: {where} names a model that runs in {compiled.steps} "
                              "steps on several drivers; device memories belong to one driver "
                              "(compile it with devices=[one driver])")
            model = compiled.model
            indices = model.inputs if io == "input" else model.outputs
            index = role.io_index
            if isinstance(index, bool) or not isinstance(index, int) or not (
                    0 <= index < len(indices)):
                raise BadData(f"allocate: {where}: {io} index {index!r} is out of range (the "
                              f"model has {len(indices)} {io}s)")
            drivers.add(compiled.device)
            operands.append(RoleOperand(
                where=f"{where} ({io} {index} of the model compiled for {compiled.device})",
                key=id(compiled), io=io, index=index, frequency=role.frequency,
                operand=model.operands[indices[index]]))
            roles.append((compiled, io, index, role.frequency))
    spec = check_roles(desc, operands)
    if len(drivers) > 1:
        raise BadData(f"allocate: the roles name models compiled for different drivers "
                      f"{sorted(drivers)}; a device memory belongs to one driver")
    return spec, drivers.pop(), roles


class DeviceMemory:
    """A buffer managed by a driver inside one of its workers (or its shared-memory fallback).

    Pass it wherever a tensor goes in ``execute`` (inputs and outputs, in the roles declared at
    allocation); fill and read it with :meth:`copy_from` / :meth:`copy_to`; :meth:`free` it
    when done (also freed when its runtime closes; lost if its worker dies).
    """

    def __init__(self, core: RuntimeCore, driver: str, spec: BufferSpec, handle: Any,
                 fallback: Memory | None, roles: frozenset[tuple[int, str, int]]) -> None:
        #: The core of the runtime that allocated it.
        self.core = core
        #: The driver whose worker holds the buffer.
        self.driver = driver
        self.spec = spec
        #: The backend's handle (worker slot and token), None for a fallback.
        self.handle = handle
        #: The shared memfd standing in when the driver refused the allocation.
        self.fallback = fallback
        self.roles = roles
        self.dtype: np.dtype[Any] = dtype_of(spec.type)
        #: Current dims (0 = unknown); updated by executions writing it and by copies.
        self.dims: tuple[int, ...] | None = spec.dims
        #: Whether the buffer holds data (copy_from or an execution wrote it) — as far as this
        #: client knows: the worker, which also sees failed executions, has the last word.
        self.initialized = False
        self.freed = False

    def __repr__(self) -> str:
        where = "shared-memory fallback" if self.fallback is not None else f"on {self.driver}"
        state = " freed" if self.freed else ""
        return f"<DeviceMemory {self.dtype} dims={self.dims} {where}{state}>"

    def require_live(self) -> None:
        """Raise ``BadState`` if the memory was freed."""
        if self.freed:
            raise BadState("this device memory was freed")

    # -- copies ------------------------------------------------------------------------------

    async def copy_from(self, source: Array | TensorRef | Memory) -> None:
        """Fill the buffer from ``source`` (ndarray, TensorRef or a whole Memory).

        The data's dtype must be the buffer's and its shape compatible with the buffer's dims.
        """
        self.require_live()
        array = _source_array(source, self.dtype, self.dims)
        if self.fallback is not None:
            target = self._fallback_view(array.shape)
            np.copyto(target, array)
            self.dims = array.shape
            self.initialized = True
            return
        core = self.core
        transfer = Transfer(core.arena)
        self.initialized = False  # a failed copy leaves it uninitialised
        try:
            entry = transfer.input(array, self.dtype.name)
            await core.require_backend().buffer_request(
                self.handle, "copy_from", {"source": entry}, list(transfer.memories.values()))
        finally:
            transfer.close()
        self.dims = array.shape
        self.initialized = True

    async def copy_to(self, target: Array | TensorRef | Memory | None = None) -> Array:
        """The buffer's contents, copied into ``target`` when given (returned as a view of it)."""
        self.require_live()
        if self.fallback is not None:
            if not self.initialized or self.dims is None:
                raise OpFailed("copy_to: the device memory is uninitialised")
            data = self._fallback_view(self.dims)
            return data.copy() if target is None else deliver(data, target, "copy_to",
                                                                  exact=True)
        backend = self.core.require_backend()
        ref = _target_ref(target)
        if ref is None:
            reply = await backend.buffer_request(self.handle, "copy_to", {"target": None})
            data = decode_tensor(reply.get("tensor"), "copy_to reply", writable=True)
            self.dims = data.shape
            return data if target is None else deliver(data, target, "copy_to", exact=True)
        if ref.dtype != self.dtype or not ref.memory.writable:
            raise BadData(f"copy_to: the target holds {ref.dtype} (memory {ref.memory.id}, "
                          f"{'writable' if ref.memory.writable else 'read-only'}), the device "
                          f"memory {self.dtype}")
        entry = [self.dtype.name, list(ref.shape), ref.memory.id, ref.offset, ref.nbytes]
        reply = await backend.buffer_request(self.handle, "copy_to", {"target": entry},
                                             [ref.memory])
        raw: Any = reply.get("shape")
        if not is_shape(raw):
            raise ProtocolError("malformed copy_to reply from the worker")
        shape: tuple[int, ...] = tuple(raw)
        self.dims = shape
        flat = ref.memory.ndarray(np.uint8, (ref.nbytes,), ref.offset)
        view: Array = flat[:math.prod(shape) * self.dtype.itemsize].view(self.dtype).reshape(shape)
        return view

    def _fallback_view(self, shape: tuple[int, ...]) -> Array:
        if self.fallback is None:
            raise BadState("this device memory has no shared-memory fallback")
        return self.fallback.ndarray(self.dtype, shape)

    def as_ref(self) -> TensorRef:
        """The fallback's tensor (only for a shared-memory fallback with known dims)."""
        if self.fallback is None or self.dims is None or 0 in self.dims:
            raise BadState("no shared-memory tensor for this device memory")
        return TensorRef(self.fallback, 0, self.dims, self.dtype)

    async def free(self) -> None:
        """Release the buffer (idempotent); later uses raise ``BadState``."""
        if self.freed:
            return
        self.freed = True
        if self.fallback is not None:
            self.fallback.close()
            return
        backend = self.core.backend
        if backend is not None and self.handle is not None:
            with contextlib.suppress(UnavailableDevice):  # its worker is gone: so is it
                await backend.buffer_request(self.handle, "free", {})


def _source_array(source: Any, dtype: np.dtype[Any], dims: tuple[int, ...] | None) -> Array:
    if isinstance(source, TensorRef):
        array = source.ndarray()
    elif isinstance(source, Memory):
        if dims is None or 0 in dims:
            raise BadData("copy_from: a whole Memory needs a device memory of known dims; pass "
                          "a TensorRef or an ndarray view instead")
        array = source.ndarray(dtype, dims)
    elif isinstance(source, np.ndarray):
        array = source
    else:
        raise BadData(f"copy_from: expected an ndarray, a TensorRef or a Memory, got "
                      f"{type(source).__name__}")
    if array.dtype != dtype:
        raise BadData(f"copy_from: the data is {array.dtype}, the device memory holds {dtype}")
    if dims is not None and (len(dims) != array.ndim or any(
            d and d != s for d, s in zip(dims, array.shape, strict=True))):
        raise BadData(f"copy_from: shape {array.shape} is not compatible with the device "
                      f"memory's dims {dims}")
    return np.ascontiguousarray(array)


def _target_ref(target: Any) -> TensorRef | None:
    """``target`` as a reference into shared memory, or None (the data comes back inline)."""
    if isinstance(target, TensorRef):
        return target
    if isinstance(target, np.ndarray) and target.flags.c_contiguous and target.flags.writeable:
        found = find_memory(target)
        if found is not None:
            memory, offset = found
            return TensorRef(memory, offset, target.shape, target.dtype)
    return None
