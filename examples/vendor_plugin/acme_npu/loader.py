"""Reading untrusted Acme bytecode: every field is checked before it is used.

:func:`decode` finds one entry point of a module and returns a :class:`~acme_npu.bytecode.
Program` whose slots, instructions and constants are known to be consistent: every slot read is
an input, a constant or written by an earlier instruction, every output is written exactly once,
every instruction's output shape is the broadcast of its operands' shapes. Anything else raises
``nnrt.BadData`` naming the entry point, the record and the field.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np
from nnrt.errors import BadData

from acme_npu.bytecode import (
    DTYPE_FLOAT32,
    ENTRY_COUNTS,
    ENTRY_RECORD,
    HEADER,
    INSTRUCTION,
    MAGIC,
    MAX_DIMS,
    OPCODES_BY_SOC,
    SLOT,
    SOC_MODELS,
    VERSION,
    Instruction,
    Opcode,
    Program,
    Slot,
    SlotKind,
)

__all__ = ["MAX_ELEMENTS", "MAX_ENTRIES", "MAX_TEMPORARY_ELEMENTS", "decode"]

#: Most entry points in one module.
MAX_ENTRIES = 1024
#: Most elements of one tensor (256 MiB of float32).
MAX_ELEMENTS = 1 << 26
#: Most elements of all temporaries of one entry point together.
MAX_TEMPORARY_ELEMENTS = 1 << 27
_ACTIVATIONS = range(4)  # NONE, RELU, RELU1, RELU6
_KINDS = frozenset(int(kind) for kind in SlotKind)
_OPCODES = frozenset(int(opcode) for opcode in Opcode)


def decode(data: bytes, entry: str) -> Program:
    """The checked program of entry point ``entry`` in module ``data`` (``BadData`` if not)."""
    if not isinstance(data, bytes):
        raise BadData(f"acme bytecode: expected bytes, got {type(data).__name__}")
    soc_model, bodies = _read_header(data)
    if entry not in bodies:
        names = ", ".join(list(bodies)[:10]) + (", ..." if len(bodies) > 10 else "")
        raise BadData(f"acme bytecode: no entry point {entry!r:.80}; the module has {names}")
    start, end = bodies[entry]
    return _read_body(data, start, end, entry, soc_model)


def _unpack(layout: struct.Struct, data: bytes, offset: int, end: int, what: str
            ) -> tuple[Any, ...]:
    if offset + layout.size > end:
        raise BadData(f"acme bytecode: truncated {what}: needs bytes {offset}.."
                      f"{offset + layout.size}, only {end} available")
    return layout.unpack_from(data, offset)


def _ascii(raw: bytes, what: str) -> str:
    text, _, padding = raw.partition(b"\0")
    if padding.strip(b"\0") or not text or not all(32 <= c < 127 for c in text):
        shown = raw.rstrip(b"\0")
        raise BadData(f"acme bytecode: {what} {shown!r} is not non-empty, NUL-padded "
                      "printable ASCII")
    return text.decode("ascii")


def _read_header(data: bytes) -> tuple[str, dict[str, tuple[int, int]]]:
    magic, version, count, soc_raw, size = _unpack(HEADER, data, 0, len(data), "header")
    if magic != MAGIC:
        raise BadData(f"acme bytecode: header.magic is {magic!r}, expected {MAGIC!r} "
                      "(not an Acme module)")
    if version != VERSION:
        raise BadData(f"acme bytecode: header.version is {version}; this dispatch reads "
                      f"version {VERSION}")
    if size != len(data):
        raise BadData(f"acme bytecode: header.module_size is {size} but {len(data)} bytes "
                      "were given (truncated or padded module)")
    soc_model = _ascii(soc_raw, "header.soc_model")
    if soc_model not in SOC_MODELS:
        raise BadData(f"acme bytecode: header.soc_model {soc_model!r} is not an Acme SoC "
                      f"({', '.join(SOC_MODELS)})")
    if not 1 <= count <= MAX_ENTRIES:
        raise BadData(f"acme bytecode: header.entry_count is {count}; expected 1.."
                      f"{MAX_ENTRIES}")
    first_body = HEADER.size + count * ENTRY_RECORD.size
    if first_body > size:
        raise BadData(f"acme bytecode: truncated entry table: {count} entries need "
                      f"{first_body} bytes, the module has {size}")
    bodies: dict[str, tuple[int, int]] = {}
    for i in range(count):
        name_raw, offset, length = ENTRY_RECORD.unpack_from(data, HEADER.size
                                                            + i * ENTRY_RECORD.size)
        name = _ascii(name_raw, f"entry {i} name")
        if name in bodies:
            raise BadData(f"acme bytecode: entry {i} name {name!r} appears twice")
        if offset < first_body or offset + length > size:
            raise BadData(f"acme bytecode: entry {i} ({name}) body [{offset}, "
                          f"{offset + length}) is outside the bodies [{first_body}, {size})")
        bodies[name] = (offset, offset + length)
    return soc_model, bodies


def _read_body(data: bytes, start: int, end: int, entry: str, soc_model: str) -> Program:
    where = f"acme bytecode, entry point {entry}"
    inputs, outputs, slot_count, instruction_count = _unpack(ENTRY_COUNTS, data, start, end,
                                                             f"{entry} counts")
    slots_at = start + ENTRY_COUNTS.size
    code_at = slots_at + slot_count * SLOT.size
    data_at = code_at + instruction_count * INSTRUCTION.size
    if data_at > end:
        raise BadData(f"{where}: truncated body: {slot_count} slots and {instruction_count} "
                      f"instructions need {data_at - start} bytes, the body has {end - start}")
    slots = tuple(_read_slot(data, slots_at + i * SLOT.size, f"{where}, slot {i}",
                             data_at, end) for i in range(slot_count))
    input_slots = _positions(slots, SlotKind.INPUT, inputs, where, "input")
    output_slots = _positions(slots, SlotKind.OUTPUT, outputs, where, "output")
    instructions = tuple(_read_instruction(data, code_at + j * INSTRUCTION.size)
                         for j in range(instruction_count))
    _check_program(slots, instructions, soc_model, where)
    constants = {}
    for i, slot in enumerate(slots):
        if slot.kind == SlotKind.CONSTANT:
            array = np.frombuffer(data, "<f4", math.prod(slot.dims), data_at + slot.index)
            value = array.reshape(slot.dims).astype(np.float32)  # a copy: owns its memory
            value.flags.writeable = False
            constants[i] = value
    return Program(entry, soc_model, slots, instructions, input_slots, output_slots, constants)


def _read_slot(data: bytes, offset: int, where: str, data_at: int, end: int) -> Slot:
    kind, dtype, rank, reserved, index, nbytes, *dims = SLOT.unpack_from(data, offset)
    if kind not in _KINDS:
        raise BadData(f"{where}: field kind is {kind}; expected 0..3 (input, output, "
                      "constant, temporary)")
    if dtype != DTYPE_FLOAT32:
        raise BadData(f"{where}: field dtype is {dtype}; only {DTYPE_FLOAT32} (float32) exists")
    if reserved != 0:
        raise BadData(f"{where}: reserved byte is {reserved}, expected 0")
    if not 1 <= rank <= MAX_DIMS:
        raise BadData(f"{where}: field rank is {rank}; expected 1..{MAX_DIMS}")
    for d, size in enumerate(dims):
        if (size < 1) if d < rank else (size != 0):
            expected = "at least 1" if d < rank else "0 beyond the rank"
            raise BadData(f"{where}: field dims[{d}] is {size}; expected {expected}")
    shape = tuple(dims[:rank])
    elements = math.prod(shape)
    if elements > MAX_ELEMENTS:
        raise BadData(f"{where}: dims {list(shape)} hold {elements} elements; at most "
                      f"{MAX_ELEMENTS}")
    if kind == SlotKind.CONSTANT:
        if nbytes != 4 * elements:
            raise BadData(f"{where}: field nbytes is {nbytes} but dims {list(shape)} of "
                          f"float32 need {4 * elements}")
        if index % 4 or data_at + index + nbytes > end:
            raise BadData(f"{where}: constant bytes [{index}, {index + nbytes}) are unaligned "
                          f"or outside the data section of {end - data_at} bytes")
    elif nbytes != 0 or (kind == SlotKind.TEMPORARY and index != 0):
        raise BadData(f"{where}: field nbytes is {nbytes}, index {index}; a "
                      f"{SlotKind(kind).name.lower()} slot has nbytes 0"
                      + (" and index 0" if kind == SlotKind.TEMPORARY else ""))
    return Slot(kind, shape, index, nbytes, dtype)


def _positions(slots: tuple[Slot, ...], kind: SlotKind, count: int, where: str, what: str
               ) -> tuple[int, ...]:
    """Per position ``0..count-1``, the one slot of ``kind`` bound to it."""
    found: dict[int, int] = {}
    for i, slot in enumerate(slots):
        if slot.kind != kind:
            continue
        if slot.index >= count:
            raise BadData(f"{where}, slot {i}: field index is {what} {slot.index}, but the "
                          f"entry point has {count} {what}s")
        if slot.index in found:
            raise BadData(f"{where}, slot {i}: {what} {slot.index} is already slot "
                          f"{found[slot.index]}")
        found[slot.index] = i
    missing = [k for k in range(count) if k not in found]
    if missing:
        raise BadData(f"{where}: no slot holds {what} {missing[0]} ({count} {what}s declared)")
    return tuple(found[k] for k in range(count))


def _read_instruction(data: bytes, offset: int) -> Instruction:
    return Instruction(*INSTRUCTION.unpack_from(data, offset))


def _check_program(slots: tuple[Slot, ...], instructions: tuple[Instruction, ...],
                   soc_model: str, where: str) -> None:
    """Opcodes, activations, slot indices, def-before-use, single writes and shapes."""
    ready = {i for i, s in enumerate(slots) if s.kind in (SlotKind.INPUT, SlotKind.CONSTANT)}
    temporary_elements = 0
    for j, ins in enumerate(instructions):
        at = f"{where}, instruction {j}"
        if ins.opcode not in _OPCODES:
            raise BadData(f"{at}: field opcode is {ins.opcode}; known opcodes are "
                          + ", ".join(f"{o.value} ({o.name})" for o in Opcode))
        if Opcode(ins.opcode) not in OPCODES_BY_SOC[soc_model]:
            raise BadData(f"{at}: opcode {Opcode(ins.opcode).name} is not available on "
                          f"{soc_model}")
        if ins.activation not in _ACTIVATIONS:
            raise BadData(f"{at}: field activation is {ins.activation}; expected 0..3 "
                          "(NONE, RELU, RELU1, RELU6)")
        for name in ("a", "b", "out"):
            slot = getattr(ins, name)
            if slot >= len(slots):
                raise BadData(f"{at}: field {name} is slot {slot}; the entry point has "
                              f"{len(slots)} slots")
        for name in ("a", "b"):
            if getattr(ins, name) not in ready:
                raise BadData(f"{at}: field {name} reads slot {getattr(ins, name)} before "
                              "anything is written to it")
        out = slots[ins.out]
        if out.kind not in (SlotKind.OUTPUT, SlotKind.TEMPORARY) or ins.out in ready:
            raise BadData(f"{at}: field out is slot {ins.out}, which is not an output or "
                          "temporary written once")
        try:
            shape = np.broadcast_shapes(slots[ins.a].dims, slots[ins.b].dims)
        except ValueError:
            shape = None
        if shape != out.dims:
            raise BadData(f"{at}: shapes {list(slots[ins.a].dims)} and "
                          f"{list(slots[ins.b].dims)} do not broadcast to the out slot's "
                          f"{list(out.dims)}")
        if out.kind == SlotKind.TEMPORARY:
            temporary_elements += math.prod(out.dims)
            if temporary_elements > MAX_TEMPORARY_ELEMENTS:
                raise BadData(f"{at}: temporaries exceed {MAX_TEMPORARY_ELEMENTS} elements")
        ready.add(ins.out)
    for i, slot in enumerate(slots):
        if slot.kind == SlotKind.OUTPUT and i not in ready:
            raise BadData(f"{where}: output {slot.index} (slot {i}) is never written")
