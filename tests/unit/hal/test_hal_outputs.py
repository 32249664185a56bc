"""``PreparedModel.execute(outputs=...)``: caller destinations, in place or copied once."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sample_drivers import ONES, DoublingDriver, add_mul, chain

import nnrt
from nnrt.reference.driver import ReferenceDriver

Array = np.ndarray[Any, Any]


def _address(arr: Array) -> int:
    address: int = arr.__array_interface__["data"][0]
    return address


def _dynamic_chain() -> nnrt.Model:
    """``x + x`` with ``x`` of shape [?, 4]: the output shape is known only when running."""
    b = nnrt.ModelBuilder()
    x = b.input("x", (0, 4))
    b.output(b.add(x, x))
    return b.build()


def test_driver_output_is_copied_once_into_the_destination() -> None:
    prepared = DoublingDriver(in_place=False).prepare(chain(1))
    buf = np.full(64, 0xAB, np.uint8)
    result = prepared.execute([ONES], outputs=[buf])
    out = result.outputs[0]
    assert out.dtype == np.float32 and out.shape == (1, 4)
    assert np.array_equal(out, 2 * ONES)
    assert _address(out) == _address(buf)  # a view into the caller's memory
    assert out is not prepared.returned[0]
    assert np.array_equal(buf[:16].view(np.float32), [2, 2, 2, 2])
    assert (buf[16:] == 0xAB).all()  # nothing written past nbytes


def test_driver_writing_in_place_is_not_copied() -> None:
    prepared = DoublingDriver().prepare(chain(1))
    buf = np.zeros(4, np.float32)
    result = prepared.execute([ONES], outputs=[buf])
    (offered,) = prepared.offered
    assert offered is not None
    dest = offered[0]
    assert dest.dtype == np.float32 and dest.shape == (1, 4) and dest.flags.writeable
    assert _address(dest) == _address(buf)
    assert prepared.returned[0] is dest
    assert result.outputs[0] is dest
    assert np.array_equal(buf, [2, 2, 2, 2])


@pytest.mark.parametrize("buf", [
    np.zeros(16, np.uint8),
    np.zeros((2, 2), np.float64),  # any dtype: the bytes are what count
    np.zeros((3, 7), np.int16),
    np.zeros((), np.complex128),  # 0-d, 16 bytes
], ids=["uint8", "float64", "int16", "0-d"])
def test_destination_of_any_dtype_is_raw_bytes(buf: Array) -> None:
    for driver in (DoublingDriver(), DoublingDriver(in_place=False), ReferenceDriver()):
        buf[...] = 0
        out = driver.prepare(chain(1)).execute([ONES], outputs=[buf]).outputs[0]
        assert out.dtype == np.float32 and out.shape == (1, 4)
        assert np.array_equal(out, 2 * ONES)
        assert np.array_equal(buf.reshape(-1).view(np.uint8)[:16].view(np.float32), [2] * 4)


def test_destination_too_small_carries_every_shape() -> None:
    for driver in (DoublingDriver(), DoublingDriver(in_place=False), ReferenceDriver()):
        prepared = driver.prepare(chain(1))
        buf = np.zeros(15, np.uint8)
        with pytest.raises(nnrt.OutputInsufficientSize, match="output 0 needs 16 bytes") as err:
            prepared.execute([ONES], outputs=[buf])
        assert err.value.shapes == [(1, 4)]
        assert (buf == 0).all()
    doubling = DoublingDriver().prepare(chain(1))
    with pytest.raises(nnrt.OutputInsufficientSize):
        doubling.execute([ONES], outputs=[np.zeros(3, np.float32)])
    assert doubling.offered == [None]  # a destination that cannot fit is not offered


def test_sizes_apply_to_outputs_without_a_destination() -> None:
    prepared = ReferenceDriver().prepare(add_mul())
    a = np.ones((2, 3), np.float32)
    buf = np.zeros(24, np.uint8)
    result = prepared.execute([a, a], outputs=[None, buf], output_sizes=[24, 0])
    assert np.array_equal(result.outputs[0], 2 * a)
    assert np.array_equal(result.outputs[1], 2 * a) and _address(result.outputs[1]) == _address(
        buf)
    with pytest.raises(nnrt.OutputInsufficientSize, match="output 0 needs 24") as err:
        prepared.execute([a, a], outputs=[None, buf], output_sizes=[23, 0])
    assert err.value.shapes == [(2, 3), (2, 3)]
    with pytest.raises(nnrt.OutputInsufficientSize) as err:
        prepared.execute([a, a], outputs=[np.zeros(24, np.uint8), np.zeros(23, np.uint8)])
    assert str(err.value) == "output 1 needs 24 bytes (shape (2, 3)), its buffer holds 23"


def test_dynamic_output_shape_is_copied_with_the_actual_shape() -> None:
    for driver in (DoublingDriver(), ReferenceDriver()):
        prepared = driver.prepare(_dynamic_chain())
        buf = np.zeros(100, np.uint8)
        x = np.arange(12, dtype=np.float32).reshape(3, 4)
        out = prepared.execute([x], outputs=[buf]).outputs[0]
        assert out.shape == (3, 4) and np.array_equal(out, 2 * x)
        assert _address(out) == _address(buf)
        with pytest.raises(nnrt.OutputInsufficientSize) as err:
            prepared.execute([np.zeros((7, 4), np.float32)], outputs=[buf])
        assert err.value.shapes == [(7, 4)]
    doubling = DoublingDriver().prepare(_dynamic_chain())
    doubling.execute([np.ones((2, 4), np.float32)], outputs=[np.zeros(32, np.uint8)])
    assert doubling.offered == [None]  # unknown before running: no typed destination


def test_no_destinations_leave_control_outputs_unset() -> None:
    prepared = DoublingDriver().prepare(chain(1))
    prepared.execute([ONES])
    prepared.execute([ONES], outputs=[None])
    assert prepared.offered == [None, None]


@pytest.mark.parametrize(("outputs", "message"), [
    ([], r"outputs has 0 entries, the model has 1 outputs"),
    ([None, None], r"outputs has 2 entries"),
    (np.zeros(4, np.float32), r"outputs must be a sequence"),
    (b"abcd", r"outputs must be a sequence"),
    ([bytearray(16)], r"outputs\[0\] must be a numpy array or None, got bytearray"),
    ([memoryview(bytearray(16))], r"outputs\[0\] must be a numpy array"),
    ([np.zeros(4, np.float32)[::-1]], r"outputs\[0\] is not C-contiguous"),
    ([np.zeros((4, 4), np.float32).T], r"outputs\[0\] is not C-contiguous"),
    ([np.empty(4, object)], r"outputs\[0\] has dtype object"),
])
def test_bad_destinations_are_bad_data(outputs: Any, message: str) -> None:
    prepared = DoublingDriver().prepare(chain(1))
    with pytest.raises(nnrt.BadData, match=message):
        prepared.execute([ONES], outputs=outputs)
    assert prepared.offered == []


def test_read_only_destination_is_bad_data() -> None:
    buf = np.zeros(4, np.float32)
    buf.flags.writeable = False
    prepared = ReferenceDriver().prepare(add_mul())
    a = np.ones((2, 3), np.float32)
    with pytest.raises(nnrt.BadData, match=r"execute: outputs\[1\] is read-only"):
        prepared.execute([a, a], outputs=[None, buf])
    frozen = np.frombuffer(bytes(24), np.uint8)
    with pytest.raises(nnrt.BadData, match=r"outputs\[0\] is read-only"):
        prepared.execute([a, a], outputs=[frozen, None])


def test_destination_aliasing_the_input_gets_the_right_answer() -> None:
    for driver in (DoublingDriver(), DoublingDriver(in_place=False), ReferenceDriver()):
        x = np.array([[1, 2, 3, 4]], np.float32)
        out = driver.prepare(chain(1)).execute([x], outputs=[x]).outputs[0]
        assert np.array_equal(out, [[2, 4, 6, 8]]) and np.array_equal(x, [[2, 4, 6, 8]])
