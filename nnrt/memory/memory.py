"""``Memory``: a shared memory object the client maps once and shares with driver workers.

Three kinds, after NNAPI's memory domains:

- ``memfd`` (:meth:`Memory.create`, NNAPI ashmem): an anonymous file sealed at creation so its
  size never changes; workers receive the fd over the socket.
- ``mmap_fd`` (:meth:`Memory.from_fd`, ``ANeuralNetworksMemory_createFromFd``): a range of a user's
  file or fd. Anyone may truncate a regular file later, so its size is re-checked before use.
- ``blob`` (:meth:`Memory.create_blob` / :meth:`Memory.open_blob`, NNAPI hardware-buffer blobs):
  POSIX shared memory opened *by name*; only its creator (the owner) unlinks it.

A memory owns one fd and one mapping and releases both exactly once, at :meth:`Memory.close`.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import mmap
import os
import threading
import weakref
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

import numpy as np
import posix_ipc

from nnrt.errors import BadData, BadState
from nnrt.memory import kinds
from nnrt.memory.ranges import as_count, as_dtype, as_shape, check_range
from nnrt.memory.registry import REGISTRY

__all__ = ["Memory", "find_memory", "new_pool_id"]

Array = np.ndarray[Any, Any]

_ids = itertools.count(1)


def new_pool_id() -> int:
    """A pool id no memory of this process has: ``Memory`` ids and the ids ``nnrt serve``
    gives its clients' pools come from this one counter, so that a worker, which knows pools
    by id, never mistakes one for the other."""
    return next(_ids)


class Memory:
    """A mapped shared memory of one kind (``memfd``, ``mmap_fd`` or ``blob``); see the module doc.

    Build one with :meth:`create`, :meth:`from_fd`, :meth:`create_blob` or :meth:`open_blob`.
    Offsets given to :meth:`ndarray` and :meth:`view` are relative to the usable range (for an
    mmap_fd, to ``file_offset`` in the file). A memory is a context manager; :meth:`close` (also
    run when it is garbage collected) is idempotent.
    """

    __slots__ = ("__weakref__", "_address", "_callbacks", "_closed", "_delta", "_fd",
                 "_file_offset", "_id", "_kind", "_lock", "_mapping", "_name", "_owner", "_size",
                 "_writable")

    def __init__(self, opened: kinds.Opened) -> None:
        """Take over ``opened``'s fd and mapping (internal: use the classmethods)."""
        self._address = _base_address(opened.mapping) + opened.delta
        self._id = new_pool_id()
        self._kind = opened.kind
        self._fd = opened.fd
        self._mapping: mmap.mmap | None = opened.mapping
        self._delta = opened.delta
        self._size = opened.size
        self._writable = opened.writable
        self._name = opened.name
        self._file_offset = opened.file_offset
        self._owner = opened.owner
        self._closed = False
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[Memory], None]] = []
        REGISTRY.add(self._address, self._size, self)

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def create(cls, size: int, *, name: str = "nnrt") -> Memory:
        """A new writable memfd of ``size`` bytes, sealed against shrinking and growing.

        ``name`` only labels it (/proc/<pid>/fd shows ``memfd:<name>``).
        """
        return cls(kinds.create_memfd(size, name))

    @classmethod
    def from_fd(cls, fd: int, offset: int, size: int, prot: int = mmap.PROT_READ) -> Memory:
        """Map ``size`` bytes of ``fd`` starting at file ``offset`` (kind ``mmap_fd``).

        The fd is duplicated: the caller keeps and closes theirs. ``prot`` is ``PROT_READ`` or
        ``PROT_READ | PROT_WRITE`` and must be allowed by the fd's access mode. A regular file
        must hold at least ``offset + size`` bytes, now and whenever the memory is used.
        """
        return cls(kinds.map_fd(fd, offset, size, prot))

    @classmethod
    def create_blob(cls, size: int, name: str | None = None) -> Memory:
        """A new POSIX shared-memory blob of ``size`` bytes that this memory owns.

        ``name`` defaults to ``/nnrt-<pid>-<random hex>``; closing the owner unlinks the name.
        """
        return cls(kinds.create_blob(size, name))

    @classmethod
    def open_blob(cls, name: str, *, writable: bool = True) -> Memory:
        """Map the existing blob ``name`` (its whole size); ``Unmappable`` if there is none."""
        return cls(kinds.open_blob(name, writable))

    # -- attributes -----------------------------------------------------------------------------

    @property
    def id(self) -> int:
        """A positive int unique in this process, never reused."""
        return self._id

    @property
    def kind(self) -> str:
        """``"memfd"``, ``"mmap_fd"`` or ``"blob"``."""
        return self._kind

    @property
    def size(self) -> int:
        """Usable bytes (for an mmap_fd, the mapped range, not the whole file)."""
        return self._size

    @property
    def writable(self) -> bool:
        """Whether the mapping may be written (views of a read-only memory are read-only)."""
        return self._writable

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has run."""
        return self._closed

    @property
    def name(self) -> str | None:
        """The blob's name (``/nnrt-...``); None for other kinds."""
        return self._name

    @property
    def file_offset(self) -> int:
        """For an mmap_fd, where the usable range starts in the file; 0 otherwise."""
        return self._file_offset

    @property
    def owner(self) -> bool:
        """For a blob, whether :meth:`close` unlinks its name (only its creator does)."""
        return self._owner

    def fileno(self) -> int:
        """The fd this memory owns (to share it with a worker); ``BadState`` once closed."""
        self._check_open("fileno")
        return self._fd

    def __repr__(self) -> str:
        state = " closed" if self._closed else ""
        name = f" name={self._name!r}" if self._name is not None else ""
        offset = f" file_offset={self._file_offset}" if self._kind == "mmap_fd" else ""
        mode = "rw" if self._writable else "ro"
        return (f"<Memory id={self._id} kind={self._kind} size={self._size}{name}{offset} "
                f"{mode}{state}>")

    # -- access ---------------------------------------------------------------------------------

    def ndarray(self, dtype: Any, shape: int | Sequence[int], offset: int = 0) -> Array:
        """A numpy view of ``shape`` x ``dtype`` at ``offset`` (read-only if not writable).

        ``BadData`` naming the memory, offset, shape and dtype when the range does not fit or
        ``offset`` is not a multiple of the dtype's itemsize; ``BadState`` after close.
        """
        mapping = self._check_open("ndarray")
        where = self._where()
        kind = as_dtype(dtype, f"{where}: dtype")
        dims = as_shape(shape, f"{where}: shape")
        start = as_count(offset, f"{where}: offset")
        check_range(where, self._size, start, dims, kind)
        self.check_size()
        # np.frombuffer keeps a buffer export (a memoryview base) for as long as the array lives,
        # so close() cannot unmap under it; np.ndarray(buffer=...) would release it at once
        try:
            flat = np.frombuffer(mapping, kind, math.prod(dims), self._delta + start)
        except ValueError:  # closed by another thread since _check_open
            raise BadState(f"{where} is closed: ndarray") from None
        array: Array = flat.reshape(dims)
        if not self._writable:
            array.flags.writeable = False
        return array

    def view(self, offset: int, length: int) -> memoryview:
        """A read-only memoryview of ``length`` bytes at ``offset`` (for constant operands)."""
        mapping = self._check_open("view")
        start = as_count(offset, f"{self._where()}: view offset")
        count = as_count(length, f"{self._where()}: view length")
        if start + count > self._size:
            raise BadData(f"{self._where()}: view of {count} bytes at offset {start} ends at "
                          f"{start + count}, past the end of the memory's {self._size} bytes")
        self.check_size()
        first = self._delta + start
        try:
            whole = memoryview(mapping)
        except ValueError:  # closed by another thread since _check_open
            raise BadState(f"{self._where()} is closed: view") from None
        return whole[first:first + count].toreadonly()

    def check_size(self) -> None:
        """``BadData`` if the file behind an mmap_fd or blob was truncated after mapping.

        Touching a truncated part of a mapping kills the process with SIGBUS, so the size is
        re-checked before every use. A memfd is sealed and never needs it.
        """
        if self._kind == "memfd" or self._closed:
            return
        available = kinds.file_size(self._fd)
        if available is not None and available < self._file_offset + self._size:
            raise BadData(f"{self._where()} was truncated to {available} bytes after it was "
                          f"mapped (needs {self._file_offset + self._size})")

    # -- closing --------------------------------------------------------------------------------

    def add_close_callback(self, fn: Callable[[Memory], None]) -> None:
        """Run ``fn(self)`` once, when the memory closes (before it is unmapped)."""
        if not callable(fn):
            raise BadData(f"{self._where()}: close callback must be callable, got {fn!r:.40}")
        with self._lock:
            if self._closed:
                raise BadState(f"{self._where()} is closed: add_close_callback")
            self._callbacks.append(fn)

    def close(self) -> None:
        """Run the close callbacks, unmap, close the fd, and unlink an owned blob; idempotent.

        Numpy views still alive keep the mapping (not the fd) until they die. A callback that
        raises does not stop the release; the first such error is re-raised afterwards.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            callbacks, self._callbacks = self._callbacks, []
        error: BaseException | None = None
        try:
            for fn in callbacks:
                try:
                    fn(self)
                except Exception as exc:  # every callback runs; the first failure is re-raised
                    error = error or exc
        finally:
            self._release()
        if error is not None:
            raise error

    def _release(self) -> None:
        """Forget the range, unmap (or leave the mapping to its views), close fd, unlink."""
        REGISTRY.remove(self._address, self)
        mapping, self._mapping = self._mapping, None
        if mapping is not None:
            # views alive: the mapping is unmapped when the last one dies, never an error here
            with contextlib.suppress(BufferError):
                mapping.close()
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)
        if self._owner and self._name is not None:
            # someone else removed the name: nothing left to release
            with contextlib.suppress(posix_ipc.ExistentialError):
                posix_ipc.unlink_shared_memory(self._name)

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            self.close()

    # -- helpers --------------------------------------------------------------------------------

    def _where(self) -> str:
        """How messages name this memory."""
        name = f" {self._name}" if self._name is not None else ""
        return f"memory {self._id} ({self._kind}{name}, {self._size} bytes)"

    def _check_open(self, action: str) -> mmap.mmap:
        """The mapping, or ``BadState`` naming ``action`` once closed."""
        mapping = self._mapping
        if self._closed or mapping is None:
            raise BadState(f"{self._where()} is closed: {action}")
        return mapping


def find_memory(array: object) -> tuple[Memory, int] | None:
    """The live :class:`Memory` holding ``array`` whole, and the byte offset of its first element.

    Recognises views from :meth:`Memory.ndarray` and any slice or reshape of them; an array
    partly outside the memory, of a closed memory, or not an ndarray gives None.

    Views passed again and again (a request's buffers) are remembered: an ndarray's data
    address never changes, so the array object (held weakly), its shape and its strides
    identify the answer (reading the address costs a dict build per call).
    """
    if not isinstance(array, np.ndarray) or array.base is None or not REGISTRY:
        return None  # an array owning its data is no view of a memory (this path is hot)
    seen = _SEEN.get(id(array))
    if seen is not None:
        ref, shape, strides, memory_ref, offset = seen
        memory = memory_ref()
        if (ref() is array and array.shape == shape and array.strides == strides
                and memory is not None and not memory.closed):
            return memory, offset
    found = _find(array)
    if found is not None:
        if len(_SEEN) >= _SEEN_MAX:
            _SEEN.clear()
        _SEEN[id(array)] = (weakref.ref(array), array.shape, array.strides,
                            weakref.ref(found[0]), found[1])
    return found


#: Recently found views, all held weakly: id -> (array, shape, strides, memory, offset).
_SEEN: dict[int, tuple[Any, tuple[int, ...], tuple[int, ...], Any, int]] = {}
_SEEN_MAX = 256


def _find(array: np.ndarray[Any, Any]) -> tuple[Memory, int] | None:
    data: int = array.__array_interface__["data"][0]
    low = high = data
    if array.size:
        for n, stride in zip(array.shape, array.strides, strict=True):
            if stride < 0:
                low += stride * (n - 1)
            else:
                high += stride * (n - 1)
        high += array.itemsize
    found = REGISTRY.find(low, high)
    if found is None:
        return None
    memory, start = found
    return memory, data - start


def _base_address(mapping: mmap.mmap) -> int:
    """The address of ``mapping``'s first byte (works for read-only mappings too)."""
    probe = np.frombuffer(mapping, np.uint8, count=1)
    address: int = probe.__array_interface__["data"][0]
    del probe  # release the buffer export at once so the mapping can be closed
    return address

