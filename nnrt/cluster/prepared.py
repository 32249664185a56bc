"""``PreparedModels``: the models one node's actor compiled for clients on other nodes.

A node's :class:`~nnrt.cluster.actor.NodeService` keeps one: a model arrives once per actor
process as model-file bytes through Ray's object store (``prepare``, checked against its
digest), is compiled on that actor's connection to the node's service and named by a handle
(:func:`model_handle`, which the node's lanes use too) that executes then send; a handle the
actor does not know (a restarted actor) is answered ``("missing",)`` so that the client
prepares again.
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

from nnrt.cluster.shipping import check_digest, error_reply, model_from, pack_tensor, unpack_tensor
from nnrt.errors import BadData, NnrtError
from nnrt.runtime.compiled import CompiledModel
from nnrt.runtime.runtime import Runtime

__all__ = ["COMPILE_OPTIONS", "PreparedModels", "Users", "model_handle"]

#: The ``compile`` options a client may send with a model.
COMPILE_OPTIONS = ("preference", "priority", "devices", "allow_fallback", "step_cost", "name",
                   "shape_variants")


class Users:
    """Per model handle, the clients' prepares not yet released (their compiled models)."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    def add(self, handle: str) -> None:
        """One more client prepared ``handle``."""
        self._counts[handle] = self._counts.get(handle, 0) + 1

    def drop(self, handle: object) -> bool:
        """A client released ``handle``: whether it was the last (the model goes then)."""
        if not isinstance(handle, str):
            return False
        left = self._counts.get(handle, 0) - 1
        if left > 0:
            self._counts[handle] = left
            return False
        self._counts.pop(handle, None)
        return True

    def clear(self) -> None:
        """Forget every count (the models go all at once)."""
        self._counts.clear()


class PreparedModels:
    """Compiled models by handle, each compiled once, counted by the clients that prepared it."""

    def __init__(self) -> None:
        self._models: dict[str, asyncio.Future[CompiledModel]] = {}
        self._users = Users()
        #: Executes that arrived through Ray.
        self.received = 0

    def __len__(self) -> int:
        return len(self._models)

    async def prepare(self, runtime: Runtime, directory: str, digest: str, model: list[Any],
                      options: dict[str, Any]) -> tuple[Any, ...]:
        """Compile the model named ``digest`` (``model``: a list holding the object reference
        of its file bytes, fetched once and written into ``directory``) with ``options`` on
        ``runtime``; replies ``("ok", handle)`` with the handle :meth:`execute` takes."""
        try:
            handle = model_handle(check_digest(digest), options)
            await self._compiled(runtime, directory, handle, digest, model, options)
            self._users.add(handle)
            return ("ok", handle)
        except NnrtError as exc:
            return error_reply(exc)

    async def release(self, handle: object) -> None:
        """A client let go of the model it prepared as ``handle``; the last one releases it."""
        if not self._users.drop(handle):
            return
        pending = self._models.pop(str(handle), None)
        if pending is not None and pending.done() and pending.exception() is None:
            await pending.result().release()

    async def execute(self, handle: object, timeout: float | None, inputs: tuple[Any, ...]
                      ) -> tuple[Any, ...]:
        """Run one execute of the model :meth:`prepare` named ``handle``; ``("missing",)``
        when it was not prepared here (a restarted actor)."""
        self.received += 1
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

    async def release_all(self) -> None:
        """Release every model compiled here (the actor stops, or lost its service)."""
        models, self._models = self._models, {}
        self._users.clear()
        for pending in models.values():
            if pending.done() and pending.exception() is None:
                await pending.result().release()

    async def _compiled(self, runtime: Runtime, directory: str, handle: str, digest: str,
                        model: list[Any], options: dict[str, Any]) -> CompiledModel:
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
                loaded = model_from(data, digest, directory)
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
