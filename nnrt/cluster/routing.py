"""``ClusterRoute``: where one compiled model's executes run in a cluster runtime.

An execute of plain arrays goes to the node :meth:`RaySession.acquire` hands out: this
node's service over its Unix socket (the compiled model's own path, as in shared mode), or
another node's actor through Ray. An execute that fails because its node was lost is retried
on another node while its deadline allows — it names no device memory, so running it again
changes nothing but its result. Executes with caller ``outputs``, device memories or tensor
references need this node's service: they run there or fail, saying when the node was lost.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import numpy as np
import ray

from nnrt.cluster.nodes import NodeHandle
from nnrt.cluster.shipping import PUT_BYTES, model_bytes, pack_tensor, raise_reply
from nnrt.cluster.waiting import NodeLost, remaining, resolve
from nnrt.errors import BadData, BadState, DeadlineMissed, NnrtError, UnavailableDevice
from nnrt.memory import TensorRef
from nnrt.runtime.core import deadline_after

if TYPE_CHECKING:
    from nnrt.cluster.session import RaySession
    from nnrt.model.binding import Inputs
    from nnrt.runtime.compiled import CompiledModel

__all__ = ["ClusterRoute"]

log = logging.getLogger("nnrt.cluster")

#: Which actor of a node: ``(node id, lane index)``, :data:`NODE_ACTOR` for the node's own.
Where = tuple[str, int]
NODE_ACTOR = -1
#: The compile options another node compiles the model with (cache paths stay local).
REMOTE_OPTIONS = ("preference", "priority", "devices", "allow_fallback", "step_cost", "name",
                  "shape_variants")


class ClusterRoute:
    """Sends a compiled model's executes to the node its session picks (module docstring)."""

    def __init__(self, session: RaySession, compiled: CompiledModel,
                 options: dict[str, Any]) -> None:
        self._session = session
        self._owner = weakref.ref(compiled)  # the compiled model holds its route
        self._options = {k: options[k] for k in REMOTE_OPTIONS if k in options}
        self._options["preference"] = int(self._options.get("preference", 1))
        #: The model's digest and the object-store reference of its file bytes (put once, on
        #: the first execute sent to another node).
        self._shipped: tuple[str, Any] | None = None
        #: Per node and actor there (:data:`NODE_ACTOR` or a lane's index): the node actor's
        #: process when the model was prepared (a new one has lost it), and the handle that
        #: names it; and the prepares under way.
        self._prepared: dict[Where, tuple[int, str]] = {}
        self._preparing: dict[Where, anyio.Event] = {}
        #: The nodes whose lanes cannot run this model (it goes to their actors).
        self._unsuited: set[str] = set()

    async def execute(self, inputs: Inputs, outputs: Sequence[Any] | None,
                      timeout: float | None, copy: bool, priority: int | None) -> list[Any]:
        """Run one execute where the session says; see the module docstring."""
        compiled = self._compiled()
        deadline = deadline_after(timeout)
        if outputs is not None or not _plain(inputs):
            return await self._here_only(compiled, inputs, outputs, deadline, copy, priority)
        arguments: list[Any] | None = None
        tried: set[str] = set()
        while True:
            node = await self._session.acquire(tried, deadline)
            try:
                if node.is_local:
                    node.local += 1
                    return await compiled.execute_here(
                        inputs, timeout=_timeout(deadline), copy=copy, priority=priority)
                if arguments is None:
                    arguments = self._arguments(compiled, inputs)
                node.via_ray += 1
                return await self._remote(compiled, node, arguments, deadline)
            except UnavailableDevice as exc:
                node.failed += 1
                if not self._node_lost(compiled, node, exc):
                    raise
                tried.add(node.node)
                if deadline is not None and remaining(deadline) <= 0:
                    raise
                node.retried += 1
            except NnrtError:
                node.failed += 1
                raise
            finally:
                self._session.release(node)

    async def release(self) -> None:
        """Tell every node actor and lane that prepared the model to let go of it (no reply
        awaited: a node lost meanwhile has let go already)."""
        prepared, self._prepared = self._prepared, {}
        nodes = {node.node: node for node in self._session.nodes}
        for (where, lane), (pid, handle) in prepared.items():
            node = nodes[where]
            if lane != NODE_ACTOR or (pid == node.pid and node.state == "up"):
                _actor(node, lane).release.remote(handle)

    def _compiled(self) -> CompiledModel:
        compiled = self._owner()
        if compiled is None:
            raise BadState("the compiled model was collected")
        return compiled

    def _node_lost(self, compiled: CompiledModel, node: NodeHandle, exc: NnrtError) -> bool:
        """Whether ``exc`` means ``node`` was lost (then the session follows it)."""
        if isinstance(exc, NodeLost):
            lost = True
        else:  # this node's service: lost when the runtime's connection to it ended
            lost = node.is_local and getattr(compiled.core.backend, "lost", None) is not None
        if lost:
            self._session.lost(node, exc)
        return lost

    async def _here_only(self, compiled: CompiledModel, inputs: Inputs,
                         outputs: Sequence[Any] | None, deadline: float | None, copy: bool,
                         priority: int | None) -> list[Any]:
        """An execute only this node's service can run (outputs, device memories, refs)."""
        node = self._session.local
        if not node.is_local or node.state != "up":
            raise UnavailableDevice(
                f"node {node.node[:12]}: this node's nnrt service was lost ({node.state}); "
                "executes with caller outputs, device memories or tensor references need it, "
                "and the device memories it held are gone with it")
        node.local += 1
        try:
            return await compiled.execute_here(inputs, outputs=outputs,
                                               timeout=_timeout(deadline), copy=copy,
                                               priority=priority)
        except UnavailableDevice as exc:
            node.failed += 1
            if self._node_lost(compiled, node, exc):
                raise UnavailableDevice(f"{node.label}: this node's nnrt service was lost "
                                        f"with the request in flight, and the device "
                                        f"memories it held with it ({exc})") from None
            raise

    def _arguments(self, compiled: CompiledModel, inputs: Inputs) -> list[Any]:
        """The inputs in model order as Ray arguments: large arrays put once, here."""
        arrays = _in_order(compiled, inputs)
        return [ray.put(a) if a.nbytes >= PUT_BYTES else pack_tensor(a) for a in arrays]

    async def _remote(self, compiled: CompiledModel, node: NodeHandle, arguments: list[Any],
                      deadline: float | None) -> list[Any]:
        """One execute on another node: on a free lane of it that runs the model, else on its
        actor (the model prepared there first when that actor process has not got it);
        recorded in the model's metrics."""
        start = time.monotonic()
        try:
            lane = node.take_lane() if node.node not in self._unsuited else None
            try:
                reply = await self._call(compiled, node, lane, arguments, deadline)
            except _Unsuited as exc:
                self._unsuited.add(node.node)
                log.info("%s: %s runs on the node's actor, not a lane: %s", node.label,
                         compiled.name or "a model", exc)
                reply = await self._call(compiled, node, None, arguments, deadline)
            results = raise_reply(reply, node.label)
        except BaseException as exc:
            end = time.monotonic()
            compiled.metrics.request_done(end - start, exc, end)
            raise
        end = time.monotonic()
        compiled.metrics.alone_done(end - start, end)
        return results

    async def _call(self, compiled: CompiledModel, node: NodeHandle, lane: int | None,
                    arguments: list[Any], deadline: float | None) -> Any:
        """The reply of one execute on ``node``'s lane ``lane`` (given back after, unless it
        died) or, for None, its actor; prepared there first when needed."""
        where: Where = (node.node, NODE_ACTOR if lane is None else lane)
        actor = _actor(node, where[1])
        try:
            for _ in range(2):  # a restarted actor answers "missing": prepare, once more
                handle = await self._handle(compiled, node, where, deadline)
                call = actor.execute.remote(handle, _timeout(deadline), *arguments)
                reply = await resolve(call, deadline, node.label)
                if reply != ("missing",):
                    return reply
                self._prepared.pop(where, None)  # a new actor process: prepare there
            return reply
        except NodeLost as exc:
            if lane is None:
                raise
            # the lane's process died running it: a driver's crash, as a worker's, fails the
            # request without a retry elsewhere (it could crash there too); the lane is retired
            log.warning("%s: lane %d died: %s", node.label, lane, exc)
            lane = None
            raise UnavailableDevice(f"{node.label}: the lane running the request died "
                                    f"({exc})") from None
        finally:
            if lane is not None:
                node.give_lane(lane)

    async def _handle(self, compiled: CompiledModel, node: NodeHandle, where: Where,
                      deadline: float | None) -> str:
        """The model's handle on the actor ``where`` names: prepared there once per actor
        process (a concurrent first execute waits for the prepare under way)."""
        while True:
            known = self._prepared.get(where)
            # the node actor's restart loses its models; a lane's own restart answers "missing"
            if known is not None and (where[1] != NODE_ACTOR or known[0] == node.pid):
                return known[1]
            underway = self._preparing.get(where)
            if underway is None:
                break
            with anyio.move_on_after(None if deadline is None else remaining(deadline)):
                await underway.wait()
            if not underway.is_set():
                raise DeadlineMissed(f"{node.label}: the model was still being prepared there "
                                     "at the request's deadline")
            if where not in self._prepared:  # that prepare failed: try it ourselves
                break
        done = self._preparing[where] = anyio.Event()
        try:
            pid = node.pid
            handle = await self._prepare(compiled, node, _actor(node, where[1]), deadline)
            self._prepared[where] = pid, handle
            return handle
        finally:
            del self._preparing[where]
            done.set()

    async def _prepare(self, compiled: CompiledModel, node: NodeHandle, actor: Any,
                       deadline: float | None) -> str:
        """Have ``actor`` on ``node`` compile the model (its bytes put in the object store
        once, here); the handle its executes name it by."""
        if self._shipped is None:
            digest, data = await anyio.to_thread.run_sync(model_bytes, compiled.model)
            if self._shipped is None:
                self._shipped = digest, ray.put(data)
        digest, ref = self._shipped
        reply = await resolve(actor.prepare.remote(digest, [ref], self._options),
                              deadline, node.label)
        if isinstance(reply, tuple) and len(reply) == 2 and reply[0] == "ok" and isinstance(
                reply[1], str):
            return reply[1]
        if isinstance(reply, tuple) and len(reply) == 2 and reply[0] == "unsuited":
            raise _Unsuited(str(reply[1])[:300])
        raise_reply(reply, node.label)
        raise UnavailableDevice(f"{node.label}: malformed prepare reply")


class _Unsuited(Exception):
    """A lane answered that it cannot run the model (the node's actor runs it)."""


def _actor(node: NodeHandle, lane: int) -> Any:
    """The node's actor (``lane`` :data:`NODE_ACTOR`) or that lane's."""
    return node.actor if lane == NODE_ACTOR else node.lanes[lane]


def _timeout(deadline: float | None) -> float | None:
    return None if deadline is None else remaining(deadline)


def _plain(inputs: Inputs) -> bool:
    """Whether every input is a plain array (no device memory, no tensor reference)."""
    from nnrt.runtime.buffers import DeviceMemory  # noqa: PLC0415 - the runtime's own

    values = inputs.values() if isinstance(inputs, Mapping) else inputs
    return not any(isinstance(v, DeviceMemory | TensorRef) for v in values)


def _in_order(compiled: CompiledModel, inputs: Inputs) -> list[np.ndarray[Any, Any]]:
    """``inputs`` (a list, or a dict by position or name) as arrays in model input order."""
    infos = compiled.inputs
    if isinstance(inputs, Mapping):
        names = {info.name: i for i, info in enumerate(infos) if info.name}
        by_index: dict[int, Any] = {}
        for key, value in inputs.items():
            index = names.get(key) if isinstance(key, str) else key
            if not isinstance(index, int) or not 0 <= index < len(infos):
                raise BadData(f"execute: unknown input {key!r:.40}; the model's inputs are "
                              f"{[info.name or i for i, info in enumerate(infos)]}")
            by_index[index] = value
        if len(by_index) != len(infos):
            raise BadData(f"execute: expected {len(infos)} inputs, got {len(by_index)}")
        values = [by_index[i] for i in range(len(infos))]
    else:
        values = list(inputs)
        if len(values) != len(infos):
            raise BadData(f"execute: expected {len(infos)} inputs, got {len(values)}")
    return [np.asarray(v) for v in values]
