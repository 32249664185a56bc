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
import hashlib
import logging
import os
from typing import Any

import ray

from nnrt.cluster.process import ServiceProcess
from nnrt.cluster.shipping import (
    check_digest,
    error_reply,
    model_from,
    pack_tensor,
    unpack_tensor,
)
from nnrt.errors import BadData, NnrtError
from nnrt.runtime.compiled import CompiledModel
from nnrt.runtime.runtime import Runtime

__all__ = ["NodeService", "model_handle"]

log = logging.getLogger("nnrt.cluster")

#: The ``compile`` options a client may send with a model.
COMPILE_OPTIONS = ("preference", "priority", "devices", "allow_fallback", "step_cost", "name",
                   "shape_variants")


class NodeService:
    """One node's nnrt service, reachable through Ray (see the module docstring)."""

    def __init__(self, arguments: list[str], start_timeout: float) -> None:
        self._start_timeout = start_timeout
        self._process = ServiceProcess(arguments)
        #: The runtime connected to the service, once :meth:`_runtime` made it.
        self._connected: asyncio.Future[Runtime] | None = None
        self._holder: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        #: Compiled models by handle (:func:`model_handle`), each compiled once.
        self._models: dict[str, asyncio.Future[CompiledModel]] = {}
        #: Per handle: the prepares not yet released (clients' compiled models using it).
        self._users: dict[str, int] = {}
        #: Executes that arrived through Ray.
        self._received = 0

    async def start(self) -> dict[str, Any]:
        """Wait until the service runs; what a client needs to know about it."""
        await self._runtime()
        return {"node": ray.get_runtime_context().get_node_id(), "pid": os.getpid(),
                "socket": self._process.socket, "directory": self._process.directory,
                "service_pid": self._process.pid}

    async def statistics(self) -> dict[str, Any]:
        """How many executes arrived through Ray, and how many models are compiled here."""
        return {"received": self._received, "models": len(self._models), "pid": os.getpid(),
                "directory": self._process.directory, "service_pid": self._process.pid}

    async def prepare(self, digest: str, model: list[Any], options: dict[str, Any]
                      ) -> tuple[Any, ...]:
        """Compile the model named ``digest`` (``model``: a list holding the object reference
        of its file bytes, fetched here once) with ``options``; replies ``("ok", handle)``
        with the handle :meth:`execute` takes."""
        try:
            runtime = await self._runtime()
            handle = model_handle(check_digest(digest), options)
            await self._compiled(runtime, handle, digest, model, options)
            self._users[handle] = self._users.get(handle, 0) + 1
            return ("ok", handle)
        except NnrtError as exc:
            return error_reply(exc)

    async def release(self, handle: str) -> None:
        """A client let go of the model it prepared as ``handle``; the last one releases it."""
        users = self._users.get(handle, 0) - 1
        if users > 0:
            self._users[handle] = users
            return
        self._users.pop(handle, None)
        pending = self._models.pop(handle, None) if isinstance(handle, str) else None
        if pending is not None and pending.done() and pending.exception() is None:
            await pending.result().release()

    async def execute(self, handle: str, timeout: float | None, *inputs: Any
                      ) -> tuple[Any, ...]:
        """Run one execute of the model :meth:`prepare` named ``handle`` on this node's
        service; ``("missing",)`` when this actor has not prepared it (a restarted actor)."""
        self._received += 1
        pending = self._models.get(handle) if isinstance(handle, str) else None
        if pending is None:
            return ("missing",)
        try:
            arrays = [unpack_tensor(value, f"input {k}") for k, value in enumerate(inputs)]
            compiled = await asyncio.shield(pending)
            outputs = await compiled.execute(arrays, timeout=timeout)
            return ("ok", [pack_tensor(a) for a in outputs])
        except NnrtError as exc:
            return error_reply(exc)

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
                for pending in self._models.values():
                    if pending.done() and pending.exception() is None:
                        await pending.result().release()
        except BaseException as exc:  # the service did not start, or was lost
            if not connected.done():
                connected.set_exception(exc if isinstance(exc, NnrtError) else
                                        NnrtError(f"the node's service failed: {exc}"))
            log.warning("nnrt node service: %s", exc)

    async def _compiled(self, runtime: Runtime, handle: str, digest: str, model: list[Any],
                        options: dict[str, Any]) -> CompiledModel:
        """The model compiled here with ``options``: compiled by the first prepare naming
        it, awaited by the others."""
        pending = self._models.get(handle)
        if pending is None or (pending.done() and pending.exception() is not None):
            pending = asyncio.get_running_loop().create_future()
            self._models[handle] = pending
            try:
                if not (isinstance(model, list) and len(model) == 1):
                    raise BadData("expected the model's object reference in a list")
                data = await model[0]
                loaded = model_from(data, digest, self._process.directory)
                chosen = {k: v for k, v in options.items() if k in COMPILE_OPTIONS}
                pending.set_result(await runtime.compile(loaded, **chosen))
            except BaseException as exc:
                pending.set_exception(exc)
                raise
        return await asyncio.shield(pending)


def model_handle(digest: str, options: dict[str, Any]) -> str:
    """What names a model compiled with ``options`` on a node (its digest and the options')."""
    chosen = sorted((k, v) for k, v in options.items() if k in COMPILE_OPTIONS)
    return hashlib.sha256(f"{digest} {chosen!r}".encode()).hexdigest()[:32]
