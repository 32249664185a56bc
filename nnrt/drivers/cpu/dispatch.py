"""``CpuDispatch``: loads verified bytecode modules and invokes their entry points.

``load`` decodes the msgpack module (:func:`~nnrt.drivers.cpu.module.decode_module`, hostile-
data checks), verifies the source (:func:`~nnrt.drivers.cpu.verify.verify_source`), then
compiles it with no builtins, only the kernel table and the module's read-only tensors in scope.
``invoke`` runs the entry point with a scratch arena of the size the module asked for; each
thread gets its own arena (allocated on its first call, then reused), so concurrent invocations
of one executable share nothing they write.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from types import FunctionType
from typing import Any

import numpy as np

from nnrt.driver.plugin import Dispatch
from nnrt.drivers.cpu.kernels_tuned import KERNELS
from nnrt.drivers.cpu.module import Module, decode_module
from nnrt.drivers.cpu.verify import verify_source
from nnrt.errors import BadData

__all__ = ["CpuDispatch", "CpuExecutable"]

Array = np.ndarray[Any, Any]


class CpuExecutable:
    """One loaded entry point: its function, the size of the arena it needs, and the stage
    of the module it came from with the kernels the optimiser chose (stage 2)."""

    def __init__(self, entry: str, function: Callable[..., Any], scratch_elements: int, *,
                 stage: int = 1, choices: tuple[tuple[int, str], ...] = ()) -> None:
        self.entry = entry
        self.function = function
        self.scratch_elements = scratch_elements
        self.stage = stage
        self.choices = choices
        self._local = threading.local()

    def arena(self) -> Array:
        """This thread's scratch arena (float32, ``scratch_elements`` long)."""
        arena: Array | None = getattr(self._local, "arena", None)
        if arena is None:
            arena = np.empty(self.scratch_elements, np.float32)
            self._local.arena = arena
        return arena

    def __repr__(self) -> str:
        return (f"<CpuExecutable {self.entry!r}, stage {self.stage}, scratch "
                f"{self.scratch_elements} elements>")


class CpuDispatch(Dispatch):
    """The runtime half of the cpu compiler plugin."""

    def load(self, bytecode: bytes | Module, entry_point: str) -> CpuExecutable:
        """Decode, verify and compile ``entry_point`` of a module (``BadData`` if refused).

        ``bytecode`` may also be a module decoded and checked already (a cache hit rebuilds
        one from the cache files without re-encoding it); its source is verified all the same.
        """
        module = bytecode if isinstance(bytecode, Module) else decode_module(bytecode)
        if entry_point not in module.entry_points:
            raise BadData(f"cpu bytecode: no entry point {entry_point!r}; the module has "
                          f"{', '.join(module.entry_points)}")
        clash = sorted(set(module.tensors) & set(KERNELS))
        if clash:
            raise BadData(f"cpu bytecode: tensor {clash[0]!r} has a kernel's name")
        tree = verify_source(module.source, module.entry_points, KERNELS, module.tensors)
        code = compile(tree, f"<cpu bytecode {entry_point}>", "exec", dont_inherit=True)
        namespace: dict[str, Any] = {"__builtins__": {}, **KERNELS, **module.tensors}
        exec(code, namespace)
        function = namespace.get(entry_point)
        if not isinstance(function, FunctionType):
            raise BadData(f"cpu bytecode: entry point {entry_point!r} is not a function")
        return CpuExecutable(entry_point, function, module.scratch[entry_point],
                             stage=module.stage, choices=module.choices)

    def invoke(self, executable: Any, inputs: Sequence[Array], outputs: Sequence[Array]) -> None:
        """Run ``executable`` on ``inputs``, writing ``outputs``.

        Outputs that may share memory with an input or another output are computed into fresh
        arrays and copied afterwards, so the generated code never sees aliased operands.
        """
        if not isinstance(executable, CpuExecutable):
            raise BadData(f"cpu dispatch: expected a CpuExecutable, got "
                          f"{type(executable).__name__}")
        targets = list(outputs)
        aliased = [j for j, out in enumerate(targets) if any(
            np.may_share_memory(out, other) for other in
            (*inputs, *targets[:j], *targets[j + 1:]))]
        for j in aliased:
            targets[j] = np.empty_like(targets[j])
        with np.errstate(all="ignore"):  # NNAPI semantics: inf / NaN results, no warnings
            executable.function(inputs, targets, executable.arena())
        for j in aliased:
            np.copyto(outputs[j], targets[j])
