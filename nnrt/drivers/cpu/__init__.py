"""The built-in compiling CPU driver ``cpu``: a compiler plugin and its dispatch.

``CpuPlugin.partition`` selects float32 operations it lowers; ``compile`` folds constants,
pre-packs weights, fuses activations and element-wise chains, plans a scratch arena and
emits one straight-line program per partition (kernel calls on slots, stored as data), shipped
as a msgpack bytecode module (see ``docs/cpu-driver.md``). ``CpuDispatch`` verifies that program
before running it.
``CpuDriver()`` serves the pair as a driver (``load_driver("cpu")``); its prepared models
(``CpuPreparedModel``) build an autotuned stage 2 in the background after some executions.
"""

from nnrt.drivers.cpu.compiler import CompiledPartition as CompiledPartition
from nnrt.drivers.cpu.compiler import compile_partition as compile_partition
from nnrt.drivers.cpu.dispatch import CpuDispatch as CpuDispatch
from nnrt.drivers.cpu.dispatch import CpuExecutable as CpuExecutable
from nnrt.drivers.cpu.driver import CpuDriver as CpuDriver
from nnrt.drivers.cpu.driver import CpuPlugin as CpuPlugin
from nnrt.drivers.cpu.module import FORMAT as FORMAT
from nnrt.drivers.cpu.stages import CpuPreparedModel as CpuPreparedModel

__all__ = ["FORMAT", "CompiledPartition", "CpuDispatch", "CpuDriver", "CpuExecutable",
           "CpuPlugin", "CpuPreparedModel", "compile_partition"]
