"""What the worker service does for each request verb, once the envelope passed its schema.

Each handler reads a body already checked by :func:`nnrt.ipc.messages.check_request` (field
names and types), checks the values (ranges, codes, handles, pool references), calls the
driver (or maps / unmaps a pool) and queues the response on the connection. Semantic problems
raise nnrt errors (the service answers them with an error response); malformed values inside a
field raise :class:`ProtocolError` (the service closes the connection).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from nnrt.cache.files import CacheFiles, check_token
from nnrt.errors import BadData, NnrtError, OpFailed, ResourceExhausted, Unsupported
from nnrt.hal.base import Driver, PreparedModel, PrepareOptions
from nnrt.hal.buffers import BufferDesc
from nnrt.hal.stamp import stamp_mismatch
from nnrt.ipc.framing import ProtocolError
from nnrt.ipc.messages import (
    DEVICE,
    PROTOCOL_VERSION,
    Status,
    decode_ref,
    decode_tensor,
    dtype_name,
    encode_tensor,
    read_deadline,
)
from nnrt.memory.mapped import MappedMemory
from nnrt.model.aot import Stamp
from nnrt.model.operand import dtype_of
from nnrt.model.types import ExecutionPreference, Priority
from nnrt.model.wire import model_from_wire
from nnrt.worker.connection import MAX_BUFFERS, Connection, HeldBuffer
from nnrt.worker.jobs import DeviceArgs, Job

if TYPE_CHECKING:
    from nnrt.worker.executor import Executor

__all__ = ["MAX_PENDING_EXECUTES", "RequestHandlers"]

#: Most execute requests one connection may have queued or running at once.
MAX_PENDING_EXECUTES = 1024
_MAX_CLIENT_NAME = 256
_MAX_OUTPUT_SIZE = 2**63
_MAX_REASON = 1024

_E = TypeVar("_E", ExecutionPreference, Priority)
_PRIORITIES = frozenset(int(code) for code in Priority)
#: Stands for a device input until the execute runs and reads the buffer.
_PLACEHOLDER: np.ndarray[Any, Any] = np.empty(0, np.uint8)
Handler = Callable[[Connection, int, dict[str, Any]], None]


class RequestHandlers:
    """The per-verb request handlers of one :class:`~nnrt.worker.service.Service`.

    They queue executes on ``executor`` and call ``start_reports`` when a client asks for
    load reports (the service then sends them while it is busy).
    """

    def __init__(self, executor: Executor, driver: Driver,
                 start_reports: Callable[[], None]) -> None:
        self._executor = executor
        self._start_reports = start_reports
        self._driver = driver
        self._info = driver.info().to_wire()
        self._kinds = driver.memory_kinds()
        #: (model, data) cache files the driver wants; checked (at most 32 each) at start.
        self._cache_files = driver.cache_files_needed()
        self._pid = os.getpid()
        self._table: dict[str, Handler] = {
            "hello": self._hello, "ping": self._ping, "info": self._info_request,
            "supported": self._supported, "prepare": self._prepare, "release": self._release,
            "execute": self._execute, "cancel": self._cancel, "map": self._map,
            "unmap": self._unmap, "allocate": self._allocate, "free": self._free,
            "copy_from": self._copy_from, "copy_to": self._copy_to,
        }

    def handle(self, conn: Connection, request_id: int, verb: str, body: dict[str, Any]) -> None:
        """Serve one request whose envelope and field types were checked already."""
        handler = self._table.get(verb)
        if handler is None:
            raise BadData(f"request {request_id}: verb {verb!r} is not served by a driver "
                          f"worker (it serves {', '.join(self._table)})")
        handler(conn, request_id, body)

    # -- control verbs ---------------------------------------------------------------------------

    def _hello(self, conn: Connection, request_id: int, body: dict[str, Any]) -> None:
        if conn.greeted:
            raise ProtocolError(f"request {request_id}: hello sent twice")
        if len(body["client"]) > _MAX_CLIENT_NAME:
            raise ProtocolError(f"request {request_id}: client name longer than "
                                f"{_MAX_CLIENT_NAME} characters")
        protocol = body["protocol"]
        if protocol != PROTOCOL_VERSION:
            conn.respond(request_id, Status.BAD_DATA, {
                "message": f"protocol version {protocol} is not supported; this worker speaks "
                           f"version {PROTOCOL_VERSION}"})
            conn.closing = True
            return
        conn.greeted = True
        if body.get("load_reports", False):
            conn.load_reports = True
            self._start_reports()
        conn.peer = f"{conn.peer} ({body['client']})"
        conn.respond(request_id, Status.OK,
                     {"protocol": PROTOCOL_VERSION, "driver": self._info, "pid": self._pid,
                      "cache_files": list(self._cache_files)})

    def _ping(self, conn: Connection, request_id: int, body: dict[str, Any]) -> None:
        conn.respond(request_id, Status.OK, {})

    def _info_request(self, conn: Connection, request_id: int, body: dict[str, Any]) -> None:
        conn.respond(request_id, Status.OK, {"driver": self._info})

    def _supported(self, conn: Connection, request_id: int, body: dict[str, Any]) -> None:
        model = model_from_wire(body["model"], memories=conn.memories.resolve)
        support = self._driver.support(model)
        conn.respond(request_id, Status.OK, {
            "supported": [bool(f) for f in support.supported],
            "reasons": [[i, reason[:_MAX_REASON]] for i, reason in support.reasons.items()],
            "groups": [[i, g] for i, g in support.groups.items()]})

    def _prepare(self, conn: Connection, request_id: int, body: dict[str, Any]) -> None:
        fds = conn.reader.take_fds(body.get("nfds", 0))  # claimed first: ours to close
        fds += conn.reader.take_stray_fds()  # more than declared: refused below, closed here
        try:
            prepared, priority, used = self._prepared(conn, request_id, body, fds)
        finally:
            for fd in fds:  # a driver that keeps cache files for later duplicated them
                os.close(fd)
        try:
            handle = conn.add_handle(prepared, int(priority),
                                     tuple(pool for pool in used.values() if pool.resizable))
        except BaseException:
            self._executor.release(prepared)
            raise
        conn.respond(request_id, Status.OK, {"handle": handle})

    def _prepared(self, conn: Connection, request_id: int, body: dict[str, Any],
                  fds: list[int]) -> tuple[PreparedModel, Priority, dict[int, MappedMemory]]:
        """Prepare the request's model: from ahead-of-time bytecode, from the cache files that
        came with it (a hit), or by compiling (saving into the cache files on a miss)."""
        preference = _code(ExecutionPreference, body.get(
            "preference", ExecutionPreference.FAST_SINGLE_ANSWER), request_id, "preference")
        priority = _code(Priority, body.get("priority", Priority.MEDIUM), request_id, "priority")
        options = PrepareOptions(preference=preference, priority=priority)
        cache, hit = _cache_files(body.get("cache"), fds, request_id)
        used: dict[int, MappedMemory] = {}

        def resolve(pool_id: int, path: str) -> MappedMemory:
            pool = used[pool_id] = conn.memories.resolve(pool_id, path)
            return pool

        model = model_from_wire(body["model"], memories=resolve)
        compiled = body.get("compiled")
        if compiled is not None:
            bytecode, entry_point = self._aot_bytecode(conn, compiled, request_id)
            prepared = self._driver.prepare_compiled(model, bytecode, entry_point)
        elif cache is not None and hit:
            prepared = self._driver.prepare_from_cache(model, cache, options)
        else:
            prepared = self._driver.prepare(model, options, cache)
        return prepared, priority, used

    def _aot_bytecode(self, conn: Connection, compiled: list[Any], request_id: int
                      ) -> tuple[bytes, str]:
        """Check an ahead-of-time ``compiled`` field — ``[[pool, offset, length], entry point,
        stamp]`` — against this driver and return the bytecode and entry point.

        A stamp naming another driver, version, SoC, nnrt or Python is ``Unsupported`` (the
        runtime then compiles the partition instead).
        """
        where = f"request {request_id}: compiled"
        if len(compiled) != 3 or not isinstance(compiled[0], list) or len(compiled[0]) != 3 or (
                not all(v.__class__ is int for v in compiled[0])):
            raise ProtocolError(f"{where}: expected [[pool, offset, length], entry, stamp]")
        (pool_id, offset, length), entry_point, stamp_data = compiled
        if not isinstance(entry_point, str):
            raise ProtocolError(f"{where}: the entry point must be a string")
        mismatch = stamp_mismatch(Stamp.from_wire(stamp_data), self._driver)
        if mismatch is not None:
            raise Unsupported(f"ahead-of-time bytecode does not match this driver: {mismatch}")
        pool = conn.memories.resolve(pool_id, where)
        return bytes(pool.view(offset, length)), entry_point

    def _release(self, conn: Connection, request_id: int, body: dict[str, Any]) -> None:
        handle = conn.handles.pop(body["handle"], None)
        if handle is None:
            raise BadData(f"request {request_id}: unknown handle {body['handle']}")
        self._executor.release(handle.prepared)
        conn.respond(request_id, Status.OK, {})

    def _cancel(self, conn: Connection, request_id: int, body: dict[str, Any]) -> None:
        self._executor.cancel(conn, body["target"])

    # -- pools -------------------------------------------------------------------------------------

    def _map(self, conn: Connection, request_id: int, body: dict[str, Any]) -> None:
        where = f"request {request_id} (map)"
        fds = conn.reader.take_fds(body.get("nfds", 0))  # claimed first: ours to close now
        stray = conn.reader.take_stray_fds()
        if stray:
            for fd in fds + stray:
                os.close(fd)
            raise BadData(f"{where}: {len(fds) + len(stray)} fd(s) came with the request but "
                          f"nfds declares {len(fds)}")
        conn.memories.map(where, body, fds)
        conn.respond(request_id, Status.OK, {})

    def _unmap(self, conn: Connection, request_id: int, body: dict[str, Any]) -> None:
        conn.memories.unmap(body["pool"], f"request {request_id} (unmap)")
        conn.respond(request_id, Status.OK, {})

    # -- device buffers ----------------------------------------------------------------------------

    def _allocate(self, conn: Connection, request_id: int, body: dict[str, Any]) -> None:
        where = f"request {request_id} (allocate)"
        if len(conn.buffers) >= MAX_BUFFERS:
            raise ResourceExhausted(f"{where}: already {MAX_BUFFERS} device buffers on this "
                                    "connection; free some before allocating more")
        dims = body.get("dims")
        try:
            desc = BufferDesc(None if dims is None else tuple(dims))
            roles, labels, allowed = _roles(conn, body["roles"], where)
            buffer = self._driver.allocate(desc, roles, labels=labels)
        except NnrtError as exc:
            raise _reworded(exc, f"request {request_id}: ") from None
        try:
            token = conn.add_buffer(buffer, allowed)
        except BaseException:
            buffer.release()
            raise
        spec = buffer.spec
        conn.respond(request_id, Status.OK, {
            "token": token, "dtype": dtype_name(spec.dtype),
            "dims": None if spec.dims is None else list(spec.dims)})

    def _free(self, conn: Connection, request_id: int, body: dict[str, Any]) -> None:
        held = conn.buffers.pop(body["token"], None)
        if held is None:
            raise BadData(f"request {request_id} (free): unknown token {body['token']} (never "
                          "allocated on this connection, or freed)")
        self._executor.release_buffer(held.buffer)
        conn.respond(request_id, Status.OK, {})

    def _copy_from(self, conn: Connection, request_id: int, body: dict[str, Any]) -> None:
        where = f"request {request_id} (copy_from)"
        buffer = _held(conn, body["token"], where).buffer
        try:
            source = body["source"]
            if len(source) == 5:
                ref = decode_ref(source, f"{where}: source")
                pool = conn.memories.get(ref.pool, f"{where}: source")
                self._check_kinds((pool,), request_id)
                array = pool.array(ref.dtype, ref.shape, ref.offset, ref.length,
                                   f"{where}: source")
            else:
                array = decode_tensor(source, f"{where}: source")
            buffer.write(array)
        except NnrtError as exc:
            buffer.invalidate()
            raise _reworded(exc, f"{where}: token {body['token']}: ") from None
        except BaseException:
            buffer.invalidate()
            raise
        conn.respond(request_id, Status.OK, {})

    def _copy_to(self, conn: Connection, request_id: int, body: dict[str, Any]) -> None:
        where = f"request {request_id} (copy_to)"
        token = body["token"]
        buffer = _held(conn, token, where).buffer
        target = body.get("target")
        if target is not None:
            ref = decode_ref(target, f"{where}: target")
            if ref.dtype != buffer.dtype:
                raise BadData(f"{where}: the target is {dtype_name(ref.dtype)}, token {token} "
                              f"holds {dtype_name(buffer.dtype)}")
            pool = conn.memories.get(ref.pool, f"{where}: target")
            self._check_kinds((pool,), request_id)
        try:
            data = buffer.read()
        except NnrtError as exc:
            raise _reworded(exc, f"{where}: token {token}: ") from None
        if target is None:
            conn.respond(request_id, Status.OK, {"tensor": encode_tensor(data)})
            return
        if ref.length < data.nbytes:
            raise BadData(f"{where}: the target holds {ref.length} bytes, token {token} holds "
                          f"{data.nbytes}")
        itemsize = data.dtype.itemsize
        if ref.length % itemsize:
            raise BadData(f"{where}: the target length {ref.length} is not a multiple of the "
                          f"{itemsize}-byte elements")
        view = pool.array(ref.dtype, [ref.length // itemsize], ref.offset, ref.length,
                          f"{where}: target", output=True)
        view[:data.size] = data.reshape(-1)
        conn.respond(request_id, Status.OK, {"shape": list(data.shape)})

    # -- execute -----------------------------------------------------------------------------------

    def _execute(self, conn: Connection, request_id: int, body: dict[str, Any]) -> None:
        nfds = body.get("nfds", 0)
        if nfds:
            for fd in conn.reader.take_fds(nfds):  # claim them first: they belong to us now
                os.close(fd)
            raise BadData(f"request {request_id}: an execute carries no file descriptors; "
                          "share memory with a map request and refer to it by pool id")
        if request_id in conn.jobs:
            raise ProtocolError(f"request {request_id}: an execute with this id is still "
                                "in flight")
        pools: tuple[MappedMemory, ...] = ()
        device_inputs: DeviceArgs = ()
        values = body["inputs"]
        arrays = _inline_inputs(values)
        if arrays is None:  # pool references, device buffers, or a culprit to name
            arrays, pools, device_inputs = _decode_inputs(conn, values, request_id)
        output_sizes = body.get("output_sizes")
        if output_sizes is not None:
            _check_output_sizes(output_sizes, request_id)
        handle = conn.handles.get(body["handle"])
        if handle is None:
            raise BadData(f"request {request_id}: unknown handle {body['handle']}")
        if handle.pools:  # constants read from a file or blob: re-checked before the run
            pools = (*pools, *handle.pools)
        destinations = None
        device_outputs: DeviceArgs = ()
        outputs = body.get("outputs")
        if outputs is not None:
            destinations, pools, device_outputs = _destinations(
                conn, outputs, handle.prepared, request_id, pools)
        if device_inputs or device_outputs:
            _check_device_use(body["handle"], device_inputs, device_outputs, request_id)
        if pools:
            self._check_kinds(pools, request_id)
        priority = body.get("priority")
        if priority is None:
            priority = handle.priority
        elif priority not in _PRIORITIES:
            _code(Priority, priority, request_id, "priority")  # raises, naming the known codes
        deadline = body.get("deadline")
        if deadline is not None:
            deadline = read_deadline(deadline, f"request {request_id}")
        if len(conn.jobs) >= MAX_PENDING_EXECUTES:
            raise ResourceExhausted(f"request {request_id}: already {MAX_PENDING_EXECUTES} "
                                    "executes pending on this connection")
        self._executor.enqueue(Job(conn, request_id, body["handle"], handle.prepared,
                                           arrays, priority, deadline, output_sizes,
                                           destinations, pools, device_inputs,
                                           device_outputs, body.get("measure", False)))


    def _check_kinds(self, pools: tuple[MappedMemory, ...], request_id: int) -> None:
        """A driver that cannot access a memory's kind fails the execution (as NNAPI memory
        domains require: GENERAL_FAILURE)."""
        kinds = self._kinds
        for pool in pools:
            if pool.kind not in kinds:
                raise OpFailed(f"request {request_id}: driver {self._info['name']} cannot "
                               f"access {pool.kind} memory (pool {pool.id}); it maps "
                               f"{', '.join(sorted(kinds)) or 'none'}")


def _cache_files(spec: Any, fds: list[int], request_id: int) -> tuple[CacheFiles | None, bool]:
    """The request's cache files: ``{"token", "model", "data", "hit"}`` with the fds."""
    where = f"request {request_id}: cache"
    if spec is None:
        if fds:
            raise BadData(f"request {request_id}: {len(fds)} fd(s) came with a prepare that "
                          "names no cache files")
        return None, False
    if not isinstance(spec, dict) or set(spec) != {"token", "model", "data", "hit"}:
        raise ProtocolError(f"{where}: expected {{token, model, data, hit}}")
    model, data, hit = spec["model"], spec["data"], spec["hit"]
    if model.__class__ is not int or data.__class__ is not int or hit.__class__ is not bool:
        raise ProtocolError(f"{where}: model and data must be ints, hit a bool")
    if model < 0 or data < 0 or model + data != len(fds):
        raise BadData(f"{where}: {model} model and {data} data files declared, {len(fds)} fd(s) "
                      "came with the request")
    files = CacheFiles(check_token(spec["token"], where), tuple(fds[:model]),
                       tuple(fds[model:]))
    return files, hit


def _inline_inputs(values: list[Any]) -> list[np.ndarray[Any, Any]] | None:
    """The inputs when every one is a well-formed inline tensor (the hot path), else None."""
    arrays = []
    try:
        for value in values:
            if value.__class__ is not list or len(value) != 3:
                return None
            arrays.append(decode_tensor(value, "input"))
    except ProtocolError:
        return None
    return arrays


def _decode_inputs(conn: Connection, values: list[Any], request_id: int
                   ) -> tuple[list[np.ndarray[Any, Any]], tuple[MappedMemory, ...], DeviceArgs]:
    """Inputs that are inline tensors, pool references or device buffers (read when the
    execute runs: an empty placeholder until then); the pools and buffers referred to."""
    table = conn.memories
    arrays: list[np.ndarray[Any, Any]] = []
    pools: dict[int, MappedMemory] = {}
    devices: list[tuple[int, HeldBuffer]] = []
    for position, value in enumerate(values):
        where = f"request {request_id}: input {position}"
        if value.__class__ is list and value and value[0] == DEVICE:
            devices.append((position, _device_arg(conn, value, where)))
            arrays.append(_PLACEHOLDER)
        elif value.__class__ is list and len(value) == 5:
            ref = decode_ref(value, where)
            pool = table.get(ref.pool, where)
            arrays.append(pool.array(ref.dtype, ref.shape, ref.offset, ref.length, where))
            pools[pool.id] = pool
        else:
            arrays.append(decode_tensor(value, where))
    return arrays, tuple(pools.values()), tuple(devices)


def _destinations(conn: Connection, values: list[Any], prepared: PreparedModel,
                  request_id: int, pools: tuple[MappedMemory, ...]
                  ) -> tuple[list[np.ndarray[Any, Any] | None], tuple[MappedMemory, ...],
                             DeviceArgs]:
    """The writable pool views the ``outputs`` field names (None: inline or a device buffer),
    every pool used, and the device buffers outputs go to."""
    model = prepared.model
    if len(values) != len(model.outputs):
        raise BadData(f"request {request_id}: outputs has {len(values)} entries, the model has "
                      f"{len(model.outputs)} outputs")
    used = {pool.id: pool for pool in pools}
    destinations: list[np.ndarray[Any, Any] | None] = []
    devices: list[tuple[int, HeldBuffer]] = []
    for j, value in enumerate(values):
        if value is None:
            destinations.append(None)
            continue
        where = f"request {request_id}: outputs[{j}]"
        if value.__class__ is list and value and value[0] == DEVICE:
            devices.append((j, _device_arg(conn, value, where)))
            destinations.append(None)
            continue
        ref = decode_ref(value, where)
        expected = dtype_of(model.operands[model.outputs[j]].type)
        if ref.dtype != expected:
            raise BadData(f"{where}: the reference is {dtype_name(ref.dtype)}, model output {j} "
                          f"is {dtype_name(expected) or expected}")
        pool = conn.memories.get(ref.pool, where)
        destinations.append(pool.array(ref.dtype, ref.shape, ref.offset, ref.length, where,
                                       output=True))
        used[pool.id] = pool
    return destinations, tuple(used.values()), tuple(devices)


def _device_arg(conn: Connection, value: list[Any], where: str) -> HeldBuffer:
    """The live buffer ``["device", token]`` names (``BadData`` otherwise)."""
    if len(value) != 2:
        raise BadData(f"{where}: a device buffer argument is [\"device\", token] and carries "
                      f"no offset or length (got {len(value)} fields)")
    token = value[1]
    if token.__class__ is not int:
        raise ProtocolError(f"{where}: a device token must be an int, got "
                            f"{type(token).__name__}")
    return _held(conn, token, where)


def _held(conn: Connection, token: int, where: str) -> HeldBuffer:
    held = conn.buffers.get(token)
    if held is None:
        raise BadData(f"{where}: unknown token {token} (never allocated on this connection, "
                      "or freed)")
    return held


def _check_device_use(handle: int, inputs: DeviceArgs, outputs: DeviceArgs,
                      request_id: int) -> None:
    """Every device buffer used in a role declared at allocation, and never written twice or
    read and written by one request (``BadData``)."""
    read: set[int] = set()
    written: dict[int, int] = {}
    for io, args in (("input", inputs), ("output", outputs)):
        for position, held in args:
            token = held.token
            if (handle, io, position) not in held.roles:
                roles = ", ".join(f"{r_io} {r_index} of handle {r_handle}"
                                  for r_handle, r_io, r_index in sorted(held.roles))
                raise BadData(f"request {request_id}: token {token} was not allocated for "
                              f"{io} {position} of handle {handle} (its roles: {roles})")
            if io == "input":
                read.add(token)
            elif token in read:
                raise BadData(f"request {request_id}: token {token} is both an input and an "
                              f"output (output {position})")
            elif token in written:
                raise BadData(f"request {request_id}: token {token} is both output "
                              f"{written[token]} and output {position}")
            else:
                written[token] = position


def _roles(conn: Connection, values: list[Any], where: str
           ) -> tuple[list[tuple[PreparedModel, Any, Any, Any]], list[str],
                      frozenset[tuple[int, str, int]]]:
    """The driver roles ``[[handle, io, index, frequency], ...]`` name, their labels, and the
    ``(handle, io, index)`` uses they allow (values are checked by ``Driver.allocate``)."""
    roles: list[tuple[PreparedModel, Any, Any, Any]] = []
    labels: list[str] = []
    allowed: set[tuple[int, str, int]] = set()
    for position, value in enumerate(values):
        if value.__class__ is not list or len(value) != 4:
            raise ProtocolError(f"{where}: roles[{position}] must be [handle, io, index, "
                                "frequency]")
        handle, io, index, frequency = value
        if handle.__class__ is not int or io.__class__ is not str or (
                index.__class__ is not int) or frequency.__class__ not in (int, float):
            raise ProtocolError(f"{where}: roles[{position}] must be [int, str, int, number]")
        held = conn.handles.get(handle)
        if held is None:
            raise BadData(f"roles[{position}]: unknown handle {handle}")
        roles.append((held.prepared, io, index, frequency))
        labels.append(f"handle {handle}")
        allowed.add((handle, io, index))
    return roles, labels, frozenset(allowed)


def _reworded(exc: NnrtError, prefix: str) -> NnrtError:
    """``exc`` with ``prefix`` before its message (same class; kept as is if it cannot be)."""
    try:
        return type(exc)(prefix + str(exc))
    except TypeError:
        return exc


def _code(enum: type[_E], value: int, request_id: int, field: str) -> _E:
    try:
        return enum(value)
    except ValueError:
        known = ", ".join(f"{member.name}={member.value}" for member in enum)
        raise BadData(f"request {request_id}: {field} {value} is not one of {known}") from None


def _check_output_sizes(sizes: list[Any], request_id: int) -> None:
    for position, size in enumerate(sizes):
        if isinstance(size, bool) or not isinstance(size, int) or not (
                0 <= size < _MAX_OUTPUT_SIZE):
            raise ProtocolError(f"request {request_id}: output_sizes[{position}] must be a "
                                f"byte count, got {size!r}")
