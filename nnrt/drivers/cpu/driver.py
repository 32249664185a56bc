"""``CpuPlugin`` (partition + compile) and ``CpuDriver``, the plugin served as a driver."""

from __future__ import annotations

from collections.abc import Sequence

import nnrt
from nnrt.driver.base import PerformanceInfo
from nnrt.driver.plugin import CompiledResult, CompilerPlugin, PartitionResult, PluginDriver
from nnrt.drivers.cpu.compiler import compile_module
from nnrt.drivers.cpu.dispatch import CpuDispatch
from nnrt.drivers.cpu.module import FORMAT
from nnrt.drivers.cpu.support import unsupported_reason
from nnrt.model.model import Model

__all__ = ["CpuDriver", "CpuPlugin"]


class CpuPlugin(CompilerPlugin):
    """Selects the float32 operations the cpu compiler lowers and compiles partitions.

    Each partition becomes one bytecode module with one entry point, ``partition_<i>``.
    """

    name = "cpu"
    version = f"{nnrt.__version__}+cpu{FORMAT}"
    soc_manufacturer = "nnrt"
    supported_hardware = "cpu"

    def partition(self, model: Model, soc_model: str | None) -> PartitionResult:
        """Every operation with no :func:`~nnrt.drivers.cpu.support.unsupported_reason`."""
        selected: dict[int, int | None] = {}
        rejected: dict[int, str] = {}
        for index in range(len(model.operations)):
            reason = unsupported_reason(model, index)
            if reason is None:
                selected[index] = None
            else:
                rejected[index] = reason
        return PartitionResult(selected, rejected)

    def compile(self, partitions: Sequence[Model], soc_model: str | None) -> CompiledResult:
        """One module per partition: folded, packed, fused, memory-planned generated code."""
        modules = tuple(compile_module(model, f"partition_{i}")
                        for i, model in enumerate(partitions))
        calls = tuple((i, f"partition_{i}") for i in range(len(partitions)))
        return CompiledResult(modules, calls)


class CpuDriver(PluginDriver):
    """The built-in compiling CPU driver: :class:`CpuPlugin` with :class:`CpuDispatch`."""

    def __init__(self) -> None:
        super().__init__(CpuPlugin(), CpuDispatch(), device_type="cpu",
                         performance=PerformanceInfo(exec_time=0.6, power_usage=0.9))
