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
from typing import TYPE_CHECKING, Any

from nnrt.errors import BadData, BadState, NnrtError
from nnrt.memory import Memory
from nnrt.runtime.memories import MemoryManager
from nnrt.runtime.metrics import MetricsRegistry

if TYPE_CHECKING:
    from nnrt.runtime.arena import Arena
    from nnrt.runtime.backends.base import Backend
    from nnrt.runtime.buffers import DeviceMemory

__all__ = ["RuntimeCore", "Shared", "deadline_after", "let_go", "release_dropped"]


class RuntimeCore:
    """The backend, the shared arena, the runtime's memories, packed constants and device memories.

    ``backend`` and ``arena`` are set while the runtime runs (None before start and after close).
    """

    __slots__ = ("__weakref__", "arena", "backend", "buffers", "dropped", "memory", "models",
                 "packed", "shared")

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
        self.dropped: list[Shared] = []
        #: Live compilations by what was compiled — the model object (immutable once finished)
        #: and, when it has one, its cache token (NNAPI-style caching by content) — and every
        #: compile option: an identical compile shares them.
        self.shared: dict[tuple[Any, ...], Shared] = {}
        #: Compiled models made by ``compile`` and not released, by unique name (held weakly:
        #: ``statistics().models``).
        self.models = MetricsRegistry()

    def require_backend(self) -> Backend:
        """The running backend, or ``BadState`` saying how to start one."""
        backend = self.backend
        if backend is None:
            raise BadState("the Runtime is not running: use 'async with nnrt.Runtime() as rt'")
        return backend


class Shared:
    """One compilation on the workers (its steps' references and packed constants), shared by
    the compiled models of identical compiles; freed when the last of them is released."""

    __slots__ = ("compilation", "constants", "keys", "model", "placed", "users")

    def __init__(self, keys: tuple[tuple[Any, ...], ...], model: Any, compilation: Any,
                 constants: Memory | None,
                 placed: dict[int, tuple[int, int, int]] | None = None) -> None:
        #: Its keys in ``RuntimeCore.shared``.
        self.keys = keys
        #: What was compiled (the key holds its id) and its compilation: the steps' references,
        #: the report and the plan.
        self.model = model
        self.compilation = compilation
        self.constants = constants
        #: Where each constant travelling by reference lives: operand -> (pool, offset,
        #: length) (what the per-shape variants of a model refer to).
        self.placed = placed or {}
        #: Compiled models using it, not yet released (or collected).
        self.users = 1


async def let_go(core: RuntimeCore, shared: Shared) -> None:
    """One compiled model of ``shared`` is done: free it on the workers if it was the last."""
    shared.users -= 1
    if shared.users > 0:
        return
    for key in shared.keys:
        if core.shared.get(key) is shared:
            del core.shared[key]
    backend = core.backend
    for ref in () if shared.compilation is None else shared.compilation.refs:
        if not ref.released and backend is not None:
            with contextlib.suppress(NnrtError):  # a worker that went away frees nothing
                await backend.release(ref)
        ref.released = True
    if shared.constants is not None:
        core.packed.pop(shared.constants.id, None)
        shared.constants.close()


async def release_dropped(core: RuntimeCore) -> None:
    """Let go of what compiled models collected without ``release()`` held (the runtime calls
    this before each compile, so a service compiling per request stays bounded)."""
    while core.dropped and core.backend is not None:
        await let_go(core, core.dropped.pop())


def deadline_after(timeout: float | None) -> float | None:
    """The monotonic deadline ``timeout`` seconds from now (None: no deadline)."""
    if timeout is None:
        return None
    if not (isinstance(timeout, int | float) and timeout >= 0 and math.isfinite(timeout)):
        raise BadData(f"timeout must be a non-negative number of seconds, got {timeout!r}")
    return time.monotonic() + float(timeout)
