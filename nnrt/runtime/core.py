"""The runtime core: what a running runtime shares with its compiled models and device memories.

A :class:`~nnrt.runtime.runtime.Runtime` owns one :class:`RuntimeCore`; every
:class:`~nnrt.runtime.compiled.CompiledModel`, plan :class:`~nnrt.runtime.step.Step` and
:class:`~nnrt.runtime.buffers.DeviceMemory` it creates receives the same core instead of
reaching into the runtime (as NNAPI's ExecutionBuilder and StepExecutor receive the compilation
they run).
"""

from __future__ import annotations

import contextlib
import math
import time
import weakref
from typing import TYPE_CHECKING

from nnrt.errors import BadData, BadState, NnrtError
from nnrt.memory import Memory
from nnrt.runtime.memories import MemoryManager

if TYPE_CHECKING:
    from nnrt.runtime.arena import Arena
    from nnrt.runtime.backends.base import Backend, CompiledRef
    from nnrt.runtime.buffers import DeviceMemory

__all__ = ["RuntimeCore", "deadline_after", "release_dropped"]


class RuntimeCore:
    """The backend, the shared arena, the runtime's memories, packed constants and device memories.

    ``backend`` and ``arena`` are set while the runtime runs (None before start and after close).
    """

    __slots__ = ("__weakref__", "arena", "backend", "buffers", "dropped", "memory", "packed")

    def __init__(self) -> None:
        self.backend: Backend | None = None
        self.arena: Arena | None = None
        #: Shared memories of the runtime (``rt.memory``), unmapped from workers when closed.
        self.memory = MemoryManager()
        #: Memories the runtime packed constants into, by memory id (one per compiled model).
        self.packed: dict[int, Memory] = {}
        #: Live device memories (freed when the runtime closes: their workers stop).
        self.buffers: weakref.WeakSet[DeviceMemory] = weakref.WeakSet()
        #: What compiled models collected without ``release()`` left to free: their steps'
        #: references and packed constants (appended by their finalizers, in any thread).
        self.dropped: list[tuple[list[CompiledRef], Memory | None]] = []

    def require_backend(self) -> Backend:
        """The running backend, or ``BadState`` saying how to start one."""
        backend = self.backend
        if backend is None:
            raise BadState("the Runtime is not running: use 'async with nnrt.Runtime() as rt'")
        return backend


async def release_dropped(core: RuntimeCore) -> None:
    """Free on the workers what compiled models collected without ``release()`` held (the
    runtime calls this before each compile, so a service compiling per request stays bounded)."""
    while core.dropped and core.backend is not None:
        refs, constants = core.dropped.pop()
        for ref in refs:
            if not ref.released:
                with contextlib.suppress(NnrtError):  # a worker that went away frees nothing
                    await core.backend.release(ref)
        if constants is not None:
            core.packed.pop(constants.id, None)
            constants.close()


def deadline_after(timeout: float | None) -> float | None:
    """The monotonic deadline ``timeout`` seconds from now (None: no deadline)."""
    if timeout is None:
        return None
    if not (isinstance(timeout, int | float) and timeout >= 0 and math.isfinite(timeout)):
        raise BadData(f"timeout must be a non-negative number of seconds, got {timeout!r}")
    return time.monotonic() + float(timeout)
