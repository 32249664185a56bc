"""The driver interface (HAL): ``Driver`` and ``PreparedModel``.

Public methods check their arguments and the driver's answers, keep the books (timing, released
state) and call one narrow hook a driver implements: ``_info``, ``_supported_operations``,
``_prepare`` and ``PreparedModel._execute``; optional ones (``_allocate`` for device buffers)
have defaults. A leaf driver is a few dozen lines on top of this.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, ClassVar

import numpy as np

from nnrt.cache.files import CacheFiles
from nnrt.errors import BadData, BadState, NnrtError, OpFailed, Unsupported
from nnrt.hal.buffers import IO, BufferDesc, BufferSpec, DeviceBuffer, RoleOperand, check_roles
from nnrt.hal.control import Cancelled as Cancelled
from nnrt.hal.control import ExecutionControl as ExecutionControl
from nnrt.hal.info import DriverInfo as DriverInfo
from nnrt.hal.info import ExecutionResult as ExecutionResult
from nnrt.hal.info import PerformanceInfo as PerformanceInfo
from nnrt.hal.info import PrepareOptions as PrepareOptions
from nnrt.hal.info import Timing as Timing
from nnrt.hal.outputs import OutputChecker
from nnrt.model.binding import InputBinder
from nnrt.model.model import Model

__all__ = [
    "MAX_CACHE_FILES",
    "OperationSupport",
    "CACHE_TOKEN_BYTES",
    "Cancelled",
    "Driver",
    "DriverInfo",
    "ExecutionControl",
    "ExecutionResult",
    "PerformanceInfo",
    "PrepareOptions",
    "PreparedModel",
    "Timing",
]

Array = np.ndarray[Any, Any]

#: Most cache files of each kind a driver may ask for (NNAPI's MAX_NUMBER_OF_CACHE_FILES).
MAX_CACHE_FILES = 32
#: Length of a compilation cache token (NNAPI's BYTE_SIZE_OF_CACHE_TOKEN).
CACHE_TOKEN_BYTES = 32
_DEFAULT_OPTIONS = PrepareOptions()
#: Every pool kind nnrt shares with drivers.
_ALL_KINDS = frozenset({"memfd", "mmap_fd", "blob"})


@dataclass(frozen=True)
class OperationSupport:
    """A driver's answer for one model: per-operation flags, reasons and partition indices."""

    supported: list[bool]
    reasons: dict[int, str]
    groups: dict[int, int]


class Driver(abc.ABC):
    """A device that can prepare and run models; subclasses implement the ``_`` hooks."""

    # -- public methods --------------------------------------------------------------------------

    def info(self) -> DriverInfo:
        """Name, version, device type, feature level and performance of this driver."""
        info = self._info()
        if not isinstance(info, DriverInfo):
            raise OpFailed(f"driver {type(self).__name__}: _info() returned "
                           f"{type(info).__name__}, expected DriverInfo")
        return info

    def supported_operations(self, model: Model) -> list[bool]:
        """Per operation of the finished ``model``, whether this driver can run it.

        An operation reading a constant from a memory kind the driver cannot map (see
        :meth:`memory_kinds`) is not supported, whatever the driver's hook says (as NNAPI memory
        domains require).
        """
        self._require_finished(model, "supported_operations")
        flags = self._supported_operations(model)
        count = len(model.operations)
        if not isinstance(flags, list) or len(flags) != count or not all(
                isinstance(f, bool) for f in flags):
            raise OpFailed(f"driver {self._name()}: _supported_operations() must return a list "
                           f"of {count} bools, got {flags!r:.120}")
        kinds = self.memory_kinds()
        if kinds != _ALL_KINDS:
            flags = [ok and self._memory_reason(model, i, kinds) is None
                     for i, ok in enumerate(flags)]
        return flags

    def support(self, model: Model) -> OperationSupport:
        """What this driver says of each operation of ``model``, for the partitioner.

        Supported flags (as :meth:`supported_operations`), the reason for each unsupported
        operation, and partition indices: supported operations with different indices must not
        share a partition (a compiler plugin's cut constraints).
        """
        flags = self.supported_operations(model)
        kinds = self.memory_kinds()
        reasons = {}
        for index, ok in enumerate(flags):
            if not ok:
                reasons[index] = (self._memory_reason(model, index, kinds)
                                  or self._unsupported_reason(model, index)
                                  or f"not supported by driver {self._name()}")
        groups = self._partition_indices(model)
        if not isinstance(groups, dict) or not all(
                type(i) is int and type(g) is int and 0 <= i < len(flags) and g >= 0
                for i, g in groups.items()):
            raise OpFailed(f"driver {self._name()}: _partition_indices() must return a dict "
                           "of operation index -> partition index (ints >= 0)")
        return OperationSupport(flags, reasons,
                                {i: g for i, g in groups.items() if flags[i]})

    def memory_kinds(self) -> frozenset[str]:
        """The pool kinds (``memfd``, ``mmap_fd``, ``blob``) this driver can map and access."""
        kinds = self._memory_kinds()
        if not isinstance(kinds, frozenset) or not kinds <= _ALL_KINDS:
            raise OpFailed(f"driver {self._name()}: _memory_kinds() must return a frozenset of "
                           f"{sorted(_ALL_KINDS)}, got {kinds!r:.80}")
        return kinds

    @staticmethod
    def _memory_reason(model: Model, op_index: int, kinds: frozenset[str]) -> str | None:
        operands = model.operands
        for k in model.operations[op_index].inputs:
            location = operands[k].location
            kind = getattr(location.memory, "kind", None) if location is not None else None
            if kind is not None and kind not in kinds:
                return (f"operand {k} is a constant in {kind} memory, which this driver cannot "
                        f"map (it maps {', '.join(sorted(kinds)) or 'none'})")
        return None

    def cache_files_needed(self) -> tuple[int, int]:
        """How many (model, data) cache files ``prepare`` wants; (0, 0) if it caches nothing."""
        needed = self._cache_files_needed()
        if not (isinstance(needed, tuple) and len(needed) == 2 and all(
                type(n) is int and 0 <= n <= MAX_CACHE_FILES for n in needed)):
            raise OpFailed(f"driver {self._name()}: _cache_files_needed() must return two ints "
                           f"from 0 to {MAX_CACHE_FILES}, got {needed!r:.80}")
        return needed

    def prepare(self, model: Model, options: PrepareOptions = _DEFAULT_OPTIONS,
                cache: CacheFiles | None = None) -> PreparedModel:
        """Compile the finished ``model`` for this driver.

        Raises ``BadState`` for an unfinished model, ``Unsupported`` listing every operation
        this driver cannot run (and why, when the driver says), ``BadData`` for bad options.
        ``cache`` (cache miss): the token and the empty cache files, exactly
        :meth:`cache_files_needed` of each kind, for the driver to save its compiled model in.
        """
        self._require_finished(model, "prepare")
        self._check_options(options, "prepare")
        if cache is not None:
            self._check_cache(cache, "prepare")
        flags = self.supported_operations(model)
        if not all(flags):
            problems = []
            for index, ok in enumerate(flags):
                if not ok:
                    op = model.operations[index]
                    reason = (self._memory_reason(model, index, self.memory_kinds())
                              or self._unsupported_reason(model, index)
                              or f"not supported by driver {self._name()}")
                    problems.append(f"operation {index} ({op.type.name}): {reason}")
            raise Unsupported("unsupported operations: " + "; ".join(problems))
        prepared: PreparedModel = self._call_hook(PreparedModel, "prepare", self._prepare, model,
                                                  options, cache)
        return prepared

    def prepare_from_cache(self, model: Model, cache: CacheFiles,
                           options: PrepareOptions = _DEFAULT_OPTIONS) -> PreparedModel:
        """Load the compiled ``model`` this driver saved in ``cache`` (a cache hit).

        Unlike NNAPI, nnrt hands the model over too: the cache replaces compilation, not
        validation — the prepared model checks executions against the model. The driver must
        detect a corrupt model cache before using it (``nnrt.cache.load_cache``); any failure
        raises, and the runtime then prepares from scratch.
        """
        self._require_finished(model, "prepare_from_cache")
        self._check_options(options, "prepare_from_cache")
        self._check_cache(cache, "prepare_from_cache")
        prepared: PreparedModel = self._call_hook(PreparedModel, "prepare_from_cache",
                                                  self._prepare_from_cache, model, cache,
                                                  options)
        return prepared

    def _check_cache(self, cache: Any, where: str) -> None:
        if not isinstance(cache, CacheFiles):
            raise BadData(f"{where}: cache must be nnrt.cache.CacheFiles, got "
                          f"{type(cache).__name__}")
        cache.check(self.cache_files_needed(), f"{where} (driver {self._name()})")

    @staticmethod
    def _check_options(options: Any, where: str) -> None:
        if not isinstance(options, PrepareOptions):
            raise BadData(f"{where}: options must be PrepareOptions, got "
                          f"{type(options).__name__}")

    def prepare_compiled(self, model: Model, bytecode: bytes, entry_point: str
                         ) -> PreparedModel:
        """Load ``entry_point`` of bytecode compiled ahead of time for ``model`` (no compile).

        Drivers built from a compiler plugin support this; others raise ``OpFailed``.
        """
        self._require_finished(model, "prepare_compiled")
        if not isinstance(bytecode, bytes | bytearray | memoryview):
            raise BadData(f"prepare_compiled: bytecode must be bytes, got "
                          f"{type(bytecode).__name__}")
        if not isinstance(entry_point, str) or not entry_point or len(entry_point) > 256:
            raise BadData(f"prepare_compiled: bad entry point {entry_point!r:.80}")
        prepared: PreparedModel = self._call_hook(PreparedModel, "prepare_compiled",
                                                  self._prepare_compiled, model,
                                                  bytes(bytecode), entry_point)
        return prepared

    def allocate(self, desc: BufferDesc, roles: Sequence[tuple[PreparedModel, IO, int, float]],
                 *, labels: Sequence[str] | None = None) -> DeviceBuffer:
        """Allocate a device buffer described by ``desc`` for ``roles`` (memory domains).

        Each role is ``(prepared model, "input" | "output", index, frequency)``; the buffer may
        be used only in those roles. The roles are checked (:func:`~nnrt.hal.buffers.
        check_roles`: ``BadData`` naming the role; index out of range included), then the
        driver's ``_allocate`` hook allocates, or refuses with ``OpFailed``. ``labels`` name each
        role's prepared model in messages (e.g. "handle 3").
        """
        given: Any = roles  # untrusted: checked before use
        if isinstance(given, str | bytes) or not isinstance(given, Sequence):
            raise BadData(f"allocate: roles must be a sequence, got {type(given).__name__}")
        operands = [self._role_operand(position, role, labels) for position, role in
                    enumerate(roles)]
        spec = check_roles(desc, operands)
        buffer: DeviceBuffer = self._call_hook(DeviceBuffer, "allocate", self._allocate, spec,
                                               roles)
        return buffer

    def _call_hook(self, expected: type, what: str, hook: Callable[..., Any], *args: Any
                   ) -> Any:
        """Call a driver hook: its nnrt errors as they are, any other failure ``OpFailed``
        naming the driver, and a result of the wrong type ``OpFailed`` too."""
        try:
            result = hook(*args)
        except NnrtError:
            raise
        except Exception as exc:
            raise OpFailed(f"driver {self._name()}: {what} failed: {exc!r}") from exc
        if not isinstance(result, expected):
            raise OpFailed(f"driver {self._name()}: _{what}() returned "
                           f"{type(result).__name__}, expected a {expected.__name__}")
        return result

    @staticmethod
    def _role_operand(position: int, role: Any, labels: Sequence[str] | None) -> RoleOperand:
        """The :class:`RoleOperand` of ``roles[position]``: its shape, model and index checked."""
        where = f"roles[{position}]"
        if not isinstance(role, tuple | list) or len(role) != 4:
            raise BadData(f"allocate: {where} must be (prepared model, io, index, frequency)")
        prepared, io, index, frequency = role
        if not isinstance(prepared, PreparedModel):
            raise BadData(f"allocate: {where}: expected a PreparedModel, got "
                          f"{type(prepared).__name__}")
        if prepared.released:
            raise BadState(f"allocate: {where}: the prepared model has been released")
        if io not in ("input", "output"):
            raise BadData(f"allocate: {where}: io must be 'input' or 'output', got {io!r:.40}")
        model = prepared.model
        indexes = model.inputs if io == "input" else model.outputs
        label = f" of {labels[position]}" if labels is not None else ""
        if isinstance(index, bool) or not isinstance(index, int) or not (
                0 <= index < len(indexes)):
            raise BadData(f"allocate: {where}: {io} index {index!r:.40} is out of range: the "
                          f"model{label} has {len(indexes)} {io}s")
        return RoleOperand(f"{where} ({io} {index}{label})", id(prepared), io, index,
                           frequency, model.operands[indexes[index]])

    # -- hooks -----------------------------------------------------------------------------------

    @abc.abstractmethod
    def _info(self) -> DriverInfo:
        """Describe this driver."""

    @abc.abstractmethod
    def _supported_operations(self, model: Model) -> list[bool]:
        """Per operation of a finished model, whether this driver can run it."""

    @abc.abstractmethod
    def _prepare(self, model: Model, options: PrepareOptions, cache: CacheFiles | None
                 ) -> PreparedModel:
        """Compile a finished model whose operations are all supported (and, given ``cache``,
        save it there: best effort, a failed save must not fail the prepare)."""

    def _unsupported_reason(self, model: Model, op_index: int) -> str | None:
        """Why operation ``op_index`` is not supported (None: a generic message is used)."""
        return None

    def _partition_indices(self, model: Model) -> dict[int, int]:
        """Partition indices of supported operations (cut constraints); none by default."""
        return {}

    def _prepare_compiled(self, model: Model, bytecode: bytes, entry_point: str
                          ) -> PreparedModel:
        raise OpFailed(f"driver {self._name()} cannot load precompiled bytecode")

    def _cache_files_needed(self) -> tuple[int, int]:
        return (0, 0)

    def _memory_kinds(self) -> frozenset[str]:
        """Pool kinds this driver can map; every kind by default (NNAPI requires ashmem and
        mmap_fd of every driver, hardware_buffer_blob from HAL 1.3)."""
        return _ALL_KINDS

    def _prepare_from_cache(self, model: Model, cache: CacheFiles, options: PrepareOptions
                            ) -> PreparedModel:
        raise OpFailed(f"prepare_from_cache is not supported by driver {self._name()}")

    def _allocate(self, spec: BufferSpec, roles: Sequence[tuple[PreparedModel, IO, int, float]]
                  ) -> DeviceBuffer:
        """A buffer for checked roles and the spec they deduce; raise ``OpFailed`` to refuse
        (memory domains are optional: by default every allocation is refused)."""
        raise OpFailed(f"allocate is not supported by driver {self._name()}")

    # -- internals -------------------------------------------------------------------------------

    def _name(self) -> str:
        try:
            return self.info().name
        except Exception:
            return type(self).__name__

    @staticmethod
    def _require_finished(model: Model, method: str) -> None:
        if not isinstance(model, Model):
            raise BadData(f"{method}: expected an nnrt.Model, got {type(model).__name__}")
        if not model.finished:
            raise BadState(f"{method}: the model is not finished (call model.finish())")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} driver {self._name()!r}>"


class PreparedModel(abc.ABC):
    """A model prepared by a driver, ready to execute; subclasses implement ``_execute``.

    Release it with :meth:`release` (or use it as a context manager) when done.
    """

    #: Set by a driver whose ``_execute`` returns outputs already checked against the model's
    #: output operands (count, dtype, declared dims) — the reference interpreter checks every
    #: operation's results — so that :meth:`execute` does not check them again when the caller
    #: gave neither destinations nor buffer sizes.
    _checks_own_outputs: ClassVar[bool] = False

    def __init__(self, model: Model, *, driver_name: str = "driver") -> None:
        if not isinstance(model, Model) or not model.finished:
            raise BadState("PreparedModel: needs a finished nnrt.Model")
        self._model = model
        self._driver_name = driver_name
        self._binder = InputBinder(model)
        self._outputs = OutputChecker(model, driver_name)
        self._released = False

    @property
    def model(self) -> Model:
        """The model this was prepared from."""
        return self._model

    @property
    def released(self) -> bool:
        """Whether :meth:`release` has been called."""
        return self._released

    def execute(self, inputs: Sequence[Array], *,
                outputs: Sequence[Array | None] | None = None,
                output_sizes: Sequence[int] | None = None, deadline: float | None = None,
                should_stop: Callable[[], bool] | None = None) -> ExecutionResult:
        """Run the model on ``inputs`` (model input order) and return outputs and timing.

        Inputs are checked like ``nnrt.reference.run`` checks them (count, dtype, range, shape):
        ``BadData`` otherwise. ``deadline`` is an absolute ``time.monotonic()`` value: if it has
        passed before or during the execution, ``DeadlineMissed``. ``should_stop`` is polled
        between operations: true stops the execution with :class:`Cancelled`. ``output_sizes``
        are the caller's output buffer capacities in bytes: an output needing more raises
        ``OutputInsufficientSize`` carrying every output's actual shape.

        ``outputs`` (one entry per model output) are the caller's destinations: None, or a
        writable C-contiguous ndarray whose bytes receive that output (C order; its dtype does
        not matter) — ``BadData`` naming ``outputs[j]`` otherwise. The result's ``outputs[j]`` is
        then an array in that memory (its first ``nbytes``, with the actual shape and dtype);
        an output that does not fit is ``OutputInsufficientSize`` as above. ``output_sizes``
        still apply to outputs without a destination. Drivers see the destinations as
        ``ExecutionControl.outputs`` and may compute into them (then nothing is copied).
        """
        start = time.perf_counter_ns()
        if self._released:
            raise BadState(f"execute: this prepared model of driver {self._driver_name} has "
                           "been released")
        control = ExecutionControl(deadline, should_stop)
        sizes = None if output_sizes is None else self._outputs.check_sizes(output_sizes)
        if outputs is not None:
            buffers = self._outputs.check_destinations(outputs)
            control.outputs = self._outputs.typed_destinations(buffers)
        arrays = self._binder.bind(inputs)
        if deadline is not None:
            control.check_deadline("before the execution started")
        device_start = time.perf_counter_ns()
        try:
            results = self._execute(arrays, control)
        except NnrtError:
            raise
        except Exception as exc:
            raise OpFailed(f"driver {self._driver_name}: execute failed: {exc!r}") from exc
        device_ns = time.perf_counter_ns() - device_start
        if deadline is not None:
            control.check_deadline("during the execution")
        if outputs is None:
            arrays = (results if results.__class__ is list and self._checks_own_outputs
                      and sizes is None else self._outputs.check(results, sizes))
        else:
            arrays = self._outputs.place(results, sizes, buffers, control.outputs)
        # tuple.__new__: the named tuples without their Python-level __new__ (per execution)
        return tuple.__new__(ExecutionResult, (arrays, tuple.__new__(Timing, (
            device_ns, time.perf_counter_ns() - start))))

    def release(self) -> None:
        """Free the driver's resources for this model; later executions raise ``BadState``."""
        if not self._released:
            self._released = True
            self._release()

    def __enter__(self) -> PreparedModel:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()

    # -- hooks -----------------------------------------------------------------------------------

    @abc.abstractmethod
    def _execute(self, inputs: list[Array], control: ExecutionControl) -> Sequence[Array]:
        """Compute the outputs from checked inputs; call ``control.check()`` between ops.

        ``control.outputs`` (when not None) offers typed destinations to compute outputs into;
        returning that very array spares a copy.
        """

    def _release(self) -> None:  # noqa: B027 - optional hook, nothing to free by default
        """Free driver resources (called once)."""

    def __repr__(self) -> str:
        state = "released" if self._released else "ready"
        return f"<{type(self).__name__} of driver {self._driver_name!r}, {state}>"
