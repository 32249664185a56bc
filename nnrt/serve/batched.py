"""Batching in shared mode, service side: one batched model per identical model, for all clients.

A client that compiles with ``batching=`` sends the model and its batching options
(``compile_batched``). The service keeps one batched compiled model per identical model —
the same wire bytes, its constants' bytes included, read from the client's pools at compile —
batching options and compile options: :class:`BatchedModels`, shared by every session and
counted by them; the last session to release it (or to disconnect) releases it. Its constants
are copied into memory the service owns at the first compile (a client's pools go away with the
client). It is compiled by the service's own :class:`~nnrt.runtime.runtime.Runtime` over the
service's pools (``Runtime.over``), so batching is the embedded batcher, unchanged.

Each session's :class:`BatchedHandles` serves its requests of such models (``execute_batched``):
inputs are decoded inline or as read-only views of that client's own mapped pools (bounds
checked), the request joins the shared batcher, and its own rows come back inline or copied into
output regions of that client's pools — never as a view of the service's or another client's
memory. See docs/batching-shared.md.
"""

from __future__ import annotations

import hashlib
import time
from typing import TYPE_CHECKING, Any, cast

import anyio
import msgpack
import numpy as np

from nnrt.errors import BadData, BadState, OpFailed, ResourceExhausted
from nnrt.ipc.framing import ProtocolError
from nnrt.ipc.messages import (
    decode_ref,
    decode_tensor,
    encode_tensor,
    encode_written,
    read_deadline,
)
from nnrt.model.model import Model
from nnrt.model.types import ExecutionPreference, Priority
from nnrt.model.wire import model_from_wire, model_to_wire
from nnrt.runtime.served import batching_from_wire

if TYPE_CHECKING:
    from nnrt.memory.mapped import MappingTable
    from nnrt.runtime.compiled import CompiledModel
    from nnrt.runtime.runtime import Runtime

__all__ = ["MAX_BATCHED_HANDLES", "BatchedHandles", "BatchedModel", "BatchedModels"]

Array = np.ndarray[Any, Any]
_MAX_SHAPE_VARIANTS = 64
#: Handles on batched models one client may hold at once.
MAX_BATCHED_HANDLES = 1024


class BatchedModel:
    """One batched compiled model of the service, and the sessions' handles on it."""

    __slots__ = ("compiled", "error", "key", "ready", "users")

    def __init__(self, key: bytes) -> None:
        #: The digest of the model's wire bytes, its batching and its compile options.
        self.key = key
        self.compiled: CompiledModel | None = None
        self.error: Exception | None = None
        #: Set once compiled (or failed): identical compiles meanwhile wait for it.
        self.ready = anyio.Event()
        #: Handles of sessions on it (each compile counts once).
        self.users = 0

    def statistics(self) -> dict[str, Any]:
        """Its key (hex prefix), users, batched executions, requests and mixed batches."""
        batcher = None if self.compiled is None else self.compiled.batcher
        return {"model": self.key.hex()[:16], "users": self.users,
                "executions": 0 if batcher is None else batcher.executions,
                "requests": 0 if batcher is None else batcher.requests,
                "mixed": 0 if batcher is None else batcher.mixed}


class BatchedModels:
    """The service's batched models, by content (see the module docstring)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._models: dict[bytes, BatchedModel] = {}

    def __len__(self) -> int:
        return len(self._models)

    async def acquire(self, model: Model, body: dict[str, Any]) -> BatchedModel:
        """The batched model for a ``compile_batched`` request: an identical one already held
        (counted once more), or a new one compiled with its constants copied into the
        service's memory."""
        batching = batching_from_wire(body["batching"])
        options = _options(body)
        owned, key = await anyio.to_thread.run_sync(_owned, model, body["batching"], options)
        while True:
            entry = self._models.get(key)
            if entry is None:
                break
            await entry.ready.wait()
            if entry.compiled is not None and self._models.get(key) is entry:
                entry.users += 1
                return entry
            if entry.error is not None:
                raise entry.error
        entry = BatchedModel(key)
        self._models[key] = entry
        try:
            entry.compiled = await self.runtime.compile(
                owned, batching=batching, preference=ExecutionPreference(options[0]),
                priority=cast(Priority, options[1]), devices=options[2],
                shape_variants=options[3])
        except Exception as exc:
            entry.error = exc
            raise
        finally:
            if entry.compiled is None:
                del self._models[key]
            entry.ready.set()
        entry.users += 1
        return entry

    async def release(self, entry: BatchedModel) -> None:
        """A session lets go of one handle on ``entry``; the last one releases it."""
        entry.users -= 1
        if entry.users > 0:
            return
        if self._models.get(entry.key) is entry:
            del self._models[entry.key]
        if entry.compiled is not None:
            await entry.compiled.release()

    def statistics(self) -> list[dict[str, Any]]:
        """Per batched model held: :meth:`BatchedModel.statistics`."""
        return [entry.statistics() for entry in self._models.values()
                if entry.compiled is not None]


def _owned(model: Model, batching: dict[str, Any], options: tuple[Any, ...]
           ) -> tuple[Model, bytes]:
    """``model`` with its constants copied out of the client's pools (by value: the
    service's), and the key of the batched model: the digest of those wire bytes, the
    batching and the compile options."""
    wire = model_to_wire(model)
    key = hashlib.sha256(msgpack.packb([wire, batching, list(options)],
                                       use_bin_type=True)).digest()
    return model_from_wire(wire), key


def _options(body: dict[str, Any]) -> tuple[int, int, list[str] | None, int]:
    """The checked compile options of a ``compile_batched`` request (part of its key)."""
    preference = body.get("preference", int(ExecutionPreference.FAST_SINGLE_ANSWER))
    if preference not in {int(p) for p in ExecutionPreference}:
        raise BadData(f"compile_batched: unknown preference {preference}")
    priority = body.get("priority", int(Priority.MEDIUM))
    if not Priority.LOW <= priority <= Priority.HIGH:
        raise BadData(f"compile_batched: priority must be from {int(Priority.LOW)} to "
                      f"{int(Priority.HIGH)}")
    devices = body.get("devices")
    if devices is not None and not (0 < len(devices) <= 64 and all(
            d.__class__ is str and len(d) <= 256 for d in devices)):
        raise BadData("compile_batched: devices must be a list of driver names")
    variants = body.get("shape_variants", 8)
    if not 1 <= variants <= _MAX_SHAPE_VARIANTS:
        raise BadData(f"compile_batched: shape_variants must be from 1 to "
                      f"{_MAX_SHAPE_VARIANTS}")
    return preference, priority, devices, variants


class BatchedHandles:
    """One session's handles on batched models, and its ``*_batched`` requests.

    ``memories`` is the session's own table of mapped pools: a request can only name those;
    ``origin`` tells its requests apart from other sessions' in the statistics.
    """

    def __init__(self, models: BatchedModels | None, memories: MappingTable,
                 origin: int) -> None:
        self._models = models
        self._memories = memories
        self._origin = origin
        self._handles: dict[int, BatchedModel] = {}

    def _registry(self) -> BatchedModels:
        if self._models is None:
            raise BadData("this service does not batch across clients")
        return self._models

    async def compile(self, body: dict[str, Any], handle: int) -> dict[str, Any]:
        """``compile_batched``: the model rebuilt and checked here (untrusted)."""
        models = self._registry()
        if len(self._handles) >= MAX_BATCHED_HANDLES:
            raise ResourceExhausted(f"compile_batched: this client holds {len(self._handles)} "
                                    "batched models (the most a client may); release some")
        model = model_from_wire(body["model"], memories=self._memories.resolve)
        self._handles[handle] = await models.acquire(model, body)
        return {"handle": handle}

    def _entry(self, handle: Any) -> BatchedModel:
        entry = self._handles.get(handle) if handle.__class__ is int else None
        if entry is None or entry.compiled is None:
            raise BadData(f"unknown batched handle {handle!r:.40} (handles belong to the "
                          "connection that compiled them)")
        return entry

    async def execute(self, body: dict[str, Any]) -> dict[str, Any]:
        """``execute_batched``: one request, merged with any client's; its outputs only."""
        compiled = self._entry(body["handle"]).compiled
        if compiled is None or compiled.batcher is None:  # pragma: no cover - _entry checks
            raise BadState("the batched model is not compiled")
        timeout = None
        if body.get("deadline") is not None:
            deadline = read_deadline(body["deadline"], "execute_batched")
            if deadline is not None:
                timeout = max(deadline - time.monotonic(), 0.0)
        inputs = [self._input(entry, f"input {j}") for j, entry in enumerate(body["inputs"])]
        targets = body.get("outputs")
        urgent = body.get("priority", compiled.priority) > compiled.priority
        batcher = compiled.batcher
        checked = batcher.check(inputs)
        if checked is None:  # more rows than a batch holds: alone
            results = await compiled.execute_alone(inputs, None, timeout, False)
        else:
            results = await batcher.execute(*checked, timeout, False, urgent, self._origin)
        if targets is not None and len(targets) != len(results):
            raise BadData(f"execute_batched: {len(targets)} outputs named, the model has "
                          f"{len(results)}")
        return {"outputs": [self._output(result, None if targets is None else targets[j], j)
                            for j, result in enumerate(results)]}

    def _input(self, entry: Any, where: str) -> Array:
        """An input inline, or a read-only view of this client's pool (bounds checked)."""
        try:
            if entry.__class__ is list and len(entry) == 5:
                ref = decode_ref(entry, where)
                pool = self._memories.get(ref.pool, where)
                return pool.array(ref.dtype, ref.shape, ref.offset, ref.length, where)
            return decode_tensor(entry, where)
        except ProtocolError as exc:
            raise BadData(str(exc)) from None

    def _output(self, result: Array, target: Any, j: int) -> list[Any]:
        """Output ``j`` inline, or copied into the region of this client's pool it named."""
        if result.dtype == np.int64:  # widened for callers; int32 inside and on the wire
            result = result.astype(np.int32)
        if target is None:
            return encode_tensor(np.ascontiguousarray(result))
        where = f"output {j}"
        try:
            ref = decode_ref(target, where)
        except ProtocolError as exc:
            raise BadData(str(exc)) from None
        pool = self._memories.get(ref.pool, where)
        itemsize = ref.dtype.itemsize
        flat = pool.array(ref.dtype, (ref.length // itemsize,), ref.offset,
                          ref.length - ref.length % itemsize, where, output=True)
        if result.dtype != ref.dtype or result.size > flat.size:
            raise OpFailed(f"{where}: {result.dtype} of shape {list(result.shape)} does not fit "
                           f"the region named ({ref.dtype}, {flat.size} elements)")
        flat[:result.size] = result.reshape(-1)
        return encode_written(result)

    async def release(self, handle: Any) -> dict[str, Any]:
        """``release_batched``: let go of one handle."""
        entry = self._entry(handle)
        del self._handles[handle]
        await self._registry().release(entry)
        return {}

    def statistics(self) -> list[dict[str, Any]]:
        """The service's batched models (all clients'; counts only, no data)."""
        return [] if self._models is None else self._models.statistics()

    async def release_all(self) -> None:
        """The session ends: let go of every handle it holds."""
        handles, self._handles = self._handles, {}
        for entry in handles.values():
            if self._models is not None:
                await self._models.release(entry)
