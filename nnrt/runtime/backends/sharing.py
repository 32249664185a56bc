"""Sharing pools over one connection: each pool is sent once (``map``), then named by id.

Like NNAPI burst memory caches: the first request that references a pool on a connection
shares it (its fd over SCM_RIGHTS, or a blob's name); later requests only carry the id. When the
pool closes the peer is told (``unmap``); when the connection is replaced (a worker restarted)
everything is forgotten and shared again on demand.
"""

from __future__ import annotations

import contextlib

import anyio

from nnrt.errors import BadState, NnrtError
from nnrt.memory.source import MemorySource, map_request
from nnrt.runtime.backends.channel import RequestClient

__all__ = ["MemorySharing"]


class MemorySharing:
    """The pools shared with the peer of one connection, and those being shared right now."""

    def __init__(self) -> None:
        self._shared: set[int] = set()
        self._sharing: dict[int, anyio.Event] = {}

    def __contains__(self, pool_id: int) -> bool:
        return pool_id in self._shared

    def __len__(self) -> int:
        return len(self._shared)

    async def ensure(self, client: RequestClient, pool: MemorySource) -> None:
        """Share ``pool`` over ``client`` unless it is shared already (concurrent calls wait)."""
        pool_id = pool.id
        while True:
            if pool_id in self._shared:
                return
            event = self._sharing.get(pool_id)
            if event is None:
                break
            await event.wait()
        if pool.closed:
            raise BadState(f"memory {pool_id} ({pool.kind}) was closed")
        event = anyio.Event()
        self._sharing[pool_id] = event
        try:
            body, fds = map_request(pool)
            # shielded: a caller cancelled while the map is in flight must still learn that
            # the peer mapped the pool (else the next request maps it twice and is refused)
            with anyio.CancelScope(shield=True):
                await client.request("map", body, fds)
            if client.lost is None:
                self._shared.add(pool_id)
        finally:
            self._sharing.pop(pool_id, None)
            event.set()

    def unmap(self, client: RequestClient | None, pool_id: int) -> None:
        """Tell the peer to let go of ``pool_id`` (no reply awaited); no-op if not shared."""
        if pool_id in self._shared:
            self._shared.discard(pool_id)
            if client is not None and client.lost is None:
                # a peer that just died has nothing left to unmap: closing a memory never
                # fails because of it
                with contextlib.suppress(NnrtError, OSError):
                    client.notify("unmap", {"pool": pool_id})

    def reset(self) -> None:
        """Forget everything (the connection is gone); wake whoever waits."""
        self._shared.clear()
        for event in self._sharing.values():
            event.set()
        self._sharing.clear()
