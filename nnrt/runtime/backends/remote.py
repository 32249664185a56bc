"""Shared mode, client side: a runtime backed by an ``nnrt serve`` service over a Unix socket."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import time
from collections.abc import Collection, Sequence
from typing import Any

from anyio.abc import TaskGroup

from nnrt.errors import NnrtError, UnavailableDevice
from nnrt.hal.base import DriverInfo
from nnrt.ipc.messages import PROTOCOL_VERSION
from nnrt.memory.source import MemorySource
from nnrt.runtime.backends.base import CompiledRef, execute_body
from nnrt.runtime.backends.channel import RequestClient
from nnrt.runtime.backends.framed import FramedSocket
from nnrt.runtime.backends.sharing import MemorySharing
from nnrt.runtime.compile.caching import StepCache
from nnrt.runtime.stats import RuntimeStatistics

__all__ = ["RemoteBackend"]


#: Seconds after which ``statistics()`` in shared mode fetches fresh ones in the background.
STATISTICS_MAX_AGE = 1.0


class RemoteBackend:
    """Sends compile / execute / release to the service; it owns pools, models and limits."""

    def __init__(self, path: str, poll_window: float = 0.0) -> None:
        self.path = path
        #: Seconds the client polls for a lone request's reply (``RequestClient``).
        self.poll_window = poll_window
        self._client: RequestClient | None = None
        self._devices: list[DriverInfo] = []
        #: The service's pool names (what ``devices=`` names), parallel to ``_devices``.
        self._names: list[str] = []
        self._stats = RuntimeStatistics()
        #: When the statistics were last fetched (monotonic), and whether a fetch is under way.
        self._stats_at = 0.0
        self._refreshing = False
        self._tg: TaskGroup | None = None
        #: Allocations the service's driver refused that this client served from shared memory.
        self._fallbacks: dict[str, int] = {}
        #: The pools shared with the service (it shares them with its workers in turn).
        self.sharing = MemorySharing()
        #: Handles of batched models collected without release (appended by finalizers, in
        #: any thread; released with the next ``compile_batched``).
        self.dropped_batched: list[int] = []

    async def start(self, tg: TaskGroup) -> None:
        """Connect, run the receive loop in ``tg`` and say hello."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(self.path)
        except OSError as exc:
            sock.close()
            raise UnavailableDevice(f"cannot connect to nnrt service at {self.path}: {exc}"
                                    ) from None
        client = RequestClient(FramedSocket(sock), peer=f"the nnrt service at {self.path}",
                               poll_window=self.poll_window)
        self._client = client
        tg.start_soon(client.run)
        hello = await client.request(
            "hello", {"protocol": PROTOCOL_VERSION, "client": "nnrt", "pid": os.getpid()})
        devices, names = hello.get("devices"), hello.get("names")
        if isinstance(devices, list):
            self._devices = [DriverInfo.from_wire(d) for d in devices]
        if isinstance(names, list) and len(names) == len(self._devices) and all(
                isinstance(n, str) for n in names):
            self._names = list(names)
        else:
            self._names = [info.name for info in self._devices]
        self._tg = tg
        await self.refresh_statistics()  # statistics() is never empty

    @property
    def lost(self) -> str | None:
        """Why the connection to the service ended (None while it is up)."""
        return None if self._client is None else self._client.lost

    def _require(self) -> RequestClient:
        if self._client is None:
            raise UnavailableDevice("not connected")
        return self._client

    async def support(self, driver: str, wire_model: dict[str, Any], priority: int,
                      deadline: float | None, memories: Sequence[MemorySource] = ()
                      ) -> dict[str, Any]:
        """Ask the service what ``driver`` supports of a model."""
        client = self._require()
        for memory in memories:
            await self.sharing.ensure(client, memory)
        return await client.request("supported", {"model": wire_model, "device": driver})

    async def compile(self, wire_model: dict[str, Any], preference: int, priority: int,
                      devices: Sequence[str] | None, deadline: float | None,
                      memories: Sequence[MemorySource] = (), *,
                      compiled: list[Any] | None = None,
                      cache: StepCache | None = None, name: str | None = None) -> CompiledRef:
        """Ask the service to compile; the returned handle is scoped to this connection.

        With ``cache``, the service (same user: the socket is 0600) opens the cache files in
        the named directory. ``name`` names the model in the service's metrics.
        """
        body: dict[str, Any] = {"model": wire_model, "preference": preference,
                                "priority": priority}
        if devices is not None:
            body["devices"] = list(devices)
        if compiled is not None:
            body["compiled"] = compiled
        if cache is not None:
            body["cache"] = {"dir": str(cache.directory.path), "token": cache.token}
        if name is not None:  # what the service's metrics call it
            body["name"] = name
        client = self._require()
        for memory in memories:
            await self.sharing.ensure(client, memory)
        reply = await client.request("compile", body)
        handle, driver = reply.get("handle"), reply.get("driver")
        if not isinstance(handle, int) or isinstance(handle, bool) or not isinstance(driver, str):
            raise UnavailableDevice("malformed compile reply from the service")
        source = reply.get("source", "compiled")
        return CompiledRef(driver, (handle, {}, (), None),
                           source=source if source in ("compiled", "aot") else "compiled")

    async def execute(self, ref: CompiledRef, inputs: list[Any], output_sizes: list[int] | None,
                      priority: int, deadline: float | None, *,
                      outputs: list[Any] | None = None,
                      memories: Collection[MemorySource] = (),
                      buffer: Any = None) -> dict[str, Any]:
        """Execute on the service (sharing the request's memories with it first); the service
        routes requests naming device memories to the worker holding them."""
        client = self._require()
        for memory in memories:
            await self.sharing.ensure(client, memory)
        body = execute_body(ref.key[0], inputs, priority, deadline, output_sizes, outputs)
        return await client.request("execute", body)

    async def compile_batched(self, wire_model: dict[str, Any], batching: dict[str, Any],
                              options: dict[str, Any], memories: Sequence[MemorySource] = ()
                              ) -> int:
        """Have the service batch a model across its clients; returns this connection's handle
        of the service's batched model (see docs/batching-shared.md)."""
        client = self._require()
        while self.dropped_batched:
            self.release_batched(self.dropped_batched.pop())
        for memory in memories:
            await self.sharing.ensure(client, memory)
        reply = await client.request("compile_batched",
                                     {"model": wire_model, "batching": batching, **options})
        handle = reply.get("handle")
        if handle.__class__ is not int:
            raise UnavailableDevice("malformed compile_batched reply from the service")
        return int(handle)

    async def execute_batched(self, handle: int, inputs: list[Any], outputs: list[Any] | None,
                              priority: int, deadline: float | None,
                              memories: Collection[MemorySource] = ()) -> dict[str, Any]:
        """One request of a batched model: the service merges it with others (any client's)."""
        client = self._require()
        for memory in memories:
            await self.sharing.ensure(client, memory)
        body: dict[str, Any] = {"handle": handle, "inputs": inputs, "priority": priority}
        if deadline is not None:
            body["deadline"] = deadline
        if outputs is not None:
            body["outputs"] = outputs
        return await client.request("execute_batched", body)

    def release_batched(self, handle: int) -> None:
        """Tell the service this client is done with a batched model (no reply awaited)."""
        if self._client is not None:
            with contextlib.suppress(NnrtError, OSError):  # gone: the service released it
                self._client.notify("release_batched", {"handle": handle})

    async def allocate(self, driver: str, dims: tuple[int, ...] | None,
                       roles: Sequence[tuple[CompiledRef, str, int, float]]) -> int:
        """Allocate on the service; the token it returns is scoped to this connection."""
        body: dict[str, Any] = {"roles": [[ref.key[0], io, index, float(frequency)]
                                          for ref, io, index, frequency in roles]}
        if dims is not None:
            body["dims"] = list(dims)
        reply = await self._require().request("allocate", body)
        token = reply.get("token")
        if token.__class__ is not int:
            raise UnavailableDevice("malformed allocate reply from the service")
        return int(token)

    async def buffer_request(self, buffer: int, verb: str, body: dict[str, Any],
                             memories: Collection[MemorySource] = ()) -> dict[str, Any]:
        """A ``copy_from`` / ``copy_to`` / ``free`` of a device memory on the service."""
        client = self._require()
        for memory in memories:
            await self.sharing.ensure(client, memory)
        return await client.request(verb, {"token": buffer, **body})

    def count_fallback(self, driver: str) -> None:
        """Record an allocation the service's driver refused and this client's shared memory
        served instead (the fallback happens here, so the count lives here)."""
        self._fallbacks[driver] = self._fallbacks.get(driver, 0) + 1

    def unmap(self, pool_id: int) -> None:
        """Tell the service to let go of ``pool_id`` (no reply awaited)."""
        self.sharing.unmap(self._client, pool_id)

    async def release(self, ref: CompiledRef) -> None:
        """Release on the service."""
        if not ref.released:
            ref.released = True
            await self._require().request("release", {"handle": ref.key[0]})

    async def refresh_statistics(self) -> RuntimeStatistics:
        """Fetch the service's statistics."""
        reply = await self._require().request("statistics", {})
        self._stats = RuntimeStatistics.from_wire(reply.get("pools"))
        self._stats_at = time.monotonic()
        return self.statistics()

    async def _refresh_quietly(self) -> None:
        try:
            with contextlib.suppress(NnrtError):  # the connection's loss is reported elsewhere
                await self.refresh_statistics()
        finally:
            self._refreshing = False

    def statistics(self) -> RuntimeStatistics:
        """The service's statistics as last fetched, with this client's allocation fallbacks:
        fetched at connect, and again in the background when a call finds them more than
        :data:`STATISTICS_MAX_AGE` seconds old (:meth:`refresh_statistics` fetches now)."""
        if (not self._refreshing and self._tg is not None and self._client is not None
                and time.monotonic() - self._stats_at > STATISTICS_MAX_AGE):
            self._refreshing = True
            self._tg.start_soon(self._refresh_quietly)
        mine = self._fallbacks
        return RuntimeStatistics({
            name: dataclasses.replace(pool, allocate_fallbacks=pool.allocate_fallbacks
                                      + mine.get(name, 0))
            for name, pool in self._stats.pools.items()})

    def device_info(self, device: str) -> Any:
        """The driver info of the service's pool named ``device`` (None if it has none)."""
        for name, info in zip(self._names, self._devices, strict=True):
            if name == device:
                return info
        return None

    def device_names(self) -> list[str]:
        """The service's pool names, in its order."""
        return list(self._names)

    def devices(self) -> list[Any]:
        """The service's drivers."""
        return list(self._devices)

    def close(self) -> None:
        """Disconnect (the service releases this client's models)."""
        if self._client is not None:
            self._client.close()
