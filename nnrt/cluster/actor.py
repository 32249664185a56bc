"""``NodeService``: the Ray actor that runs nnrt's service on one node.

Placed on its node by the client (``NodeAffinitySchedulingStrategy``, not soft), it starts
``nnrt serve`` there (:class:`~nnrt.cluster.process.ServiceProcess`) and connects its own
``Runtime(connect=socket)`` to it. Clients on the node talk to the service over the socket;
clients on other nodes call :meth:`NodeService.prepare` once per model (the model arrives as
model-file bytes through Ray's object store and is compiled here) and then
:meth:`NodeService.execute`, which runs each request through that runtime. A restarted actor
(Ray's ``max_restarts``) starts a new service and answers ``("missing",)`` to executes of
models it has not prepared: the client prepares them again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import Any

import ray

from nnrt.cluster.prepared import PreparedModels
from nnrt.cluster.process import ServiceProcess
from nnrt.cluster.shipping import error_reply
from nnrt.errors import NnrtError
from nnrt.runtime.runtime import Runtime

__all__ = ["NodeService"]

log = logging.getLogger("nnrt.cluster")


class NodeService:
    """One node's nnrt service, reachable through Ray (see the module docstring)."""

    def __init__(self, arguments: list[str], start_timeout: float) -> None:
        self._start_timeout = start_timeout
        self._process = ServiceProcess(arguments)
        #: The runtime connected to the service, once :meth:`_runtime` made it.
        self._connected: asyncio.Future[Runtime] | None = None
        self._holder: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._models = PreparedModels()

    async def start(self) -> dict[str, Any]:
        """Wait until the service runs; what a client needs to know about it."""
        await self._runtime()
        return {"node": ray.get_runtime_context().get_node_id(), "pid": os.getpid(),
                "socket": self._process.socket, "directory": self._process.directory,
                "service_pid": self._process.pid}

    async def statistics(self) -> dict[str, Any]:
        """How many executes arrived through Ray, and how many models are compiled here."""
        return {"received": self._models.received, "models": len(self._models),
                "pid": os.getpid(), "directory": self._process.directory,
                "service_pid": self._process.pid}

    async def prepare(self, digest: str, model: list[Any], options: dict[str, Any]
                      ) -> tuple[Any, ...]:
        """Compile the model named ``digest`` here (:meth:`PreparedModels.prepare`)."""
        try:
            runtime = await self._runtime()
        except NnrtError as exc:
            return error_reply(exc)
        return await self._models.prepare(runtime, self._process.directory, digest, model,
                                          options)

    async def release(self, handle: str) -> None:
        """A client let go of the model it prepared as ``handle``; the last one releases it."""
        await self._models.release(handle)

    async def execute(self, handle: str, timeout: float | None, *inputs: Any
                      ) -> tuple[Any, ...]:
        """Run one execute of the model :meth:`prepare` named ``handle`` on this node's
        service; ``("missing",)`` when this actor has not prepared it (a restarted actor)."""
        return await self._models.execute(handle, timeout, inputs)

    async def stop(self) -> None:
        """Close the runtime, stop the service and remove its directory."""
        self._stopping.set()
        holder = self._holder
        if holder is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(holder, 30)
        await asyncio.get_running_loop().run_in_executor(None, self._process.close)

    async def _runtime(self) -> Runtime:
        if self._connected is None:
            self._connected = asyncio.get_running_loop().create_future()
            self._holder = asyncio.create_task(self._hold(self._connected))
        return await asyncio.shield(self._connected)

    async def _hold(self, connected: asyncio.Future[Runtime]) -> None:
        """Keep the runtime open (entered and left in this one task, as anyio requires)."""
        try:
            await self._process.wait_ready(self._start_timeout)
            async with Runtime(connect=self._process.socket) as runtime:
                connected.set_result(runtime)
                await self._stopping.wait()
                await self._models.release_all()
        except BaseException as exc:  # the service did not start, or was lost
            if not connected.done():
                connected.set_exception(exc if isinstance(exc, NnrtError) else
                                        NnrtError(f"the node's service failed: {exc}"))
            log.warning("nnrt node service: %s", exc)
