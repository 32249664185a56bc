"""Hostile bytecode: every malformed field is ``nnrt.BadData`` naming it, never a crash."""

from __future__ import annotations

import struct

import nnrt
import numpy as np
import pytest

from acme_npu import AcmeDispatch, AcmePlugin
from acme_npu.bytecode import (
    ENTRY_COUNTS,
    ENTRY_RECORD,
    HEADER,
    SLOT,
    EntryPoint,
    Instruction,
    Opcode,
    Program,
    Slot,
    SlotKind,
    encode_module,
)

from acme_cases import broadcast_model

INPUT, OUTPUT, CONSTANT, TEMPORARY = SlotKind
SLOTS = (Slot(INPUT, (2, 3), 0), Slot(CONSTANT, (3,), 0, 12), Slot(OUTPUT, (2, 3), 0))
ADD = Instruction(Opcode.ADD, 0, 0, 1, 2)
DATA = np.array([1, 2, 3], "<f4").tobytes()


def module(slots: tuple[Slot, ...] = SLOTS, code: tuple[Instruction, ...] = (ADD,), *,
           inputs: int = 1, outputs: int = 1, data: bytes = DATA, soc: str = "acme-n2") -> bytes:
    return encode_module(soc, [EntryPoint("partition_0", inputs, outputs, slots, code, data)])


def load(data: bytes, entry: str = "partition_0") -> Program:
    return AcmeDispatch().load(data, entry)


def patched(data: bytes, offset: int, fmt: str, value: int | bytes) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


BODY = HEADER.size + ENTRY_RECORD.size  # the body of a one-entry module
SLOT0 = BODY + ENTRY_COUNTS.size


def test_the_handmade_module_runs() -> None:
    program = load(module())
    out = np.empty((2, 3), np.float32)
    AcmeDispatch().invoke(program, [np.ones((2, 3), np.float32)], [out])
    np.testing.assert_array_equal(out, [[2, 3, 4], [2, 3, 4]])


def test_every_truncation_is_refused() -> None:
    data = module()
    for n in range(len(data)):
        with pytest.raises(nnrt.BadData, match="truncated"):
            load(data[:n])


def test_truncations_with_a_consistent_size_field_are_refused() -> None:
    data = module()
    for n in range(HEADER.size, len(data)):
        cut = patched(data[:n], 24, "<I", n)
        with pytest.raises(nnrt.BadData):
            load(cut)


@pytest.mark.parametrize(("offset", "fmt", "value", "message"), [
    (0, "4s", b"ACMF", r"header.magic is b'ACMF', expected b'ACME'"),
    (4, "<H", 2, "header.version is 2; this dispatch reads version 1"),
    (6, "<H", 0, "header.entry_count is 0"),
    (6, "<H", 5000, "header.entry_count is 5000"),
    (8, "16s", b"acme-n3", "header.soc_model 'acme-n3' is not an Acme SoC"),
    (8, "16s", b"acme\xff", "header.soc_model .* is not non-empty, NUL-padded printable ASCII"),
    (24, "<I", 10**6, "header.module_size is 1000000"),
    (HEADER.size, "32s", b"", "entry 0 name b'' is not non-empty, NUL-padded"),
    (HEADER.size, "32s", b"p\0q", "entry 0 name b'p.x00q' is not non-empty"),
    (HEADER.size + 32, "<I", 0, r"entry 0 \(partition_0\) body \[0, "),
    (HEADER.size + 36, "<I", 10**6, "is outside the bodies"),
    (BODY, "<H", 2, "no slot holds input 1"),
    (BODY + 4, "<H", 900, "truncated body: 900 slots"),
    (BODY + 6, "<H", 3, "truncated body: 3 slots and 3 instructions need"),
    (SLOT0, "B", 7, "slot 0: field kind is 7"),
    (SLOT0 + 1, "B", 1, "slot 0: field dtype is 1"),
    (SLOT0 + 2, "B", 0, "slot 0: field rank is 0"),
    (SLOT0 + 2, "B", 5, "slot 0: field rank is 5"),
    (SLOT0 + 3, "B", 1, "slot 0: reserved byte is 1"),
    (SLOT0 + 4, "<I", 3, "slot 0: field index is input 3, but the entry point has 1 inputs"),
    (SLOT0 + 12, "<I", 0, r"slot 0: field dims\[0\] is 0; expected at least 1"),
    (SLOT0 + 20, "<I", 1, r"slot 0: field dims\[2\] is 1; expected 0 beyond the rank"),
    (SLOT0 + 12, "<I", 2**31, "elements; at most"),
    (SLOT0 + SLOT.size + 8, "<I", 16, "slot 1: field nbytes is 16 but dims .3. of float32 "
                                      "need 12"),
    (SLOT0 + SLOT.size + 4, "<I", 4, r"slot 1: constant bytes \[4, 16\) are unaligned or "
                                     "outside"),
    (SLOT0 + SLOT.size + 4, "<I", 2, "unaligned"),
    (SLOT0 + 2 * SLOT.size + 12, "<I", 3, r"shapes \[2, 3\] and \[3\] do not broadcast to the "
                                          r"out slot's \[3, 3\]"),
])
def test_bad_field(offset: int, fmt: str, value: int | bytes, message: str) -> None:
    with pytest.raises(nnrt.BadData, match=message):
        load(patched(module(), offset, fmt, value))


@pytest.mark.parametrize(("code", "message"), [
    ((Instruction(9, 0, 0, 1, 2),), r"instruction 0: field opcode is 9; known opcodes are "
                                    r"1 \(ADD\), 2 \(SUB\), 3 \(MUL\)"),
    ((Instruction(0, 0, 0, 1, 2),), "field opcode is 0"),
    ((Instruction(Opcode.ADD, 4, 0, 1, 2),), "field activation is 4"),
    ((Instruction(Opcode.ADD, 0, 99, 1, 2),), "field a is slot 99; the entry point has 3"),
    ((Instruction(Opcode.ADD, 0, 0, 1, 3),), "field out is slot 3"),
    ((Instruction(Opcode.ADD, 0, 0, 1, 1),), "field out is slot 1, which is not an output"),
    ((ADD, ADD), "instruction 1: field out is slot 2, which is not an output or temporary "
                 "written once"),
    ((), "output 0 .slot 2. is never written"),
])
def test_bad_instructions(code: tuple[Instruction, ...], message: str) -> None:
    with pytest.raises(nnrt.BadData, match=message):
        load(module(code=code))


def test_read_before_write() -> None:
    slots = (*SLOTS, Slot(TEMPORARY, (2, 3)))
    code = (Instruction(Opcode.ADD, 0, 3, 1, 2), Instruction(Opcode.ADD, 0, 0, 0, 3))
    with pytest.raises(nnrt.BadData, match="instruction 0: field a reads slot 3 before"):
        load(module(slots, code))


def test_sub_is_refused_in_an_acme_n1_module() -> None:
    code = (Instruction(Opcode.SUB, 0, 0, 1, 2),)
    with pytest.raises(nnrt.BadData, match="opcode SUB is not available on acme-n1"):
        load(module(code=code, soc="acme-n1"))
    assert load(module(code=code, soc="acme-n2")).instructions == code


def test_duplicate_slots_and_entries() -> None:
    slots = (*SLOTS, Slot(INPUT, (3,), 0))
    with pytest.raises(nnrt.BadData, match="slot 3: input 0 is already slot 0"):
        load(module(slots))
    temp = (SLOTS[0], SLOTS[1], Slot(OUTPUT, (2, 3), 0), Slot(TEMPORARY, (2,), 5))
    with pytest.raises(nnrt.BadData, match="slot 3: field nbytes is 0, index 5"):
        load(module(temp))
    entry = EntryPoint("partition_0", 1, 1, SLOTS, (ADD,), DATA)
    twice = encode_module("acme-n2", [entry, entry])
    with pytest.raises(nnrt.BadData, match="entry 1 name 'partition_0' appears twice"):
        load(twice)


def test_unknown_entry_lists_the_known_ones() -> None:
    module_bytes = AcmePlugin().compile([broadcast_model()] * 2, "acme-n1").modules[0]
    with pytest.raises(nnrt.BadData, match="no entry point 'main'; the module has "
                                           "partition_0, partition_1"):
        load(module_bytes, "main")


def test_invoke_checks_its_arrays() -> None:
    dispatch, program = AcmeDispatch(), load(module())
    good_in, good_out = np.zeros((2, 3), np.float32), np.zeros((2, 3), np.float32)
    readonly = np.zeros((2, 3), np.float32)
    readonly.flags.writeable = False
    for inputs, outputs, message in (
            ([], [good_out], "expected 1 inputs and 1 outputs, got 0 and 1"),
            ([good_in.astype(np.float64)], [good_out], r"inputs\[0\]: expected a float32"),
            ([good_in[:1]], [good_out], r"inputs\[0\]: expected shape \(2, 3\)"),
            ([good_in], [readonly], r"outputs\[0\]: the output array is read-only")):
        with pytest.raises(nnrt.BadData, match=message):
            dispatch.invoke(program, inputs, outputs)
    with pytest.raises(nnrt.BadData, match="expected a loaded Program"):
        dispatch.invoke(b"ACME", [good_in], [good_out])


def test_single_byte_corruption_never_escapes_as_another_error() -> None:
    data = AcmePlugin().compile([broadcast_model()], "acme-n2").modules[0]
    dispatch = AcmeDispatch()
    loaded = 0
    for offset in range(len(data)):
        for value in (0x00, 0x01, 0x80, 0xFF, data[offset] ^ 0x04):
            mutated = data[:offset] + bytes([value]) + data[offset + 1:]
            try:
                program = dispatch.load(mutated, "partition_0")
            except nnrt.BadData:
                continue
            loaded += 1  # a valid program (e.g. other constant values): it must run
            inputs = [np.ones(program.slots[s].dims, np.float32) for s in program.inputs]
            outputs = [np.empty(program.slots[s].dims, np.float32) for s in program.outputs]
            dispatch.invoke(program, inputs, outputs)
    assert loaded > 0


def test_programs_own_their_constants() -> None:
    program = load(module())
    constant = program.constants[1]
    assert constant.flags.owndata and not constant.flags.writeable
    assert constant.dtype == np.float32 and program.slots == SLOTS
