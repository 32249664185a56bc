"""The ``.nnrt`` model file: ``nnrt.save`` / ``nnrt.load`` round trips, zero-copy weights, the
AOT section, and hostile files (every flaw a clear ``BadData``)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest

import nnrt
from nnrt import OperandLifetime as L
from nnrt import OperandType as T
from nnrt.memory import Memory, find_memory
from nnrt.model.aot import AotInfo, DispatchRecord, Stamp
from nnrt.model.file_format import (
    ENTRY,
    HEADER,
    SECTION_ALIGN,
    Section,
    SectionKind,
    encode_header,
    parse_header,
)
from nnrt.model.model import attach_aot

RNG = np.random.default_rng(6)
STAMP = Stamp("com.example.acme", "2.1", "acme-7", "0.1.0", "3.11")


def _cnn() -> nnrt.Model:
    b = nnrt.ModelBuilder()
    x = b.input("image", (1, 8, 8, 3))
    w = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    y = b.conv2d(x, b.constant(w), b.constant(RNG.standard_normal(4).astype(np.float32)),
                 padding="same", activation="relu")
    y = b.max_pool2d(y, 2, stride=2)
    y = b.fully_connected(b.reshape(y, (1, -1)), RNG.standard_normal((10, 64)).astype(np.float32),
                          RNG.standard_normal(10).astype(np.float32))
    b.output(b.softmax(y), names=["probs"])
    return b.build()


def _mixed() -> nnrt.Model:
    """A float16 constant (by reference) and an int32 one (by value: a parameter-like type)."""
    b = nnrt.ModelBuilder()
    h = b.input("h", (1, 80), "float16")
    i = b.input("i", (40,), "int32")
    b.output(b.mul(h, b.constant(RNG.standard_normal((1, 80)).astype(np.float16))),
             b.add(i, b.constant(np.arange(40, dtype=np.int32) - 7)), names=["hh", "ii"])
    return b.build()


def _plain() -> nnrt.Model:
    b = nnrt.ModelBuilder()
    x, y = b.input("left", (2, 3)), b.input("right", (2, 3))
    b.output(b.relu(b.sub(b.mul(x, y), x)), b.add(x, y, activation="relu6"), names=["a", "b"])
    return b.build()


def _inputs(model: nnrt.Model) -> list[np.ndarray[Any, Any]]:
    arrays = []
    for k in model.inputs:
        operand = model.operands[k]
        dtype = {T.TENSOR_FLOAT16: np.float16, T.TENSOR_INT32: np.int32}.get(operand.type,
                                                                              np.float32)
        arrays.append((RNG.standard_normal(operand.dims) * 9).astype(dtype))
    return arrays


def _memories(model: nnrt.Model) -> set[Memory]:
    found = {o.location.memory for o in model.operands if o.location is not None}
    if model.aot is not None:
        found |= {m.memory for m in model.aot.modules}
    return {m for m in found if isinstance(m, Memory)}


@contextlib.contextmanager
def _loaded(path: Path) -> Iterator[nnrt.Model]:
    """``nnrt.load(path)``, closing the file's mapping afterwards."""
    model = nnrt.load(path)
    try:
        yield model
    finally:
        for memory in _memories(model):
            memory.close()


def _record(ops: tuple[int, ...], module: int = 0, entry: str = "main") -> DispatchRecord:
    return DispatchRecord("com.example.acme", ops, module, entry, STAMP)


@pytest.mark.parametrize("make", [_cnn, _mixed, _plain])
def test_round_trip_runs_bit_identical(tmp_path: Path, make: Callable[[], nnrt.Model]) -> None:
    model = make()
    path = tmp_path / "m.nnrt"
    nnrt.save(model, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    inputs = _inputs(model)
    expected = nnrt.reference.run(model, inputs)
    with _loaded(path) as loaded:
        assert loaded.finished and loaded.aot is None
        assert (loaded.inputs, loaded.outputs) == (model.inputs, model.outputs)
        for before, after in zip(model.operands, loaded.operands, strict=True):
            assert (after.type, after.dims, after.lifetime, after.name) == (
                before.type, before.dims, before.lifetime, before.name)
        assert [op.type for op in loaded.operations] == [op.type for op in model.operations]
        got = nnrt.reference.run(loaded, inputs)
        for want, have in zip(expected, got, strict=True):
            assert have.dtype == want.dtype and have.tobytes() == want.tobytes()


def test_weights_are_read_in_place_from_the_mapping(tmp_path: Path) -> None:
    model = _cnn()
    nnrt.save(model, tmp_path / "cnn.nnrt")
    sections = parse_header((tmp_path / "cnn.nnrt").read_bytes()[:SECTION_ALIGN],
                            (tmp_path / "cnn.nnrt").stat().st_size, "f")
    constants = sections[SectionKind.CONSTANTS]
    with _loaded(tmp_path / "cnn.nnrt") as loaded:
        refs = [k for k, o in enumerate(loaded.operands) if o.location is not None]
        assert len(refs) == 2  # conv filter and FC weights (the biases are <= 128 bytes)
        (memory,) = _memories(loaded)
        assert memory.kind == "mmap_fd" and not memory.writable
        for k in refs:
            loc = loaded.operands[k].location
            assert loc is not None and loc.memory is memory
            assert loaded.operands[k].lifetime == L.CONSTANT_REFERENCE
            assert loaded.operands[k].value is None
            assert loc.offset % 64 == 0
            assert constants.offset <= loc.offset < loc.offset + loc.length <= constants.end
            value = loaded.constant_value(k)
            assert value is not None and find_memory(value) == (memory, loc.offset)
            original = model.constant_value(k)
            assert original is not None and np.array_equal(value, original)
        memory.close()  # the operands read the mapping: once it is gone they cannot
        with pytest.raises(nnrt.BadState):
            loaded.constant_value(refs[0])


def test_parameter_like_constants_travel_by_value(tmp_path: Path) -> None:
    nnrt.save(_mixed(), tmp_path / "m.nnrt")
    with _loaded(tmp_path / "m.nnrt") as loaded:
        by_type = {o.type: o for o in loaded.operands if o.lifetime == L.CONSTANT_REFERENCE}
        assert by_type[T.TENSOR_FLOAT16].location is not None
        assert by_type[T.TENSOR_INT32].location is None
        assert by_type[T.TENSOR_INT32].value is not None


def test_constants_from_a_user_memory_are_streamed_into_the_file(tmp_path: Path) -> None:
    weights = np.arange(96, dtype=np.float32) / 4
    with Memory.create(4096) as pool:
        pool.ndarray(np.float32, 96, offset=128)[:] = weights
        m = nnrt.Model()
        x, w, act, y = (m.add_operand(T.TENSOR_FLOAT32, (96,)), m.add_operand(T.TENSOR_FLOAT32,
                        (96,)), m.add_operand(T.INT32), m.add_operand(T.TENSOR_FLOAT32, (96,)))
        m.set_operand_value_from_memory(w, pool, 128, weights.nbytes)
        m.set_operand_value(act, 0)
        m.add_operation(nnrt.OperationType.ADD, [x, w, act], [y])
        m.identify_inputs_and_outputs([x], [y])
        nnrt.save(m.finish(), tmp_path / "m.nnrt")
    with _loaded(tmp_path / "m.nnrt") as loaded:
        (out,) = nnrt.reference.run(loaded, [np.ones(96, np.float32)])
        assert np.array_equal(out, weights + 1)


def test_aot_records_and_modules_round_trip(tmp_path: Path) -> None:
    model = _cnn()
    aot = AotInfo((_record((0, 1), 1, "conv_pool"), _record((3,), 0, "fc")))
    modules = [b"\x01" * 100, bytes(range(256)) * 3]
    nnrt.save(model, tmp_path / "aot.nnrt", aot=aot, modules=modules)
    with _loaded(tmp_path / "aot.nnrt") as loaded:
        assert loaded.aot is not None
        assert loaded.aot.dispatches == aot.dispatches
        assert [bytes(loaded.aot.module_bytes(i)) for i in range(2)] == modules
        (memory,) = _memories(loaded)
        assert all(m.memory is memory and m.offset % 64 == 0 for m in loaded.aot.modules)
        with pytest.raises(nnrt.BadData, match="module 2 is out of range"):
            loaded.aot.module_bytes(2)
        with pytest.raises(nnrt.BadState):
            attach_aot(loaded, aot)
        # saving again without module bytes takes them from the loaded file
        nnrt.save(loaded, tmp_path / "again.nnrt", aot=loaded.aot)
    with _loaded(tmp_path / "again.nnrt") as again:
        assert again.aot is not None and again.aot.dispatches == aot.dispatches
        assert bytes(again.aot.module_bytes(1)) == modules[1]


@pytest.mark.parametrize(("records", "modules", "message"), [
    ((_record((0, 9)),), [b"x"], r"dispatches\[0\]\.operations\[1\]: 9 is out of range"),
    ((_record((0, 1)), _record((2, 1))), [b"x"], "operation 1 is already in"),
    ((_record((0, 0)),), [b"x"], "operation 0 is listed twice"),
    ((_record((0,), 1),), [b"x"], r"module: 1 is out of range \[0, 0\]"),
    ((_record((0,), 0, "bad\nname"),), [b"x"], "entry_point: expected a printable string"),
    ((_record(()),), [b"x"], "needs at least one operation"),
    ((_record((0,)),), [], "carries no bytecode modules"),
])
def test_save_checks_aot_records(tmp_path: Path, records: tuple[DispatchRecord, ...],
                                 modules: list[bytes], message: str) -> None:
    with pytest.raises(nnrt.BadData, match=message):
        nnrt.save(_cnn(), tmp_path / "m.nnrt", aot=AotInfo(records), modules=modules)
    assert not list(tmp_path.iterdir())


def test_save_checks_its_arguments(tmp_path: Path) -> None:
    aot = AotInfo((_record((0,)),))
    with pytest.raises(nnrt.BadData, match="modules were given without aot records"):
        nnrt.save(_cnn(), tmp_path / "m.nnrt", modules=[b"x"])
    with pytest.raises(nnrt.BadData, match="modules must be a sequence of bytes"):
        nnrt.save(_cnn(), tmp_path / "m.nnrt", aot=aot, modules=b"x")  # type: ignore[arg-type]
    with pytest.raises(nnrt.BadData, match=r"modules\[0\]: expected bytes"):
        nnrt.save(_cnn(), tmp_path / "m.nnrt", aot=aot, modules=["x"])  # type: ignore[list-item]
    with pytest.raises(nnrt.BadData, match=r"expected an nnrt\.Model"):
        nnrt.save("model", tmp_path / "m.nnrt")  # type: ignore[arg-type]
    with pytest.raises(nnrt.BadState, match="finish"):
        nnrt.save(nnrt.Model(), tmp_path / "m.nnrt")
    assert not list(tmp_path.iterdir())


def test_stamp_from_wire_checks_fields() -> None:
    assert Stamp.from_wire(STAMP.to_wire()) == STAMP
    assert Stamp.current("d", "1", None).python.count(".") == 1
    bad = [{**STAMP.to_wire(), "soc": 7}, {**STAMP.to_wire(), "extra": "x"},
           {**STAMP.to_wire(), "version": "x" * 300}, "stamp"]
    for data in bad:
        with pytest.raises(nnrt.BadData, match="stamp"):
            Stamp.from_wire(data)


def test_saving_over_a_file_is_atomic(tmp_path: Path) -> None:
    path = tmp_path / "m.nnrt"
    nnrt.save(_cnn(), path)
    with _loaded(path) as old:
        nnrt.save(_plain(), path)  # the old model keeps reading the old file's pages
        image = _inputs(old)
        assert nnrt.reference.run(old, image)[0].shape == (1, 10)
    with _loaded(path) as new:
        assert len(new.inputs) == 2
    original = path.read_bytes()
    # a save that fails while streaming the constants leaves the old file and no temp file
    with Memory.create(4096) as pool:
        m = nnrt.Model()
        x, w, act, y = (m.add_operand(T.TENSOR_FLOAT32, (64,)), m.add_operand(T.TENSOR_FLOAT32,
                        (64,)), m.add_operand(T.INT32), m.add_operand(T.TENSOR_FLOAT32, (64,)))
        m.set_operand_value_from_memory(w, pool, 0, 256)
        m.set_operand_value(act, 0)
        m.add_operation(nnrt.OperationType.ADD, [x, w, act], [y])
        m.identify_inputs_and_outputs([x], [y])
        m.finish()
    with pytest.raises(nnrt.BadState, match="closed"):
        nnrt.save(m, path)
    assert path.read_bytes() == original
    assert [p.name for p in tmp_path.iterdir()] == ["m.nnrt"]


# -- hostile files ----------------------------------------------------------------------------

def _aot_file(tmp_path: Path) -> Path:
    path = tmp_path / "aot.nnrt"
    nnrt.save(_cnn(), path, aot=AotInfo((_record((0, 1)),)), modules=[b"bytecode" * 10])
    return path


def _table(data: bytes) -> dict[SectionKind, Section]:
    return parse_header(data[:SECTION_ALIGN], len(data), "test")


def _load_fails(path: Path, data: bytes, message: str) -> None:
    path.write_bytes(data)
    with pytest.raises(nnrt.BadData, match=message) as info:
        nnrt.load(path)
    assert str(path) in str(info.value)


def _with_section(data: bytes, kind: SectionKind, content: bytes) -> bytes:
    """``data`` with section ``kind`` replaced by ``content`` (appended, table re-signed)."""
    sections = _table(data)
    offset = -(-len(data) // SECTION_ALIGN) * SECTION_ALIGN
    sections[kind] = Section(kind, offset, len(content), hashlib.sha256(content).digest())
    header = encode_header(list(sections.values()))
    padded = data.ljust(offset, b"\0") + content
    return header + padded[len(header):]


@pytest.mark.parametrize("kind", list(SectionKind))
def test_a_flipped_byte_is_a_sha256_mismatch_naming_the_section(tmp_path: Path,
                                                                 kind: SectionKind) -> None:
    data = bytearray(_aot_file(tmp_path).read_bytes())
    section = _table(bytes(data))[kind]
    data[section.offset + section.length // 2] ^= 0x20
    _load_fails(tmp_path / "bad.nnrt", bytes(data), f"section {kind.name.lower()}: sha256 "
                "mismatch")


def _patch_entry(data: bytes, i: int, **fields: int) -> bytes:
    start = HEADER.size + i * ENTRY.size
    kind, offset, length, digest = ENTRY.unpack_from(data, start)
    entry = {"kind": kind, "offset": offset, "length": length, **fields}
    packed = ENTRY.pack(entry["kind"], entry["offset"], entry["length"], digest)
    return data[:start] + packed + data[start + ENTRY.size:]


def _patch_header(data: bytes, **fields: Any) -> bytes:
    header = dict(zip(("magic", "version", "count"), HEADER.unpack_from(data), strict=True))
    header.update(fields)
    return HEADER.pack(header["magic"], header["version"], header["count"]) + data[HEADER.size:]


CORRUPTIONS: list[tuple[str, Callable[[bytes], bytes], str]] = [
    ("empty", lambda d: b"", "truncated: the file holds 0 bytes"),
    ("short header", lambda d: d[:10], "the header alone needs 16"),
    ("short table", lambda d: d[:40], "the section table needs"),
    ("truncated", lambda d: d[:-1], r"sections\[3\] \(aot\)\.length: .* run past the end"),
    ("halved", lambda d: d[:len(d) // 2], r"run past the end of the file"),
    ("bad magic", lambda d: _patch_header(d, magic=b"NNRTMODX"), "header.magic"),
    ("version", lambda d: _patch_header(d, version=2), "format version 2 is not supported"),
    ("huge count", lambda d: _patch_header(d, count=2**32 - 1), "section_count: 4294967295"),
    ("zero count", lambda d: _patch_header(d, count=0), "section_count: 0"),
    ("unknown kind", lambda d: _patch_entry(d, 0, kind=9), r"sections\[0\]\.kind: unknown"),
    ("second kind", lambda d: _patch_entry(d, 1, kind=2), "a second constants section"),
    ("unaligned", lambda d: _patch_entry(d, 0, offset=4100), "4100 is not a multiple of 4096"),
    ("in header", lambda d: _patch_entry(d, 0, offset=0), "lies in the header page"),
    ("past EOF", lambda d: _patch_entry(d, 2, length=2**40), r"sections\[2\] \(graph\)\.length"),
    ("huge offset", lambda d: _patch_entry(d, 0, offset=2**64 - 4096), "run past the end"),
    ("overlap", lambda d: _patch_entry(d, 2, offset=4096), "overlaps section"),
    ("no graph", lambda d: _patch_entry(d, 2, kind=3), "a second bytecode section"),
    ("aot alone", lambda d: _patch_header(d, count=3), "come together"),
]


@pytest.mark.parametrize(("mutate", "message"), [c[1:] for c in CORRUPTIONS],
                         ids=[c[0] for c in CORRUPTIONS])
def test_a_damaged_header_is_bad_data(tmp_path: Path, mutate: Callable[[bytes], bytes],
                                      message: str) -> None:
    data = _aot_file(tmp_path).read_bytes()  # constants, bytecode, graph, aot
    assert [s.kind for s in _table(data).values()] == [SectionKind.CONSTANTS,
                                                       SectionKind.BYTECODE, SectionKind.GRAPH,
                                                       SectionKind.AOT]
    _load_fails(tmp_path / "bad.nnrt", mutate(data), message)


def _graph_with(data: bytes, change: Callable[[dict[str, Any]], object]) -> bytes:
    sections = _table(data)
    graph = sections[SectionKind.GRAPH]
    wire = msgpack.unpackb(data[graph.offset:graph.end])
    change(wire)
    return _with_section(data, SectionKind.GRAPH, msgpack.packb(wire))


def _aot_with(data: bytes, change: Callable[[dict[str, Any]], object]) -> bytes:
    aot = _table(data)[SectionKind.AOT]
    wire = msgpack.unpackb(data[aot.offset:aot.end])
    change(wire)
    return _with_section(data, SectionKind.AOT, msgpack.packb(wire))


def _set_ref(wire: dict[str, Any], ref: list[int]) -> None:
    operand = next(o for o in wire["operands"] if "ref" in o)
    operand["ref"] = ref


SIGNED: list[tuple[str, Callable[[bytes], bytes], str]] = [
    ("graph not msgpack", lambda d: _with_section(d, SectionKind.GRAPH, b"\xc1junk"),
     "section graph: not a msgpack document"),
    ("graph not a model", lambda d: _with_section(d, SectionKind.GRAPH, msgpack.packb([1])),
     "section graph: model: expected a map"),
    ("ref into header", lambda d: _graph_with(d, lambda w: _set_ref(w, [1, 0, 432])),
     r"outside the constants section"),
    ("ref other pool", lambda d: _graph_with(d, lambda w: _set_ref(w, [2, 4096, 432])),
     "unknown pool 2"),
    ("ref past file", lambda d: _graph_with(d, lambda w: _set_ref(w, [1, 2**40, 432])),
     "are outside pool 1"),
    ("graph huge array", lambda d: _with_section(d, SectionKind.GRAPH, msgpack.packb(
        [0] * 1_000_001)), "section graph: not a msgpack document .*exceeds max_array_len"),
    ("aot not msgpack", lambda d: _with_section(d, SectionKind.AOT, b"\x92\x01"),
     "section aot: not a msgpack document"),
    ("aot op range", lambda d: _aot_with(d, lambda w: w["dispatches"][0].update(
        operations=[0, 99])), r"dispatches\[0\]\.operations\[1\]: 99 is out of range"),
    ("aot module span", lambda d: _aot_with(d, lambda w: w.update(modules=[[0, 10**6]])),
     "run past the end of the bytecode section"),
    ("aot module align", lambda d: _aot_with(d, lambda w: w.update(modules=[[3, 1]])),
     "offset 3 is not a multiple of 64"),
    ("aot huge list", lambda d: _aot_with(d, lambda w: w.update(modules=[[0, 0]] * 70_000)),
     "70000 entries exceed the limit"),
    ("aot bad stamp", lambda d: _aot_with(d, lambda w: w["dispatches"][0]["stamp"].update(
        python=3.11)), r"stamp\.python: expected a printable string"),
]


@pytest.mark.parametrize(("mutate", "message"), [c[1:] for c in SIGNED],
                         ids=[c[0] for c in SIGNED])
def test_hostile_sections_with_valid_checksums_are_bad_data(
        tmp_path: Path, mutate: Callable[[bytes], bytes], message: str) -> None:
    _load_fails(tmp_path / "bad.nnrt", mutate(_aot_file(tmp_path).read_bytes()), message)


def test_paths_that_are_not_model_files(tmp_path: Path) -> None:
    with pytest.raises(nnrt.BadData, match="cannot open"):
        nnrt.load(tmp_path / "missing.nnrt")
    with pytest.raises(nnrt.BadData, match="not a regular file"):
        nnrt.load(tmp_path)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(nnrt.BadData, match="not a regular file"):  # and never blocks
        nnrt.load(tmp_path / "fifo")
    with pytest.raises(nnrt.BadData, match="cannot write"):
        nnrt.save(_plain(), tmp_path / "no" / "such" / "dir.nnrt")


# -- 64-bit offsets ---------------------------------------------------------------------------

def test_section_table_codec_keeps_64_bit_offsets() -> None:
    big = 5 * 2**32
    sections = [Section(SectionKind.GRAPH, 4096, 100, b"\1" * 32),
                Section(SectionKind.CONSTANTS, big, 2**33 + 7, b"\2" * 32)]
    table = parse_header(encode_header(sections), big + 2**33 + 7, "f")
    assert list(table.values()) == sections
    with pytest.raises(nnrt.BadData, match=r"\[21474836480, 30064771079\) run past the end"):
        parse_header(encode_header(sections), big + 2**33 + 6, "f")


def _shift_refs(wire: dict[str, Any], shift: int) -> None:
    for operand in wire["operands"]:
        if "ref" in operand:
            operand["ref"][1] += shift


def test_constants_beyond_4_gib_load_from_a_sparse_file(tmp_path: Path) -> None:
    model = _cnn()
    nnrt.save(model, tmp_path / "src.nnrt")
    data = (tmp_path / "src.nnrt").read_bytes()
    old = _table(data)[SectionKind.CONSTANTS]
    far = 2**32 + 3 * SECTION_ALIGN
    # the constants section, and every reference into it, moved past 4 GiB (a sparse file)
    moved = _graph_with(data, lambda w: _shift_refs(w, far - old.offset))
    sections = _table(moved)
    sections[SectionKind.CONSTANTS] = Section(SectionKind.CONSTANTS, far, old.length,
                                              old.sha256)
    header = encode_header(list(sections.values()))
    path = tmp_path / "sparse.nnrt"
    with open(path, "wb") as out:
        out.write(header + moved[len(header):])
        out.truncate(far)
        out.seek(far)
        out.write(data[old.offset:old.end])
    assert path.stat().st_size > 2**32 and path.stat().st_blocks * 512 < 2**20
    image = _inputs(model)
    with _loaded(path) as loaded:
        offsets = [o.location.offset for o in loaded.operands if o.location is not None]
        assert offsets and min(offsets) >= far
        assert nnrt.reference.run(loaded, image)[0].tobytes() == (
            nnrt.reference.run(model, image)[0].tobytes())
