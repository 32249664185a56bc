"""``CompiledModel``: a model compiled by a runtime, executed as often as needed, concurrently."""

from __future__ import annotations

import contextlib
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from nnrt.errors import BadData, BadState, NnrtError
from nnrt.model.binding import InputBinder, Inputs, widen, widened_outputs
from nnrt.runtime.core import Shared, deadline_after, let_go
from nnrt.runtime.metrics import ModelMetrics
from nnrt.runtime.step import Step
from nnrt.runtime.stepper import PlanRunner

if TYPE_CHECKING:
    from nnrt.memory import Memory, TensorRef
    from nnrt.model.model import Model
    from nnrt.model.signature import TensorInfo
    from nnrt.runtime.backends.base import CompiledRef
    from nnrt.runtime.batcher import Batcher
    from nnrt.runtime.clustering import ExecuteRoute
    from nnrt.runtime.compile.compilation import Compilation
    from nnrt.runtime.compile.placement import PlacementReport
    from nnrt.runtime.core import RuntimeCore
    from nnrt.runtime.runtime import Runtime
    from nnrt.runtime.variants import ShapeVariants

__all__ = ["CompiledModel"]

Array = np.ndarray[Any, Any]


class CompiledModel:
    """A model prepared on drivers; execute it as often as needed, concurrently.

    Made by :meth:`nnrt.Runtime.compile`. A model placed whole on one driver runs as one step;
    a model split across drivers runs its execution plan's steps, independent ones at once.
    :meth:`release` frees it on the workers at once; a compiled model collected without it is
    freed by the runtime's next ``compile`` (its workers hold at most a few thousand). A
    compile of the same model object with the same options while an earlier one is held
    shares its prepared model (NNAPI-style reuse): nothing is compiled or prepared again, and
    the workers free it when the last holder lets go.
    """

    def __init__(self, runtime: Runtime, core: RuntimeCore, model: Model,
                 compilation: Compilation | None, priority: int, shared: Shared,
                 variants: ShapeVariants | None = None) -> None:
        #: The runtime that compiled it.
        self.runtime = runtime
        #: The runtime's core (backend, arena, memories) this model executes through.
        self.core = core
        self.model = model
        self.priority = priority
        #: The compilation on the workers, shared with identical compiles.
        self._shared = shared
        self._released = False
        key = id(self)
        #: What executes it: its one step, the runner of its plan's steps, or (inputs of
        #: unknown dims) its per-shape variants.
        self._runner: Step | PlanRunner | ShapeVariants
        self._variants = variants
        #: Outputs callers get in another dtype (int64 held as int32 inside).
        self._widened = widened_outputs(model)
        self._steps: list[Step] = []
        self._ref: CompiledRef | None = None
        self._placement: PlacementReport | None = None
        if compilation is None:
            if variants is None:
                raise BadState("a CompiledModel needs a compilation or per-shape variants")
            self._runner = variants
        else:
            self._ref = compilation.refs[0]
            self._placement = compilation.report
            plan = compilation.plan
            if plan is None:
                self._steps = [Step(core, model, self._ref, priority, key)]
                self._runner = self._steps[0]
            else:
                self._steps = [Step(core, step.outlined.model, ref, priority, key)
                               for step, ref in zip(plan.steps, compilation.refs, strict=True)]
                self._runner = PlanRunner(plan, self._steps, InputBinder(model))
        #: Merges concurrent executes when compiled with ``batching=`` (set by the runtime).
        self.batcher: Batcher | None = None
        #: Sends executes to this node's service or another's (cluster runtimes; set by the
        #: runtime, see docs/cluster.md).
        self.route: ExecuteRoute | None = None
        self._metrics = ModelMetrics(default_name(model))
        # collected without release(): the runtime lets go of its share (no reference to self)
        self._finalizer = weakref.finalize(self, core.dropped.append, shared)

    @property
    def name(self) -> str:
        """The model's name in ``rt.statistics().models`` and the metrics (``rt.compile(name=)``,
        made unique in the runtime)."""
        return self._metrics.name

    @property
    def metrics(self) -> ModelMetrics:
        """What this model's executes recorded (``metrics.snapshot()``: its
        :class:`~nnrt.runtime.metrics.ModelStatistics`)."""
        metrics = self._metrics
        with contextlib.suppress(NnrtError):  # per-shape variants, none yet
            metrics.driver = self.device
        return metrics

    @property
    def ref(self) -> CompiledRef:
        """The backend's reference of the (first) step (of the latest variant, for a model
        prepared per input shape)."""
        if self._ref is not None:
            return self._ref
        return self._latest_variant().ref

    def _latest_variant(self) -> CompiledModel:
        """The variant used last (``BadState`` saying why when there is none)."""
        if self._variants is None:
            raise BadState("this compiled model has no per-shape variants")
        return self._variants.latest

    @property
    def variants(self) -> ShapeVariants | None:
        """For a model whose inputs have unknown dims: its per-shape variants (``shapes``,
        ``prepared``, ``limit``); None for a model of static input shapes.

        Such a model is also compiled as it is, on the first of the compile's devices that
        runs it whole so (the reference interpreter resolves shapes at execution): executes
        with device memories run that way (their shapes change with each execute)."""
        return self._variants

    @property
    def inputs(self) -> tuple[TensorInfo, ...]:
        """Each input's name, shape and dtype, in order (what ``execute`` takes)."""
        return self.model.input_info

    @property
    def outputs(self) -> tuple[TensorInfo, ...]:
        """Each output's name, shape and dtype, in order (what ``execute`` returns)."""
        return self.model.output_info

    @property
    def device(self) -> str:
        """The driver running this model (the first step's, for a model split in steps)."""
        return self.ref.driver

    @property
    def steps(self) -> int:
        """How many steps the execution plan has (1: the model runs whole on one driver)."""
        if self._steps and not (self._variants is not None and self._variants.shapes):
            return len(self._steps)
        return self._latest_variant().steps

    def placement(self) -> PlacementReport:
        """Per operation: its driver and step, and why the other drivers did not take it (for
        a model prepared per input shape: its latest variant's)."""
        if self._placement is not None and not (self._variants is not None
                                                and self._variants.shapes):
            return self._placement
        return self._latest_variant().placement()

    async def execute(self, inputs: Inputs, *,
                      outputs: Sequence[Array | TensorRef | None] | None = None,
                      timeout: float | None = None, copy: bool = False,
                      priority: int | None = None) -> list[Array]:
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

        A model compiled with ``batching=`` merges this execute with concurrent ones (see
        :class:`nnrt.Batching`); ``priority`` above the compiled model's starts its batch at
        once. Executes with ``outputs``, device memories or tensor references run alone.

        In a cluster runtime (``Runtime(cluster=...)``) an execute of plain arrays runs on this
        node's service while it has capacity, else on another node's (docs/cluster.md);
        results from another node are read-only arrays (zero-copy from Ray's object store).
        """
        route = self.route
        if route is not None:
            return await route.execute(inputs, outputs, timeout, copy, priority)
        return await self.execute_here(inputs, outputs=outputs, timeout=timeout, copy=copy,
                                       priority=priority)

    async def execute_here(self, inputs: Inputs, *,
                           outputs: Sequence[Array | TensorRef | None] | None = None,
                           timeout: float | None = None, copy: bool = False,
                           priority: int | None = None) -> list[Array]:
        """:meth:`execute` on the runtime's own backend (a cluster runtime: this node's
        service), recording the model's metrics."""
        if self._released or (self._ref is not None and self._ref.released):
            raise BadState("this compiled model was released")
        start = time.monotonic()
        batched = False
        try:
            batcher = self.batcher
            checked = batcher.check(inputs) if batcher is not None and outputs is None else None
            if checked is not None and batcher is not None:
                if timeout is not None:
                    deadline_after(timeout)  # checked as unbatched executes check it
                urgent = priority is not None and int(priority) > self.priority
                batched = True
                results = await batcher.execute(*checked, timeout, copy, urgent)
            else:
                results = await self.execute_alone(inputs, outputs, timeout, copy)
        except BaseException as exc:  # counted by kind, cancellation too; raised on
            end = time.monotonic()
            self._metrics.request_done(end - start, exc, end)
            raise
        end = time.monotonic()
        if batched:  # the batcher recorded its execution
            self._metrics.request_done(end - start, None, end)
        else:  # a batch of one
            self._metrics.alone_done(end - start, end)
        return results

    async def execute_alone(self, inputs: Inputs, outputs: Sequence[Any] | None = None,
                            timeout: float | None = None, copy: bool = False) -> list[Array]:
        """:meth:`execute` without batching and without recording metrics (what a batch
        runs as)."""
        if self._released or (self._ref is not None and self._ref.released):
            raise BadState("this compiled model was released")
        variants = self._variants
        if variants is not None and not _device_memories(inputs, outputs):
            return await variants.execute(inputs, outputs, timeout, copy)  # widened
        if variants is not None and not self._steps:
            raise BadData("device memories need the model compiled as it is, with its "
                          "unknown input dims, and none of this compile's devices runs it "
                          "so (the reference driver does)")
        results = await self._runner.execute(inputs, outputs, timeout, copy)
        return widen(results, self._widened) if self._widened else results

    async def release(self) -> None:
        """Free this model on every worker (once no identical compile of the runtime uses it
        too; in a cluster runtime, on the other nodes that prepared it too); executing it
        afterwards raises ``BadState``."""
        if self._released:
            return
        self._released = True
        self._finalizer.detach()
        if self.batcher is not None:
            self.batcher.close()
        self.core.models.remove(self)
        if self.route is not None:  # the other nodes that prepared it let go too
            await self.route.release()
        if self._variants is not None:
            await self._variants.release()
        await let_go(self.core, self._shared)

    @property
    def constants(self) -> Memory | None:
        """The memory holding the constants the runtime packed for this model (if any)."""
        return self._shared.constants

    @property
    def released(self) -> bool:
        """Whether :meth:`release` was called (or the runtime closed)."""
        return self._released or (self._ref is not None and self._ref.released)


def default_name(model: Model) -> str:
    """A compiled model's name when ``compile`` is given none: its first output's name (the
    ONNX and TFLite importers keep the file's names), else ``"model"``."""
    outputs = model.output_info
    name = outputs[0].name if outputs else None
    return name if isinstance(name, str) and name else "model"


def _device_memories(inputs: Inputs, outputs: Sequence[Any] | None) -> bool:
    """Whether an execute names a device memory (an input or an output buffer)."""
    from nnrt.runtime.buffers import DeviceMemory  # noqa: PLC0415 - buffers imports this

    given = inputs.values() if isinstance(inputs, Mapping) else inputs
    return any(isinstance(v, DeviceMemory) for v in (*given, *(outputs or ())))
