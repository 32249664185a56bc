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
    pytest.param([[[0.0] * 3] * 2], id="a nested list"),
    pytest.param([], id="too few"),
    pytest.param([np.zeros((2, 3), np.float32)] * 2, id="too many"),
])
def test_anything_else_takes_the_general_path(inputs: list[Any]) -> None:
    assert InlineCodec(_model()).encode(inputs) is None


def test_a_view_of_ordinary_memory_is_sent_inline_and_one_of_shared_memory_by_reference(
) -> None:
    codec = InlineCodec(_model())
    rows = np.arange(12, dtype=np.float32).reshape(4, 3)
    assert codec.encode([rows[1:3]]) == [["float32", [2, 3], rows[1:3].tobytes()]]
    assert codec.encode([rows[::2]]) == [["float32", [2, 3], rows[::2].tobytes()]]
    memory = nnrt.Memory.create(4096)
    try:
        view = memory.ndarray(np.float32, (2, 3))
        assert codec.encode([view]) is None  # the general path sends it by reference
    finally:
        memory.close()


def _two_inputs() -> nnrt.Model:
    b = nnrt.ModelBuilder()
    x = b.input("x", (2, 3))
    n = b.input("n", (2,), "int64")  # TENSOR_INT32 inside, int64 at the boundary
    b.output(b.add(x, np.ones((1, 3), np.float32)), b.add(n, np.ones(2, np.int32)))
    return b.build()


def test_a_dict_by_input_name_takes_the_fast_form_in_model_order() -> None:
    codec = InlineCodec(_two_inputs())
    x, n = np.ones((2, 3), np.float32), np.array([7, -9], np.int32)
    expected = [["float32", [2, 3], x.tobytes()], ["int32", [2], n.tobytes()]]
    assert codec.encode({"n": n, "x": x}) == expected
    assert codec.encode([x, n]) == expected


def test_int64_for_an_int32_input_is_narrowed_when_every_value_fits() -> None:
    codec = InlineCodec(_two_inputs())
    x = np.ones((2, 3), np.float32)
    tensors = codec.encode({"x": x, "n": np.array([7, -(2**31)], np.int64)})
    assert tensors is not None
    assert tensors[1] == ["int32", [2], np.array([7, -(2**31)], np.int32).tobytes()]
    # out of range: the general path, which names the element (never a silent wrap)
    assert codec.encode({"x": x, "n": np.array([7, 2**31], np.int64)}) is None


@pytest.mark.parametrize("inputs", [
    pytest.param({0: np.ones((2, 3), np.float32), 1: np.ones(2, np.int32)}, id="by position"),
    pytest.param({"x": np.ones((2, 3), np.float32)}, id="a name missing"),
    pytest.param({"x": np.ones((2, 3), np.float32), "m": np.ones(2, np.int32)},
                 id="an unknown name"),
    pytest.param({"x": np.ones((2, 3), np.float32), "n": np.ones(2, np.int32),
                  "m": np.ones(2, np.int32)}, id="one too many"),
    pytest.param({"x": np.ones((2, 3), np.float64), "n": np.ones(2, np.int32)},
                 id="float64 for float32"),
])
def test_other_dicts_take_the_general_path(inputs: dict[Any, Any]) -> None:
    assert InlineCodec(_two_inputs()).encode(inputs) is None


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
