"""Mixed traffic of one stress client: every request checked, every outcome tallied.

A client runs ``concurrency`` loops for ``duration`` seconds; each iteration picks one kind of
request at random: execute with ndarrays, execute on shared memory (memfd or blob, outputs
written in place), a device-buffer sequence (allocate, copy_from, executions ping-pong,
copy_to, free), a cancellation mid-execute, a tiny deadline, or a compile (with the shared
cache dir) followed by an execution and a release. Results are compared with
``nnrt.reference.run``. Every request has a deadline; no answer by the deadline plus
:data:`GRACE` counts as lost.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import numpy as np

from nnrt.errors import DeadlineMissed, NnrtError, ResourceExhausted, UnavailableDevice
from nnrt.hal.buffers import BufferDesc
from nnrt.model.model import Model
from nnrt.model.types import Priority
from nnrt.reference.interpreter import run as reference_run
from nnrt.runtime.buffers import BufferRole, DeviceMemory
from nnrt.runtime.compiled import CompiledModel
from nnrt.runtime.runtime import Runtime
from nnrt.stress.models import MODELS, cell_model, random_inputs, slow_model
from nnrt.stress.outcomes import Tally, classify_error, results_match

__all__ = ["DEVICES", "GRACE", "TIMEOUT", "Traffic", "TrafficConfig"]

T = TypeVar("T")
Array = np.ndarray[Any, Any]

#: The drivers traffic is spread over; ``reference`` results must be exact.
DEVICES = ("reference", "cpu")
#: The timeout of ordinary requests (seconds).
TIMEOUT = 10.0
#: How long past its deadline a request may take before it counts as lost.
GRACE = 5.0
#: Typed errors a valid request may get under stress (killed workers, deadlines, full queues).
ALLOWED: tuple[type[NnrtError], ...] = (UnavailableDevice, DeadlineMissed, ResourceExhausted)
_WEIGHTS = {"execute": 30, "memory": 15, "device": 10, "cancel": 10, "deadline": 10,
            "compile": 10}


@dataclass(frozen=True)
class TrafficConfig:
    """What one client does: for how long, how many loops at once, with which cache dir."""

    duration: float
    concurrency: int = 3
    seed: int = 0
    cache_dir: str | None = None


class _Lost(Exception):
    """A request got no answer within its deadline plus the grace."""


class Traffic:
    """The request loops of one client over a running :class:`nnrt.Runtime`."""

    def __init__(self, rt: Runtime, config: TrafficConfig) -> None:
        self.rt = rt
        self.config = config
        self.rng = np.random.default_rng(config.seed)
        self.tally = Tally()
        self.compiled: dict[tuple[str, str], CompiledModel] = {}
        self.models: dict[str, Model] = {name: make() for name, make in MODELS.items()}
        self.models["cell"] = cell_model()
        self.models["slow"] = slow_model()

    async def run(self) -> Tally:
        """Compile the working set, then run the loops until the duration is over."""
        for name in self.models:
            for device in DEVICES:
                for _ in range(5):  # a worker killed under the compile: try again
                    compiled = await self._compile("compile", name, device)
                    if compiled is not None:
                        self.compiled[name, device] = compiled
                        break
        end = time.monotonic() + self.config.duration
        async with anyio.create_task_group() as tg:
            for k in range(self.config.concurrency):
                tg.start_soon(self._loop, end, k)
        for compiled in self.compiled.values():
            await self._call("release", TIMEOUT, compiled.release)
        return self.tally

    async def _loop(self, end: float, k: int) -> None:
        handlers = {"execute": self._execute, "memory": self._memory, "device": self._device,
                    "cancel": self._cancel, "deadline": self._deadline,
                    "compile": self._compile_and_release}
        kinds = list(_WEIGHTS)
        weights = np.array(list(_WEIGHTS.values()), float)
        rng = np.random.default_rng([self.config.seed, k])
        while time.monotonic() < end:
            kind = kinds[rng.choice(len(kinds), p=weights / weights.sum())]
            device = DEVICES[rng.integers(len(DEVICES))]
            await handlers[kind](device, rng)

    # -- one request -------------------------------------------------------------------------

    async def _call(self, request: str, timeout: float, call: Callable[[], Awaitable[T]]
                    ) -> tuple[bool, T | None]:
        """Run ``call``; record errors and losses. Returns (answered without error, value)."""
        start = time.monotonic()
        try:
            with anyio.fail_after(timeout + GRACE):
                value = await call()
        except TimeoutError as exc:
            if isinstance(exc, NnrtError):  # DeadlineMissed is a TimeoutError too
                self._error(request, exc, time.monotonic() - start)
                return False, None
            self.tally.record(request, "lost", detail=f"no answer after {timeout + GRACE} s")
            return False, None
        except Exception as exc:
            self._error(request, exc, time.monotonic() - start)
            return False, None
        return True, value

    def _error(self, request: str, exc: BaseException, latency: float) -> None:
        outcome, kind = classify_error(exc, ALLOWED)
        self.tally.record(request, outcome, latency=latency, kind=kind,
                          detail=f"{kind}: {exc}")

    def _check(self, request: str, latency: float, actual: Any, expected: list[Array],
               device: str) -> None:
        problem = results_match(actual, expected, exact=device == "reference")
        if problem is None:
            self.tally.record(request, "ok", latency=latency)
        else:
            self.tally.record(request, "wrong", kind="mismatch", detail=f"{device}: {problem}")

    async def _checked(self, request: str, device: str, model: Model, timeout: float,
                       call: Callable[[], Awaitable[Any]], inputs: list[Array]) -> None:
        start = time.monotonic()
        answered, value = await self._call(request, timeout, call)
        if answered:
            actual = [np.array(v, copy=True) for v in value or ()]
            self._check(request, time.monotonic() - start, actual,
                        reference_run(model, inputs), device)

    async def _compile(self, request: str, name: str, device: str,
                       priority: Priority = Priority.MEDIUM) -> CompiledModel | None:
        model = self.models[name]
        start = time.monotonic()

        async def call() -> CompiledModel:
            return await self.rt.compile(model, devices=[device], timeout=TIMEOUT * 3,
                                         cache_dir=self.config.cache_dir, priority=priority)

        answered, compiled = await self._call(request, TIMEOUT * 3, call)
        if answered:
            self.tally.record(request, "ok", latency=time.monotonic() - start)
        return compiled

    # -- the kinds of traffic ----------------------------------------------------------------

    async def _execute(self, device: str, rng: np.random.Generator) -> None:
        name = list(MODELS)[rng.integers(len(MODELS))]
        compiled = self.compiled.get((name, device))
        if compiled is None:
            return
        inputs = random_inputs(compiled.model, rng)
        await self._checked("execute", device, compiled.model, TIMEOUT,
                            lambda: compiled.execute(inputs, timeout=TIMEOUT), inputs)

    async def _memory(self, device: str, rng: np.random.Generator) -> None:
        name = list(MODELS)[rng.integers(len(MODELS))]
        compiled = self.compiled.get((name, device))
        if compiled is None:
            return
        model = compiled.model
        inputs = random_inputs(model, rng)
        expected = reference_run(model, inputs)
        sizes = [a.nbytes for a in (*inputs, *expected)]
        offsets = np.cumsum([0, *[(s + 63) // 64 * 64 for s in sizes]])
        blob = rng.random() < 0.25
        memory = (self.rt.memory.create_blob(int(offsets[-1])) if blob
                  else self.rt.memory.create(int(offsets[-1])))
        try:
            views = []
            for k, array in enumerate((*inputs, *expected)):
                views.append(memory.ndarray(array.dtype, array.shape, int(offsets[k])))
            for view, array in zip(views, inputs, strict=False):
                view[:] = array
            ins, outs = views[:len(inputs)], views[len(inputs):]
            start = time.monotonic()
            answered, value = await self._call(
                "execute_memory", TIMEOUT,
                lambda: compiled.execute(ins, outputs=list(outs), timeout=TIMEOUT))
            if answered:
                self._check("execute_memory", time.monotonic() - start,
                            [np.array(v, copy=True) for v in outs], expected, device)
                if value is not None and not all(np.shares_memory(v, o)
                                                 for v, o in zip(value, outs, strict=True)):
                    self.tally.record("execute_memory", "wrong", kind="not in place",
                                      detail="results are not views of the output buffers")
        finally:
            memory.close()

    async def _deadline(self, device: str, rng: np.random.Generator) -> None:
        name = list(MODELS)[rng.integers(len(MODELS))]
        compiled = self.compiled.get((name, device))
        if compiled is None:
            return
        inputs = random_inputs(compiled.model, rng)
        timeout = float(rng.uniform(0.0002, 0.005))
        await self._checked("deadline", device, compiled.model, timeout,
                            lambda: compiled.execute(inputs, timeout=timeout), inputs)

    async def _cancel(self, device: str, rng: np.random.Generator) -> None:
        compiled = self.compiled.get(("slow", device))
        if compiled is None:
            return
        inputs = random_inputs(compiled.model, rng)
        delay = float(rng.uniform(0.0, 0.03))
        result: list[Any] = []
        start = time.monotonic()

        async def call() -> bool:
            with anyio.move_on_after(delay) as scope:
                result.extend(await compiled.execute(inputs, timeout=TIMEOUT))
            return scope.cancelled_caught

        answered, cancelled = await self._call("cancel", TIMEOUT, call)
        if not answered:
            return
        if cancelled:
            self.tally.record("cancel", "ok", latency=time.monotonic() - start)
        else:  # finished before the cancellation: the result must be right
            self._check("cancel", time.monotonic() - start,
                        [np.array(v, copy=True) for v in result],
                        reference_run(compiled.model, inputs), device)

    async def _compile_and_release(self, device: str, rng: np.random.Generator) -> None:
        name = list(MODELS)[rng.integers(len(MODELS))]
        priority = Priority(int(rng.choice([Priority.LOW, Priority.MEDIUM, Priority.HIGH])))
        self.models[name] = MODELS[name]()  # a fresh model object: the cache finds it by content
        compiled = await self._compile("compile", name, device, priority)
        if compiled is None:
            return
        inputs = random_inputs(compiled.model, rng)
        await self._checked("execute", device, compiled.model, TIMEOUT,
                            lambda: compiled.execute(inputs, timeout=TIMEOUT), inputs)
        await self._release(compiled)

    async def _release(self, compiled: CompiledModel) -> None:
        start = time.monotonic()
        answered, _ = await self._call("release", TIMEOUT, compiled.release)
        if answered:
            self.tally.record("release", "ok", latency=time.monotonic() - start)

    async def _device(self, device: str, rng: np.random.Generator) -> None:
        compiled = self.compiled.get(("cell", device))
        if compiled is None:
            return
        await DeviceSequence(self, compiled, device, rng).run()


class DeviceSequence:
    """allocate two state buffers, copy_from, 3 executions ping-pong, copy_to, free."""

    STEPS = 3

    def __init__(self, traffic: Traffic, compiled: CompiledModel, device: str,
                 rng: np.random.Generator) -> None:
        self.traffic = traffic
        self.compiled = compiled
        self.device = device
        self.rng = rng
        self.buffers: list[DeviceMemory] = []

    async def _step(self, request: str, call: Callable[[], Awaitable[T]]) -> tuple[bool, T | None]:
        start = time.monotonic()
        answered, value = await self.traffic._call(request, TIMEOUT, call)
        if answered:
            self.traffic.tally.record(request, "ok", latency=time.monotonic() - start)
        return answered, value

    async def run(self) -> None:
        """The sequence; stops at the first error (the buffers may be gone with a worker)."""
        try:
            await self._run()
        finally:
            for buffer in self.buffers:
                await self._step("device_free", buffer.free)

    async def _run(self) -> None:
        cell, rt = self.compiled, self.traffic.rt
        roles: dict[str, Any] = dict(input_roles=[BufferRole(cell, 1)],
                                     output_roles=[BufferRole(cell, 0)])
        units = cell.model.operands[cell.model.inputs[1]].dims[0]
        for _ in range(2):
            answered, buffer = await self._step(
                "device_allocate", lambda: rt.allocate(BufferDesc((units,)), **roles))
            if not answered or buffer is None:
                return
            self.buffers.append(buffer)
        a, b = self.buffers
        state = (self.rng.random(units, dtype=np.float32) - 0.5).astype(np.float32)
        xs = (self.rng.random((self.STEPS, 1), dtype=np.float32) - 0.5).astype(np.float32)
        answered, _ = await self._step("device_copy_from", lambda: a.copy_from(state))
        if not answered:
            return
        expected = state
        for t in range(self.STEPS):
            src, dst = (a, b) if t % 2 == 0 else (b, a)
            x = xs[t]
            answered, _ = await self._step("device_execute", functools.partial(
                cell.execute, [x, src], outputs=[dst], timeout=TIMEOUT))  # type: ignore[list-item]
            if not answered:
                return
            (expected,) = reference_run(cell.model, [x, expected])
        final = b if self.STEPS % 2 == 1 else a
        start = time.monotonic()
        answered, value = await self.traffic._call("device_copy_to", TIMEOUT, final.copy_to)
        if answered:
            self.traffic._check("device_copy_to", time.monotonic() - start,
                                [np.array(value, copy=True)], [expected], self.device)
