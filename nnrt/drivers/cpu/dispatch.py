"""``CpuDispatch``: loads checked bytecode modules and invokes their entry points.

``load`` decodes the msgpack module (:func:`~nnrt.drivers.cpu.module.decode_module`, hostile-
data checks) and checks the entry point's program (:func:`~nnrt.drivers.cpu.program.
load_program`: kernels of the fixed table only, values defined before use, slots inside the
arena); nothing is compiled or executed to load it. ``invoke`` runs the program with a scratch
arena of the size the module asked for; each thread gets its own arena and frame (made on its
first call, then reused), so concurrent invocations of one executable share nothing they write.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from nnrt.drivers.cpu.kernels import KERNELS
from nnrt.drivers.cpu.module import Module, decode_module
from nnrt.drivers.cpu.program import Program, load_program
from nnrt.errors import BadData
from nnrt.hal.plugin import Dispatch
from nnrt.ops.floats import ignoring_float_errors

__all__ = ["CpuDispatch", "CpuExecutable"]

Array = np.ndarray[Any, Any]


class CpuExecutable:
    """One loaded entry point: its program, the size of the arena it needs, and the stage
    of the module it came from with the kernels the optimiser chose (stage 2)."""

    def __init__(self, entry: str, program: Program, scratch_elements: int, *,
                 stage: int = 1, choices: tuple[tuple[int, str], ...] = ()) -> None:
        self.entry = entry
        self.program = program
        self.scratch_elements = scratch_elements
        self.stage = stage
        self.choices = choices
        self._local = threading.local()

    def frame(self) -> list[Any]:
        """This thread's frame: the program's values over this thread's scratch arena
        (float32, ``scratch_elements`` long), made on the first call."""
        frame: list[Any] | None = getattr(self._local, "frame", None)
        if frame is None:
            frame = self.program.frame(np.empty(self.scratch_elements, np.float32))
            self._local.frame = frame
        return frame

    def __repr__(self) -> str:
        return (f"<CpuExecutable {self.entry!r}, stage {self.stage}, scratch "
                f"{self.scratch_elements} elements>")


class CpuDispatch(Dispatch):
    """The runtime half of the cpu compiler plugin."""

    def load(self, bytecode: bytes | Module, entry_point: str) -> CpuExecutable:
        """Decode the module and check the program of ``entry_point`` (``BadData`` if
        refused).

        ``bytecode`` may also be a module decoded and checked already (a cache hit rebuilds
        one from the cache files without re-encoding it); its program is checked all the same.
        """
        module = bytecode if isinstance(bytecode, Module) else decode_module(bytecode)
        if entry_point not in module.entry_points:
            raise BadData(f"cpu bytecode: no entry point {entry_point!r}; the module has "
                          f"{', '.join(module.entry_points)}")
        scratch = module.scratch[entry_point]
        program = load_program(module.programs[entry_point], entry_point, KERNELS,
                               module.tensors, scratch)
        return CpuExecutable(entry_point, program, scratch, stage=module.stage,
                             choices=module.choices)

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
        with ignoring_float_errors():  # NNAPI semantics: inf / NaN results, no warnings
            executable.program.run(executable.frame(), inputs, targets)
        for j in aliased:
            np.copyto(outputs[j], targets[j])
