"""A client's session with the shared service: its handles, pools, device memories, limits.

Each client connection is a session: identified by the connection and its ``SO_PEERCRED``
(pid, uid, gid), it owns the models it compiled, the pools it shared and the device memories it
allocated — all scoped to the session (another client naming them gets "unknown …") and released
when it disconnects; the nnrt blobs of a client that died are unlinked then. Requests run
concurrently and are answered as they finish; a client that breaks the protocol loses its
connection. Each session is bounded (:class:`~nnrt.serve.clients.ClientLimits`). Its handles
on the models the service batches across clients are its
:class:`~nnrt.serve.batched.BatchedHandles`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import math
import os
import socket
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from anyio.abc import TaskGroup

from nnrt.cache.directory import CacheDirectory
from nnrt.cache.files import check_token
from nnrt.errors import BadData, NnrtError, ResourceExhausted
from nnrt.ipc.framing import ProtocolError
from nnrt.ipc.messages import (
    DEVICE,
    PROTOCOL_VERSION,
    Status,
    check_request,
    decode_ref,
    decode_tensor,
    encode_error,
    error_from,
    read_deadline,
)
from nnrt.memory.mapped import MappedMemory, MappingTable
from nnrt.model.model import Model
from nnrt.model.wire import model_from_wire, model_to_wire
from nnrt.model.wire_fields import describe
from nnrt.runtime.backends.base import CompiledRef
from nnrt.runtime.backends.embedded import BufferHandle, EmbeddedBackend
from nnrt.runtime.backends.framed import FramedSocket, running_asyncio
from nnrt.runtime.compile.caching import StepCache
from nnrt.serve.batched import BatchedHandles, BatchedModels
from nnrt.serve.clients import (
    ClientLimits,
    PeerCredentials,
    peer_credentials,
)
from nnrt.serve.forwarding import REPLY_BACKLOG, Forwarded
from nnrt.serve.metrics import ForwardedModel, ServiceMetrics
from nnrt.serve.received import ReceivedMemory, sweep_when_gone
from nnrt.serve.shapes import Shapes, io_shapes

__all__ = ["Session"]

log = logging.getLogger("nnrt.serve")
_session_ids = itertools.count(1)


class Session:
    """One client connection of the service (see the module docstring)."""

    def __init__(self, backend: EmbeddedBackend, sock: socket.socket,
                 limits: ClientLimits | None = None,
                 creds: PeerCredentials | None = None,
                 metrics: ServiceMetrics | None = None,
                 batched: BatchedModels | None = None) -> None:
        self.backend = backend
        #: The service's metrics; this session's compiled models in it, by handle.
        self.metrics = metrics or ServiceMetrics(backend)
        self.measured: dict[int, ForwardedModel] = {}
        self.limits = limits or ClientLimits()
        self.creds = creds or peer_credentials(sock)
        self.framed = FramedSocket(sock)
        self.handles: dict[int, CompiledRef] = {}
        #: Per handle, (itemsize, dims) of its model's inputs and outputs (device memory sizes).
        self.shapes: dict[int, Shapes] = {}
        #: The pools this client shared: mapped (checked) here, by the client's ids.
        self.memories = MappingTable(max_pools=self.limits.max_pools)
        self.received: dict[int, ReceivedMemory] = {}
        #: This client's handles on the models the service batches across clients.
        self.batched = BatchedHandles(batched, self.memories, next(_session_ids))
        #: This client's device memories: session token -> the worker-side buffer.
        self.buffers: dict[int, BufferHandle] = {}
        #: Bytes charged per device token, and their sum (``max_device_bytes``).
        self.buffer_bytes: dict[int, int] = {}
        self.buffer_total = 0
        self._next_token = 1
        self.running: dict[int, anyio.CancelScope | Forwarded] = {}
        #: The event loop under asyncio (executes are then forwarded at arrival), else None.
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Requests received and not yet answered (running or with their reply being sent).
        self.unanswered = 0
        self._drained: anyio.Event | None = None
        self.greeted = False
        self._next_handle = 1
        self._tg: TaskGroup | None = None
        #: The verbs served here (``map``, ``unmap`` and ``cancel`` are handled on arrival).
        self._handlers: dict[str, Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]] = {
            "hello": self._do_hello, "ping": self._do_ping, "statistics": self._do_statistics,
            "supported": self._do_supported, "compile": self._do_compile,
            "execute": self._do_execute, "release": self._do_release,
            "allocate": self._do_allocate, "free": self._do_free,
            "copy_from": self._do_copy_from, "copy_to": self._do_copy_to,
            "compile_batched": self._do_compile_batched,
            "execute_batched": self.batched.execute,
            "release_batched": self._do_release_batched,
        }

    async def run(self) -> None:
        if running_asyncio():
            self._loop = asyncio.get_running_loop()
            self.framed.use_asyncio(self._loop)
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                try:
                    await self.framed.receive_loop(self._on_message)
                except ProtocolError as exc:
                    log.warning("client pid %d broke the protocol: %s", self.creds.pid, exc)
                except Exception as exc:  # a frame no check foresaw: this client only
                    log.warning("client pid %d: unexpected %s reading its requests; closing "
                                "its connection", self.creds.pid, type(exc).__name__)
                tg.cancel_scope.cancel()
        finally:
            for running in list(self.running.values()):  # the forwarded ones: tell workers
                if isinstance(running, Forwarded):
                    running.cancel()
            self.framed.close()
            self.framed.use_asyncio(None)
            with anyio.CancelScope(shield=True):
                for ref in self.handles.values():
                    with contextlib.suppress(NnrtError):
                        await self.backend.release(ref)
            self.handles.clear()
            for measured in self.measured.values():
                self.metrics.remove(measured)
            self.measured.clear()
            with anyio.CancelScope(shield=True):
                await self.batched.release_all()
            for buffer in self.buffers.values():
                if buffer.slot.client is buffer.client and buffer.client.lost is None:
                    with contextlib.suppress(NnrtError, OSError):  # its worker may be dying
                        buffer.client.notify("free", {"token": buffer.token})
            self.buffers.clear()
            self.buffer_bytes.clear()
            self.buffer_total = 0
            for received in self.received.values():
                self.backend.unmap(received.id)
                received.close()
            self.received.clear()
            self.memories.close_all()
        # a client that died leaves its blobs behind; its connection closes while it is still
        # exiting, so wait (bounded) for the process to be gone before sweeping
        await sweep_when_gone(self.creds.pid)

    def _on_message(self, message: Any) -> Any:
        request_id, verb, body = check_request(message)
        if not self.greeted and verb != "hello":
            raise ProtocolError(f"{describe(verb)} before hello")
        if verb == "cancel":
            scope = self.running.get(body["target"])
            if scope is not None:
                scope.cancel()
            return
        if verb in ("map", "unmap"):  # descriptors are claimed in arrival order: at once
            try:
                self._map(request_id, body) if verb == "map" else self._unmap(request_id, body)
            except NnrtError as exc:
                self._spawn(request_id, _raise, exc)
            else:
                self._spawn(request_id, _ok)
            return
        handler = self._handlers.get(verb)
        if handler is None:
            raise ProtocolError(f"verb {verb!r} is not served here (it serves "
                                f"{', '.join(self._handlers)}, map, unmap, cancel)")
        if verb == "hello":
            self.greeted = True
        if self.unanswered >= self.limits.max_in_flight:
            self._spawn(request_id, self._refuse)
        elif verb != "execute" or not self._execute_now(request_id, body):
            self._spawn(request_id, handler, body)
        if self.unanswered >= 2 * self.limits.max_in_flight:
            return self._backpressure()  # refusals pile up unread: stop reading this client
        return None

    async def _backpressure(self) -> None:
        """Wait until the client has read enough replies (nothing more is read meanwhile)."""
        log.warning("client pid %d has %d unanswered requests (it does not read its replies); "
                    "reading from it is paused", self.creds.pid, self.unanswered)
        while self.unanswered >= self.limits.max_in_flight:
            self._drained = anyio.Event()
            await self._drained.wait()

    def _spawn(self, request_id: int, handler: Callable[..., Any], *args: Any) -> None:
        scope = anyio.CancelScope()
        self.running[request_id] = scope
        if self._tg is None:  # pragma: no cover - run() sets it before reading
            raise ProtocolError("session not running")
        self.unanswered += 1
        self._tg.start_soon(self._answer, request_id, scope, handler, args)

    async def _answer(self, request_id: int, scope: anyio.CancelScope,
                      handler: Callable[..., Any], args: tuple[Any, ...]) -> None:
        status, reply = Status.OK, {}
        try:
            with scope:
                reply = await handler(*args)
            if scope.cancelled_caught:
                status, reply = Status.MISSED_DEADLINE, {"message": "cancelled"}
        except Exception as exc:
            if not isinstance(exc, NnrtError):
                log.exception("request %d failed unexpectedly", request_id)
            status, reply = encode_error(exc)
        finally:
            if self.running.get(request_id) is scope:
                del self.running[request_id]
        try:
            with contextlib.suppress(NnrtError, OSError):
                await self.framed.send([request_id, status, reply])
                await self.framed.drain(REPLY_BACKLOG)  # held while the client does not read
        finally:
            self.unanswered -= 1
            if self._drained is not None and self.unanswered < self.limits.max_in_flight:
                self._drained.set()

    def _map(self, request_id: int, body: dict[str, Any]) -> None:
        fds = self.framed.reader.take_fds(body.get("nfds", 0))
        kept = -1
        try:
            if fds:
                kept = os.dup(fds[0])
            mapped = self.memories.map(f"request {request_id}", body, fds)  # closes ``fds``
        except BaseException:
            if kept >= 0:
                os.close(kept)
            raise
        self.received[mapped.id] = ReceivedMemory(mapped, kept, body.get("name"))

    def _unmap(self, request_id: int, body: dict[str, Any]) -> None:
        self.memories.unmap(body["pool"], f"request {request_id}")
        received = self.received.pop(body["pool"], None)
        if received is not None:
            self.backend.unmap(received.id)
            received.close()

    def _shared(self, pool_id: Any, where: str) -> ReceivedMemory:
        self.memories.get(pool_id, where)  # the precise error for unknown / released ids
        return self.received[pool_id]

    def _translate(self, entries: list[Any], where: str, used: dict[int, ReceivedMemory],
                   buffers: list[BufferHandle] | None = None) -> list[Any]:
        """Tensor entries with the client's pool ids and buffer tokens replaced by the
        service-wide ones (a token or pool id of another client is unknown here)."""
        translated: list[Any] = []
        for position, entry in enumerate(entries):
            at = f"{where} {position}"
            try:  # checked as the worker will: what it would refuse is refused here (BadData),
                # so that no client can make a shared worker drop its connection
                if entry is None and where in ("output", "target"):
                    translated.append(None)
                    continue
                if entry.__class__ is list and entry and entry[0] == DEVICE:
                    if len(entry) != 2:
                        raise BadData(f"{at}: a device argument is [\"device\", token]")
                    buffer = self._buffer(entry[1], at)
                    if buffers is not None:
                        buffers.append(buffer)
                    entry = [DEVICE, buffer.token]
                elif entry.__class__ is list and len(entry) == 5:
                    decode_ref(entry, at)
                    received = self._shared(entry[2], at)
                    used[received.id] = received
                    entry = [entry[0], entry[1], received.id, entry[3], entry[4]]
                elif where in ("input", "source"):
                    decode_tensor(entry, at)
                else:
                    raise BadData(f"{at}: expected None or a pool reference")
            except ProtocolError as exc:
                raise BadData(str(exc)) from None
            translated.append(entry)
        return translated

    def _buffer(self, token: Any, where: str) -> BufferHandle:
        buffer = self.buffers.get(token) if token.__class__ is int else None
        if buffer is None:
            raise BadData(f"{where}: unknown device memory token {token!r:.40} (tokens belong "
                          "to the client that allocated them)")
        return buffer

    async def _do_allocate(self, body: dict[str, Any]) -> dict[str, Any]:
        roles = []
        for position, role in enumerate(body["roles"]):
            if not (isinstance(role, list) and len(role) == 4):
                raise BadData(f"roles[{position}]: expected [handle, io, index, frequency]")
            roles.append((self._ref(role[0]), role[1], role[2], role[3]))
        drivers = {ref.driver for ref, *_ in roles}
        if len(drivers) != 1:
            raise BadData(f"allocate: the roles name models of drivers {sorted(drivers)}; a "
                          "device memory belongs to one driver")
        dims = body.get("dims")
        size = max((self._role_bytes(role, dims) for role in body["roles"]), default=0)
        limit = self.limits.max_device_bytes
        if self.buffer_total + size > limit:
            raise ResourceExhausted(f"allocate: this client holds {self.buffer_total} bytes of "
                                    f"device memory; {size} more would exceed its limit "
                                    f"max_device_bytes={limit} (free some first)")
        self.buffer_total += size  # charged before awaiting: concurrent allocations count too
        try:
            buffer = await self.backend.allocate(drivers.pop(), None if dims is None else
                                                 tuple(dims), roles)
        except BaseException:
            self.buffer_total -= size
            raise
        token, self._next_token = self._next_token, self._next_token + 1
        self.buffers[token] = buffer
        self.buffer_bytes[token] = size
        return {"token": token}

    def _role_bytes(self, role: list[Any], dims: Any) -> int:
        """The bytes a buffer for ``role`` takes when its size is known (else 0): the request's
        dims, or the model's inferred dims of that input / output."""
        io, index = role[1], role[2]
        shapes = self.shapes.get(role[0])
        if shapes is None or io not in ("input", "output") or index.__class__ is not int:
            return 0  # the worker refuses the role
        table = shapes[0] if io == "input" else shapes[1]
        if not 0 <= index < len(table):
            return 0
        itemsize, known = table[index]
        if isinstance(dims, list) and dims and all(d.__class__ is int and d > 0 for d in dims):
            known = tuple(dims)
        if not known or any(d <= 0 for d in known):
            return 0
        return itemsize * math.prod(known)

    async def _do_free(self, body: dict[str, Any]) -> dict[str, Any]:
        buffer = self._buffer(body["token"], "free")
        del self.buffers[body["token"]]
        self.buffer_total -= self.buffer_bytes.pop(body["token"], 0)
        return await self.backend.buffer_request(buffer, "free", {})

    async def _do_copy_from(self, body: dict[str, Any]) -> dict[str, Any]:
        buffer = self._buffer(body["token"], "copy_from")
        used: dict[int, ReceivedMemory] = {}
        (source,) = self._translate([body["source"]], "source", used)
        return await self.backend.buffer_request(buffer, "copy_from", {"source": source},
                                                 list(used.values()))

    async def _do_copy_to(self, body: dict[str, Any]) -> dict[str, Any]:
        buffer = self._buffer(body["token"], "copy_to")
        used: dict[int, ReceivedMemory] = {}
        target = body.get("target")
        if target is not None:
            (target,) = self._translate([target], "target", used)
        return await self.backend.buffer_request(buffer, "copy_to", {"target": target},
                                                 list(used.values()))

    async def _refuse(self) -> dict[str, Any]:
        raise ResourceExhausted(f"this client already has {self.limits.max_in_flight} requests "
                                f"in flight (max_in_flight); transient: retry once some are "
                                "answered")

    async def _do_hello(self, body: dict[str, Any]) -> dict[str, Any]:
        if body["protocol"] != PROTOCOL_VERSION:
            raise BadData(f"protocol version {body['protocol']} is not supported "
                          f"(this service speaks {PROTOCOL_VERSION})")
        named = [(name, pool.info) for name, pool in self.backend.pools.items()
                 if pool.info is not None]
        return {"protocol": PROTOCOL_VERSION, "pid": os.getpid(),
                "devices": [info.to_wire() for _, info in named],
                "names": [name for name, _ in named]}

    async def _do_ping(self, body: dict[str, Any]) -> dict[str, Any]:
        return {}

    async def _do_statistics(self, body: dict[str, Any]) -> dict[str, Any]:
        return {"pools": self.backend.statistics().to_wire(),
                "batched": self.batched.statistics()}

    async def _do_compile_batched(self, body: dict[str, Any]) -> dict[str, Any]:
        handle, self._next_handle = self._next_handle, self._next_handle + 1
        return await self.batched.compile(body, handle)

    async def _do_release_batched(self, body: dict[str, Any]) -> dict[str, Any]:
        return await self.batched.release(body["handle"])

    def _rewire(self, body: dict[str, Any]
                ) -> tuple[dict[str, Any], dict[int, ReceivedMemory], Model]:
        """The request's model, rebuilt and checked here (untrusted), as wire data naming the
        service-wide ids of the pools its constants live in."""
        model = model_from_wire(body["model"], memories=self.memories.resolve)
        used: dict[int, ReceivedMemory] = {}

        def place(index: int) -> tuple[int, int, int] | None:
            location = model.operands[index].location
            if location is None or not isinstance(location.memory, MappedMemory):
                return None
            received = self.received[location.memory.id]
            used[received.id] = received
            return (received.id, location.offset, location.length)

        return model_to_wire(model, place), used, model

    async def _do_supported(self, body: dict[str, Any]) -> dict[str, Any]:
        device = body.get("device")
        if device is None:
            raise BadData("supported: name the device to ask")
        wire, used, _ = self._rewire(body)
        return await self.backend.support(device, wire, 100, None, list(used.values()))

    async def _do_compile(self, body: dict[str, Any]) -> dict[str, Any]:
        devices = body.get("devices")
        if devices is not None and not all(isinstance(d, str) for d in devices):
            raise BadData("devices must be a list of driver names")
        wire, used, model = self._rewire(body)
        compiled = body.get("compiled")
        if compiled is not None:  # ahead-of-time bytecode in a pool of this client
            if len(compiled) != 3 or not isinstance(compiled[0], list) or len(compiled[0]) != 3:
                raise BadData("compile: compiled must be [[pool, offset, length], entry, stamp]")
            received = self._shared(compiled[0][0], "compile: compiled")
            used[received.id] = received
            compiled = [[received.id, *compiled[0][1:]], *compiled[1:]]
        ref = await self.backend.compile(wire, body.get("preference", 1),
                                         body.get("priority", 100), devices, None,
                                         list(used.values()), compiled=compiled,
                                         cache=_step_cache(body.get("cache")))
        handle, self._next_handle = self._next_handle, self._next_handle + 1
        self.handles[handle] = ref
        self.shapes[handle] = io_shapes(model)
        self.measured[handle] = self.metrics.add(body.get("name") or f"handle-{handle}",
                                                 ref.driver)
        return {"handle": handle, "driver": ref.driver, "source": ref.source}

    def _ref(self, handle: Any) -> CompiledRef:
        ref = self.handles.get(handle) if handle.__class__ is int else None
        if ref is None:
            raise BadData(f"unknown handle {handle} (handles belong to the connection that "
                          "compiled them)")
        return ref

    async def _do_execute(self, body: dict[str, Any]) -> dict[str, Any]:
        ref = self._ref(body["handle"])
        metrics = self.measured[body["handle"]].metrics
        start = time.monotonic()
        try:
            reply = await self._forward_execute(ref, body)
        except BaseException as exc:  # counted by kind, cancellation too; raised on
            end = time.monotonic()
            metrics.request_done(end - start, exc, end)
            raise
        end = time.monotonic()
        metrics.alone_done(end - start, end)
        return reply

    async def _forward_execute(self, ref: CompiledRef, body: dict[str, Any]) -> dict[str, Any]:
        deadline, sizes, inputs, outputs, used, buffers = self._checked_execute(body)
        return await self.backend.execute(ref, inputs, sizes, body.get("priority", 100),
                                          deadline,
                                          outputs=outputs, memories=list(used.values()),
                                          buffer=buffers[0] if buffers else None)

    def _checked_execute(self, body: dict[str, Any]) -> tuple[
            float | None, list[int] | None, list[Any], list[Any] | None,
            dict[int, ReceivedMemory], list[BufferHandle]]:
        """An execute's fields checked and translated to the service's ids: its deadline,
        output sizes, inputs, outputs, the memories and the device buffers they name."""
        deadline = body.get("deadline")
        if deadline is not None:  # as the worker reads it
            deadline = read_deadline(deadline, "execute")
        sizes = body.get("output_sizes")
        if sizes is not None and not all(
                size.__class__ is int and 0 <= size < 2**63 for size in sizes):
            raise BadData("execute: output_sizes must be byte counts")
        used: dict[int, ReceivedMemory] = {}
        buffers: list[BufferHandle] = []
        inputs = self._translate(body["inputs"], "input", used, buffers)
        outputs = body.get("outputs")
        if outputs is not None:
            outputs = self._translate(outputs, "output", used, buffers)
        for buffer in buffers:  # a buffer lost with its worker: UnavailableDevice first
            buffer.require_live()
        if any(d.slot is not buffers[0].slot for d in buffers):
            raise BadData("device memories held by different workers cannot meet in one "
                          "request")
        return deadline, sizes, inputs, outputs, used, buffers

    def _execute_now(self, request_id: int, body: Any) -> bool:
        """Forward an execute straight from its arrival to a worker, its reply straight back
        (asyncio: no task, no cancel scope; see :class:`Forwarded`): when it names no device
        memory and no deadline already past, its model is prepared on a worker with room and
        its memories are mapped there, and the client reads its replies. A deadline is a
        timer that answers it then. False: the request takes the task path (which also
        reports anything wrong with it)."""
        if (self._loop is None or body.__class__ is not dict
                or self.framed.backlog > REPLY_BACKLOG):
            return False
        handle = body.get("handle")
        if handle.__class__ is not int:
            return False
        ref = self.handles.get(handle)
        if ref is None:
            return False
        try:
            deadline, sizes, inputs, outputs, used, buffers = self._checked_execute(body)
        except Exception:  # the task path checks it again and answers the error
            return False
        priority = body.get("priority", 100)
        if buffers or priority.__class__ is not int:
            return False
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and not left > 0:
            return False  # past already: the task path answers it
        forwarded = Forwarded(self, request_id, self.measured[handle])
        sent = self.backend.execute_now(ref, inputs, sizes, priority, deadline, outputs,
                                        used.values(), forwarded)
        if sent is None:
            return False
        forwarded.slot, forwarded.worker_request = sent
        if left is not None:  # the worker drops it when it comes to it late; this answers it
            forwarded.timer = self._loop.call_later(left, forwarded.expire)  # on time
        self.running[request_id] = forwarded
        self.unanswered += 1
        return True

    def forwarded_done(self, forwarded: Forwarded, status: int, reply: dict[str, Any]
                        ) -> None:
        """Answer an execute :meth:`_execute_now` forwarded (the worker's reply, the loss of
        its connection, or the client's cancel). Runs in a reader's callback: whatever goes
        wrong here is logged, never raised into the worker connection's reader."""
        slot = forwarded.slot
        if slot is not None:
            slot.pool.release(slot, ok=status == Status.OK)
        if self.running.get(forwarded.request_id) is forwarded:
            del self.running[forwarded.request_id]
        try:
            end = time.monotonic()
            if status == Status.OK:
                forwarded.measured.metrics.alone_done(end - forwarded.start, end)
            else:
                error = error_from(status, reply)
                forwarded.measured.metrics.request_done(end - forwarded.start, error, end)
                status, reply = encode_error(error)
            with contextlib.suppress(NnrtError, OSError):
                self.framed.send_coalesced([forwarded.request_id, status, reply])
        except Exception:
            log.exception("answering forwarded request %d failed", forwarded.request_id)
        finally:
            self.unanswered -= 1
            if self._drained is not None and self.unanswered < self.limits.max_in_flight:
                self._drained.set()

    async def _do_release(self, body: dict[str, Any]) -> dict[str, Any]:
        ref = self.handles.pop(body["handle"], None)
        if ref is None:
            raise BadData(f"unknown handle {body['handle']} (handles belong to the connection "
                          "that compiled them)")
        self.shapes.pop(body["handle"], None)
        measured = self.measured.pop(body["handle"], None)
        if measured is not None:
            self.metrics.remove(measured)
        await self.backend.release(ref)
        return {}


def _step_cache(spec: Any) -> StepCache | None:
    """A compile request's ``cache``: ``{dir, token}`` (the directory the client names)."""
    if spec is None:
        return None
    if not (isinstance(spec, dict) and set(spec) == {"dir", "token"}
            and isinstance(spec["dir"], str) and 0 < len(spec["dir"]) < 4096):
        raise BadData("compile: cache must be {dir, token}")
    return StepCache(CacheDirectory(spec["dir"]), check_token(spec["token"], "compile: cache"))


async def _ok() -> dict[str, Any]:
    return {}


async def _raise(exc: NnrtError) -> dict[str, Any]:
    raise exc
