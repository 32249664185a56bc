"""Compiler plugins (LiteRT style) and the adapter that serves one as a driver.

An accelerator author writes two halves:

* a :class:`CompilerPlugin`: ``partition(model, soc_model)`` selects the operations it
  accelerates (optionally with a partition index per operation: operations with different
  indices never share a partition) and says why it rejects the others; ``compile(partitions,
  soc_model)`` turns outlined partitions (one finished :class:`~nnrt.model.model.Model` each)
  into a :class:`CompiledResult`: bytecode modules plus, per partition, the module and entry
  point that implement it;
* a :class:`Dispatch`: ``load(bytecode, entry_point)`` makes an executable, ``invoke(executable,
  inputs, outputs)`` runs it on arrays (views of shared pools in a worker) and writes the outputs.

:class:`PluginDriver` turns the pair into a :class:`~nnrt.hal.base.Driver`: its supported
operations are the plugin's selection, ``prepare`` compiles and loads, ``prepare_compiled``
loads bytecode compiled ahead of time without calling the plugin's compile step. Install it
under the ``nnrt.drivers`` entry-point group with a factory returning ``PluginDriver(...)``.
"""

from __future__ import annotations

import abc
import logging
import os
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgpack
import numpy as np

from nnrt.cache.codec import load_cache, save_cache
from nnrt.cache.files import CacheFiles
from nnrt.cache.store import IntegrityStore
from nnrt.errors import BadData, CacheError, NnrtError, OpFailed
from nnrt.hal.base import (
    Driver,
    DriverInfo,
    ExecutionControl,
    PerformanceInfo,
    PreparedModel,
    PrepareOptions,
)
from nnrt.hal.buffers import IO, BufferSpec, DeviceBuffer, HostBuffer
from nnrt.model.model import Model
from nnrt.model.operand import dtype_of

__all__ = [
    "FORBID_COMPILE",
    "CompiledResult",
    "CompilerPlugin",
    "Dispatch",
    "PartitionResult",
    "PluginDriver",
    "PluginPreparedModel",
]

Array = np.ndarray[Any, Any]

_MAX_ENTRY = 256
_CACHE_FORMAT = 1
_log = logging.getLogger("nnrt.worker")
#: Environment variable: "1" makes every plugin's compile step fail (deployments that must
#: run ahead-of-time bytecode only, and tests proving they do).
FORBID_COMPILE = "NNRT_FORBID_COMPILE"
_RESULT_FORMAT = 1


@dataclass(frozen=True)
class PartitionResult:
    """What a plugin's partition step chose for one model.

    ``selected`` maps each selected operation index to a partition index (or None: group it
    with any other selected operation); ``rejected`` maps operation indices to the reason they
    were not selected.
    """

    selected: Mapping[int, int | None]
    rejected: Mapping[int, str] = field(default_factory=dict)

    @classmethod
    def by_reason(cls, count: int, reason: Callable[[int], str | None]) -> PartitionResult:
        """Each of ``count`` operations selected (any partition) when ``reason(index)`` is
        None, else rejected with that reason: the usual shape of a plugin's partition step."""
        selected: dict[int, int | None] = {}
        rejected: dict[int, str] = {}
        for index in range(count):
            why = reason(index)
            if why is None:
                selected[index] = None
            else:
                rejected[index] = why
        return cls(selected, rejected)

    def check(self, count: int, where: str) -> PartitionResult:
        """This result, checked against a model of ``count`` operations (``OpFailed``)."""
        if not isinstance(self.selected, Mapping) or not isinstance(self.rejected, Mapping):
            raise OpFailed(f"{where}: partition() must return mappings of operation indices")
        for index, group in self.selected.items():
            if type(index) is not int or not 0 <= index < count:
                raise OpFailed(f"{where}: partition() selected operation {index!r:.40}, "
                               f"outside 0..{count - 1}")
            if group is not None and (type(group) is not int or group < 0):
                raise OpFailed(f"{where}: partition() gave operation {index} the partition "
                               f"index {group!r:.40}; expected None or an int >= 0")
        for index, reason in self.rejected.items():
            if type(index) is not int or not 0 <= index < count or not isinstance(reason, str):
                raise OpFailed(f"{where}: partition() rejected {index!r:.40} with "
                               f"{reason!r:.40}; expected an operation index and a reason")
        return self


@dataclass(frozen=True)
class CompiledResult:
    """A plugin's compile output: bytecode modules and, per partition, ``(module, entry)``."""

    modules: tuple[bytes, ...]
    calls: tuple[tuple[int, str], ...]

    def check(self, partitions: int, where: str) -> CompiledResult:
        """This result, checked for ``partitions`` partitions (``OpFailed`` naming the flaw)."""
        if not isinstance(self.modules, tuple) or not all(
                isinstance(m, bytes) for m in self.modules):
            raise OpFailed(f"{where}: compile() must return modules as a tuple of bytes")
        if not isinstance(self.calls, tuple) or len(self.calls) != partitions:
            raise OpFailed(f"{where}: compile() must return a tuple of one call per partition "
                           f"({partitions}), got {self.calls!r:.80}")
        for i, call in enumerate(self.calls):
            if not (isinstance(call, tuple) and len(call) == 2 and type(call[0]) is int
                    and 0 <= call[0] < len(self.modules) and _entry_ok(call[1])):
                raise OpFailed(f"{where}: compile() call {i} must be (module index < "
                               f"{len(self.modules)}, entry point name), got {call!r:.80}")
        return self

    def to_bytes(self) -> bytes:
        """The result as msgpack bytes (what caches and model files store)."""
        packed: bytes = msgpack.packb({"format": _RESULT_FORMAT, "modules": list(self.modules),
                                       "calls": [list(c) for c in self.calls]})
        return packed

    @classmethod
    def from_bytes(cls, data: bytes | memoryview, where: str = "compiled result"
                   ) -> CompiledResult:
        """Parse untrusted bytes written by :meth:`to_bytes` (``BadData`` if malformed)."""
        try:
            raw = msgpack.unpackb(data, raw=False, strict_map_key=True)
        except Exception as exc:
            raise BadData(f"{where}: not a compiled result ({exc})") from None
        if not isinstance(raw, dict) or raw.get("format") != _RESULT_FORMAT or set(raw) != {
                "format", "modules", "calls"}:
            raise BadData(f"{where}: not a format-{_RESULT_FORMAT} compiled result")
        modules, calls = raw["modules"], raw["calls"]
        if not isinstance(modules, list) or not isinstance(calls, list) or not all(
                isinstance(c, list) and len(c) == 2 for c in calls):
            raise BadData(f"{where}: malformed modules or calls")
        try:
            return cls(tuple(modules), tuple((c[0], c[1]) for c in calls)).check(
                len(calls), where)
        except OpFailed as exc:
            raise BadData(str(exc)) from None


def _entry_ok(name: Any) -> bool:
    return isinstance(name, str) and 0 < len(name) <= _MAX_ENTRY and name.isprintable()


class CompilerPlugin(abc.ABC):
    """Selects the operations an accelerator runs and compiles partitions into bytecode."""

    #: The driver name (reverse domain for vendors: ``com.example.acme``).
    name: str = ""
    #: The compiler version; part of AOT compatibility stamps and cache keys.
    version: str = ""
    #: Who makes the SoC (LiteRT's ``soc_manufacturer``).
    soc_manufacturer: str = ""
    #: What the plugin compiles for, e.g. ``"npu"`` (LiteRT's ``supported_hardware``).
    supported_hardware: str = ""
    #: SoC models it can target; the first is the default.
    soc_models: tuple[str, ...] = ()

    @abc.abstractmethod
    def partition(self, model: Model, soc_model: str | None) -> PartitionResult:
        """Select the operations of ``model`` to accelerate on ``soc_model``."""

    @abc.abstractmethod
    def compile(self, partitions: Sequence[Model], soc_model: str | None) -> CompiledResult:
        """Compile each outlined partition; call ``i`` implements ``partitions[i]``."""

    def split_module(self, module: bytes) -> tuple[bytes, bytes]:
        """``(code, constants)`` of a compiled module, for the model and data cache files.

        The code goes to the security-sensitive model cache, pre-packed constants to the data
        cache. By default the whole module is code.
        """
        return module, b""

    def join_module(self, code: bytes, constants: bytes) -> Any:
        """The module :meth:`split_module` split (inverse; bytes read back from a cache): the
        module bytes, or any object this plugin's dispatch ``load`` accepts (e.g. a module
        decoded straight from the blobs, so nothing is re-encoded)."""
        return code


class Dispatch(abc.ABC):
    """The runtime side of a plugin: loads bytecode and invokes it on arrays."""

    @abc.abstractmethod
    def load(self, bytecode: Any, entry_point: str) -> Any:
        """An executable for ``entry_point`` of a module (reject bytecode you cannot trust)."""

    @abc.abstractmethod
    def invoke(self, executable: Any, inputs: Sequence[Array], outputs: Sequence[Array]) -> None:
        """Run ``executable``: read ``inputs``, write every element of each of ``outputs``."""

    def unload(self, executable: Any) -> None:  # noqa: B027 - optional hook
        """Free what ``load`` made (called once per executable)."""


class PluginDriver(Driver):
    """A :class:`Driver` made of a compiler plugin and its dispatch.

    Operations whose outputs have no static shape are not supported (the dispatch writes into
    preallocated outputs); everything else follows the plugin's ``partition``.
    """

    def __init__(self, plugin: CompilerPlugin, dispatch: Dispatch, *,
                 soc_model: str | None = None, device_type: str = "accelerator",
                 feature_level: int = 8, performance: PerformanceInfo | None = None) -> None:
        if not isinstance(plugin, CompilerPlugin) or not isinstance(dispatch, Dispatch):
            raise BadData("PluginDriver needs a CompilerPlugin and a Dispatch")
        if soc_model is None and plugin.soc_models:
            soc_model = plugin.soc_models[0]
        if soc_model is not None and plugin.soc_models and soc_model not in plugin.soc_models:
            raise BadData(f"plugin {plugin.name}: unknown SoC model {soc_model!r}; it targets "
                          f"{', '.join(plugin.soc_models)}")
        self.plugin = plugin
        self.dispatch = dispatch
        self.soc_model = soc_model
        self._driver_info = DriverInfo(plugin.name, plugin.version, device_type, feature_level,
                                       performance or PerformanceInfo(0.5, 0.5))
        #: How many times the plugin's compile step ran (AOT loads do not count).
        self.compile_count = 0
        self._integrity: IntegrityStore | None = None
        #: The last model partitioned (weakly) and the answer: asked several times in a row.
        self._last: tuple[weakref.ref[Model], PartitionResult] | None = None

    def with_soc(self, soc_model: str) -> PluginDriver:
        """This driver's plugin and dispatch targeting another SoC model."""
        info = self._driver_info
        return PluginDriver(self.plugin, self.dispatch, soc_model=soc_model,
                            device_type=info.device_type, feature_level=info.feature_level,
                            performance=info.performance)

    def partition(self, model: Model) -> PartitionResult:
        """The plugin's checked selection for the finished ``model``, plus static-shape rules."""
        self._require_finished(model, "partition")
        cached = self._last
        if cached is not None and cached[0]() is model:
            return cached[1]
        where = f"driver {self.plugin.name}"
        raw: PartitionResult = self._call_hook(PartitionResult, "partition",
                                               self.plugin.partition, model, self.soc_model)
        result = raw.check(len(model.operations), where)
        selected = dict(result.selected)
        rejected = dict(result.rejected)
        inferred = model.inferred_dims
        for index in list(selected):
            for k in model.operations[index].outputs:
                dims = inferred[k]
                if not dims or not all(d > 0 for d in dims):
                    del selected[index]
                    rejected[index] = (f"output operand {k} has no static shape, which "
                                       f"{self.plugin.name} needs")
                    break
        checked = PartitionResult(selected, rejected)
        self._last = (weakref.ref(model), checked)
        return checked

    def compile_partitions(self, partitions: Sequence[Model]) -> CompiledResult:
        """Run the plugin's compile step on outlined partitions (checked result)."""
        where = f"driver {self.plugin.name}"
        if os.environ.get(FORBID_COMPILE) == "1":
            raise OpFailed(f"{where}: compile step refused: {FORBID_COMPILE}=1 (only "
                           "ahead-of-time bytecode may run)")
        result: CompiledResult = self._call_hook(CompiledResult, "compile",
                                                 self.plugin.compile, list(partitions),
                                                 self.soc_model)
        self.compile_count += 1
        return result.check(len(partitions), where)

    # -- hooks -----------------------------------------------------------------------------------

    def _info(self) -> DriverInfo:
        return self._driver_info

    def _supported_operations(self, model: Model) -> list[bool]:
        selected = self.partition(model).selected
        return [i in selected for i in range(len(model.operations))]

    def _unsupported_reason(self, model: Model, op_index: int) -> str | None:
        return self.partition(model).rejected.get(op_index)

    def _partition_indices(self, model: Model) -> dict[int, int]:
        return {i: g for i, g in self.partition(model).selected.items() if g is not None}

    def save_to_cache(self, cache: CacheFiles, module: bytes, entry_point: str) -> None:
        """Save a compiled partition in ``cache``: its code in the model cache (hashed into
        the integrity store first), its pre-packed constants in the data cache."""
        parts = self._call_hook(tuple, "split_module", self.plugin.split_module, module)
        if len(parts) != 2 or not all(isinstance(b, bytes) for b in parts):
            raise OpFailed(f"driver {self.plugin.name}: split_module() must return (code, "
                           "constants) as two bytes")
        code, constants = parts
        header: bytes = msgpack.packb({"format": _CACHE_FORMAT, "entry_point": entry_point,
                                       "code": code})
        save_cache(cache, [header], [constants], self._store())

    def _store(self) -> IntegrityStore:
        if self._integrity is None:
            self._integrity = IntegrityStore.for_driver(self._driver_info.name,
                                                        self._driver_info.version)
        return self._integrity

    # -- hooks -----------------------------------------------------------------------------------

    def _cache_files_needed(self) -> tuple[int, int]:
        return (1, 1)

    def _prepare_compiled(self, model: Model, bytecode: bytes, entry_point: str
                          ) -> PreparedModel:
        return self._make_prepared(model, bytecode, entry_point, None)

    def _prepare(self, model: Model, options: PrepareOptions, cache: CacheFiles | None
                 ) -> PreparedModel:
        result = self.compile_partitions([model])
        module, entry_point = result.calls[0]
        prepared = self._make_prepared(model, result.modules[module], entry_point, cache)
        if cache is not None:
            try:
                self.save_to_cache(cache, result.modules[module], entry_point)
            except NnrtError as exc:  # the model works; only the next start compiles again
                _log.warning("driver %s: could not save the compilation cache: %s",
                             self.plugin.name, exc)
        return prepared

    def _prepare_from_cache(self, model: Model, cache: CacheFiles, options: PrepareOptions
                            ) -> PreparedModel:
        (header,), (constants,) = load_cache(cache, self._store())
        where = f"driver {self.plugin.name}: model cache"
        try:
            raw = msgpack.unpackb(header, raw=False, strict_map_key=True)
        except Exception as exc:
            raise CacheError(f"{where}: not a cache header ({exc})") from None
        if not (isinstance(raw, dict) and raw.get("format") == _CACHE_FORMAT
                and set(raw) == {"format", "entry_point", "code"}
                and _entry_ok(raw["entry_point"]) and isinstance(raw["code"], bytes)):
            raise CacheError(f"{where}: malformed header")
        module = self._call_hook(object, "join_module", self.plugin.join_module, raw["code"],
                                 constants)
        return self._make_prepared(model, module, raw["entry_point"], cache)

    def _allocate(self, spec: BufferSpec, roles: Sequence[tuple[PreparedModel, IO, int, float]]
                  ) -> DeviceBuffer:
        """A device buffer in the worker's memory: a dispatch reads and writes host arrays, so
        a buffer is one, handed to ``invoke`` as an input or as the output it computes into.
        Plugin outputs have static shapes, so the size is known (else ``OpFailed``: the
        runtime falls back to shared memory only when it knows the size either)."""
        nbytes = spec.nbytes
        if nbytes is None:
            raise OpFailed(f"driver {self.plugin.name}: cannot allocate a buffer of unknown "
                           f"size (dims {'unknown' if spec.dims is None else list(spec.dims)})")
        return HostBuffer(spec, nbytes)

    def _make_prepared(self, model: Model, module: Any, entry_point: str,
                       cache: CacheFiles | None) -> PreparedModel:
        """The prepared model for a loaded module (drivers may return their own kind; ``cache``
        is what it was prepared with, for drivers that update it later)."""
        return PluginPreparedModel(self, model, module, entry_point)


class PluginPreparedModel(PreparedModel):
    """A partition loaded into a plugin's dispatch."""

    def __init__(self, driver: PluginDriver, model: Model, bytecode: Any,
                 entry_point: str) -> None:
        name = driver.plugin.name
        super().__init__(model, driver_name=name)
        self._dispatch = driver.dispatch
        inferred = model.inferred_dims
        self._shapes = []
        for j, k in enumerate(model.outputs):
            dims = inferred[k]
            if not dims or not all(d > 0 for d in dims):
                raise OpFailed(f"driver {name}: output {j} (operand {k}) has no static shape")
            self._shapes.append((tuple(dims), dtype_of(model.operands[k].type)))
        try:
            self._executable: Any = self._dispatch.load(bytecode, entry_point)
        except NnrtError:
            raise
        except Exception as exc:
            raise OpFailed(f"driver {name}: loading entry point {entry_point!r} failed: "
                           f"{exc!r}") from exc
        self._loaded = True

    def _execute(self, inputs: list[Array], control: ExecutionControl) -> Sequence[Array]:
        return self._run(self._executable, inputs, control)

    def _run(self, executable: Any, inputs: list[Array], control: ExecutionControl
             ) -> list[Array]:
        """Invoke ``executable``: outputs computed into the caller's destinations when they
        fit exactly, else into fresh arrays; inputs made C-contiguous."""
        destinations = control.outputs
        outputs = []
        for j, (shape, dtype) in enumerate(self._shapes):
            target = destinations[j] if destinations is not None else None
            if target is None or target.shape != shape or target.dtype != dtype:
                target = np.empty(shape, dtype)
            outputs.append(target)
        arrays = [a if a.flags.c_contiguous else np.ascontiguousarray(a) for a in inputs]
        self._dispatch.invoke(executable, arrays, outputs)
        return outputs

    def _release(self) -> None:
        if self._loaded:
            self._loaded = False
            self._dispatch.unload(self._executable)
