"""The runtime half of the Acme NPU: load an entry point of a module and run it.

On real hardware ``load`` would hand the instructions to the NPU's driver; this fictional NPU
executes them with numpy, in float32, with NNAPI (= numpy) broadcasting.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from nnrt.errors import BadData
from nnrt.hal.plugin import Dispatch

from acme_npu.bytecode import Opcode, Program
from acme_npu.loader import decode

__all__ = ["AcmeDispatch"]

Array = np.ndarray[Any, Any]

_UFUNCS: dict[int, np.ufunc] = {
    Opcode.ADD: np.add,
    Opcode.SUB: np.subtract,
    Opcode.MUL: np.multiply,
}


def _relu(x: Array) -> None:
    np.maximum(x, 0, out=x)


def _relu1(x: Array) -> None:
    np.clip(x, -1, 1, out=x)


def _relu6(x: Array) -> None:
    np.clip(x, 0, 6, out=x)


#: Fused activations applied in place, by NNAPI FuseCode (0, NONE, does nothing).
_ACTIVATIONS: dict[int, Callable[[Array], None]] = {1: _relu, 2: _relu1, 3: _relu6}


class AcmeDispatch(Dispatch):
    """Loads Acme bytecode (checked by :func:`acme_npu.loader.decode`) and runs programs."""

    def load(self, bytecode: bytes, entry_point: str) -> Program:
        """The checked program of ``entry_point`` (``nnrt.BadData`` naming a bad field)."""
        if not isinstance(bytecode, bytes | bytearray | memoryview):
            raise BadData(f"acme load: bytecode must be bytes, got {type(bytecode).__name__}")
        if not isinstance(entry_point, str):
            raise BadData(f"acme load: entry point must be a str, got "
                          f"{type(entry_point).__name__}")
        return decode(bytes(bytecode), entry_point)

    def invoke(self, executable: Any, inputs: Sequence[Array], outputs: Sequence[Array]) -> None:
        """Run ``executable`` on float32 ``inputs``, writing each of ``outputs`` in place."""
        if not isinstance(executable, Program):
            raise BadData(f"acme invoke: expected a loaded Program, got "
                          f"{type(executable).__name__}")
        program = executable
        where = f"acme invoke ({program.name})"
        if len(inputs) != len(program.inputs) or len(outputs) != len(program.outputs):
            raise BadData(f"{where}: expected {len(program.inputs)} inputs and "
                          f"{len(program.outputs)} outputs, got {len(inputs)} and "
                          f"{len(outputs)}")
        values: dict[int, Array] = dict(program.constants)
        for k, (slot, array) in enumerate(zip(program.inputs, inputs, strict=True)):
            values[slot] = _checked(array, program.slots[slot].dims, f"{where}: inputs[{k}]")
        targets: dict[int, Array] = {}
        for k, (slot, array) in enumerate(zip(program.outputs, outputs, strict=True)):
            targets[slot] = _checked(array, program.slots[slot].dims, f"{where}: outputs[{k}]",
                                     writable=True)
        with np.errstate(all="ignore"):  # IEEE float32: inf - inf is NaN, not an error
            for ins in program.instructions:
                out = targets.get(ins.out)
                if out is None:
                    out = np.empty(program.slots[ins.out].dims, np.float32)
                _UFUNCS[ins.opcode](values[ins.a], values[ins.b], out=out)
                activate = _ACTIVATIONS.get(ins.activation)
                if activate is not None:
                    activate(out)
                values[ins.out] = out


def _checked(array: Any, dims: tuple[int, ...], where: str, *, writable: bool = False
             ) -> Array:
    if not isinstance(array, np.ndarray) or array.dtype != np.float32:
        raise BadData(f"{where}: expected a float32 ndarray, got "
                      f"{getattr(array, 'dtype', type(array).__name__)}")
    if array.shape != dims:
        raise BadData(f"{where}: expected shape {dims}, got {array.shape}")
    if writable and not array.flags.writeable:
        raise BadData(f"{where}: the output array is read-only")
    return array
