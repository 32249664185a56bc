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

A :class:`Transfer` collects the pools a request uses (the backend maps them on the chosen
worker before sending) and the arena regions it took (freed by :meth:`Transfer.close`).
"""

from __future__ import annotations

import math
import weakref
from typing import Any, Protocol

import numpy as np

from nnrt.errors import BadData, OutputInsufficientSize
from nnrt.ipc.framing import ProtocolError
from nnrt.ipc.messages import decode_tensor, dtype_of_name, encode_tensor
from nnrt.memory import Memory, TensorRef, find_memory
from nnrt.runtime.arena import Arena, Region
from nnrt.runtime.device import DeviceMemory, is_shape
from nnrt.runtime.inline import INLINE_LIMIT

__all__ = ["PoolSource", "Transfer", "map_request"]

Array = np.ndarray[Any, Any]


class PoolSource(Protocol):
    """What the backend needs to share a pool with a worker: a Memory, or (shared mode) the
    service's record of a pool a client shared with it."""

    @property
    def id(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def size(self) -> int: ...
    @property
    def writable(self) -> bool: ...
    @property
    def name(self) -> str | None: ...
    @property
    def file_offset(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    def fileno(self) -> int: ...


def map_request(pool: PoolSource) -> tuple[dict[str, Any], list[int]]:
    """The body and descriptors of the ``map`` request that shares ``pool`` with a worker."""
    body: dict[str, Any] = {"pool": pool.id, "kind": pool.kind, "size": pool.size,
                            "writable": pool.writable}
    if pool.kind == "blob":
        body["name"] = pool.name
        return body, []
    if pool.kind == "mmap_fd":
        body["offset"] = pool.file_offset
    body["nfds"] = 1
    return body, [pool.fileno()]


class Transfer:
    """The wire form of one execute's tensors, and what it borrowed to build it."""

    __slots__ = ("_arena", "_regions", "_targets", "device_handle", "pools")

    def __init__(self, arena: Arena | None) -> None:
        self._arena = arena
        #: Memories the request references, by pool id (mapped on the worker before sending).
        self.pools: dict[int, Memory] = {}
        self._regions: list[Region] = []
        #: The device memories' worker (a request naming one runs there), if any.
        self.device_handle: Any = None
        #: Per output: where the worker writes it (memory, offset, capacity), or None (inline).
        self._targets: list[tuple[Memory, int, int, Region | None] | DeviceMemory | None] = []

    # -- inputs ------------------------------------------------------------------------------

    def input(self, array: Array, name: str) -> list[Any]:
        """The wire form of a checked input ``array`` whose dtype is called ``name``."""
        if array.base is not None and array.flags.c_contiguous:  # owners are never views
            found = find_memory(array)
            if found is not None:
                memory, offset = found
                self.pools[memory.id] = memory
                return [name, list(array.shape), memory.id, offset, array.nbytes]
        if array.nbytes > INLINE_LIMIT and self._arena is not None:
            region = self._arena.alloc(array.nbytes)
            if region is not None:
                self._regions.append(region)
                target = region.memory.ndarray(array.dtype, array.shape, region.offset)
                np.copyto(target, array)
                self.pools[region.memory.id] = region.memory
                return [name, list(array.shape), region.memory.id, region.offset,
                        array.nbytes]
        return encode_tensor(array)

    def device(self, memory: DeviceMemory) -> list[Any]:
        """The wire form of a device memory argument (its worker-side token)."""
        handle = memory.handle
        if isinstance(handle, int):  # shared mode: the service's token; it routes the request
            self.device_handle = handle
            return ["device", handle]
        handle.require_live()  # a buffer lost with its worker: UnavailableDevice, whatever else
        previous = self.device_handle
        if previous is not None and handle.slot is not previous.slot:
            raise BadData("device memories held by different workers cannot meet in one "
                          "request")
        self.device_handle = handle
        return ["device", handle.token]

    # -- outputs -----------------------------------------------------------------------------

    def output_ref(self, j: int, buffer: Any, dtype: np.dtype[Any],
                   name: str, static_shape: tuple[int, ...] | None) -> list[Any] | None:
        """The ``outputs[j]`` entry of the request: a pool reference, or None for inline."""
        if isinstance(buffer, DeviceMemory):
            self._targets.append(buffer)
            return self.device(buffer)
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
        self.pools[memory.id] = memory
        self._targets.append((memory, offset, length, region))
        return [name, list(shape), memory.id, offset, length]

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
            if isinstance(target, DeviceMemory):
                results.append(_device_result(j, value, target))
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


def _device_result(j: int, value: list[Any], memory: DeviceMemory) -> Any:
    """A device output: the worker wrote it into the buffer; record its actual dims."""
    if not isinstance(value, list) or len(value) != 2 or value[0] != "device" or not is_shape(
            value[1]):
        raise ProtocolError(f"output {j}: expected ['device', shape] for a device output")
    memory.dims = tuple(value[1])
    memory.initialized = True
    return memory
