"""``Runtime`` and ``CompiledModel``: the async API (asyncio or trio, through anyio)."""

from __future__ import annotations

import asyncio
import logging
import math
import os
import time
import weakref
from collections.abc import Callable, Collection, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self

import anyio
import numpy as np
from anyio.abc import TaskGroup

from nnrt.cache.directory import CacheDirectory
from nnrt.cache.files import check_token
from nnrt.driver.base import DriverInfo
from nnrt.driver.buffers import BufferDesc
from nnrt.driver.discovery import load_driver
from nnrt.driver.service import DEFAULT_POLL_WINDOW, MAX_POLL_WINDOW
from nnrt.errors import BadData, BadState, OpFailed, OutputInsufficientSize
from nnrt.memory import Memory, TensorRef
from nnrt.model.model import Model
from nnrt.model.operand import dtype_of
from nnrt.model.types import ExecutionPreference, Priority
from nnrt.ops.interpreter import InputBinder, Inputs
from nnrt.runtime.arena import DEFAULT_ARENA_LIMIT, Arena
from nnrt.runtime.backend import CompiledRef, EmbeddedBackend
from nnrt.runtime.cache import StepCache, model_token
from nnrt.runtime.compiler import FALLBACK_DRIVER, compile_model
from nnrt.runtime.constants import place_constants
from nnrt.runtime.device import BufferRole, DeviceMemory, check_allocation
from nnrt.runtime.inline import InlineCodec, inline_tensors
from nnrt.runtime.memories import MemoryManager
from nnrt.runtime.placement import PlacementReport
from nnrt.runtime.plan import Plan
from nnrt.runtime.pool import DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_QUEUE
from nnrt.runtime.stats import RuntimeStatistics
from nnrt.runtime.stepper import run_plan
from nnrt.runtime.transfer import PoolSource, Transfer

if TYPE_CHECKING:
    from nnrt.runtime.sync import SyncRuntime

__all__ = ["CompiledModel", "Runtime"]

Array = np.ndarray[Any, Any]
log = logging.getLogger("nnrt.runtime")
_DTYPE_NAMES = {np.dtype(n): n for n in ("float32", "float16", "int32", "uint32", "uint8",
                                          "int8", "int16", "uint16", "bool")}
#: Capacity reported for outputs that have a shared-memory buffer (checked by reference).
_UNLIMITED = 2**62


class Backend(Protocol):
    """What the runtime needs from the embedded pools or from a shared service."""

    async def support(self, driver: str, wire_model: dict[str, Any], priority: int,
                      deadline: float | None, pools: Sequence[PoolSource] = ()
                      ) -> dict[str, Any]: ...

    async def compile(self, wire_model: dict[str, Any], preference: int, priority: int,
                      devices: Sequence[str] | None, deadline: float | None,
                      pools: Sequence[PoolSource] = (), *,
                      compiled: list[Any] | None = None,
                      cache: StepCache | None = None) -> CompiledRef: ...

    async def execute(self, ref: CompiledRef, inputs: list[Any], output_sizes: list[int] | None,
                      priority: int, deadline: float | None, *,
                      outputs: list[Any] | None = None,
                      pools: Collection[PoolSource] = (),
                      device: Any = None) -> dict[str, Any]: ...

    async def release(self, ref: CompiledRef) -> None: ...

    async def allocate(self, driver: str, dims: tuple[int, ...] | None,
                       roles: Sequence[tuple[CompiledRef, str, int, float]]) -> Any: ...

    async def device_request(self, device: Any, verb: str, body: dict[str, Any],
                             pools: Collection[PoolSource] = ()) -> dict[str, Any]: ...

    def count_fallback(self, driver: str) -> None: ...

    def statistics(self) -> RuntimeStatistics: ...

    def devices(self) -> list[Any]: ...

    def device_info(self, device: str) -> Any: ...

    def device_names(self) -> list[str]: ...


def _asyncio_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _deadline(timeout: float | None) -> float | None:
    if timeout is None:
        return None
    if not (isinstance(timeout, int | float) and timeout >= 0 and math.isfinite(timeout)):
        raise BadData(f"timeout must be a non-negative number of seconds, got {timeout!r}")
    return time.monotonic() + float(timeout)


class Runtime:
    """Schedules compile and execute requests onto driver worker processes.

    ``async with nnrt.Runtime() as rt:`` starts a pool of ``workers`` processes per driver
    (embedded mode; default one per CPU) and stops and reaps them on exit, also when the body
    raises or is cancelled. ``Runtime(connect=PATH)`` uses the pools of an ``nnrt serve``
    service instead. ``max_in_flight`` bounds the requests sent to one worker (backpressure);
    a worker that has not stopped a cancelled or timed-out execution ``cancel_grace`` seconds
    later (one operation running on and on) is killed and restarted. Plain ndarrays larger than
    64 KiB travel through a shared arena of at most ``arena_limit`` bytes (0: never). At most
    ``max_queue`` requests wait per driver; one more fails at once with ``ResourceExhausted``
    (transient; in shared mode the service's bound applies). After its last execute, a worker
    keeps polling for requests ``poll_window`` seconds (default 250 µs, at most 10 ms; 0: off)
    before it sleeps, so that a request sent soon after does not pay for waking it up.

    ``rt.memory`` creates shared memories (:class:`nnrt.Memory`) closed with the runtime.
    """

    def __init__(self, *, drivers: Sequence[str] = ("reference",),
                 workers: int | Mapping[str, int] | None = None, connect: str | None = None,
                 max_in_flight: int = DEFAULT_MAX_IN_FLIGHT, cancel_grace: float = 5.0,
                 arena_limit: int = DEFAULT_ARENA_LIMIT,
                 max_queue: int = DEFAULT_MAX_QUEUE,
                 poll_window: float = DEFAULT_POLL_WINDOW) -> None:
        if not drivers or isinstance(drivers, str):
            raise BadData("Runtime needs a list of driver names")
        self._drivers = list(dict.fromkeys(drivers))
        if FALLBACK_DRIVER not in self._drivers:  # runs what no other driver takes
            self._drivers.append(FALLBACK_DRIVER)
        count = os.cpu_count() or 1
        if workers is None:
            per_driver = {d: count for d in self._drivers}
        elif isinstance(workers, int):
            per_driver = {d: workers for d in self._drivers}
        else:
            per_driver = {d: int(workers.get(d, count)) for d in self._drivers}
        for name, n in per_driver.items():
            if n < 1:
                raise BadData(f"workers for driver {name!r} must be at least 1, got {n}")
        if max_in_flight < 1:
            raise BadData(f"max_in_flight must be at least 1, got {max_in_flight}")
        if max_queue.__class__ is not int or max_queue < 1:
            raise BadData(f"max_queue must be an int of at least 1, got {max_queue!r:.40}")
        self._max_queue = max_queue
        if not (isinstance(cancel_grace, int | float) and cancel_grace > 0):
            raise BadData(f"cancel_grace must be a positive number of seconds, got "
                          f"{cancel_grace!r}")
        self._cancel_grace = float(cancel_grace)
        if not (isinstance(poll_window, int | float) and 0 <= poll_window <= MAX_POLL_WINDOW):
            raise BadData(f"poll_window must be from 0 to {MAX_POLL_WINDOW} seconds, got "
                          f"{poll_window!r:.40}")
        self._poll_window = float(poll_window)
        self._workers = per_driver
        self._connect = connect
        self._max_in_flight = max_in_flight
        self._backend: Backend | None = None
        self._closer: Any = None
        self._tg: TaskGroup | None = None
        self._arena_limit = arena_limit
        self._arena: Arena | None = None
        #: Shared memories of this runtime (``rt.memory.create(size)`` and friends).
        self.memory = MemoryManager()
        self._packed: dict[int, Memory] = {}
        self._devices: weakref.WeakSet[DeviceMemory] = weakref.WeakSet()

    async def __aenter__(self) -> Self:
        if self._backend is not None:
            raise BadState("this Runtime is already running")
        if self._connect is not None:
            from nnrt.runtime.remote import RemoteBackend  # noqa: PLC0415

            remote = RemoteBackend(self._connect)
            self._tg = anyio.create_task_group()
            await self._tg.__aenter__()
            try:
                await remote.start(self._tg)
            except BaseException:
                self._tg.cancel_scope.cancel()
                await self._tg.__aexit__(None, None, None)
                raise
            self._backend, self._closer = remote, remote.close
            self._started(remote.unmap)
            return self
        for name in self._drivers:
            # fail fast, in this process: unknown names list the known drivers, and a driver
            # asking for more cache files than NNAPI allows (32 of each) is refused here
            load_driver(name).cache_files_needed()
        embedded = EmbeddedBackend(self._drivers, self._workers, self._max_in_flight,
                                   self._cancel_grace, self._poll_window)
        for pool in embedded.pools.values():
            pool.max_queue = self._max_queue
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        try:
            await embedded.start(self._tg)
        except BaseException:
            embedded.close()
            self._tg.cancel_scope.cancel()
            await self._tg.__aexit__(None, None, None)
            raise
        self._backend, self._closer = embedded, embedded.close
        self._started(embedded.unmap)
        return self

    def _started(self, unmap: Callable[[int], None]) -> None:
        self._arena = Arena(self._arena_limit)
        self.memory.attach(unmap, loop=_asyncio_loop())

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> bool | None:
        await self.aclose()
        return None

    async def aclose(self) -> None:
        """Stop every worker and reap it (idempotent)."""
        tg, self._tg = self._tg, None
        if tg is None:
            return
        self.memory.attach(None, loop=None)
        for device in list(self._devices):  # worker-side buffers die with the workers
            device.freed = True
            if device.fallback is not None:
                device.fallback.close()
        for packed in self._packed.values():
            packed.close()
        self._packed.clear()
        if self._arena is not None:
            self._arena.close()
        self.memory.close()
        if self._closer is not None:
            self._closer()
        self._backend = None
        await tg.__aexit__(None, None, None)  # supervisors reap their workers, shielded

    def _require_backend(self) -> Backend:
        if self._backend is None:
            raise BadState("the Runtime is not running: use 'async with nnrt.Runtime() as rt'")
        return self._backend

    async def compile(self, model: Model, *,
                      preference: ExecutionPreference = ExecutionPreference.FAST_SINGLE_ANSWER,
                      priority: Priority = Priority.MEDIUM, devices: Sequence[str] | None = None,
                      timeout: float | None = None, allow_fallback: bool = True,
                      cache_dir: str | os.PathLike[str] | None = None,
                      token: bytes | None = None) -> CompiledModel:
        """Validate ``model``, place its operations on drivers and prepare it on workers.

        Every driver in ``devices`` (default: all of this runtime's, in order) says which
        operations it supports; each operation goes to the best of them for ``preference``
        and each driver's operations are grouped into the largest partitions that keep the
        plan acyclic. Operations no driver takes run on the ``reference`` driver unless
        ``allow_fallback`` is false (then ``Unsupported`` lists them). A model file's
        ahead-of-time partitions load on their driver without compiling. See
        :meth:`CompiledModel.placement`.

        ``cache_dir`` caches every step's compiled model on disk (drivers that cache: see
        ``cache_files_needed``): a later compile of the same model — or a new worker — loads
        it instead of compiling. ``token`` (32 bytes, NNAPI's cache token) names the model;
        by default it is derived from the model's content.
        """
        backend = self._require_backend()
        if not isinstance(model, Model):
            raise BadData(f"compile expects an nnrt.Model, got {type(model).__name__}")
        if not model.finished:
            raise BadState("compile: the model is not finished (call model.finish())")
        pref = ExecutionPreference(int(preference))
        prio = int(priority)
        if not Priority.LOW <= prio <= Priority.HIGH:
            raise BadData(f"priority must be between {Priority.LOW} and {Priority.HIGH}")
        if devices is not None and (isinstance(devices, str) or not devices or not all(
                isinstance(d, str) for d in devices)):
            raise BadData(f"devices must be a non-empty list of driver names, got "
                          f"{devices!r:.80}")
        known = backend.device_names()
        candidates = list(dict.fromkeys(devices)) if devices is not None else known
        unknown = [d for d in candidates if d not in known]
        if unknown:
            raise BadData(f"unknown devices {unknown}; this runtime has {known}")
        deadline = _deadline(timeout)
        cache = None
        if cache_dir is not None:
            app_token = check_token(token, "compile: token") if token is not None else (
                await anyio.to_thread.run_sync(model_token, model))
            cache = (CacheDirectory(cache_dir), app_token)
        elif token is not None:
            raise BadData("compile: a cache token needs a cache_dir")
        placed = place_constants(model)
        try:
            for pool in placed.pools:
                self.memory.watch(pool)
            compilation = await compile_model(
                backend, model, placed, preference=int(pref), priority=prio,
                devices=candidates, deadline=deadline, allow_fallback=bool(allow_fallback),
                cache=cache)
        except BaseException:
            if placed.packed is not None:
                placed.packed.close()
            raise
        compiled = CompiledModel(self, model, compilation.refs[0], prio)
        compiled._placement = compilation.report
        if compilation.plan is not None:
            compiled._plan = compilation.plan
            compiled._steps = [CompiledModel(self, step.outlined.model, ref, prio)
                               for step, ref in zip(compilation.plan.steps, compilation.refs,
                                                    strict=True)]
        if placed.packed is not None:
            compiled.constants = placed.packed
            self._packed[placed.packed.id] = placed.packed
        return compiled

    async def allocate(self, desc: BufferDesc, input_roles: Sequence[BufferRole] = (),
                       output_roles: Sequence[BufferRole] = ()) -> DeviceMemory:
        """A buffer managed by the driver, usable only in the given roles (memory domains).

        ``desc`` gives the dims (0 or None: unknown); each role names a compiled model, an
        input or output index and a usage frequency in (0, 1]. Invalid roles raise ``BadData``
        (checked here and by the driver). A driver that refuses (a size it cannot handle, a
        memory limit) is replaced by a shared-memory buffer of the deduced size — counted in
        ``statistics().allocate_fallbacks`` — or, when the size is unknown, ``OpFailed``.
        """
        backend = self._require_backend()
        spec, driver, roles = check_allocation(self, desc, input_roles, output_roles)
        keys = frozenset((id(compiled), io, index) for compiled, io, index, _ in roles)
        try:
            handle = await backend.allocate(driver, spec.dims, [
                (compiled.ref, io, index, frequency) for compiled, io, index, frequency in roles])
        except OpFailed as exc:
            dims = spec.dims
            if dims is None or 0 in dims:
                raise OpFailed(f"allocate: driver {driver} refused ({exc}) and the buffer's size "
                               "is unknown, so shared memory cannot stand in") from exc
            log.info("allocate: driver %s refused (%s); using shared memory instead", driver, exc)
            backend.count_fallback(driver)
            memory = Memory.create(max(math.prod(dims) * dtype_of(spec.type).itemsize, 1),
                                   name="nnrt-device-fallback")
            device = DeviceMemory(self, driver, spec, None, memory, keys)
        else:
            device = DeviceMemory(self, driver, spec, handle, None, keys)
        self._devices.add(device)
        return device

    def statistics(self) -> RuntimeStatistics:
        """Queue depth, in flight, completed, failed and worker restarts per driver.

        In shared mode this is the service's view as of the last :meth:`refresh_statistics`.
        """
        return self._require_backend().statistics()

    async def refresh_statistics(self) -> RuntimeStatistics:
        """Fetch fresh statistics (shared mode asks the service); returns them."""
        backend = self._require_backend()
        refresh = getattr(backend, "refresh_statistics", None)
        if refresh is not None:
            result: RuntimeStatistics = await refresh()
            return result
        return backend.statistics()

    @staticmethod
    def sync(**runtime_kwargs: Any) -> SyncRuntime:
        """A blocking facade over a runtime with these arguments (use it with ``with``)."""
        from nnrt.runtime.sync import SyncRuntime  # noqa: PLC0415 - sync builds on this module

        return SyncRuntime(**runtime_kwargs)

    @property
    def devices(self) -> list[DriverInfo]:
        """The drivers this runtime schedules onto."""
        return self._require_backend().devices()


class CompiledModel:
    """A model prepared on a driver; execute it as often as needed, concurrently."""

    def __init__(self, runtime: Runtime, model: Model, ref: CompiledRef, priority: int) -> None:
        self.runtime = runtime
        self.model = model
        self.ref = ref
        self.priority = priority
        self._binder = InputBinder(model)
        self._out_dtypes = tuple(dtype_of(model.operands[i].type) for i in model.outputs)
        self._out_names = tuple(dt.name for dt in self._out_dtypes)
        #: The wire form of small all-inline requests and the outputs' static shapes, once.
        self._inline = InlineCodec(model)
        #: The memory holding constants the runtime packed for this model (if any).
        self.constants: Memory | None = None
        self._placement: PlacementReport | None = None
        self._plan: Plan | None = None
        self._steps: list[CompiledModel] | None = None

    @property
    def device(self) -> str:
        """The driver running this model (the first step's, for a model split in steps)."""
        return self.ref.driver

    @property
    def steps(self) -> int:
        """How many steps the execution plan has (1: the model runs whole on one driver)."""
        return 1 if self._steps is None else len(self._steps)

    def placement(self) -> PlacementReport:
        """Per operation: its driver and step, and why the other drivers did not take it."""
        if self._placement is None:
            raise BadState("this compiled model has no placement report (a plan step)")
        return self._placement

    async def execute(self, inputs: Inputs, *,
                      outputs: Sequence[Array | TensorRef | None] | None = None,
                      timeout: float | None = None, copy: bool = False) -> list[Array]:
        """Run the model once; returns the outputs with their actual shapes.

        ``inputs``: a list in model input order or a dict keyed by position or name; each an
        ndarray (a view of an :class:`nnrt.Memory` travels by reference, with no copy), a
        :class:`nnrt.TensorRef`, or anything array-like. ``outputs``: optional caller buffers,
        one per output (None for "return it"): an ndarray in shared memory or a ``TensorRef``
        is written in place by the worker; a plain ndarray receives a copy. The returned arrays
        are then views of those buffers. A buffer too small raises ``OutputInsufficientSize``
        with every output's shape. Large results without a buffer come back as views of the
        runtime's shared arena, written there by the worker (the region is reused once the view
        is collected); ``copy=True`` returns arrays owning their memory instead.
        """
        if self.ref.released:
            raise BadState("this compiled model was released")
        if self._steps is not None:
            return await run_plan(self, self._steps, inputs, outputs, timeout, copy)
        runtime = self.runtime
        backend = runtime._backend
        if backend is None:
            backend = runtime._require_backend()  # raises, saying why
        memory = runtime.memory
        if memory._released:
            memory.flush()
        if outputs is None and inputs.__class__ is list:
            tensors = self._inline.encode(inputs)
            if tensors is not None:  # the common small request: everything inline both ways
                reply = await backend.execute(self.ref, tensors, None, self.priority,
                                              None if timeout is None else _deadline(timeout))
                return self._inline.decode(reply)
        inputs, devices = _scan(inputs, outputs)
        fallbacks: dict[int, DeviceMemory] = {}
        if devices:
            inputs, outputs = self._device_args(inputs, outputs, fallbacks)
        arrays: list[Any] = self._binder.bind(inputs, keep=DeviceMemory if devices else None)
        if outputs is None and not devices and not self._inline.arena_outputs:
            tensors = inline_tensors(arrays)
            if tensors is not None:  # small, but not in the exact form the codec expects
                reply = await backend.execute(self.ref, tensors, None, self.priority,
                                              _deadline(timeout))
                return self._inline.decode(reply)
        transfer = Transfer(runtime._arena)
        try:
            tensors = [transfer.device(arr) if arr.__class__ is DeviceMemory
                       else transfer.input(arr, _dtype_name(arr)) for arr in arrays]
            refs, sizes = (None, None) if outputs is None and not self._inline.arena_outputs else (
                self._outputs(transfer, outputs))
            pools = list(transfer.pools.values()) if transfer.pools else ()
            for pool in pools:
                memory.watch(pool)
            reply = await backend.execute(self.ref, tensors, sizes, self.priority,
                                          _deadline(timeout), outputs=refs, pools=pools,
                                          device=transfer.device_handle)
            results = transfer.decode(reply, self._out_names, not copy,
                                      None if outputs is None else list(outputs))
        finally:
            transfer.close()
        for j, device_memory in fallbacks.items():  # written into its shared memory
            device_memory.dims, device_memory.initialized = results[j].shape, True
            results[j] = device_memory  # type: ignore[call-overload]
        if outputs is not None:  # plain buffers (not shared memory) receive a copy
            return [_write_into(target, result) if isinstance(target, np.ndarray)
                    and not transfer.in_place(j) else result
                    for j, (target, result) in enumerate(zip(outputs, results, strict=True))]
        return results

    def _device_args(self, inputs: Inputs, outputs: Any, fallbacks: dict[int, DeviceMemory]
                     ) -> tuple[Any, Any]:
        """Check the device memories of a request against their roles (the worker checks too)
        and stand in shared-memory fallbacks for their tensors."""
        me = id(self)
        ordered = self._binder.order(inputs)
        seen_in: set[int] = set()
        for j, value in enumerate(ordered):
            if isinstance(value, DeviceMemory):
                value._require_live()
                if (me, "input", j) not in value.roles:
                    raise BadData(f"input {j}: this device memory was not allocated for input "
                                  f"{j} of this compiled model")
                if value.fallback is not None:
                    if not value.initialized:
                        raise OpFailed(f"input {j}: the device memory is uninitialised")
                    ordered[j] = value.as_ref().ndarray()
                seen_in.add(id(value))
        if outputs is not None:
            outputs = list(outputs)
            seen_out: set[int] = set()
            for j, value in enumerate(outputs):
                if not isinstance(value, DeviceMemory):
                    continue
                value._require_live()
                if (me, "output", j) not in value.roles:
                    raise BadData(f"output {j}: this device memory was not allocated for "
                                  f"output {j} of this compiled model")
                if id(value) in seen_in or id(value) in seen_out:
                    raise BadData(f"output {j}: a device memory may not be both an input and "
                                  "an output, nor two outputs, of one execution")
                seen_out.add(id(value))
                if value.fallback is not None:  # (a fallback always has known dims)
                    fallbacks[j] = value
                    outputs[j] = TensorRef(value.fallback, 0, value.spec.dims or (),
                                           value.dtype)
        return ordered, outputs

    def _outputs(self, transfer: Transfer, outputs: Any
                 ) -> tuple[list[Any] | None, list[int] | None]:
        """The request's output references and inline buffer sizes."""
        count = len(self._out_dtypes)
        if outputs is not None and (not isinstance(outputs, list | tuple)
                                    or len(outputs) != count):
            raise BadData(f"outputs must be a list of {count} buffers (None for an output to "
                          "return)")
        refs = []
        sizes = []
        for j in range(count):
            target = None if outputs is None else outputs[j]
            if target is not None and not isinstance(target, np.ndarray | TensorRef
                                                     | DeviceMemory):
                raise BadData(f"output {j}: expected an ndarray or a TensorRef, got "
                              f"{type(target).__name__}")
            if isinstance(target, np.ndarray):
                expected = self._out_dtypes[j]
                if target.dtype != expected:
                    raise BadData(f"output {j}: expected an ndarray of {expected}")
                if not target.flags.c_contiguous or not target.flags.writeable:
                    raise BadData(f"output {j}: the buffer must be C-contiguous and writeable")
            refs.append(transfer.output_ref(j, target, self._out_dtypes[j], self._out_names[j],
                                            self._inline.static_shapes[j]))
            sizes.append(target.nbytes if isinstance(target, np.ndarray) else _UNLIMITED)
        inline_buffers = outputs is not None and any(
            isinstance(t, np.ndarray) and r is None for t, r in zip(outputs, refs, strict=True))
        return (refs if any(r is not None for r in refs) else None), (
            sizes if inline_buffers else None)

    async def release(self) -> None:
        """Free this model on every worker; executing it afterwards raises ``BadState``."""
        backend = self.runtime._backend
        if self._steps is not None:
            for step in self._steps:
                await step.release()
        elif backend is not None:
            await backend.release(self.ref)
        self.ref.released = True
        if self.constants is not None:
            self.runtime._packed.pop(self.constants.id, None)
            self.constants.close()


def _scan(inputs: Inputs, outputs: Any) -> tuple[Inputs, bool]:
    """One pass over a request's arguments: ``inputs`` with every TensorRef replaced by its
    ndarray view (recognised as shared memory), and whether any argument is a device memory."""
    values = list(inputs.values()) if isinstance(inputs, Mapping) else inputs
    refs = devices = False
    for value in values:
        kind = value.__class__
        refs = refs or kind is TensorRef
        devices = devices or kind is DeviceMemory
    if refs:
        if isinstance(inputs, Mapping):
            inputs = {k: v.ndarray() if isinstance(v, TensorRef) else v
                      for k, v in inputs.items()}
        else:
            inputs = [v.ndarray() if isinstance(v, TensorRef) else v for v in inputs]
    devices = devices or (outputs is not None and any(isinstance(v, DeviceMemory)
                                                      for v in outputs))
    return inputs, devices


def _dtype_name(array: Array) -> str:
    return _DTYPE_NAMES.get(array.dtype) or array.dtype.name


def _write_into(buffer: Array, result: Array) -> Array:
    if result.nbytes > buffer.nbytes:  # the worker checks too; never trust, never overflow
        raise OutputInsufficientSize("output buffer too small", [result.shape])
    flat = buffer.reshape(-1).view(np.uint8)
    flat[: result.nbytes] = result.reshape(-1).view(np.uint8)
    return flat[: result.nbytes].view(result.dtype).reshape(result.shape)
