"""The compiler half of the Acme NPU: which operations it takes, and how they become bytecode.

The NPU computes float32 ADD, SUB and MUL with broadcasting and a fused activation; the
acme-n1 has no subtractor. ``partition`` selects exactly those operations (and says why it
rejects the others); ``compile`` lowers every outlined partition to one entry point
``partition_<i>`` of a single module.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
from nnrt.errors import BadData, Unsupported
from nnrt.hal.plugin import CompiledResult, CompilerPlugin, PartitionResult
from nnrt.model.model import Model
from nnrt.model.types import OperandType, OperationType

from acme_npu.bytecode import (
    OPCODES_BY_SOC,
    SOC_MODELS,
    EntryPoint,
    Instruction,
    Opcode,
    Slot,
    SlotKind,
    encode_module,
)

__all__ = ["NAME", "AcmePlugin", "lower", "rejection"]

#: The driver name the plugin registers under.
NAME = "com.example.acme"
_OPCODES = {OperationType.ADD: Opcode.ADD, OperationType.SUB: Opcode.SUB,
            OperationType.MUL: Opcode.MUL}
_ONLY = "only float32 ADD/SUB/MUL"
_MAX_SLOTS = 4096
_MAX_INSTRUCTIONS = 4096
_FORBID = "ACME_FORBID_COMPILE"


class AcmePlugin(CompilerPlugin):
    """Selects float32 ADD/SUB/MUL and compiles them into Acme bytecode."""

    name = NAME
    version = "1.0"
    soc_manufacturer = "Acme"
    supported_hardware = "npu"
    soc_models = SOC_MODELS

    def partition(self, model: Model, soc_model: str | None) -> PartitionResult:
        """Every operation the NPU runs (any partition index), the others with a reason."""
        soc = _soc(soc_model)
        return PartitionResult.by_reason(len(model.operations),
                                         lambda index: rejection(model, index, soc))

    def compile(self, partitions: Sequence[Model], soc_model: str | None) -> CompiledResult:
        """One module; partition ``i`` is its entry point ``partition_<i>``."""
        if os.environ.get(_FORBID) == "1":
            raise RuntimeError(f"acme: compile called although {_FORBID}=1")
        soc = _soc(soc_model)
        entries = [lower(model, soc, f"partition_{i}") for i, model in enumerate(partitions)]
        module = encode_module(soc, entries)
        return CompiledResult((module,), tuple((0, entry.name) for entry in entries))


def _soc(soc_model: str | None) -> str:
    if soc_model is None:
        return SOC_MODELS[0]
    if soc_model not in SOC_MODELS:
        raise BadData(f"{NAME}: unknown SoC model {soc_model!r}; known: "
                      f"{', '.join(SOC_MODELS)}")
    return soc_model


def _static(dims: tuple[int, ...]) -> bool:
    return 1 <= len(dims) <= 4 and all(d > 0 for d in dims)


def rejection(model: Model, index: int, soc_model: str) -> str | None:
    """Why operation ``index`` of ``model`` cannot run on ``soc_model`` (None: it can)."""
    op = model.operations[index]
    name = op.type.name
    opcode = _OPCODES.get(op.type)
    if opcode is None:
        return f"{name} is not accelerated by the Acme NPU: {_ONLY}"
    operands, inferred = model.operands, model.inferred_dims
    if len(op.inputs) != 3 or len(op.outputs) != 1:
        return f"{name} needs 3 inputs and 1 output, got {len(op.inputs)} and {len(op.outputs)}"
    roles = [("input 0", op.inputs[0]), ("input 1", op.inputs[1]), ("output 0", op.outputs[0])]
    for role, k in roles:
        if operands[k].type != OperandType.TENSOR_FLOAT32:
            return f"{name} with {role} (operand {k}) of {operands[k].type.name}: {_ONLY}"
    if opcode not in OPCODES_BY_SOC[soc_model]:
        able = [soc for soc in SOC_MODELS if opcode in OPCODES_BY_SOC[soc]]
        return f"{name} is not available on {soc_model} (it is on {', '.join(able)})"
    activation = op.inputs[2]
    if not operands[activation].is_constant:
        return f"{name}: the fused activation (input 2, operand {activation}) must be a constant"
    for role, k in roles:
        if not _static(inferred[k]):
            return f"{name}: {role} (operand {k}) has no static shape of rank 1..4"
    return None


def lower(model: Model, soc_model: str, entry: str) -> EntryPoint:
    """The entry point computing the outlined partition ``model`` (``Unsupported`` if it
    holds an operation the NPU cannot run)."""
    operands, inferred = model.operands, model.inferred_dims
    slots: list[Slot] = []
    slot_of: dict[int, int] = {}
    data = bytearray()

    def bind(k: int, slot: Slot) -> int:
        slot_of[k] = len(slots)
        slots.append(slot)
        return slot_of[k]

    for role, kind, indices in (("input", SlotKind.INPUT, model.inputs),
                                ("output", SlotKind.OUTPUT, model.outputs)):
        for position, k in enumerate(indices):
            if operands[k].type != OperandType.TENSOR_FLOAT32 or not _static(inferred[k]):
                raise Unsupported(f"{NAME}: {entry}: model {role} {position} (operand {k}, "
                                  f"{operands[k].describe()}) is not a static float32 tensor")
            bind(k, Slot(kind, inferred[k], position))

    def slot(k: int) -> int:
        if k in slot_of:
            return slot_of[k]
        value = model.constant_value(k)
        if value is None:
            return bind(k, Slot(SlotKind.TEMPORARY, inferred[k]))
        raw = np.ascontiguousarray(value, dtype="<f4").tobytes()
        data.extend(bytes(-len(data) % 4))
        offset = len(data)
        data.extend(raw)
        return bind(k, Slot(SlotKind.CONSTANT, inferred[k], offset, len(raw)))

    instructions = []
    for index in model.run_order:
        reason = rejection(model, index, soc_model)
        op = model.operations[index]
        if reason is not None:
            raise Unsupported(f"{NAME}: {entry}: operation {index} ({op.type.name}): {reason}")
        activation = model.constant_value(op.inputs[2])
        instructions.append(Instruction(_OPCODES[op.type], int(np.asarray(activation)),
                                        slot(op.inputs[0]), slot(op.inputs[1]),
                                        slot(op.outputs[0])))
    if len(slots) > _MAX_SLOTS or len(instructions) > _MAX_INSTRUCTIONS:
        raise Unsupported(f"{NAME}: {entry}: {len(slots)} tensors and {len(instructions)} "
                          f"operations exceed the NPU's {_MAX_SLOTS} and {_MAX_INSTRUCTIONS}")
    return EntryPoint(entry, len(model.inputs), len(model.outputs), tuple(slots),
                      tuple(instructions), bytes(data))
