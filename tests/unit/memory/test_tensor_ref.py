"""TensorRef: checked at construction, built from views, and read back through the memory."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
import pytest

import nnrt
from nnrt.memory import TENSOR_DTYPES, Memory, TensorRef


@pytest.fixture
def mem() -> Iterator[Memory]:
    memory = Memory.create(4096)
    yield memory
    memory.close()


def test_a_reference_reads_and_writes_its_range(mem: Memory) -> None:
    ref = TensorRef(mem, 128, (2, 3), "float32")
    assert (ref.memory, ref.offset, ref.shape, ref.dtype, ref.nbytes, ref.length) == (
        mem, 128, (2, 3), np.dtype(np.float32), 24, 24)
    ref.ndarray()[:] = [[1, 2, 3], [4, 5, 6]]
    assert mem.ndarray(np.float32, 6, offset=128).tolist() == [1, 2, 3, 4, 5, 6]
    assert repr(ref) == f"TensorRef(memory={mem.id}, offset=128, shape=(2, 3), dtype=float32)"


def test_references_are_frozen_values(mem: Memory) -> None:
    ref = TensorRef(mem, 0, [4], np.int32)
    assert ref == TensorRef(mem, np.int64(0), (4,), "int32")
    assert hash(ref) == hash(TensorRef(mem, 0, (4,), np.dtype("int32")))
    assert ref != TensorRef(mem, 16, (4,), np.int32)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ref.offset = 4  # type: ignore[misc]


@pytest.mark.parametrize("dtype", sorted(TENSOR_DTYPES, key=str))
def test_every_tensor_dtype_is_accepted(mem: Memory, dtype: np.dtype) -> None:
    ref = TensorRef(mem, 8 * dtype.itemsize, (3, 2), dtype)
    assert ref.nbytes == 6 * dtype.itemsize and ref.ndarray().dtype == dtype


@pytest.mark.parametrize(("args", "error", "message"), [
    (("not memory", 0, (1,), "uint8"), nnrt.BadData, "memory must be an nnrt.Memory"),
    ((0, (1,), "float64"), nnrt.BadData, "dtype float64 is not a tensor dtype"),
    ((0, (1,), ">f4"), nnrt.BadData, "dtype >f4 is not a tensor dtype"),
    ((0, (1,), "complex64"), nnrt.BadData, "not a tensor dtype"),
    ((0, (1,), object), nnrt.BadData, "holds Python objects"),
    ((0, (-1,), "uint8"), nnrt.BadData, r"shape\[0\] must be >= 0"),
    ((0, (1.0,), "uint8"), nnrt.BadData, r"shape\[0\] must be an int"),
    ((-8, (1,), "uint8"), nnrt.BadData, "offset must be >= 0"),
    ((True, (1,), "uint8"), nnrt.BadData, "offset must be an int"),
    ((2, (1,), "float32"), nnrt.BadData, "offset 2 is not aligned to float32"),
    ((2, (1,), "float16"), None, ""),
    ((4096, (1,), "uint8"), nnrt.BadData, "needs 1 bytes up to 4097, past the end"),
    ((2**63, (1,), "uint8"), nnrt.BadData, "past the end"),
    ((0, (2**40, 2**40), "float32"), nnrt.BadData, "past the end"),
    ((4096, (0,), "float32"), None, ""),
])
def test_construction_checks(mem: Memory, args: tuple[object, ...], error: type[Exception] | None,
                             message: str) -> None:
    full = args if len(args) == 4 else (mem, *args)
    if error is None:
        TensorRef(*full)  # type: ignore[arg-type]
        return
    with pytest.raises(error, match=message):
        TensorRef(*full)  # type: ignore[arg-type]


def test_a_closed_memory_is_bad_state() -> None:
    memory = Memory.create(64)
    ref = TensorRef(memory, 0, (4,), "uint8")
    memory.close()
    with pytest.raises(nnrt.BadState, match="is closed"):
        TensorRef(memory, 0, (4,), "uint8")
    with pytest.raises(nnrt.BadState, match="is closed: ndarray"):
        ref.ndarray()


def test_of_finds_the_memory_and_offset_of_a_view(mem: Memory) -> None:
    view = mem.ndarray(np.float32, (4, 8), offset=64)
    assert TensorRef.of(view) == TensorRef(mem, 64, (4, 8), np.float32)
    assert TensorRef.of(view[1:3]) == TensorRef(mem, 64 + 32, (2, 8), np.float32)
    assert TensorRef.of(view.reshape(2, 16)[1]) == TensorRef(mem, 64 + 64, (16,), np.float32)
    assert TensorRef.of(view[0, 5, ...]) == TensorRef(mem, 84, (), np.float32)
    del view


def test_of_refuses_what_it_cannot_reference(mem: Memory) -> None:
    view = mem.ndarray(np.float32, (4, 8))
    with pytest.raises(nnrt.BadData, match="not C-contiguous"):
        TensorRef.of(view[:, ::2])
    with pytest.raises(nnrt.BadData, match="not C-contiguous"):
        TensorRef.of(view.T)
    with pytest.raises(nnrt.BadData, match=r"not a view of a live nnrt\.Memory"):
        TensorRef.of(np.zeros((4, 8), np.float32))
    with pytest.raises(nnrt.BadData, match="expected a numpy array"):
        TensorRef.of([1.0, 2.0])  # type: ignore[arg-type]
    with pytest.raises(nnrt.BadData, match="float64 is not a tensor dtype"):
        TensorRef.of(mem.ndarray(np.float64, 4))
    with pytest.raises(nnrt.BadData, match="not aligned"):
        TensorRef.of(view.reshape(-1).view(np.uint8)[2:6].view(np.float32))
    del view


def test_a_reference_to_a_read_only_memory_reads_only() -> None:
    with Memory.create_blob(256) as owner:
        assert owner.name is not None
        owner.ndarray(np.int16, 4)[:] = [1, 2, 3, 4]
        with Memory.open_blob(owner.name, writable=False) as reader:
            view = TensorRef(reader, 2, (3,), np.int16).ndarray()
            assert view.tolist() == [2, 3, 4] and not view.flags.writeable
            del view
