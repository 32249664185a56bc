"""nnrt: an async neural-network runtime for Python services, in the spirit of NNAPI and LiteRT.

This module only re-exports the public API.
"""

import importlib
from typing import TYPE_CHECKING, Any

from nnrt import reference as reference
from nnrt._version import __version__ as __version__
from nnrt.errors import BadData as BadData
from nnrt.errors import BadState as BadState
from nnrt.errors import CacheError as CacheError
from nnrt.errors import DeadlineMissed as DeadlineMissed
from nnrt.errors import NnrtError as NnrtError
from nnrt.errors import OpFailed as OpFailed
from nnrt.errors import OutputInsufficientSize as OutputInsufficientSize
from nnrt.errors import ResourceExhausted as ResourceExhausted
from nnrt.errors import UnavailableDevice as UnavailableDevice
from nnrt.errors import Unmappable as Unmappable
from nnrt.errors import Unsupported as Unsupported
from nnrt.model.builder import ModelBuilder as ModelBuilder
from nnrt.model.builder import Omitted as Omitted
from nnrt.model.builder import Tensor as Tensor
from nnrt.model.model import Model as Model
from nnrt.model.signature import TensorInfo as TensorInfo
from nnrt.model.types import ExecutionPreference as ExecutionPreference
from nnrt.model.types import FusedActivation as FusedActivation
from nnrt.model.types import OperandLifetime as OperandLifetime
from nnrt.model.types import OperandType as OperandType
from nnrt.model.types import OperationType as OperationType
from nnrt.model.types import PaddingCode as PaddingCode
from nnrt.model.types import Priority as Priority

if TYPE_CHECKING:
    from nnrt.cache.directory import default_cache_dir as default_cache_dir
    from nnrt.cluster.options import RayCluster as RayCluster
    from nnrt.hal.buffers import BufferDesc as BufferDesc
    from nnrt.memory import Memory as Memory
    from nnrt.memory import TensorRef as TensorRef
    from nnrt.model.file import load as load
    from nnrt.model.file import save as save
    from nnrt.runtime.batching import Batching as Batching
    from nnrt.runtime.buffers import BufferRole as BufferRole
    from nnrt.runtime.buffers import DeviceMemory as DeviceMemory
    from nnrt.runtime.compile.compilation import PartitionWarning as PartitionWarning
    from nnrt.runtime.compile.placement import PlacementReport as PlacementReport
    from nnrt.runtime.compiled import CompiledModel as CompiledModel
    from nnrt.runtime.metrics import ModelStatistics as ModelStatistics
    from nnrt.runtime.prometheus import prometheus_text as prometheus_text
    from nnrt.runtime.runtime import Runtime as Runtime
    from nnrt.runtime.stats import RuntimeStatistics as RuntimeStatistics
    from nnrt.runtime.sync import SyncRuntime as SyncRuntime
    from nnrt.runtime.sync import run_sync as run_sync

# The runtime (client side: anyio, pools) is imported on first use, so that driver worker
# processes, which import nnrt's model and ops, never load client code (``docs/architecture.md``).
_LAZY = {
    "Batching": "nnrt.runtime.batching",
    "BufferDesc": "nnrt.hal.buffers",
    "BufferRole": "nnrt.runtime.buffers",
    "CompiledModel": "nnrt.runtime.compiled",
    "DeviceMemory": "nnrt.runtime.buffers",
    "Memory": "nnrt.memory",
    "TensorRef": "nnrt.memory",
    "load": "nnrt.model.file",
    "save": "nnrt.model.file",
    "PartitionWarning": "nnrt.runtime.compile.compilation",
    "PlacementReport": "nnrt.runtime.compile.placement",
    "RayCluster": "nnrt.cluster.options",
    "ModelStatistics": "nnrt.runtime.metrics",
    "prometheus_text": "nnrt.runtime.prometheus",
    "Runtime": "nnrt.runtime.runtime",
    "RuntimeStatistics": "nnrt.runtime.stats",
    "SyncRuntime": "nnrt.runtime.sync",
    "run_sync": "nnrt.runtime.sync",
    "default_cache_dir": "nnrt.cache.directory",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nnrt' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "BadData",
    "BadState",
    "BufferDesc",
    "Batching",
    "BufferRole",
    "CacheError",
    "CompiledModel",
    "DeadlineMissed",
    "DeviceMemory",
    "ExecutionPreference",
    "FusedActivation",
    "Memory",
    "Model",
    "ModelBuilder",
    "ModelStatistics",
    "NnrtError",
    "Omitted",
    "OpFailed",
    "OperandLifetime",
    "OperandType",
    "OperationType",
    "OutputInsufficientSize",
    "PaddingCode",
    "PartitionWarning",
    "PlacementReport",
    "Priority",
    "RayCluster",
    "TensorRef",
    "ResourceExhausted",
    "Runtime",
    "RuntimeStatistics",
    "SyncRuntime",
    "Tensor",
    "TensorInfo",
    "UnavailableDevice",
    "Unmappable",
    "Unsupported",
    "default_cache_dir",
    "load",
    "prometheus_text",
    "reference",
    "run_sync",
    "save",
]
