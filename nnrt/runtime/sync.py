"""Blocking facade for scripts: ``nnrt.run_sync(model, inputs)`` and ``Runtime.sync()``.

Built on the async runtime: an event loop runs in a background thread (an anyio blocking
portal) and each call waits for its result.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from types import TracebackType
from typing import Any, Self

import numpy as np
from anyio.from_thread import BlockingPortal, start_blocking_portal

from nnrt.errors import BadState
from nnrt.memory import TensorRef
from nnrt.model.binding import Inputs
from nnrt.model.model import Model
from nnrt.runtime.compiled import CompiledModel
from nnrt.runtime.memories import MemoryManager
from nnrt.runtime.runtime import Runtime
from nnrt.runtime.stats import RuntimeStatistics

__all__ = ["SyncCompiledModel", "SyncRuntime", "run_sync"]

Array = np.ndarray[Any, Any]


class SyncCompiledModel:
    """Blocking twin of ``CompiledModel``."""

    def __init__(self, portal: BlockingPortal, compiled: CompiledModel) -> None:
        self._portal = portal
        self.compiled = compiled

    @property
    def device(self) -> str:
        """The driver running this model."""
        return self.compiled.device

    def execute(self, inputs: Inputs, *,
                outputs: Sequence[Array | TensorRef | None] | None = None,
                timeout: float | None = None, copy: bool = False) -> list[Array]:
        """Run the model once and wait for the outputs (see ``CompiledModel.execute``)."""
        return self._portal.call(lambda: self.compiled.execute(
            inputs, outputs=outputs, timeout=timeout, copy=copy))

    def release(self) -> None:
        """Free the model on its workers."""
        self._portal.call(self.compiled.release)


class SyncRuntime:
    """Blocking twin of ``Runtime`` (a context manager): same arguments, same behaviour."""

    def __init__(self, **runtime_kwargs: Any) -> None:
        self._kwargs = runtime_kwargs
        self._stack: contextlib.ExitStack | None = None
        self._portal: BlockingPortal | None = None
        self._runtime: Runtime | None = None

    def __enter__(self) -> Self:
        stack = contextlib.ExitStack()
        try:
            portal = stack.enter_context(start_blocking_portal())
            runtime = stack.enter_context(portal.wrap_async_context_manager(
                Runtime(**self._kwargs)))
        except BaseException:
            stack.close()
            raise
        self._stack, self._portal, self._runtime = stack, portal, runtime
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Stop the runtime (workers reaped) and its event-loop thread."""
        stack, self._stack = self._stack, None
        self._portal = self._runtime = None
        if stack is not None:
            stack.close()

    def _require(self) -> tuple[BlockingPortal, Runtime]:
        if self._portal is None or self._runtime is None:
            raise BadState("use 'with nnrt.Runtime.sync() as rt'")
        return self._portal, self._runtime

    @property
    def memory(self) -> MemoryManager:
        """Shared memories of this runtime (``rt.memory.create(size)`` and friends).

        Closing one from this thread is fine: its workers are told on the runtime's loop.
        """
        return self._require()[1].memory

    def compile(self, model: Model, **kwargs: Any) -> SyncCompiledModel:
        """Compile ``model`` (same keywords as ``Runtime.compile``)."""
        portal, runtime = self._require()
        compiled = portal.call(lambda: runtime.compile(model, **kwargs))
        return SyncCompiledModel(portal, compiled)

    def statistics(self) -> RuntimeStatistics:
        """The runtime's statistics."""
        portal, runtime = self._require()
        return portal.call(lambda: _statistics(runtime))


async def _statistics(runtime: Runtime) -> RuntimeStatistics:
    return runtime.statistics()


def run_sync(model: Model, inputs: Inputs, **runtime_kwargs: Any) -> list[Array]:
    """Compile and run ``model`` once on fresh workers; for scripts, not services."""
    runtime_kwargs.setdefault("workers", 1)
    with SyncRuntime(**runtime_kwargs) as rt:
        return rt.compile(model).execute(inputs)
