"""The async runtime: worker pools per driver, scheduling, shared-mode service, sync facade."""

from nnrt.runtime.compiled import CompiledModel as CompiledModel
from nnrt.runtime.metrics import ModelStatistics as ModelStatistics
from nnrt.runtime.prometheus import prometheus_text as prometheus_text
from nnrt.runtime.runtime import Runtime as Runtime
from nnrt.runtime.stats import PoolStatistics as PoolStatistics
from nnrt.runtime.stats import RuntimeStatistics as RuntimeStatistics
from nnrt.runtime.sync import SyncRuntime as SyncRuntime
from nnrt.runtime.sync import run_sync as run_sync

__all__ = ["CompiledModel", "ModelStatistics", "PoolStatistics", "Runtime", "RuntimeStatistics",
           "SyncRuntime", "prometheus_text", "run_sync"]
