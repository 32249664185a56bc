"""InlineCodec: the fast wire form of small requests, and replies checked as untrusted input.

A request takes the fast form only for exact arrays; a reply in the fast form decodes to arrays
owning their memory, and anything else goes through the fully checked decoder."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import nnrt
from nnrt.ipc.framing import ProtocolError
from nnrt.runtime.inline import InlineCodec


def _model(dynamic_output: bool = False) -> nnrt.Model:
    b = nnrt.ModelBuilder()
    x = b.input("x", (0 if dynamic_output else 2, 3))  # 0: rows known when it runs
    b.output(b.add(x, np.ones((1, 3), np.float32)))
    return b.build()


def test_exact_arrays_take_the_fast_form() -> None:
    codec = InlineCodec(_model())
    x = np.arange(6, dtype=np.float32).reshape(2, 3).copy()  # owning its memory
    assert codec.encode([x]) == [["float32", [2, 3], x.tobytes()]]


@pytest.mark.parametrize("inputs", [
    pytest.param([np.zeros((2, 3), np.float64)], id="another dtype"),
    pytest.param([np.zeros((3, 2), np.float32)], id="another shape"),
    pytest.param([np.zeros((4, 3), np.float32)[:2]], id="a view"),
    pytest.param([[[0.0] * 3] * 2], id="a nested list"),
    pytest.param([], id="too few"),
    pytest.param([np.zeros((2, 3), np.float32)] * 2, id="too many"),
])
def test_anything_else_takes_the_general_path(inputs: list[Any]) -> None:
    assert InlineCodec(_model()).encode(inputs) is None


def test_a_fast_form_reply_decodes_to_owned_writable_arrays() -> None:
    codec = InlineCodec(_model())
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    (out,) = codec.decode({"outputs": [["float32", [2, 3], data.tobytes()]]})
    np.testing.assert_array_equal(out, data)
    assert out.flags.writeable  # over a copy of the reply's bytes
    out[0, 0] = 42


def test_a_reply_of_another_shape_is_decoded_by_the_checked_path() -> None:
    codec = InlineCodec(_model(dynamic_output=True))
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    (out,) = codec.decode({"outputs": [["float32", [4, 3], data.tobytes()]]})
    np.testing.assert_array_equal(out, data)


@pytest.mark.parametrize("outputs", [
    pytest.param([], id="no output"),
    pytest.param([["float32", [2, 3], bytes(24)]] * 2, id="two outputs"),
    pytest.param("outputs", id="not a list"),
    pytest.param([["int32", [2, 3], bytes(24)]], id="another dtype"),
    pytest.param([["float32", [2, 3], bytes(20)]], id="too few bytes"),
    pytest.param([["float32", [2, 3], bytes(28)]], id="too many bytes"),
    pytest.param([["float32", [2, 3], "x" * 24]], id="data not bytes"),
    pytest.param([["float32", [2, -3], bytes(24)]], id="a negative dim"),
    pytest.param([["float32", [2, 3]]], id="a tensor without data"),
    pytest.param([None], id="not a tensor"),
])
def test_malformed_replies_are_protocol_errors(outputs: Any) -> None:
    with pytest.raises(ProtocolError):
        InlineCodec(_model()).decode({"outputs": outputs})
