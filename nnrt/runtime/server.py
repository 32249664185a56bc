"""Shared mode, service side: ``nnrt serve --socket PATH`` runs the pools for many clients.

Each client connection is a session: identified by the connection and its ``SO_PEERCRED``
(pid, uid, gid), it owns the models it compiled (handles are scoped to the session and released
when it disconnects). Requests run concurrently and are answered as they finish. A client that
breaks the protocol loses its connection; the service and the other clients carry on.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import signal
import socket
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.abc import TaskGroup

from nnrt.cache.directory import CacheDirectory
from nnrt.cache.files import check_token
from nnrt.driver.discovery import load_driver
from nnrt.driver.pools import MappedPool, PoolTable
from nnrt.errors import BadData, NnrtError, ResourceExhausted
from nnrt.ipc.framing import ProtocolError
from nnrt.ipc.messages import PROTOCOL_VERSION, Status, check_request, encode_error
from nnrt.model.wire import model_from_wire, model_to_wire
from nnrt.runtime.backend import CompiledRef, DeviceHandle, EmbeddedBackend
from nnrt.runtime.cache import StepCache
from nnrt.runtime.compiler import FALLBACK_DRIVER
from nnrt.runtime.connection import FramedSocket

__all__ = ["PeerCredentials", "serve"]

log = logging.getLogger("nnrt.serve")
_CREDS = struct.Struct("3i")
#: Requests one client may have running at once.
MAX_REQUESTS_PER_CLIENT = 4096


@dataclass(frozen=True)
class PeerCredentials:
    """Who is on the other end of a Unix socket (``SO_PEERCRED``)."""

    pid: int
    uid: int
    gid: int


def peer_credentials(sock: socket.socket) -> PeerCredentials:
    """The connected peer's pid, uid and gid."""
    pid, uid, gid = _CREDS.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                  _CREDS.size))
    return PeerCredentials(pid, uid, gid)


_pool_ids = itertools.count(1)


class ReceivedPool:
    """A pool a client shared with the service: checked and mapped like a worker does, with a
    duplicate of its fd kept to share it with the workers (under a service-wide id)."""

    def __init__(self, mapped: MappedPool, fd: int, name: str | None) -> None:
        self.id = next(_pool_ids)
        self.mapped = mapped
        self.kind = mapped.kind
        self.size = mapped.size
        self.writable = mapped.writable
        self.file_offset = mapped.file_offset
        self.name = name
        self.closed = False
        self._fd = fd

    def fileno(self) -> int:
        """The kept descriptor (memfd, mmap_fd)."""
        return self._fd

    def close(self) -> None:
        """Close the kept descriptor (idempotent)."""
        if not self.closed:
            self.closed = True
            if self._fd >= 0:
                os.close(self._fd)


class _Session:
    def __init__(self, backend: EmbeddedBackend, sock: socket.socket) -> None:
        self.backend = backend
        self.creds = peer_credentials(sock)
        self.framed = FramedSocket(sock)
        self.handles: dict[int, CompiledRef] = {}
        #: The pools this client shared: mapped (checked) here, by the client's ids.
        self.pools = PoolTable()
        self.received: dict[int, ReceivedPool] = {}
        #: This client's device memories: session token -> the worker-side buffer.
        self.devices: dict[int, DeviceHandle] = {}
        self._next_token = 1
        self.running: dict[int, anyio.CancelScope] = {}
        self.greeted = False
        self._next_handle = 1
        self._tg: TaskGroup | None = None

    async def run(self) -> None:
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                try:
                    await self.framed.receive_loop(self._on_message)
                except ProtocolError as exc:
                    log.warning("client pid %d broke the protocol: %s", self.creds.pid, exc)
                tg.cancel_scope.cancel()
        finally:
            self.framed.close()
            with anyio.CancelScope(shield=True):
                for ref in self.handles.values():
                    with contextlib.suppress(NnrtError):
                        await self.backend.release(ref)
            self.handles.clear()
            for device in self.devices.values():
                if device.slot.client is device.client and device.client.lost is None:
                    device.client.notify("free", {"token": device.token})
            self.devices.clear()
            for received in self.received.values():
                self.backend.unmap(received.id)
                received.close()
            self.received.clear()
            self.pools.close_all()

    def _on_message(self, message: Any) -> None:
        request_id, verb, body = check_request(message)
        if not self.greeted and verb != "hello":
            raise ProtocolError(f"{verb!r} before hello")
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
        if len(self.running) >= MAX_REQUESTS_PER_CLIENT:
            self._spawn(request_id, self._refuse)
            return
        handler: Callable[[dict[str, Any]], Any] | None = getattr(self, f"_do_{verb}", None)
        if handler is None:
            raise ProtocolError(f"verb {verb!r} is not served here")
        if verb == "hello":
            self.greeted = True
        self._spawn(request_id, handler, body)

    def _spawn(self, request_id: int, handler: Callable[..., Any], *args: Any) -> None:
        scope = anyio.CancelScope()
        self.running[request_id] = scope
        if self._tg is None:  # pragma: no cover - run() sets it before reading
            raise ProtocolError("session not running")
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
            self.running.pop(request_id, None)
        with contextlib.suppress(NnrtError, OSError):
            await self.framed.send([request_id, status, reply])

    def _map(self, request_id: int, body: dict[str, Any]) -> None:
        fds = self.framed.reader.take_fds(body.get("nfds", 0))
        kept = -1
        try:
            if fds:
                kept = os.dup(fds[0])
            mapped = self.pools.map(f"request {request_id}", body, fds)  # closes ``fds``
        except BaseException:
            if kept >= 0:
                os.close(kept)
            raise
        self.received[mapped.id] = ReceivedPool(mapped, kept, body.get("name"))

    def _unmap(self, request_id: int, body: dict[str, Any]) -> None:
        self.pools.unmap(body["pool"], f"request {request_id}")
        received = self.received.pop(body["pool"], None)
        if received is not None:
            self.backend.unmap(received.id)
            received.close()

    def _shared(self, pool_id: Any, where: str) -> ReceivedPool:
        self.pools.get(pool_id, where)  # the precise error for unknown / released ids
        return self.received[pool_id]

    def _translate(self, entries: list[Any], where: str, used: dict[int, ReceivedPool],
                   devices: list[DeviceHandle] | None = None) -> list[Any]:
        """Tensor entries with the client's pool ids and device tokens replaced by the
        service-wide ones (a token or pool id of another client is unknown here)."""
        translated = []
        for position, entry in enumerate(entries):
            if isinstance(entry, list) and len(entry) == 5:
                received = self._shared(entry[2], f"{where} {position}")
                used[received.id] = received
                entry = [entry[0], entry[1], received.id, entry[3], entry[4]]
            elif isinstance(entry, list) and len(entry) == 2 and entry[0] == "device":
                device = self._device(entry[1], f"{where} {position}")
                if devices is not None:
                    devices.append(device)
                entry = ["device", device.token]
            translated.append(entry)
        return translated

    def _device(self, token: Any, where: str) -> DeviceHandle:
        device = self.devices.get(token) if token.__class__ is int else None
        if device is None:
            raise BadData(f"{where}: unknown device memory token {token!r:.40} (tokens belong "
                          "to the client that allocated them)")
        return device

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
        device = await self.backend.allocate(drivers.pop(), None if dims is None else
                                             tuple(dims), roles)
        token, self._next_token = self._next_token, self._next_token + 1
        self.devices[token] = device
        return {"token": token}

    async def _do_free(self, body: dict[str, Any]) -> dict[str, Any]:
        device = self._device(body["token"], "free")
        del self.devices[body["token"]]
        return await self.backend.device_request(device, "free", {})

    async def _do_copy_from(self, body: dict[str, Any]) -> dict[str, Any]:
        device = self._device(body["token"], "copy_from")
        used: dict[int, ReceivedPool] = {}
        (source,) = self._translate([body["source"]], "source", used)
        return await self.backend.device_request(device, "copy_from", {"source": source},
                                                 list(used.values()))

    async def _do_copy_to(self, body: dict[str, Any]) -> dict[str, Any]:
        device = self._device(body["token"], "copy_to")
        used: dict[int, ReceivedPool] = {}
        target = body.get("target")
        if target is not None:
            (target,) = self._translate([target], "target", used)
        return await self.backend.device_request(device, "copy_to", {"target": target},
                                                 list(used.values()))

    async def _refuse(self) -> dict[str, Any]:
        raise ResourceExhausted(f"more than {MAX_REQUESTS_PER_CLIENT} requests in flight")

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
        return {"pools": self.backend.statistics().to_wire()}

    def _rewire(self, body: dict[str, Any]) -> tuple[dict[str, Any], dict[int, ReceivedPool]]:
        """The request's model, rebuilt and checked here (untrusted), as wire data naming the
        service-wide ids of the pools its constants live in."""
        model = model_from_wire(body["model"], pools=self.pools.resolve)
        used: dict[int, ReceivedPool] = {}

        def place(index: int) -> tuple[int, int, int] | None:
            location = model.operands[index].location
            if location is None or not isinstance(location.memory, MappedPool):
                return None
            received = self.received[location.memory.id]
            used[received.id] = received
            return (received.id, location.offset, location.length)

        return model_to_wire(model, place), used

    async def _do_supported(self, body: dict[str, Any]) -> dict[str, Any]:
        device = body.get("device")
        if device is None:
            raise BadData("supported: name the device to ask")
        wire, used = self._rewire(body)
        return await self.backend.support(device, wire, 100, None, list(used.values()))

    async def _do_compile(self, body: dict[str, Any]) -> dict[str, Any]:
        devices = body.get("devices")
        if devices is not None and not all(isinstance(d, str) for d in devices):
            raise BadData("devices must be a list of driver names")
        wire, used = self._rewire(body)
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
        return {"handle": handle, "driver": ref.driver, "source": ref.source}

    def _ref(self, handle: int) -> CompiledRef:
        ref = self.handles.get(handle)
        if ref is None:
            raise BadData(f"unknown handle {handle} (handles belong to the connection that "
                          "compiled them)")
        return ref

    async def _do_execute(self, body: dict[str, Any]) -> dict[str, Any]:
        ref = self._ref(body["handle"])
        deadline = body.get("deadline")
        used: dict[int, ReceivedPool] = {}
        devices: list[DeviceHandle] = []
        inputs = self._translate(body["inputs"], "input", used, devices)
        outputs = body.get("outputs")
        if outputs is not None:
            outputs = self._translate(outputs, "output", used, devices)
        if any(d.slot is not devices[0].slot for d in devices):
            raise BadData("device memories held by different workers cannot meet in one "
                          "request")
        return await self.backend.execute(ref, inputs, body.get("output_sizes"),
                                          body.get("priority", 100),
                                          float(deadline) if deadline is not None else None,
                                          outputs=outputs, pools=list(used.values()),
                                          device=devices[0] if devices else None)

    async def _do_release(self, body: dict[str, Any]) -> dict[str, Any]:
        ref = self.handles.pop(body["handle"], None)
        if ref is None:
            raise BadData(f"unknown handle {body['handle']}")
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


def _listen(path: str) -> socket.socket:
    with contextlib.suppress(FileNotFoundError):
        if os.path.exists(path) and not _is_socket(path):
            raise BadData(f"{path} exists and is not a socket")
        os.unlink(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # the socket file is created 0600: only this user may connect
    try:
        sock.bind(path)
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(128)
    sock.setblocking(False)
    return sock


def _is_socket(path: str) -> bool:
    import stat  # noqa: PLC0415

    return stat.S_ISSOCK(os.stat(path).st_mode)


async def serve(path: str, *, drivers: Sequence[str] = ("reference",),
                workers: dict[str, int] | None = None, max_in_flight: int = 16,
                ready: Callable[[], None] | None = None) -> None:
    """Run the pools and accept clients on ``path`` until SIGTERM / SIGINT or cancellation."""
    count = os.cpu_count() or 1
    names = list(dict.fromkeys(drivers))
    for name in names:  # refused before any worker starts (see Runtime.__aenter__)
        load_driver(name).cache_files_needed()
    if FALLBACK_DRIVER not in names:  # runs what no other driver takes
        names.append(FALLBACK_DRIVER)
    per_driver = {d: (workers or {}).get(d, count) for d in names}
    backend = EmbeddedBackend(names, per_driver, max_in_flight)
    listener: socket.socket | None = None
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(_stop_on_signals, tg)
            await backend.start(tg)
            listener = _listen(path)  # the socket appears once the service is ready
            if ready is not None:
                ready()
            log.info("nnrt service listening on %s", path)
            while True:
                await anyio.wait_readable(listener)
                try:
                    conn, _ = listener.accept()
                except BlockingIOError:
                    continue
                session = _Session(backend, conn)
                log.info("client pid %d uid %d connected", session.creds.pid, session.creds.uid)
                tg.start_soon(session.run)
    finally:
        backend.close()
        if listener is not None:
            listener.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)


async def _stop_on_signals(tg: TaskGroup, *, task_status: Any = anyio.TASK_STATUS_IGNORED
                           ) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        task_status.started()
        async for _ in signals:
            tg.cancel_scope.cancel()
            return
