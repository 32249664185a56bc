"""What sharing a memory with a worker needs: :class:`MemorySource` and its ``map`` request.

A :class:`~nnrt.memory.Memory` is a source; so is the service's record of a memory a client shared
with it (``ReceivedMemory`` in :mod:`nnrt.serve.received`, around a
:class:`~nnrt.memory.mapped.MappedMemory`), which the service shares with its workers in turn. On
the wire a shared memory is a "pool" named by id, as in NNAPI's HAL (``docs/protocol.md``).
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["MemorySource", "map_request"]


class MemorySource(Protocol):
    """What a backend needs to share a memory with a worker: a Memory, or (shared mode) the
    service's record of a memory a client shared with it."""

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


def map_request(memory: MemorySource) -> tuple[dict[str, Any], list[int]]:
    """The body and descriptors of the ``map`` request that shares ``memory`` with a worker."""
    body: dict[str, Any] = {"pool": memory.id, "kind": memory.kind, "size": memory.size,
                            "writable": memory.writable}
    if memory.kind == "blob":
        body["name"] = memory.name
        return body, []
    if memory.kind == "mmap_fd":
        body["offset"] = memory.file_offset
    body["nfds"] = 1
    return body, [memory.fileno()]
