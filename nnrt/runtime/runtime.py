"""``Runtime``: the async API's entry point (asyncio or trio, through anyio)."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
import math
import os
import weakref
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import anyio
import msgpack
from anyio.abc import TaskGroup

from nnrt.cache.directory import CacheDirectory
from nnrt.cache.files import check_token
from nnrt.errors import BadData, BadState, OpFailed, Unsupported
from nnrt.hal.base import DriverInfo
from nnrt.hal.buffers import BufferDesc
from nnrt.hal.discovery import default_drivers, load_driver
from nnrt.ipc.polling import DEFAULT_POLL_WINDOW, MAX_POLL_WINDOW
from nnrt.memory import Memory
from nnrt.model.model import Model
from nnrt.model.operand import dtype_of
from nnrt.model.types import ExecutionPreference, Priority
from nnrt.runtime.arena import DEFAULT_ARENA_LIMIT, Arena
from nnrt.runtime.backends.embedded import EmbeddedBackend
from nnrt.runtime.backends.pool import DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_QUEUE
from nnrt.runtime.backends.process import check_threads
from nnrt.runtime.batcher import Batcher
from nnrt.runtime.batching import Batching, BatchLayout
from nnrt.runtime.buffers import BufferRole, DeviceMemory, check_allocation
from nnrt.runtime.compile.caching import placed_with_token
from nnrt.runtime.compile.compilation import FALLBACK_DRIVER, compile_model
from nnrt.runtime.compile.constants import place_constants
from nnrt.runtime.compile.partitioner import STEP_COST, check_step_cost
from nnrt.runtime.compile.specialize import open_inputs
from nnrt.runtime.compiled import CompiledModel, default_name
from nnrt.runtime.core import RuntimeCore, Shared, deadline_after, release_dropped
from nnrt.runtime.served import serve_batched
from nnrt.runtime.stats import RuntimeStatistics
from nnrt.runtime.variants import DEFAULT_SHAPE_VARIANTS, ShapeVariants, packed_locations

if TYPE_CHECKING:
    from nnrt.runtime.clustering import ClusterLink, ClusterSession
    from nnrt.runtime.sync import SyncRuntime

__all__ = ["Runtime"]

log = logging.getLogger("nnrt.runtime")


def _asyncio_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class Runtime:
    """Schedules compile and execute requests onto driver worker processes.

    ``async with nnrt.Runtime() as rt:`` starts a pool of ``workers`` processes per driver
    (embedded mode; default one per CPU) and stops and reaps them on exit, also when the body
    raises or is cancelled. ``drivers`` defaults to
    :func:`~nnrt.hal.discovery.default_drivers` (every installed built-in driver, fastest
    first: litert, cpu, reference; or ``$NNRT_DRIVERS``); the reference driver is always
    added to run what the others do not take. ``Runtime(connect=PATH)`` uses the pools of an
    ``nnrt serve`` service instead. ``cache_dir`` is where every ``compile`` caches when it
    names none (default: no caching; ``nnrt.default_cache_dir()`` is the directory ``nnrt
    cache`` and ``nnrt run --cache`` use). ``max_in_flight`` bounds the requests sent to one worker
    (backpressure); a worker that has not stopped a cancelled or timed-out execution
    ``cancel_grace`` seconds later (one operation running on and on) is killed and restarted.
    Plain ndarrays larger than 64 KiB travel through a shared arena of at most ``arena_limit``
    bytes (0: never). At most ``max_queue`` requests wait per driver; one more fails at once
    with ``ResourceExhausted`` (transient; in shared mode the service's bound applies). After
    its last execute, a worker keeps polling for requests ``poll_window`` seconds (default
    250 µs, at most 10 ms; 0: off) before it sleeps, so that a request sent soon after does
    not pay for waking it up; under asyncio the client likewise polls for the reply of a lone
    request (one in flight per worker connection) instead of sleeping: for the time such
    requests have been taking (at most 2 ms) plus ``poll_window``.
    ``threads`` is what each worker's kernels may use (LiteRT's
    XNNPACK, BLAS, OpenMP; default one: a pool runs one worker per core, and more threads per
    worker would contend with the other workers); ignored with ``connect`` (the service's
    own applies, ``nnrt serve --threads``).

    ``cluster=nnrt.RayCluster(...)`` runs nnrt's service on a Ray cluster's nodes and connects
    to the one on this node as ``connect`` would; each execute runs on this node's service
    while it has capacity, else on another node's through Ray (docs/cluster.md).

    ``rt.memory`` creates shared memories (:class:`nnrt.Memory`) closed with the runtime.
    """

    def __init__(self, *, drivers: Sequence[str] | None = None,
                 workers: int | Mapping[str, int] | None = None, connect: str | None = None,
                 max_in_flight: int = DEFAULT_MAX_IN_FLIGHT, cancel_grace: float = 5.0,
                 arena_limit: int = DEFAULT_ARENA_LIMIT,
                 max_queue: int = DEFAULT_MAX_QUEUE,
                 poll_window: float = DEFAULT_POLL_WINDOW, threads: int | None = None,
                 cache_dir: str | os.PathLike[str] | None = None,
                 cluster: ClusterLink | None = None) -> None:
        if cluster is not None and (connect is not None or not callable(
                getattr(cluster, "open", None))):
            raise BadData("cluster must be a cluster (nnrt.RayCluster(...)), and excludes "
                          f"connect; got cluster={cluster!r:.60}, connect={connect!r:.60}")
        #: The cluster to run on (None: this machine only), and its session while running.
        self._cluster = cluster
        self._session: ClusterSession | None = None
        if drivers is None:
            drivers = default_drivers()
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
        self._threads = check_threads(threads)
        if cache_dir is not None and not isinstance(cache_dir, str | os.PathLike):
            raise BadData(f"cache_dir must be a path (nnrt.default_cache_dir() for the "
                          f"default one), got {cache_dir!r:.60}")
        #: Where ``compile`` caches when not told (None: it does not cache).
        self.cache_dir = cache_dir
        self._workers = per_driver
        self._connect = connect
        self._max_in_flight = max_in_flight
        self._closer: Any = None
        self._tg: TaskGroup | None = None
        #: The dispatchers of compiled models with ``batching=`` (closed with the runtime).
        self._batchers: weakref.WeakSet[Batcher] = weakref.WeakSet()
        self._arena_limit = arena_limit
        #: What compiled models and device memories share with this runtime.
        self._core = RuntimeCore()
        #: Shared memories of this runtime (``rt.memory.create(size)`` and friends).
        self.memory = self._core.memory
        #: Pools someone else runs and stops (:meth:`over`); None: the runtime starts its own.
        self._given: EmbeddedBackend | None = None

    @classmethod
    def over(cls, backend: EmbeddedBackend, **runtime_kwargs: Any) -> Runtime:
        """A runtime scheduling onto ``backend``'s pools, which its caller starts and stops.

        ``nnrt serve`` compiles the models it batches across its clients with one (see
        docs/batching-shared.md): entering it starts only its task group, its arena and its
        memories; leaving it releases what it compiled and leaves the pools running.
        """
        runtime = cls(drivers=list(backend.pools), **runtime_kwargs)
        runtime._given = backend
        return runtime

    async def __aenter__(self) -> Self:
        if self._core.backend is not None:
            raise BadState("this Runtime is already running")
        if self._given is not None:  # its owner starts and stops the pools: no closer
            self._tg = anyio.create_task_group()
            await self._tg.__aenter__()
            self._core.backend = self._given
            self._started(self._given.unmap)
            return self
        if self._connect is not None or self._cluster is not None:
            from nnrt.runtime.backends.remote import RemoteBackend  # noqa: PLC0415

            self._tg = anyio.create_task_group()
            await self._tg.__aenter__()
            try:
                if self._cluster is not None:  # this node's service, started on the cluster
                    self._session = await self._cluster.open(self._tg)
                    self._connect = self._session.local_socket
                remote = RemoteBackend(self._connect or "", self._poll_window)
                await remote.start(self._tg)
            except BaseException:
                await self._close_session()
                self._tg.cancel_scope.cancel()
                await self._tg.__aexit__(None, None, None)
                raise
            self._core.backend, self._closer = remote, remote.close
            self._started(remote.unmap)
            return self
        for name in self._drivers:
            # fail fast, in this process: unknown names list the known drivers, and a driver
            # asking for more cache files than NNAPI allows (32 of each) is refused here
            load_driver(name).cache_files_needed()
        embedded = EmbeddedBackend(self._drivers, self._workers, self._max_in_flight,
                                   self._cancel_grace, self._poll_window, self._threads)
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
        self._core.backend, self._closer = embedded, embedded.close
        self._started(embedded.unmap)
        return self

    def _started(self, unmap: Callable[[int], None]) -> None:
        self._core.arena = Arena(self._arena_limit)
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
        core = self._core
        for batcher in list(self._batchers):  # queued requests fail; dispatchers end
            batcher.close()
        self.memory.attach(None, loop=None)
        for buffer in list(core.buffers):  # worker-side buffers die with the workers
            buffer.freed = True
            if buffer.fallback is not None:
                buffer.fallback.close()
        for packed in core.packed.values():
            packed.close()
        core.packed.clear()
        core.dropped.clear()  # the workers that held them stop now
        core.shared.clear()
        if core.arena is not None:
            core.arena.close()
        self.memory.close()
        if self._closer is not None:
            self._closer()
        core.backend = None
        await self._close_session()  # after the client let go of this node's service
        await tg.__aexit__(None, None, None)  # supervisors reap their workers, shielded

    async def _close_session(self) -> None:
        """Stop the cluster's services this runtime started (cluster runtimes only)."""
        session, self._session = self._session, None
        if session is not None:
            self._connect = None
            with anyio.CancelScope(shield=True):
                await session.aclose()

    async def compile(self, model: Model, *,
                      preference: ExecutionPreference = ExecutionPreference.FAST_SINGLE_ANSWER,
                      priority: Priority = Priority.MEDIUM, devices: Sequence[str] | None = None,
                      timeout: float | None = None, allow_fallback: bool = True,
                      cache_dir: str | os.PathLike[str] | None = None,
                      token: bytes | None = None, step_cost: float = STEP_COST,
                      shape_variants: int = DEFAULT_SHAPE_VARIANTS,
                      name: str | None = None,
                      batching: Batching | None = None) -> CompiledModel:
        """Validate ``model``, place its operations on drivers and prepare it on workers.

        Every driver in ``devices`` (default: all of this runtime's, in order) says which
        operations it supports; each operation goes to the best of them for ``preference``
        and each driver's operations are grouped into the largest partitions that keep the
        plan acyclic. Operations no driver takes run on the ``reference`` driver unless
        ``allow_fallback`` is false (then ``Unsupported`` lists them). A model file's
        ahead-of-time partitions load on their driver without compiling. See
        :meth:`CompiledModel.placement`. ``step_cost`` (microseconds, default 50) is what the
        placement's cost model charges for one more step — a round trip to a worker: a
        partition moves to a neighbouring step's driver when the steps saved outweigh the
        speed lost; 0 keeps every operation on its fastest driver (docs/architecture.md).

        ``cache_dir`` (default: the runtime's ``cache_dir``, else none) caches every step's
        compiled model on disk (drivers that cache: see ``cache_files_needed``): a later
        compile of the same model — or a new worker — loads it instead of compiling.
        ``token`` (32 bytes, NNAPI's cache token) names the model; by default it is derived
        from the model's content.

        A model whose inputs have unknown dims (0, as an ONNX model's dynamic batch or image
        size) is prepared per input shape: each new shape's first ``execute`` specializes it
        to that shape (shapes inferred, shape computations folded) and compiles that variant
        with these options; at most ``shape_variants`` (default 8) stay prepared, the least
        recently used released first (see :attr:`CompiledModel.variants`).

        ``name`` names the compiled model in ``statistics().models`` and the metrics (default:
        its first output's name, else ``"model"``); a name taken by a live compiled model of
        this runtime gets ``#2``, ``#3``, … (:attr:`CompiledModel.name`).

        ``batching`` (an :class:`nnrt.Batching`) merges concurrent executes of the compiled
        model whose inputs differ only along their batch axis into batched executions (checked
        against the model here: ``BadData`` names an input whose batch dim cannot vary); with
        a model prepared per input shape, each batch size it runs at is one variant, and
        ``shape_variants`` is raised to hold them all.
        """
        backend = self._core.require_backend()
        if name is not None and not (isinstance(name, str) and 0 < len(name) <= 200):
            raise BadData(f"compile: name must be a string of 1 to 200 characters, got "
                          f"{name!r:.60}")
        if not isinstance(model, Model):
            raise BadData(f"compile expects an nnrt.Model, got {type(model).__name__}")
        await release_dropped(self._core)
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
        deadline = deadline_after(timeout)
        step_cost = check_step_cost(step_cost)
        if cache_dir is None:
            cache_dir = self.cache_dir
        if cache_dir is None and token is not None:
            raise BadData("compile: a cache token needs a cache_dir")
        options: dict[str, Any] = {
            "preference": pref, "priority": prio, "devices": candidates,
            "allow_fallback": bool(allow_fallback), "cache_dir": cache_dir,
            "step_cost": step_cost, "name": name or default_name(model)}
        per_shape = open_inputs(model)
        layout = None if batching is None else BatchLayout.of(batching, model, bool(per_shape))
        if per_shape:
            if isinstance(shape_variants, bool) or not isinstance(shape_variants, int) or (
                    shape_variants < 1):
                raise BadData(f"shape_variants must be a positive int, got {shape_variants!r}")
            if layout is not None:
                shape_variants = max(shape_variants, len(layout.sizes) + 1)
            compiled = await self._compile_per_shape(model, options, deadline, token,
                                                     shape_variants)
        else:
            compiled = await self._compile_whole(model, options, deadline, token)
        self._core.models.add(compiled, name or compiled.name)
        if self._session is not None:
            compiled.route = self._session.route(compiled, {**options,
                                                            "shape_variants": shape_variants})
        if batching is not None and layout is not None and self._connect is not None:
            # batched by the service, with every client's requests
            await serve_batched(self._core, compiled, layout, batching, options, shape_variants)
        elif layout is not None:
            self._batch(compiled, model, layout, candidates[0])
        return compiled

    def _batch(self, compiled: CompiledModel, model: Model, layout: BatchLayout,
               device: str) -> None:
        """Give ``compiled`` a batcher whose dispatcher runs in the runtime's task group."""
        if self._tg is None:
            raise BadState("the Runtime is not running")
        pool = getattr(self._core.backend, "pools", {}).get(device)
        workers = len(pool.slots) if pool is not None else 2
        owner = weakref.ref(compiled)  # the dispatcher must not keep the model alive

        async def run(inputs: list[Any], timeout: float | None, copy: bool) -> list[Any]:
            target = owner()
            if target is None:
                raise BadState("the compiled model was collected")
            return await target.execute_alone(inputs, None, timeout, copy)

        batcher = Batcher(model, layout, run, self._core.arena, workers,
                          compiled.metrics.execution_done)
        compiled.batcher = batcher
        weakref.finalize(compiled, batcher.close_soon)
        self._batchers.add(batcher)
        self._tg.start_soon(batcher.serve)

    async def _compile_whole(self, model: Model, options: dict[str, Any],
                             deadline: float | None, token: bytes | None) -> CompiledModel:
        """Compile ``model`` as it is (its shapes as declared) with checked ``options``."""
        shared = await self._shared_compilation(model, options, deadline, token)
        return CompiledModel(self, self._core, model, shared.compilation, options["priority"],
                             shared)

    async def _shared_compilation(self, model: Model, options: dict[str, Any],
                                  deadline: float | None, token: bytes | None) -> Shared:
        """The compilation of ``model`` with ``options``: one held already for an identical
        compile (its users counted up), or a new one."""
        backend = self._core.require_backend()
        prio, candidates, cache_dir = (options["priority"], options["devices"],
                                       options["cache_dir"])
        key = (id(model), int(options["preference"]), prio, tuple(candidates),
               options["step_cost"], options["allow_fallback"],
               None if cache_dir is None else os.fspath(cache_dir), token)
        shared = self._core.shared.get(key)
        if shared is not None and shared.model is model and not any(
                ref.released for ref in shared.compilation.refs):
            shared.users += 1  # compiled before and still held: the workers have it already
            return shared
        directory = None if cache_dir is None else CacheDirectory(cache_dir)
        given = None if token is None else check_token(token, "compile: token")
        placed, derived = await placed_with_token(
            model, derive_token=directory is not None and given is None)
        app_token = given or derived
        by_token = None if app_token is None else ("token", app_token, *key[1:])
        shared = None if by_token is None else self._core.shared.get(by_token)
        if shared is not None and not any(ref.released for ref in shared.compilation.refs):
            if placed.packed is not None:  # an equal model (same cache token) is prepared
                placed.packed.close()
            shared.users += 1
            return shared
        cache = None if directory is None or app_token is None else (directory, app_token)
        try:
            for memory in placed.memories:
                self.memory.watch(memory)
            compilation = await compile_model(
                backend, model, placed, preference=int(options["preference"]), priority=prio,
                devices=candidates, deadline=deadline, allow_fallback=options["allow_fallback"],
                cache=cache, step_cost=options["step_cost"], name=options.get("name"))
        except BaseException:
            if placed.packed is not None:
                placed.packed.close()
            raise
        if placed.packed is not None:
            self._core.packed[placed.packed.id] = placed.packed
        keys = (key,) if by_token is None else (key, by_token)
        shared = Shared(keys, model, compilation, placed.packed, placed.refs)
        for each in keys:
            self._core.shared[each] = shared
        return shared

    async def _compile_per_shape(self, model: Model, options: dict[str, Any],
                                 deadline: float | None, token: bytes | None,
                                 limit: int) -> CompiledModel:
        """``model`` (inputs of unknown dims) compiled as it is on the first of the devices
        that runs it whole so (the reference interpreter resolves shapes at execution): what
        executes with device memories run. Then prepared per input shape on first use with
        ``options`` (a given ``token`` made distinct per shape); the variants refer to the
        constants packed for the model as it is: weights are packed once."""
        given = None if token is None else check_token(token, "compile: token")
        shared = None
        for device in options["devices"]:
            try:
                shared = await self._shared_compilation(
                    model, {**options, "devices": [device], "allow_fallback": False}, deadline,
                    token)
                break
            except Unsupported as exc:
                log.debug("compile: %s does not run the model as it is (%s)", device, exc)
        if shared is None:
            log.info("compile: no device runs the model with its unknown input dims as it is; "
                     "it runs per input shape only")
            placed = await anyio.to_thread.run_sync(place_constants, model)
            if placed.packed is not None:
                self._core.packed[placed.packed.id] = placed.packed
            shared = Shared((), model, None, placed.packed, placed.refs)
        packed = shared.constants
        locations = packed_locations(shared.placed, [] if packed is None else [packed])

        async def compile_variant(specialized: Model, timeout: float | None) -> CompiledModel:
            shapes = [list(specialized.operands[i].dims) for i in specialized.inputs]
            variant_token = None if given is None else hashlib.sha256(
                given + msgpack.packb(shapes)).digest()
            return await self._compile_whole(specialized, options, deadline_after(timeout),
                                             variant_token)

        variants = ShapeVariants(model, compile_variant, locations, limit)
        return CompiledModel(self, self._core, model, shared.compilation, options["priority"],
                             shared, variants)

    async def allocate(self, desc: BufferDesc, input_roles: Sequence[BufferRole] = (),
                       output_roles: Sequence[BufferRole] = ()) -> DeviceMemory:
        """A buffer managed by the driver, usable only in the given roles (memory domains).

        ``desc`` gives the dims (0 or None: unknown); each role names a compiled model, an
        input or output index and a usage frequency in (0, 1]. Invalid roles raise ``BadData``
        (checked here and by the driver). A driver that refuses (a size it cannot handle, a
        memory limit) is replaced by a shared-memory buffer of the deduced size — counted in
        ``statistics().allocate_fallbacks`` — or, when the size is unknown, ``OpFailed``.
        """
        backend = self._core.require_backend()
        spec, driver, roles = check_allocation(self._core, desc, input_roles, output_roles)
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
            buffer = DeviceMemory(self._core, driver, spec, None, memory, keys)
        else:
            buffer = DeviceMemory(self._core, driver, spec, handle, None, keys)
        self._core.buffers.add(buffer)
        return buffer

    def statistics(self) -> RuntimeStatistics:
        """Queue depth, in flight, completed, failed and worker restarts per driver.

        In shared mode this is the service's view, fetched at connect and refreshed in the
        background when a call finds it over a second old (:meth:`refresh_statistics` fetches
        it now).
        """
        return self._with_models(self._core.require_backend().statistics())

    async def refresh_statistics(self) -> RuntimeStatistics:
        """Fetch fresh statistics (shared mode asks the service); returns them."""
        return self._with_models(await self._core.require_backend().refresh_statistics())

    def _with_models(self, stats: RuntimeStatistics) -> RuntimeStatistics:
        """``stats`` with this runtime's live compiled models (recorded in this process, in
        shared mode too)."""
        nodes = {} if self._session is None else self._session.statistics()
        return dataclasses.replace(stats, models=self._core.models.snapshot(), nodes=nodes)

    @staticmethod
    def sync(**runtime_kwargs: Any) -> SyncRuntime:
        """A blocking facade over a runtime with these arguments (use it with ``with``)."""
        from nnrt.runtime.sync import SyncRuntime  # noqa: PLC0415 - sync builds on this module

        return SyncRuntime(**runtime_kwargs)

    @property
    def devices(self) -> list[DriverInfo]:
        """The drivers this runtime schedules onto."""
        return self._core.require_backend().devices()
