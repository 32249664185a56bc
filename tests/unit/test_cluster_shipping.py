"""Tensors as they cross between nodes (``nnrt.cluster.shipping``): small ones packed as
dtype, shape and bytes, checked when unpacked; large ones as arrays; replies checked."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from nnrt.cluster.shipping import PUT_BYTES, pack_tensor, raise_reply, unpack_tensor
from nnrt.errors import BadData, DeadlineMissed, UnavailableDevice
from nnrt.ipc.messages import encode_error


@pytest.mark.parametrize("array", [
    np.arange(12, dtype=np.float32).reshape(3, 4),
    np.array(7, np.int32),  # rank 0
    np.zeros((2, 0, 3), np.float16),  # no elements
    np.array([[True, False]]),
    np.arange(6, dtype=np.uint8).reshape(1, 2, 3, 1, 1, 1),
    np.arange(4, dtype=np.int64),
    np.arange(8, dtype=np.float32)[::2],  # not contiguous
])
def test_small_tensors_are_packed_and_come_back_equal(array: np.ndarray[Any, Any]) -> None:
    packed = pack_tensor(array)
    assert isinstance(packed, tuple) and isinstance(packed[3], bytes)
    view = unpack_tensor(packed, "input 0")
    assert view.dtype == array.dtype and view.shape == array.shape
    np.testing.assert_array_equal(view, array)
    assert not view.flags.writeable  # a view of the received bytes
    copy = unpack_tensor(packed, "output 0", writable=True)
    copy[...] = 0  # the caller's own array
    np.testing.assert_array_equal(unpack_tensor(packed, "input 0"), array)


def test_large_tensors_travel_as_arrays() -> None:
    big = np.ones(PUT_BYTES // 4, np.float32)
    assert pack_tensor(big) is big
    assert unpack_tensor(big, "input 0") is big


@pytest.mark.parametrize(("value", "match"), [
    (("tensor", "|O", (1,), b"\0" * 8), "unsupported tensor type"),
    (("tensor", "<c8", (1,), b"\0" * 8), "unsupported tensor type"),
    (("tensor", "no such", (1,), b"\0" * 4), "unsupported tensor type"),
    (("tensor", 5, (1,), b"\0" * 4), "unsupported tensor type"),
    (("tensor", "<f4", [1], b"\0" * 4), "shape"),
    (("tensor", "<f4", (-1,), b"\0" * 4), "shape"),
    (("tensor", "<f4", (2**31,), b""), "shape"),
    (("tensor", "<f4", (1,) * 9, b"\0" * 4), "shape"),
    (("tensor", "<f4", (1.0,), b"\0" * 4), "shape"),
    (("tensor", "<f4", (2,), b"\0" * 4), "4 bytes for a float32 tensor of shape \\(2,\\)"),
    (("tensor", "<f4", (1,), "abcd"), "no bytes"),
    (("array", "<f4", (1,), b"\0" * 4), "expected a tensor"),
    ([1.0, 2.0], "expected a tensor"),
])
def test_malformed_tensors_are_refused_by_name(value: object, match: str) -> None:
    with pytest.raises(BadData, match=match) as raised:
        unpack_tensor(value, "input 3")
    assert str(raised.value).startswith("input 3: ")


def test_replies_give_arrays_or_raise_nnrt_errors() -> None:
    y = np.arange(4, dtype=np.float32)
    (out,) = raise_reply(("ok", [pack_tensor(y)]), "node b")
    np.testing.assert_array_equal(out, y)
    assert out.flags.writeable
    with pytest.raises(DeadlineMissed, match=r"^node b: too late"):
        raise_reply(("error", *encode_error(DeadlineMissed("too late"))), "node b")
    with pytest.raises(UnavailableDevice, match="node b: malformed reply: output 1: "):
        raise_reply(("ok", [pack_tensor(y), ("tensor", "<f4", (3,), b"")]), "node b")
    with pytest.raises(UnavailableDevice, match="node b: malformed reply"):
        raise_reply(("ok", "not a list"), "node b")
