"""Memory pools a client shared with the worker service: mapping them and checking references.

A client shares memory with a ``map`` request (see docs/protocol.md): a sealed ``memfd``, a
file region (``mmap_fd``, both with the fd riding on the frame) or a POSIX shared-memory
``blob`` opened by name. :class:`MappedMemory` owns one such mapping; :class:`MappingTable` holds
the pools of one connection by the ids the client chose. The fds received or opened are closed
once mapped: Python's ``mmap`` keeps its own duplicate, the one fd a pool costs, which
``mmap.size()`` fstats for the size re-check of ``mmap_fd`` and ``blob`` pools.

This is a security boundary: every reference (pool, offset, length, dtype, shape) is checked
against the mapping before a view is made, and pools whose size can change under us (files and
blobs can be truncated by anyone holding them) are re-checked with ``fstat`` before every use.
That narrows but cannot close the window in which a truncation makes an access fault (SIGBUS);
sealed memfds have no such window, which is why they are the recommended kind.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import math
import mmap
import os
import re
import stat
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
import posix_ipc

from nnrt.errors import BadData, ResourceExhausted, Unmappable

__all__ = [
    "DEFAULT_MAX_BYTES",
    "KINDS",
    "MAX_POOLS",
    "MAX_POOL_SIZE",
    "MappedMemory",
    "MappingTable",
]

#: Most pools one connection may have mapped at once.
MAX_POOLS = 4096
#: Most bytes one connection may have mapped at once (sum of pool sizes), by default.
DEFAULT_MAX_BYTES = 64 << 30
#: Largest pool accepted.
MAX_POOL_SIZE = 2**48
#: The pool kinds, and how many fds a ``map`` request of each kind carries.
KINDS: dict[str, int] = {"memfd": 1, "mmap_fd": 1, "blob": 0}

_MAX_POOL_ID = 2**53
_MAX_OFFSET = 2**62
_BLOB_NAME = re.compile(r"/[A-Za-z0-9._-]{1,200}")
_REQUIRED_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW
_EXHAUSTED = frozenset({errno.ENOMEM, errno.EMFILE, errno.ENFILE})
#: How many released pool ids are remembered, to say "unmapped" rather than "unknown".
_REMEMBER_RELEASED = 1024

Array = np.ndarray[Any, Any]


def _is_index(value: Any) -> bool:
    """Whether ``value`` is an int (not a bool) in [0, 2**62]."""
    return value.__class__ is int and 0 <= value <= _MAX_OFFSET


class MappedMemory:
    """One pool mapped into this process (MAP_SHARED, prot per ``writable``).

    Owns the mapping (and the fd ``mmap`` keeps, fstat-ed to re-check the size of ``mmap_fd``
    and ``blob`` pools). :meth:`close` lets go of it exactly once; views handed out stay valid
    after it (the mapping dies with its last view). It is a
    :class:`~nnrt.model.operand.ConstantMemory` (``size``, ``view``) for constants by reference.
    """

    __slots__ = ("_base", "_mmap", "closed", "file_offset", "id", "kind", "resizable",
                 "size", "writable")

    def __init__(self, pool_id: int, kind: str, size: int, writable: bool, mapping: mmap.mmap,
                 base: int, resizable: bool, file_offset: int) -> None:
        self.id = pool_id
        self.kind = kind
        #: Usable bytes (for ``mmap_fd``: the shared range of the file, not the whole file).
        self.size = size
        self.writable = writable
        #: ``mmap_fd``: where the shared range starts in the file; 0 otherwise.
        self.file_offset = file_offset
        self.closed = False
        self._mmap: mmap.mmap | None = mapping
        self._base = base  # where byte 0 of the pool is in the mapping (alignment delta)
        #: Whether the file behind it can shrink (``mmap_fd``, ``blob``; a memfd is sealed).
        self.resizable = resizable

    def __repr__(self) -> str:
        state = "closed" if self.closed else ("rw" if self.writable else "ro")
        return f"<MappedMemory {self.id} {self.kind} {self.size} bytes {state}>"

    # -- checks and views --------------------------------------------------------------------

    def check_size(self, where: str) -> None:
        """Raise ``BadData`` if the file behind the pool shrank below the shared range.

        Works after :meth:`close` too, as long as views (held by an execute received before the
        ``unmap``) keep the mapping alive.
        """
        mapping = self._mmap
        if mapping is not None and self.resizable:
            actual = mapping.size()  # fstat of the file behind the mapping
            if actual < self.file_offset + self.size:
                raise BadData(f"{where}: pool {self.id} was truncated to {actual} bytes after "
                              f"it was shared (it needs {self.file_offset + self.size})")

    def _live(self, where: str) -> mmap.mmap:
        """The mapping, for a new view: ``BadData`` if closed or truncated."""
        mapping = self._mmap
        if mapping is None or self.closed:
            raise BadData(f"{where}: pool {self.id} was unmapped")
        self.check_size(where)
        return mapping

    def array(self, dtype: np.dtype[Any], shape: Sequence[int], offset: Any, length: Any,
              where: str, *, output: bool = False) -> Array:
        """A view of ``length`` bytes at ``offset`` as ``dtype`` of ``shape`` (C order).

        Checks everything about the reference (``BadData`` naming ``where`` otherwise): offset
        and length ints in [0, 2**62] and within the pool, offset aligned to the element size,
        the byte count of the shape, a writable pool for an ``output``, and the size re-check.
        Input views are read-only; output views are writable.
        """
        if not _is_index(offset) or not _is_index(length):
            raise BadData(f"{where}: offset {offset!r:.40} and length {length!r:.40} must be "
                          f"ints from 0 to 2**62")
        if offset + length > self.size:
            raise BadData(f"{where}: bytes {offset}..{offset + length} are outside pool "
                          f"{self.id} of {self.size} bytes")
        itemsize = dtype.itemsize
        if offset % itemsize:
            raise BadData(f"{where}: offset {offset} in pool {self.id} is not aligned to the "
                          f"{itemsize}-byte elements of {dtype}")
        count = math.prod(shape)
        if count * itemsize != length:
            raise BadData(f"{where}: shape {list(shape)} of {dtype} is {count * itemsize} bytes, "
                          f"the reference has length {length}")
        if output and not self.writable:
            raise BadData(f"{where}: pool {self.id} is read-only and cannot receive an output")
        mapping = self._live(where)
        view = np.frombuffer(mapping, dtype, count, self._base + offset).reshape(shape)
        if not output and view.flags.writeable:
            view.flags.writeable = False
        return view

    def view(self, offset: int, length: int) -> memoryview:
        """A read-only memoryview of ``length`` bytes at ``offset`` (for model constants)."""
        if not _is_index(offset) or not _is_index(length) or offset + length > self.size:
            raise BadData(f"pool {self.id}: bytes {offset!r:.40}..+{length!r:.40} are outside "
                          f"its {self.size} bytes")
        mapping = self._live(f"pool {self.id}")
        start = self._base + offset
        with memoryview(mapping) as whole:
            return whole[start:start + length].toreadonly()

    # -- ending ------------------------------------------------------------------------------

    def close(self) -> None:
        """Refuse new views and unmap (idempotent).

        With views alive (``mmap.close()`` raises ``BufferError``), the mapping stays until the
        last of them and this pool object are gone.
        """
        if self.closed:
            return
        self.closed = True
        mapping = self._mmap
        if mapping is not None:
            with contextlib.suppress(BufferError):
                mapping.close()
                self._mmap = None

    def __del__(self) -> None:
        self.close()


class MappingTable:
    """The pools mapped on one connection, by client-chosen id (owns them all)."""

    def __init__(self, max_pools: int = MAX_POOLS, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_pools = max_pools
        self.max_bytes = max_bytes
        self._pools: dict[int, MappedMemory] = {}
        self._released: OrderedDict[int, None] = OrderedDict()
        #: Sum of the sizes of the mapped pools.
        self.mapped_bytes = 0

    def __len__(self) -> int:
        return len(self._pools)

    def __contains__(self, pool_id: object) -> bool:
        return pool_id in self._pools

    def map(self, where: str, body: dict[str, Any], fds: list[int]) -> MappedMemory:
        """Map the pool a ``map`` request describes, taking ownership of ``fds``.

        Every fd in ``fds`` is either kept by the new pool or closed, whatever happens. Raises
        ``BadData`` for a bad request, ``ResourceExhausted`` past the connection's limits and
        ``Unmappable`` when the OS refuses.
        """
        try:
            pool_id = body["pool"]
            if not 0 < pool_id < _MAX_POOL_ID:
                raise BadData(f"{where}: pool id {pool_id} must be from 1 to 2**53 - 1")
            where = f"{where}, pool {pool_id}"
            if pool_id in self._pools:
                raise BadData(f"{where}: pool {pool_id} is already mapped on this connection")
            kind, size = body["kind"], body["size"]
            if kind not in KINDS:
                raise BadData(f"{where}: unknown pool kind {kind!r:.40} (known: "
                              f"{', '.join(KINDS)})")
            if len(fds) != KINDS[kind]:
                raise BadData(f"{where}: a {kind} pool comes with {KINDS[kind]} fd(s) "
                              f"(nfds), got {len(fds)}")
            if not 0 < size <= MAX_POOL_SIZE:
                raise BadData(f"{where}: size {size} must be from 1 to 2**48 bytes")
            if len(self._pools) >= self.max_pools:
                raise ResourceExhausted(f"{where}: already {self.max_pools} pools mapped on "
                                        "this connection; unmap some first")
            if self.mapped_bytes + size > self.max_bytes:
                raise ResourceExhausted(f"{where}: {self.mapped_bytes} bytes are mapped on this "
                                        f"connection; {size} more would exceed the limit of "
                                        f"{self.max_bytes}")
            pool = _open(pool_id, kind, size, body, fds, where)
        finally:
            for fd in fds:  # mapped or not, the fds are closed: a mapping keeps its own
                os.close(fd)
            fds.clear()
        self._pools[pool_id] = pool
        self._released.pop(pool_id, None)
        self.mapped_bytes += size
        return pool

    def unmap(self, pool_id: int, where: str) -> None:
        """Unmap ``pool_id`` (``BadData`` if it is not mapped); its live views stay valid."""
        pool = self.get(pool_id, where)
        del self._pools[pool_id]
        self.mapped_bytes -= pool.size
        self._released[pool_id] = None
        if len(self._released) > _REMEMBER_RELEASED:
            self._released.popitem(last=False)
        pool.close()

    def get(self, pool_id: Any, where: str) -> MappedMemory:
        """The pool mapped as ``pool_id``; ``BadData`` naming ``where`` if there is none."""
        pool = self._pools.get(pool_id)
        if pool is None:
            if pool_id in self._released:
                raise BadData(f"{where}: pool {pool_id} was unmapped (released)")
            raise BadData(f"{where}: unknown pool {pool_id!r:.40}")
        return pool

    def resolve(self, pool_id: int, path: str) -> MappedMemory:
        """``model_from_wire``'s resolver: the pool for a constant's ``ref`` at ``path``."""
        return self.get(pool_id, path)

    def close_all(self) -> None:
        """Unmap every pool (at the connection's end)."""
        pools, self._pools = self._pools, {}
        self.mapped_bytes = 0
        self._released.clear()
        for pool in pools.values():
            pool.close()


# -- opening each kind ------------------------------------------------------------------------

def _open(pool_id: int, kind: str, size: int, body: dict[str, Any], fds: list[int],
          where: str) -> MappedMemory:
    """Check and map one pool (the caller closes ``fds`` afterwards)."""
    writable = body["writable"]
    if kind == "memfd":
        _check_no(body, ("offset", "name"), kind, where)
        fd = fds[0]
        try:
            seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
        except OSError as exc:
            raise BadData(f"{where}: the fd is not a memfd ({exc.strerror})") from None
        if seals & _REQUIRED_SEALS != _REQUIRED_SEALS:
            raise BadData(f"{where}: the memfd is not sealed against shrinking and growing "
                          "(F_SEAL_SHRINK | F_SEAL_GROW)")
        actual = os.fstat(fd).st_size
        if actual != size:
            raise BadData(f"{where}: the memfd holds {actual} bytes, the request says {size}")
        _check_access(fd, writable, where)
        mapping = _mmap(fd, size, 0, writable, where)
        return MappedMemory(pool_id, kind, size, writable, mapping, 0, False, 0)
    if kind == "mmap_fd":
        _check_no(body, ("name",), kind, where)
        offset = body.get("offset", 0)
        if not _is_index(offset):
            raise BadData(f"{where}: offset {offset} must be from 0 to 2**62")
        fd = fds[0]
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise BadData(f"{where}: the fd is not a regular file (its size cannot be checked)")
        if info.st_size < offset + size:
            raise BadData(f"{where}: the file holds {info.st_size} bytes, fewer than offset "
                          f"{offset} + size {size}")
        _check_access(fd, writable, where)
        base = offset % mmap.ALLOCATIONGRANULARITY
        mapping = _mmap(fd, base + size, offset - base, writable, where)
        return MappedMemory(pool_id, kind, size, writable, mapping, base, True, offset)
    _check_no(body, ("offset",), kind, where)
    return _open_blob(pool_id, size, body, writable, where)


def _open_blob(pool_id: int, size: int, body: dict[str, Any], writable: bool,
               where: str) -> MappedMemory:
    name = body.get("name")
    if not isinstance(name, str) or _BLOB_NAME.fullmatch(name) is None:
        raise BadData(f"{where}: blob name {name!r:.60} must match /[A-Za-z0-9._-]{{1,200}}")
    try:
        shm = posix_ipc.SharedMemory(name, flags=0, read_only=not writable)
    except posix_ipc.ExistentialError:
        raise Unmappable(f"{where}: blob {name} does not exist") from None
    except (posix_ipc.Error, OSError) as exc:
        raise Unmappable(f"{where}: blob {name} cannot be opened: {exc}") from None
    try:
        actual = os.fstat(shm.fd).st_size
        if actual < size:
            raise BadData(f"{where}: blob {name} holds {actual} bytes, the request says {size}")
        mapping = _mmap(shm.fd, size, 0, writable, where)
    finally:
        shm.close_fd()  # the mapping keeps its own
    return MappedMemory(pool_id, "blob", size, writable, mapping, 0, True, 0)


def _check_no(body: dict[str, Any], fields: Sequence[str], kind: str, where: str) -> None:
    for name in fields:
        if name in body:
            raise BadData(f"{where}: field {name!r} does not apply to a {kind} pool")


def _check_access(fd: int, writable: bool, where: str) -> None:
    if writable and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE != os.O_RDWR:
        raise BadData(f"{where}: writable requested but the fd is not open for reading and "
                      "writing (O_RDWR)")


def _mmap(fd: int, length: int, offset: int, writable: bool, where: str) -> mmap.mmap:
    prot = mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0)
    try:
        return mmap.mmap(fd, length, flags=mmap.MAP_SHARED, prot=prot, offset=offset)
    except OSError as exc:
        error = ResourceExhausted if exc.errno in _EXHAUSTED else Unmappable
        raise error(f"{where}: mapping {length} bytes failed: {exc.strerror}") from None
    except (ValueError, OverflowError) as exc:
        raise Unmappable(f"{where}: mapping {length} bytes failed: {exc}") from None


