"""How the tensors of one execute travel: inline bytes, references to the caller's memory, or
the arena.

- An ndarray that is a view of a live :class:`~nnrt.memory.Memory` (``Memory.ndarray()``, or a
  C-contiguous slice of one) and a :class:`~nnrt.memory.TensorRef` travel as a pool reference:
  ``[dtype, shape, pool, offset, length]``. The worker computes on that memory; nothing is copied.
- Other arrays travel inline (``[dtype, shape, bytes]``) when small, through the runtime's
  :class:`~nnrt.runtime.arena.Arena` when large (one copy in).
- Outputs: a caller buffer in shared memory is written in place by the worker; without a buffer,
  a large output of statically known size is written into the arena by the worker and returned
  as a view of it, whose region is freed when the view is collected (or copied out when the
  caller asks for ``copy=True``).

- A device memory (a driver-managed buffer) travels as its worker-side token
  (``["device", token]``); an output written into one comes back as ``["device", shape]``.

A :class:`Transfer` collects the memories a request uses (the backend maps them on the chosen
worker before sending) and the arena regions it took (freed by :meth:`Transfer.close`).
:func:`deliver` copies a result into a caller's buffer that the worker could not write in place.
"""

from __future__ import annotations

import math
import weakref
from typing import Any, Protocol

import numpy as np

from nnrt.errors import BadData, OutputInsufficientSize
from nnrt.ipc.framing import ProtocolError
from nnrt.ipc.messages import decode_tensor, dtype_of_name, encode_tensor, is_shape
from nnrt.memory import Memory, TensorRef, find_memory
from nnrt.runtime.arena import Arena, Region
from nnrt.runtime.inline import INLINE_LIMIT

__all__ = ["Transfer", "deliver"]

Array = np.ndarray[Any, Any]


class BufferState(Protocol):
    """What a transfer records about a device memory an execution writes: its dims, and that
    it now holds data (:class:`~nnrt.runtime.buffers.DeviceMemory`)."""

    dims: tuple[int, ...] | None
    initialized: bool


class _BufferOutput:
    """An output the worker writes into a device memory."""

    __slots__ = ("state",)

    def __init__(self, state: BufferState) -> None:
        self.state = state


class Transfer:
    """The wire form of one execute's tensors, and what it borrowed to build it."""

    __slots__ = ("_arena", "_regions", "_targets", "buffer_handle", "memories")

    def __init__(self, arena: Arena | None) -> None:
        self._arena = arena
        #: Memories the request references, by pool id (mapped on the worker before sending).
        self.memories: dict[int, Memory] = {}
        self._regions: list[Region] = []
        #: The device memories' worker (a request naming one runs there), if any.
        self.buffer_handle: Any = None
        #: Per output: where the worker writes it (memory, offset, capacity), or None (inline).
        self._targets: list[tuple[Memory, int, int, Region | None] | _BufferOutput | None] = []

    # -- inputs ------------------------------------------------------------------------------

    def input(self, array: Array, name: str) -> list[Any]:
        """The wire form of a checked input ``array`` whose dtype is called ``name``."""
        if array.base is not None and array.flags.c_contiguous:  # owners are never views
            found = find_memory(array)
            if found is not None:
                memory, offset = found
                self.memories[memory.id] = memory
                return [name, list(array.shape), memory.id, offset, array.nbytes]
        if array.nbytes > INLINE_LIMIT and self._arena is not None:
            region = self._arena.alloc(array.nbytes)
            if region is not None:
                self._regions.append(region)
                target = region.memory.ndarray(array.dtype, array.shape, region.offset)
                np.copyto(target, array)
                self.memories[region.memory.id] = region.memory
                return [name, list(array.shape), region.memory.id, region.offset,
                        array.nbytes]
        return encode_tensor(array)

    def buffer(self, handle: Any) -> list[Any]:
        """The wire form of a device memory argument, given its backend ``handle``."""
        if isinstance(handle, int):  # shared mode: the service's token; it routes the request
            self.buffer_handle = handle
            return ["device", handle]
        handle.require_live()  # a buffer lost with its worker: UnavailableDevice, whatever else
        previous = self.buffer_handle
        if previous is not None and handle.slot is not previous.slot:
            raise BadData("device memories held by different workers cannot meet in one "
                          "request")
        self.buffer_handle = handle
        return ["device", handle.token]

    # -- outputs -----------------------------------------------------------------------------

    def output_ref(self, j: int, buffer: Any, dtype: np.dtype[Any],
                   name: str, static_shape: tuple[int, ...] | None) -> list[Any] | None:
        """The ``outputs[j]`` entry of the request: a pool reference, or None for inline."""
        if isinstance(buffer, TensorRef):
            if buffer.dtype != dtype:
                raise BadData(f"output {j}: the TensorRef holds {buffer.dtype}, the model output "
                              f"is {dtype}")
            if not buffer.memory.writable:
                raise BadData(f"output {j}: memory {buffer.memory.id} is read-only")
            return self._target(buffer.memory, buffer.offset, buffer.shape, name, None)
        if isinstance(buffer, np.ndarray):
            found = find_memory(buffer) if buffer.flags.c_contiguous else None
            if found is None:
                self._targets.append(None)
                return None
            memory, offset = found
            if not buffer.flags.writeable or not memory.writable:
                raise BadData(f"output {j}: the buffer (memory {memory.id}) is read-only")
            count = buffer.nbytes // dtype.itemsize
            if offset % dtype.itemsize:
                raise BadData(f"output {j}: the buffer at offset {offset} of memory {memory.id} "
                              f"is not aligned for {dtype}")
            return self._target(memory, offset, (count,), name, None)
        if static_shape is not None and self._arena is not None:
            nbytes = math.prod(static_shape) * dtype.itemsize
            if nbytes > INLINE_LIMIT:
                region = self._arena.alloc(nbytes)
                if region is not None:
                    self._regions.append(region)
                    return self._target(region.memory, region.offset, static_shape, name,
                                        region)
        self._targets.append(None)
        return None

    def _target(self, memory: Memory, offset: int, shape: tuple[int, ...], name: str,
                region: Region | None) -> list[Any]:
        itemsize = np.dtype(name).itemsize
        length = math.prod(shape) * itemsize
        self.memories[memory.id] = memory
        self._targets.append((memory, offset, length, region))
        return [name, list(shape), memory.id, offset, length]

    def buffer_output(self, handle: Any, state: BufferState) -> list[Any]:
        """The ``outputs[j]`` entry of an output written into a device memory (in order with
        :meth:`output_ref`); the reply's dims are recorded on ``state``."""
        self._targets.append(_BufferOutput(state))
        return self.buffer(handle)

    def in_place(self, j: int) -> bool:
        """Whether the worker writes output ``j`` into shared memory (not inline)."""
        return j < len(self._targets) and self._targets[j] is not None

    # -- the reply ---------------------------------------------------------------------------

    def decode(self, reply: dict[str, Any], names: tuple[str, ...], views: bool,
               buffers: list[Any] | None) -> list[Array]:
        """The outputs of an execute reply (untrusted: every entry is checked)."""
        raw = reply.get("outputs")
        if raw.__class__ is not list or len(raw) != len(names):
            raise ProtocolError("execute reply has the wrong number of outputs")
        results = []
        for j, value in enumerate(raw):
            target = self._targets[j] if j < len(self._targets) else None
            if isinstance(target, _BufferOutput):
                results.append(_buffer_result(j, value, target.state))
                continue
            if not isinstance(value, list) or not value or value[0] != names[j]:
                raise ProtocolError(f"output {j}: expected a {names[j]} tensor")
            if target is None:
                results.append(decode_tensor(value, f"output {j}", writable=True))
                continue
            results.append(self._from_pool(j, value, target, views,
                                           buffers[j] if buffers is not None else None))
        return results

    def _from_pool(self, j: int, value: list[Any], target: Any,
                   views: bool, buffer: Any) -> Array:
        if len(value) != 2 or not is_shape(value[1]):
            raise ProtocolError(f"output {j}: expected [dtype, shape] for an output in memory")
        memory: Memory
        region: Region | None
        memory, offset, length, region = target
        dtype = dtype_of_name(value[0])
        shape = tuple(value[1])
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes > length:  # the worker checks too; never trust, never read past the buffer
            raise OutputInsufficientSize(f"output {j}: {nbytes} bytes do not fit in {length}",
                                         [shape])
        if isinstance(buffer, np.ndarray):  # the caller's own buffer: a view of it
            if buffer.shape == shape and buffer.dtype == dtype:
                return buffer  # filled exactly (C-contiguous: checked with the request)
            flat = buffer.reshape(-1).view(np.uint8)
            result: Array = flat[:nbytes].view(dtype).reshape(shape)
            return result
        view: Array = memory.ndarray(dtype, shape, offset)
        if region is None:  # a TensorRef: a view of the caller's memory
            return view
        if not views:
            owned: Array = view.copy()
            return owned
        self._regions.remove(region)  # the view owns it now: freed when the view is collected
        arena = self._arena
        if arena is not None:
            weakref.finalize(view, arena.free, region)
        return view

    def close(self) -> None:
        """Free the arena regions this request still holds (idempotent)."""
        arena, regions = self._arena, self._regions
        if arena is not None:
            while regions:
                arena.free(regions.pop())


def _buffer_result(j: int, value: list[Any], state: BufferState) -> Any:
    """A device output: the worker wrote it into the buffer; record its actual dims."""
    if not isinstance(value, list) or len(value) != 2 or value[0] != "device" or not is_shape(
            value[1]):
        raise ProtocolError(f"output {j}: expected ['device', shape] for a device output")
    state.dims = tuple(value[1])
    state.initialized = True
    return state


def deliver(data: Array, target: Any, where: str, *, exact: bool = False,
            shapes: list[tuple[int, ...]] | None = None) -> Array:
    """Copy ``data`` into the caller's ``target`` and return the view of it holding the data.

    ``target`` is an ndarray, a :class:`~nnrt.memory.TensorRef` or a whole
    :class:`~nnrt.memory.Memory`, of ``data``'s dtype. A target of the same shape is filled as
    it is; otherwise its first ``data.size`` elements (C order) take the data, and the view has
    ``data``'s shape. Too few elements raise ``OutputInsufficientSize`` (with ``shapes``, every
    output's shape, when given); ``exact`` asks for the same number of elements (``BadData``).
    """
    if isinstance(target, TensorRef):
        view = target.ndarray()
    elif isinstance(target, Memory):
        view = target.ndarray(data.dtype, data.shape)
    elif isinstance(target, np.ndarray):
        view = target
    else:
        raise BadData(f"{where}: expected an ndarray, a TensorRef or a Memory, got "
                      f"{type(target).__name__}")
    if view.dtype != data.dtype or (exact and view.size != data.size):
        raise BadData(f"{where}: the buffer holds {view.dtype} of shape {view.shape}, the "
                      f"result is {data.dtype} of shape {data.shape}")
    if view.size < data.size:
        raise OutputInsufficientSize(
            f"{where}: needs {data.size} elements, the buffer has {view.size}",
            shapes if shapes is not None else [data.shape])
    if not view.flags.writeable:
        raise BadData(f"{where}: the buffer is read-only")
    if view.shape == data.shape:
        np.copyto(view, data)
        return view
    if not view.flags.c_contiguous:
        raise BadData(f"{where}: a buffer of another shape must be C-contiguous")
    filled: Array = view.reshape(-1)[: data.size].reshape(data.shape)
    np.copyto(filled, data)
    return filled
