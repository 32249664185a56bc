"""``Runtime`` and ``CompiledModel``: the async API (asyncio or trio, through anyio)."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self

import anyio
import numpy as np
from anyio.abc import TaskGroup

from nnrt.driver.base import DriverInfo
from nnrt.driver.discovery import load_driver
from nnrt.errors import BadData, BadState, OutputInsufficientSize
from nnrt.ipc.framing import ProtocolError
from nnrt.ipc.messages import decode_tensor, encode_tensor
from nnrt.model.model import Model
from nnrt.model.operand import dtype_of
from nnrt.model.types import ExecutionPreference, Priority
from nnrt.model.wire import model_to_wire
from nnrt.ops.interpreter import InputBinder, Inputs
from nnrt.runtime.backend import CompiledRef, EmbeddedBackend
from nnrt.runtime.stats import RuntimeStatistics

if TYPE_CHECKING:
    from nnrt.runtime.sync import SyncRuntime

__all__ = ["CompiledModel", "Runtime"]

Array = np.ndarray[Any, Any]


class Backend(Protocol):
    """What the runtime needs from the embedded pools or from a shared service."""

    async def compile(self, wire_model: dict[str, Any], preference: int, priority: int,
                      devices: Sequence[str] | None, deadline: float | None) -> CompiledRef: ...

    async def execute(self, ref: CompiledRef, inputs: list[Any], output_sizes: list[int] | None,
                      priority: int, deadline: float | None) -> dict[str, Any]: ...

    async def release(self, ref: CompiledRef) -> None: ...

    def statistics(self) -> RuntimeStatistics: ...

    def devices(self) -> list[Any]: ...


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
    later (one operation running on and on) is killed and restarted.
    """

    def __init__(self, *, drivers: Sequence[str] = ("reference",),
                 workers: int | Mapping[str, int] | None = None, connect: str | None = None,
                 max_in_flight: int = 16, cancel_grace: float = 5.0) -> None:
        if not drivers:
            raise BadData("Runtime needs at least one driver")
        self._drivers = list(dict.fromkeys(drivers))
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
        if not (isinstance(cancel_grace, int | float) and cancel_grace > 0):
            raise BadData(f"cancel_grace must be a positive number of seconds, got "
                          f"{cancel_grace!r}")
        self._cancel_grace = float(cancel_grace)
        self._workers = per_driver
        self._connect = connect
        self._max_in_flight = max_in_flight
        self._backend: Backend | None = None
        self._closer: Any = None
        self._tg: TaskGroup | None = None

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
            return self
        for name in self._drivers:
            load_driver(name)  # fail fast, in this process, with the list of known drivers
        embedded = EmbeddedBackend(self._drivers, self._workers, self._max_in_flight,
                                   self._cancel_grace)
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
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> bool | None:
        await self.aclose()
        return None

    async def aclose(self) -> None:
        """Stop every worker and reap it (idempotent)."""
        tg, self._tg = self._tg, None
        if tg is None:
            return
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
                      timeout: float | None = None) -> CompiledModel:
        """Validate ``model``, choose a device and prepare it on a worker."""
        backend = self._require_backend()
        if not isinstance(model, Model):
            raise BadData(f"compile expects an nnrt.Model, got {type(model).__name__}")
        if not model.finished:
            raise BadState("compile: the model is not finished (call model.finish())")
        pref = ExecutionPreference(int(preference))
        prio = int(priority)
        if not Priority.LOW <= prio <= Priority.HIGH:
            raise BadData(f"priority must be between {Priority.LOW} and {Priority.HIGH}")
        deadline = _deadline(timeout)
        wire = model_to_wire(model)
        ref = await backend.compile(wire, int(pref), prio, devices, deadline)
        return CompiledModel(self, model, ref, prio)

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

    @property
    def device(self) -> str:
        """The driver running this model."""
        return self.ref.driver

    async def execute(self, inputs: Inputs, *, outputs: Sequence[Array] | None = None,
                      timeout: float | None = None) -> list[Array]:
        """Run the model once; returns the outputs with their actual shapes.

        ``inputs``: a list in model input order or a dict keyed by position or name.
        ``outputs``: optional caller buffers; results are written into them and views of them
        returned. A buffer too small raises ``OutputInsufficientSize`` with every output's shape.
        """
        if self.ref.released:
            raise BadState("this compiled model was released")
        backend = self.runtime._require_backend()
        tensors = [encode_tensor(arr) for arr in self._binder.bind(inputs)]
        sizes = self._output_sizes(outputs)
        reply = await backend.execute(self.ref, tensors, sizes, self.priority,
                                      _deadline(timeout))
        results = self._decode(reply)
        if outputs is not None:
            return [_write_into(buffer, result) for buffer, result in
                    zip(outputs, results, strict=True)]
        return results

    def _output_sizes(self, outputs: Sequence[Array] | None) -> list[int] | None:
        if outputs is None:
            return None
        if len(outputs) != len(self.model.outputs):
            raise BadData(f"expected {len(self.model.outputs)} output buffers, got "
                          f"{len(outputs)}")
        for j, (buffer, expected) in enumerate(zip(outputs, self._out_dtypes, strict=True)):
            if not isinstance(buffer, np.ndarray) or buffer.dtype != expected:
                raise BadData(f"output {j}: expected an ndarray of {expected}")
            if not buffer.flags.c_contiguous or not buffer.flags.writeable:
                raise BadData(f"output {j}: the buffer must be C-contiguous and writeable")
        return [int(b.nbytes) for b in outputs]

    def _decode(self, reply: dict[str, Any]) -> list[Array]:
        raw = reply.get("outputs")
        names = self._out_names
        if not isinstance(raw, list) or len(raw) != len(names):
            raise ProtocolError("execute reply has the wrong number of outputs")
        results = []
        for j, value in enumerate(raw):
            if not isinstance(value, list) or not value or value[0] != names[j]:
                raise ProtocolError(f"output {j}: expected a {names[j]} tensor")
            results.append(decode_tensor(value, f"output {j}").copy())
        return results

    async def release(self) -> None:
        """Free this model on every worker; executing it afterwards raises ``BadState``."""
        backend = self.runtime._backend
        if backend is not None:
            await backend.release(self.ref)
        self.ref.released = True


def _write_into(buffer: Array, result: Array) -> Array:
    if result.nbytes > buffer.nbytes:  # the worker checks too; never trust, never overflow
        raise OutputInsufficientSize("output buffer too small", [result.shape])
    flat = buffer.reshape(-1).view(np.uint8)
    flat[: result.nbytes] = result.reshape(-1).view(np.uint8)
    return flat[: result.nbytes].view(result.dtype).reshape(result.shape)
