"""Constants by reference in the model wire format: ``"ref": [pool, offset, length]``."""

from __future__ import annotations

import copy
import mmap
from typing import Any

import msgpack
import numpy as np
import pytest

import nnrt
from nnrt import OperandLifetime as L
from nnrt import OperandType as T
from nnrt import OperationType as Op
from nnrt.model.wire import REF_TYPES, model_from_wire, model_to_wire

POOL = 7
WEIGHTS = np.arange(64, dtype=np.float32) / 8


class MappedMemory:
    """A ConstantMemory over a shared anonymous mapping, as a worker's mapped pool offers."""

    def __init__(self, size: int) -> None:
        self.mapping = mmap.mmap(-1, size)

    @property
    def size(self) -> int:
        return len(self.mapping)

    def view(self, offset: int, length: int) -> memoryview:
        return memoryview(self.mapping)[offset:offset + length].toreadonly()


def _resolver(pools: dict[int, MappedMemory]) -> Any:
    def resolve(pool_id: int, path: str) -> MappedMemory:
        try:
            return pools[pool_id]
        except KeyError:
            raise nnrt.BadData(f"{path}: unknown pool {pool_id}") from None
    return resolve


@pytest.fixture
def pool() -> MappedMemory:
    """1 KiB pool holding :data:`WEIGHTS` at offset 64."""
    pool = MappedMemory(1024)
    pool.mapping[64:64 + WEIGHTS.nbytes] = WEIGHTS.tobytes()
    return pool


def _model(pool: MappedMemory) -> nnrt.Model:
    """y = x + w and j = i + k: ``w`` (operand 1, FLOAT32 [64]) from the pool at offset 64, ``k``
    (operand 2) a TENSOR_INT32 [40] in-process value (CONSTANT_REFERENCE too: over 128 bytes)."""
    m = nnrt.Model()
    x = m.add_operand(T.TENSOR_FLOAT32, (64,))
    w = m.add_operand(T.TENSOR_FLOAT32, (64,))
    k = m.add_operand(T.TENSOR_INT32, (40,))
    i = m.add_operand(T.TENSOR_INT32, (40,))
    act = m.add_operand(T.INT32)
    y = m.add_operand(T.TENSOR_FLOAT32, (64,))
    j = m.add_operand(T.TENSOR_INT32, (40,))
    m.set_operand_value_from_memory(w, pool, 64, WEIGHTS.nbytes)
    m.set_operand_value(k, np.arange(40, dtype=np.int32))
    m.set_operand_value(act, 0)
    m.add_operation(Op.ADD, [x, w, act], [y])
    m.add_operation(Op.ADD, [i, k, act], [j])
    m.identify_inputs_and_outputs([x, i], [y, j])
    return m.finish()


def _place_everything(index: int) -> tuple[int, int, int]:
    """A ``place`` that answers for every operand (the writer must only follow it for data)."""
    return (POOL, 64, WEIGHTS.nbytes)


def _wire(pool: MappedMemory) -> dict[str, Any]:
    wire = model_to_wire(_model(pool), _place_everything)
    out: dict[str, Any] = msgpack.unpackb(msgpack.packb(wire), raw=False)
    return out


def test_round_trip_reads_the_pool_in_place(pool: MappedMemory) -> None:
    model = _model(pool)
    asked: list[int] = []

    def place(index: int) -> tuple[int, int, int] | None:
        asked.append(index)
        return (POOL, 64, WEIGHTS.nbytes) if index == 1 else None

    wire = msgpack.unpackb(msgpack.packb(model_to_wire(model, place)), raw=False)
    assert asked == [1]  # only CONSTANT_REFERENCE operands of a data type are asked about
    assert wire["operands"][1]["ref"] == [POOL, 64, 256] and "value" not in wire["operands"][1]
    assert "ref" not in wire["operands"][2] and len(wire["operands"][2]["value"]) == 160
    back = model_from_wire(wire, memories=_resolver({POOL: pool}))
    operand = back.operand(1)
    assert operand.lifetime == L.CONSTANT_REFERENCE and operand.location is not None
    assert (operand.location.memory, operand.location.offset) == (pool, 64)
    x, i = np.ones(64, np.float32), np.zeros(40, np.int32)
    y, j = nnrt.reference.run(back, [x, i])
    np.testing.assert_array_equal(y, 1 + WEIGHTS)
    np.testing.assert_array_equal(j, np.arange(40))
    pool.mapping[64:68] = np.float32(100).tobytes()  # the model reads the pool, not a copy
    assert nnrt.reference.run(back, [x, i])[0][0] == 101


def test_without_place_everything_goes_by_value(pool: MappedMemory) -> None:
    wire = model_to_wire(_model(pool))
    assert wire["operands"][1]["value"] == WEIGHTS.tobytes()
    assert not any("ref" in operand for operand in wire["operands"])


def test_parameter_types_go_by_value_whatever_place_says(pool: MappedMemory) -> None:
    wire = _wire(pool)
    refs = [i for i, operand in enumerate(wire["operands"]) if "ref" in operand]
    assert refs == [1]  # not the TENSOR_INT32 constant, nor the INT32 scalar
    assert T.TENSOR_INT32 not in REF_TYPES and T.TENSOR_BOOL8 not in REF_TYPES
    assert {T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM} <= REF_TYPES


@pytest.mark.parametrize(("answer", "message"), [
    ((POOL, 64), r"place\(\) must return \(pool, offset, length\)"),
    ((POOL, 64, "256"), r"place\(\) must return"),
    ((POOL, True, 256), r"place\(\) must return"),
    ((POOL, 64, 255), r"place\(\) gave a length of 255 bytes, the operand has 256"),
])
def test_bad_place_answers(pool: MappedMemory, answer: Any, message: str) -> None:
    with pytest.raises(nnrt.BadData, match=r"^model\.operands\[1\]: " + message):
        model_to_wire(_model(pool), lambda index: answer)


@pytest.mark.parametrize(("ref", "message"), [
    ([9, 64, 256], r"\.ref: unknown pool 9"),
    ([POOL, 1024 - 252, 256], r"\.ref: bytes \[772, 1028\) are outside pool 7 of 1024 bytes"),
    ([POOL, 2**62, 256], r"\.ref: bytes \[4611686018427387904, \d+\) are outside pool 7"),
    ([POOL, 66, 256], r"\.ref: offset 66 is not a multiple of the TENSOR_FLOAT32 element size 4"),
    ([POOL, 64, 252], r"\.ref: length 252, but TENSOR_FLOAT32 with dims \[64\] needs 256"),
    ([POOL, 64, 260], r"\.ref: length 260, but"),
    ([POOL, 2**63, 256], r"\.ref\[1\] \(offset\): 9223372036854775808 is out of range"),
    ([POOL, 64, 2**63 + 256], r"\.ref\[2\] \(length\): \d+ is out of range"),
    ([POOL, -4, 256], r"\.ref\[1\] \(offset\): -4 is out of range"),
    ([0, 64, 256], r"\.ref\[0\] \(pool\): 0 is out of range"),
    ([2**53, 64, 256], r"\.ref\[0\] \(pool\): 9007199254740992 is out of range"),
    ([POOL, "64", 256], r"\.ref\[1\] \(offset\): expected an integer, got '64'"),
    ([POOL, 64.0, 256], r"\.ref\[1\] \(offset\): expected an integer"),
    ([True, 64, 256], r"\.ref\[0\] \(pool\): expected an integer, got True"),
    ([POOL, 64, None], r"\.ref\[2\] \(length\): expected an integer"),
    ([POOL, 64], r"\.ref: expected \[pool, offset, length\], got \[7, 64\]"),
    ([POOL, 64, 256, 0], r"\.ref: expected \[pool, offset, length\]"),
    ({"pool": POOL}, r"\.ref: expected \[pool, offset, length\]"),
    (b"\x07", r"\.ref: expected \[pool, offset, length\]"),
])
def test_bad_refs_are_bad_data(pool: MappedMemory, ref: Any, message: str) -> None:
    wire = _wire(pool)
    wire["operands"][1]["ref"] = ref
    with pytest.raises(nnrt.BadData, match=r"^model\.operands\[1\]" + message):
        model_from_wire(wire, memories=_resolver({POOL: pool}))


def test_ref_with_the_wrong_lifetime_or_type(pool: MappedMemory) -> None:
    resolve = _resolver({POOL: pool})
    wire = _wire(pool)
    wire["operands"][1]["lifetime"] = int(L.CONSTANT_COPY)
    with pytest.raises(nnrt.BadData, match=r"^model\.operands\[1\]\.ref: only CONSTANT_REFERENCE "
                                           r"operands carry a 'ref', this one is CONSTANT_COPY"):
        model_from_wire(wire, memories=resolve)
    wire = _wire(pool)
    wire["operands"][0]["ref"] = [POOL, 64, 256]  # the model input
    with pytest.raises(nnrt.BadData, match=r"operands\[0\]\.ref: only CONSTANT_REFERENCE"):
        model_from_wire(wire, memories=resolve)
    wire = _wire(pool)
    operand = wire["operands"][2]
    operand["ref"] = [POOL, 64, 160]
    del operand["value"]
    with pytest.raises(nnrt.BadData, match=r"^model\.operands\[2\]\.ref: TENSOR_INT32 operands "
                                           r"travel by value"):
        model_from_wire(wire, memories=resolve)
    wire = _wire(pool)
    wire["operands"][1]["value"] = WEIGHTS.tobytes()
    with pytest.raises(nnrt.BadData, match=r"a 'value' or a 'ref', not both"):
        model_from_wire(wire, memories=resolve)
    wire = _wire(pool)
    del wire["operands"][1]["ref"]
    with pytest.raises(nnrt.BadData, match=r"CONSTANT_REFERENCE operand needs a 'value' or a"):
        model_from_wire(wire, memories=resolve)


def test_refs_need_a_resolver(pool: MappedMemory) -> None:
    with pytest.raises(nnrt.BadData, match=r"^model\.operands\[1\]\.ref: pool references are "
                                           r"not accepted here"):
        model_from_wire(_wire(pool))


def test_a_resolver_that_refuses_is_reported_as_it_says(pool: MappedMemory) -> None:
    def released(pool_id: int, path: str) -> MappedMemory:
        raise nnrt.BadData(f"{path}: pool {pool_id} was released")

    with pytest.raises(nnrt.BadData, match=r"^model\.operands\[1\]\.ref: pool 7 was released$"):
        model_from_wire(_wire(pool), memories=released)


def _subgraph_model() -> nnrt.Model:
    """An unused SUBGRAPH operand holding y = x + c, with ``c`` a FLOAT32 [1, 2] constant."""
    inner = nnrt.Model()
    x = inner.add_operand(T.TENSOR_FLOAT32, (1, 2))
    c = inner.add_operand(T.TENSOR_FLOAT32, (1, 2))
    act = inner.add_operand(T.INT32)
    y = inner.add_operand(T.TENSOR_FLOAT32, (1, 2))
    inner.set_operand_value(c, np.array([[1.0, 2.0]], np.float32))
    inner.set_operand_value(act, 0)
    inner.add_operation(Op.ADD, [x, c, act], [y])
    inner.identify_inputs_and_outputs([x], [y])
    inner.finish()
    outer = nnrt.Model()
    a = outer.add_operand(T.TENSOR_FLOAT32, (2,))
    b = outer.add_operand(T.TENSOR_FLOAT32, (2,))
    act = outer.add_operand(T.INT32)
    s = outer.add_operand(T.SUBGRAPH)
    outer.set_operand_value(act, 0)
    outer.set_operand_value_from_model(s, inner)
    outer.add_operation(Op.ADD, [a, a, act], [b])
    outer.identify_inputs_and_outputs([a], [b])
    return outer.finish()


def test_refs_in_nested_subgraphs_are_resolved_and_checked(pool: MappedMemory) -> None:
    wire = model_to_wire(_subgraph_model(), _place_everything)
    inner = wire["operands"][3]["subgraph"]
    assert "value" in inner["operands"][1]  # place answers for the main graph only
    inner["operands"][1].update(lifetime=int(L.CONSTANT_REFERENCE), ref=[POOL, 64, 8])
    del inner["operands"][1]["value"]
    back = model_from_wire(wire, memories=_resolver({POOL: pool}))
    sub = back.operand(3).subgraph
    assert sub is not None
    np.testing.assert_array_equal(sub.constant_value(1), [WEIGHTS[:2]])
    with pytest.raises(nnrt.BadData, match=r"^model\.operands\[3\]\.subgraph\.operands\[1\]\.ref: "
                                           r"pool references are not accepted here"):
        model_from_wire(wire)
    bad = copy.deepcopy(wire)
    bad["operands"][3]["subgraph"]["operands"][1]["ref"] = [POOL, 1020, 8]
    with pytest.raises(nnrt.BadData, match=r"subgraph\.operands\[1\]\.ref: bytes \[1020, 1028\)"):
        model_from_wire(bad, memories=_resolver({POOL: pool}))


def test_refs_count_against_no_byte_budget(pool: MappedMemory, monkeypatch: Any) -> None:
    monkeypatch.setattr("nnrt.model.wire.MAX_CONSTANT_BYTES", 200)
    wire = _wire(pool)  # 256 bytes by reference, 160 + 4 by value
    model_from_wire(wire, memories=_resolver({POOL: pool}))
    wire["operands"][1]["value"] = WEIGHTS.tobytes()
    del wire["operands"][1]["ref"]
    with pytest.raises(nnrt.BadData, match="exceed the limit of 200 bytes"):
        model_from_wire(wire, memories=_resolver({POOL: pool}))
