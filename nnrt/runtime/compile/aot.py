"""Ahead-of-time compilation: apply compiler plugins to a model offline, for a ``.nnrt`` file.

:func:`compile_ahead` partitions the model over the given plugin drivers exactly as the runtime
would (operations none of them takes are left to the fallback at run time), outlines each of
their partitions and runs the plugin's compile step on it. Each partition becomes a dispatch
record naming the driver, the bytecode module, the entry point and the compatibility stamp; the
original operations stay in the graph, so a runtime without that driver (or with another
version of it) still runs the file, compiling or falling back as usual. This runs in-process:
no worker, no runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from nnrt.errors import BadData
from nnrt.hal.base import Driver
from nnrt.hal.plugin import PluginDriver
from nnrt.hal.stamp import driver_stamp
from nnrt.model.aot import AotInfo, DispatchRecord
from nnrt.model.model import Model
from nnrt.model.subgraph import outline
from nnrt.model.types import ExecutionPreference
from nnrt.runtime.compile.partitioner import (
    STEP_COST,
    DriverSupport,
    check_step_cost,
    partition_model,
)

__all__ = ["Progress", "compile_ahead"]

#: Called before each partition is compiled: (partitions done, partitions in all, driver).
Progress = Callable[[int, int, str], None]


def compile_ahead(model: Model, drivers: Sequence[Driver], *,
                  preference: ExecutionPreference = ExecutionPreference.FAST_SINGLE_ANSWER,
                  progress: Progress | None = None, step_cost: float = STEP_COST
                  ) -> tuple[AotInfo, list[bytes]]:
    """The dispatch records and bytecode modules of ``model`` compiled for ``drivers``.

    Every driver must be made from a compiler plugin (:class:`~nnrt.hal.plugin.PluginDriver`).
    Operations none of them supports get no record (they run on the fallback at run time).
    ``step_cost``: the placement cost model's price of a step (see
    :func:`~nnrt.runtime.compile.partitioner.consolidate`).
    """
    if not drivers:
        raise BadData("compile_ahead: give at least one driver")
    plugins: dict[str, PluginDriver] = {}
    supports = []
    for driver in drivers:
        if not isinstance(driver, PluginDriver):
            raise BadData(f"driver {driver.info().name} is not a compiler plugin: only plugin "
                          "drivers compile ahead of time")
        info = driver.info()
        if info.name in plugins:
            raise BadData(f"compile_ahead: driver {info.name} given twice")
        plugins[info.name] = driver
        supports.append(DriverSupport.of(info.name, driver.support(model), info.performance))
    partitioning = partition_model(model, supports, preference, fallback=_LEFT_OVER,
                                   step_cost=check_step_cost(step_cost))
    chosen = [p for p in partitioning.partitions if p.driver in plugins]
    records: list[DispatchRecord] = []
    modules: list[bytes] = []
    for done, partition in enumerate(chosen):
        if progress is not None:
            progress(done, len(chosen), partition.driver)
        driver = plugins[partition.driver]
        outlined = outline(model, partition.operations)
        result = driver.compile_partitions([outlined.model])
        module, entry_point = result.calls[0]
        records.append(DispatchRecord(partition.driver, partition.operations, len(modules),
                                      entry_point, driver_stamp(driver)))
        modules.append(result.modules[module])
    if progress is not None:
        progress(len(chosen), len(chosen), "")
    return AotInfo(tuple(records), ()), modules


#: Stands for "whatever runs it at run time" while partitioning offline.
_LEFT_OVER = "(fallback)"
