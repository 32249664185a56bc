"""``CpuPlugin`` (partition + compile) and ``CpuDriver``, the plugin served as a driver."""

from __future__ import annotations

import os
from collections.abc import Sequence

from nnrt._version import __version__
from nnrt.cache.files import CacheFiles
from nnrt.drivers.cpu.compiler import compile_module
from nnrt.drivers.cpu.dispatch import CpuDispatch
from nnrt.drivers.cpu.module import FORMAT, Module
from nnrt.drivers.cpu.split import join_module, split_module
from nnrt.drivers.cpu.stages import CpuPreparedModel
from nnrt.drivers.cpu.support import unsupported_reason
from nnrt.errors import BadData
from nnrt.hal.base import PerformanceInfo, PreparedModel
from nnrt.hal.plugin import CompiledResult, CompilerPlugin, PartitionResult, PluginDriver
from nnrt.model.model import Model

__all__ = ["DEFAULT_OPTIMIZE_AFTER", "OPTIMIZE_AFTER", "CpuDriver", "CpuPlugin"]

#: Environment variable: executions before the background optimisation starts (0: never).
OPTIMIZE_AFTER = "NNRT_CPU_OPTIMIZE_AFTER"
#: Executions before the background optimisation starts when nothing says otherwise.
DEFAULT_OPTIMIZE_AFTER = 32
_MAX_OPTIMIZE_AFTER = 1 << 40


class CpuPlugin(CompilerPlugin):
    """Selects the float32 operations the cpu compiler lowers and compiles partitions.

    Each partition becomes one bytecode module with one entry point, ``partition_<i>``.
    """

    name = "cpu"
    version = f"{__version__}+cpu{FORMAT}"
    soc_manufacturer = "nnrt"
    supported_hardware = "cpu"

    def partition(self, model: Model, soc_model: str | None) -> PartitionResult:
        """Every operation with no :func:`~nnrt.drivers.cpu.support.unsupported_reason`."""
        return PartitionResult.by_reason(len(model.operations),
                                         lambda index: unsupported_reason(model, index))

    def compile(self, partitions: Sequence[Model], soc_model: str | None) -> CompiledResult:
        """One module per partition: folded, packed, fused, memory-planned generated code."""
        modules = tuple(compile_module(model, f"partition_{i}")
                        for i, model in enumerate(partitions))
        calls = tuple((i, f"partition_{i}") for i in range(len(partitions)))
        return CompiledResult(modules, calls)

    def split_module(self, module: bytes) -> tuple[bytes, bytes]:
        """The module without its tensors' bytes (code) and those bytes (constants); see
        :mod:`nnrt.drivers.cpu.split`."""
        return split_module(module)

    def join_module(self, code: bytes, constants: bytes) -> Module:
        """The module :meth:`split_module` split, decoded, its tensors views of
        ``constants`` (``CacheError`` if the blobs do not fit)."""
        return join_module(code, constants)


class CpuDriver(PluginDriver):
    """The built-in compiling CPU driver: :class:`CpuPlugin` with :class:`CpuDispatch`.

    Multi-stage: a prepared model re-optimises itself in the background after
    ``optimize_after`` executions (default ``$NNRT_CPU_OPTIMIZE_AFTER``, else 32; 0 never);
    see :class:`~nnrt.drivers.cpu.stages.CpuPreparedModel`.
    """

    def __init__(self, optimize_after: int | None = None) -> None:
        super().__init__(CpuPlugin(), CpuDispatch(), device_type="cpu",
                         performance=PerformanceInfo(exec_time=0.6, power_usage=0.9))
        #: Executions after which a stage-1 prepared model builds stage 2 (0: never).
        self.optimize_after = _optimize_after(optimize_after)

    def _make_prepared(self, model: Model, module: bytes | Module, entry_point: str,
                       cache: CacheFiles | None) -> PreparedModel:
        return CpuPreparedModel(self, model, module, entry_point, cache, self.optimize_after)


def _optimize_after(given: int | None) -> int:
    where = "CpuDriver: optimize_after"
    if given is None:
        text = os.environ.get(OPTIMIZE_AFTER, "").strip()
        if not text:
            return DEFAULT_OPTIMIZE_AFTER
        where = f"${OPTIMIZE_AFTER}"
        try:
            given = int(text)
        except ValueError:
            raise BadData(f"{where} must be an int >= 0, got {text!r:.40}") from None
    if type(given) is not int or not 0 <= given <= _MAX_OPTIMIZE_AFTER:
        raise BadData(f"{where} must be an int from 0 to {_MAX_OPTIMIZE_AFTER}, got "
                      f"{given!r:.40}")
    return given
