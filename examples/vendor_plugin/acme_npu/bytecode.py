"""The Acme NPU bytecode format (version 1) and its writer.

A module is one ``bytes`` object holding any number of entry points (one per compiled
partition). Every integer is little-endian; README.md draws the layout::

    header       magic b"ACME" | version u16 | entry count u16 | SoC model 16s | module size u32
    entry table  entry count x (name 32s | body offset u32 | body length u32)
    bodies       per entry point:
                 counts       inputs u16 | outputs u16 | slots u16 | instructions u16
                 slot table   slots x (kind u8 | dtype u8 | rank u8 | 0 u8 | index u32 |
                                       nbytes u32 | dims 4 x u32)
                 instructions instructions x (opcode u8 | activation u8 | a u16 | b u16 | out u16)
                 data         constant bytes (little-endian float32, each at a 4-aligned offset)

A slot is one tensor of the entry point: input ``index``, output ``index``, a constant whose
``nbytes`` bytes sit at ``index`` in the data section, or a temporary. Names and the SoC model
are ASCII padded with NUL bytes. :func:`encode_module` packs what it is given without judging it
(the compiler is trusted); :mod:`acme_npu.loader` checks every field of untrusted bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import numpy as np

__all__ = [
    "DTYPE_FLOAT32",
    "ENTRY_COUNTS",
    "ENTRY_RECORD",
    "HEADER",
    "INSTRUCTION",
    "MAGIC",
    "MAX_DIMS",
    "OPCODES_BY_SOC",
    "SLOT",
    "SOC_MODELS",
    "VERSION",
    "EntryPoint",
    "Instruction",
    "Opcode",
    "Program",
    "Slot",
    "SlotKind",
    "encode_module",
]

Array = np.ndarray[Any, Any]

#: First four bytes of every module.
MAGIC = b"ACME"
#: The format version this package writes and reads.
VERSION = 1
#: Module header: magic, version, entry count, SoC model, module size.
HEADER = struct.Struct("<4sHH16sI")
#: One entry-table record: name, body offset, body length.
ENTRY_RECORD = struct.Struct("<32sII")
#: The counts opening an entry body: inputs, outputs, slots, instructions.
ENTRY_COUNTS = struct.Struct("<HHHH")
#: One slot record: kind, dtype, rank, reserved, index, nbytes, dims[4].
SLOT = struct.Struct("<BBBBII4I")
#: One instruction record: opcode, activation, a slot, b slot, out slot.
INSTRUCTION = struct.Struct("<BBHHH")
#: The only element type: IEEE float32.
DTYPE_FLOAT32 = 0
#: Highest tensor rank a slot can describe.
MAX_DIMS = 4


class Opcode(IntEnum):
    """What an instruction computes: ``out = activation(a op b)`` with broadcasting."""

    ADD = 1
    SUB = 2
    MUL = 3


class SlotKind(IntEnum):
    """Where a slot's tensor comes from."""

    INPUT = 0
    OUTPUT = 1
    CONSTANT = 2
    TEMPORARY = 3


#: The SoC models, oldest first; and the instructions each one executes.
SOC_MODELS = ("acme-n1", "acme-n2")
OPCODES_BY_SOC: Mapping[str, frozenset[Opcode]] = {
    "acme-n1": frozenset({Opcode.ADD, Opcode.MUL}),
    "acme-n2": frozenset({Opcode.ADD, Opcode.SUB, Opcode.MUL}),
}


@dataclass(frozen=True)
class Slot:
    """One tensor of an entry point (``index``/``nbytes`` as the module docstring says)."""

    kind: int
    dims: tuple[int, ...]
    index: int = 0
    nbytes: int = 0
    dtype: int = DTYPE_FLOAT32


@dataclass(frozen=True)
class Instruction:
    """``slots[out] = activation(slots[a] <opcode> slots[b])``."""

    opcode: int
    activation: int
    a: int
    b: int
    out: int


@dataclass(frozen=True)
class EntryPoint:
    """What the compiler emits for one partition, before packing."""

    name: str
    inputs: int
    outputs: int
    slots: tuple[Slot, ...]
    instructions: tuple[Instruction, ...]
    data: bytes = b""


@dataclass(frozen=True)
class Program:
    """A checked entry point, ready to run (what :func:`acme_npu.loader.decode` returns).

    ``inputs[k]`` / ``outputs[k]`` are the slots of input / output ``k``; ``constants`` holds
    read-only float32 arrays by slot.
    """

    name: str
    soc_model: str
    slots: tuple[Slot, ...]
    instructions: tuple[Instruction, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    constants: Mapping[int, Array] = field(default_factory=dict)


def encode_module(soc_model: str, entries: Sequence[EntryPoint]) -> bytes:
    """Pack ``entries`` into one module for ``soc_model`` (fields are taken as given)."""
    bodies = [_encode_body(entry) for entry in entries]
    offset = HEADER.size + ENTRY_RECORD.size * len(entries)
    table = bytearray()
    for entry, body in zip(entries, bodies, strict=True):
        table += ENTRY_RECORD.pack(entry.name.encode("ascii"), offset, len(body))
        offset += len(body)
    header = HEADER.pack(MAGIC, VERSION, len(entries), soc_model.encode("ascii"), offset)
    return b"".join([header, bytes(table), *bodies])


def _encode_body(entry: EntryPoint) -> bytes:
    parts = [ENTRY_COUNTS.pack(entry.inputs, entry.outputs, len(entry.slots),
                               len(entry.instructions))]
    for slot in entry.slots:
        dims = tuple(slot.dims) + (0,) * (MAX_DIMS - len(slot.dims))
        parts.append(SLOT.pack(slot.kind, slot.dtype, len(slot.dims), 0, slot.index,
                               slot.nbytes, *dims))
    for ins in entry.instructions:
        parts.append(INSTRUCTION.pack(ins.opcode, ins.activation, ins.a, ins.b, ins.out))
    parts.append(entry.data)
    return b"".join(parts)
