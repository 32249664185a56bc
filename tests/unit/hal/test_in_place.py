"""The reference driver computing model outputs straight into caller memory (an mmap-ed memfd)."""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from sample_drivers import RecordingDriver, RecordingPrepared, add_mul

import nnrt

Array = np.ndarray[Any, Any]
Build = Callable[[nnrt.ModelBuilder, Any, Any, str | None], Any]

OPS: dict[str, Build] = {
    "add": lambda b, x, y, act: b.add(x, y, act),
    "sub": lambda b, x, y, act: b.sub(x, y, act),
    "mul": lambda b, x, y, act: b.mul(x, y, act),
    "div": lambda b, x, y, act: b.div(x, y, act),
}


@pytest.fixture
def shared() -> Iterator[mmap.mmap]:
    """4 KiB of memfd memory, mapped shared (the way a pool reaches a driver worker)."""
    fd = os.memfd_create("nnrt-test-in-place", os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, 4096)
        mapping = mmap.mmap(fd, 4096)
    finally:
        os.close(fd)
    yield mapping
    mapping.close()  # every view made by a test is gone by now


def _address(arr: Array) -> int:
    address: int = arr.__array_interface__["data"][0]
    return address


def _binary(op: str, a_shape: Sequence[int], b_shape: Sequence[int],
            activation: str | None = None, dtype: str = "float32") -> nnrt.Model:
    b = nnrt.ModelBuilder()
    x, y = b.input("a", a_shape, dtype), b.input("b", b_shape, dtype)
    b.output(OPS[op](b, x, y, activation))
    return b.build()


def _prepare(model: nnrt.Model) -> RecordingPrepared:
    prepared = RecordingDriver().prepare(model)
    assert isinstance(prepared, RecordingPrepared)
    return prepared


def _in_place(prepared: RecordingPrepared, j: int = 0) -> bool:
    """Whether the last execution computed output ``j`` into its destination (no copy)."""
    offered = prepared.offered[-1]
    return offered is not None and prepared.returned[-1][j] is offered[j]


def test_mul_computes_into_the_mapping(shared: mmap.mmap) -> None:
    prepared = _prepare(_binary("mul", (2, 3), (2, 3)))
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.full((2, 3), 1.5, np.float32)
    dest = np.frombuffer(shared, np.uint8, 24, 64)
    out = prepared.execute([a, b], outputs=[dest]).outputs[0]
    assert _in_place(prepared)
    assert _address(out) == _address(dest) == _address(prepared.returned[-1][0])
    assert out.dtype == np.float32 and out.shape == (2, 3)
    assert np.array_equal(out, a * b)
    assert np.array_equal(np.frombuffer(shared, np.float32, 6, 64).reshape(2, 3), a * b)
    assert shared[:64] == bytes(64) and shared[88:] == bytes(4096 - 88)


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("activation", [None, "relu", "relu1", "relu6"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_in_place_results_equal_the_reference(shared: mmap.mmap, op: str, activation: str | None,
                                              dtype: str) -> None:
    model = _binary(op, (2, 4), (2, 4), activation, dtype)
    a = np.array([[-8, -1.5, -0.25, 0], [0.5, 1, 3, 9e3]], dtype)
    b = np.array([[2, 0.5, 4, 0], [-1, 0, 0.75, 3]], dtype)
    expected = nnrt.reference.run(model, [a, b])[0]
    prepared = _prepare(model)
    itemsize = np.dtype(dtype).itemsize
    dest = np.frombuffer(shared, np.uint8, 8 * itemsize)
    out = prepared.execute([a, b], outputs=[dest]).outputs[0]
    assert _in_place(prepared)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, expected)  # bit for bit, NaN and inf included


def test_broadcasting_into_the_destination(shared: mmap.mmap) -> None:
    prepared = _prepare(_binary("add", (2, 1, 3), (4, 1), "relu"))
    a = np.arange(-3, 3, dtype=np.float32).reshape(2, 1, 3)
    b = np.arange(4, dtype=np.float32).reshape(4, 1)
    dest = np.frombuffer(shared, np.float32, 24)
    out = prepared.execute([a, b], outputs=[dest]).outputs[0]
    assert _in_place(prepared)
    assert out.shape == (2, 4, 3) and _address(out) == _address(dest)
    assert np.array_equal(out, np.maximum(a + b, 0))


def test_destination_that_is_an_input(shared: mmap.mmap) -> None:
    prepared = _prepare(_binary("sub", (2, 3), (3,), "relu6"))
    a = np.frombuffer(shared, np.float32, 6).reshape(2, 3)
    a[...] = [[1, 2, 3], [10, 20, 30]]
    b = np.array([1, 5, 40], np.float32)
    out = prepared.execute([a, b], outputs=[a]).outputs[0]
    assert _in_place(prepared) and _address(out) == _address(a)
    assert np.array_equal(out, [[0, 0, 0], [6, 6, 0]])
    # The destination overlaps the input one element further on: numpy handles the overlap.
    a[...] = [[1, 2, 3], [4, 5, 6]]
    bytes_ = np.frombuffer(shared, np.uint8, 28)
    out = prepared.execute([a, np.ones(3, np.float32)], outputs=[bytes_[4:]]).outputs[0]
    assert _in_place(prepared)
    assert np.array_equal(out, [[0, 1, 2], [3, 4, 5]])


def test_destination_holding_an_input_read_later_is_not_clobbered(shared: mmap.mmap) -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (2, 2))
    square = b.mul(x, x)  # output 0, computed before x's last use
    b.output(square, b.add(x, np.ones((2, 2), np.float32)))
    prepared = _prepare(b.build())
    x_value = np.frombuffer(shared, np.float32, 4).reshape(2, 2)
    x_value[...] = [[1, 2], [3, 4]]
    out1 = np.frombuffer(shared, np.float32, 4, 16)
    outputs = prepared.execute([x_value], outputs=[x_value, out1]).outputs
    assert not _in_place(prepared, 0) and _in_place(prepared, 1)  # output 0 copied at the end
    assert np.array_equal(outputs[0], [[1, 4], [9, 16]])
    assert np.array_equal(outputs[1], [[2, 3], [4, 5]])


def test_output_read_by_a_later_operation(shared: mmap.mmap) -> None:
    prepared = _prepare(add_mul())  # s = a + c (output 0); output 1 = a * c + a
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    c = np.full((2, 3), 2, np.float32)
    dests = [np.frombuffer(shared, np.uint8, 24), np.frombuffer(shared, np.uint8, 24, 32)]
    outputs = prepared.execute([a, c], outputs=dests).outputs
    assert _in_place(prepared, 0) and _in_place(prepared, 1)
    assert np.array_equal(outputs[0], a + c) and np.array_equal(outputs[1], a * c + a)


def test_what_cannot_be_in_place_is_copied(shared: mmap.mmap) -> None:
    # TENSOR_INT32 (computed in int64), an output of another kernel, and a dynamic shape.
    models_inputs: list[tuple[nnrt.Model, list[Array]]] = [
        (_binary("div", (4,), (4,), None, "int32"),
         [np.array([7, -7, 9, 1], np.int32), np.array([2, 2, -4, 1], np.int32)]),
        (_binary("add", (0, 3), (3,)), [np.ones((2, 3), np.float32), np.ones(3, np.float32)]),
    ]
    b = nnrt.ModelBuilder()
    b.output(b.relu(b.input("x", (2, 2))))
    models_inputs.append((b.build(), [np.array([[-1, 1], [2, -2]], np.float32)]))
    for model, inputs in models_inputs:
        prepared = _prepare(model)
        dest = np.frombuffer(shared, np.uint8, 64)
        out = prepared.execute(inputs, outputs=[dest]).outputs[0]
        assert not _in_place(prepared)
        assert _address(out) == _address(dest)
        np.testing.assert_array_equal(out, nnrt.reference.run(model, inputs)[0])
        del dest, out, prepared  # let the fixture unmap
