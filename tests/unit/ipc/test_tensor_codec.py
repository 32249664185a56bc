"""The wire form of inline tensors: ``[dtype, shape, bytes]`` decoded read-only or writable."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

from nnrt.ipc.framing import ProtocolError
from nnrt.ipc.messages import decode_tensor, encode_tensor
from nnrt.ops.floats import ignore_float_errors_here, ignoring_float_errors


@pytest.mark.parametrize("array", [
    np.arange(12, dtype=np.float32).reshape(3, 4),
    np.array(7, dtype=np.int32),  # 0-d
    np.zeros((0, 5), np.uint8),  # empty
    np.array([[True, False]]),
    np.arange(6, dtype=np.float16),
])
def test_round_trip(array: np.ndarray) -> None:
    wire = encode_tensor(array)
    for writable in (False, True):
        decoded = decode_tensor(wire, "t", writable=writable)
        assert decoded.dtype == array.dtype and decoded.shape == array.shape
        np.testing.assert_array_equal(decoded, array)
        assert decoded.flags.writeable is writable
        assert decoded.flags.c_contiguous


def test_writable_decode_owns_a_copy() -> None:
    data = np.arange(4, dtype=np.float32).tobytes()
    decoded = decode_tensor(["float32", [4], data], "t", writable=True)
    decoded[:] = -1
    assert np.frombuffer(data, np.float32).tolist() == [0, 1, 2, 3]  # the bytes are untouched


def test_read_only_decode_refuses_writes() -> None:
    decoded = decode_tensor(["float32", [2], bytes(8)], "t")
    with pytest.raises(ValueError):
        decoded[0] = 1


@pytest.mark.parametrize(("value", "message"), [
    (["float32", [3], bytes(8)], "8 bytes for shape"),
    (["float64", [1], bytes(8)], "unsupported dtype"),
    (["float32", [-1], b""], "bad shape"),
    (["float32", [1], "abcd"], "must be bytes"),
    (["float32", [1]], "must be"),
])
def test_bad_tensors_are_protocol_errors(value: list, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        decode_tensor(value, "input 0", writable=True)


def test_float_errors_ignored_only_in_the_thread_that_asked() -> None:
    seen: dict[str, object] = {}

    def quiet() -> None:
        ignore_float_errors_here()
        seen["quiet"] = ignoring_float_errors()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with seen["quiet"]:  # type: ignore[attr-defined]
                seen["value"] = np.float32(1) / np.float32(0)  # no RuntimeWarning raised

    thread = threading.Thread(target=quiet)
    thread.start()
    thread.join()
    assert seen["value"] == np.inf
    other = ignoring_float_errors()  # this thread did not ask: a real errstate
    assert isinstance(other, np.errstate)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with other:
            assert np.float32(1) / np.float32(0) == np.inf
