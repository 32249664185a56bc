"""The low-level Model API: names, lifetimes, freezing, values, inputs by name."""

from __future__ import annotations

import numpy as np
import pytest

import nnrt
from nnrt import OperandLifetime as L
from nnrt import OperandType as T
from nnrt import OperationType as Op
from nnrt.ops._framework import registry


def _add_model(relaxed: bool = False) -> tuple[nnrt.Model, int, int]:
    m = nnrt.Model()
    a = m.add_operand(T.TENSOR_FLOAT32, (2, 2), name="a")
    b = m.add_operand(T.TENSOR_FLOAT32, (2, 2))
    act = m.add_operand(T.INT32)
    out = m.add_operand(T.TENSOR_FLOAT32, (2, 2), name="sum")
    m.set_operand_value(b, np.full((2, 2), 0.5, np.float32))
    m.set_operand_value(act, 0)
    m.add_operation(Op.ADD, [a, b, act], [out])
    m.identify_inputs_and_outputs([a], [out])
    m.relax_computation_float32_to_float16(relaxed)
    return m, a, out


def test_low_level_model_runs_like_the_builder() -> None:
    m, _, _ = _add_model()
    m.finish()
    x = np.array([[1, 2], [3, 4]], np.float32)
    (low,) = nnrt.reference.run(m, [x])
    b = nnrt.ModelBuilder()
    xin = b.input("a", (2, 2))
    b.output(b.add(xin, np.full((2, 2), 0.5, np.float32)))
    (high,) = nnrt.reference.run(b.build(), [x])
    np.testing.assert_array_equal(low, x + 0.5)
    np.testing.assert_array_equal(low, high)


def test_add_operand_returns_consecutive_indices() -> None:
    m = nnrt.Model()
    assert [m.add_operand(T.TENSOR_FLOAT32, (1,)) for _ in range(3)] == [0, 1, 2]


def test_small_values_are_copied_large_are_referenced() -> None:
    m = nnrt.Model()
    small = m.add_operand(T.TENSOR_FLOAT32, (32,))  # 128 bytes
    large = m.add_operand(T.TENSOR_FLOAT32, (33,))  # 132 bytes
    m.set_operand_value(small, np.zeros(32, np.float32))
    m.set_operand_value(large, np.zeros(33, np.float32))
    assert m.operand(small).lifetime == L.CONSTANT_COPY
    assert m.operand(large).lifetime == L.CONSTANT_REFERENCE


def test_value_is_copied_and_read_only() -> None:
    m = nnrt.Model()
    i = m.add_operand(T.TENSOR_FLOAT32, (3,))
    src = np.array([1, 2, 3], np.float32)
    m.set_operand_value(i, src)
    src[0] = 100
    stored = m.constant_value(i)
    assert stored is not None and stored[0] == 1
    with pytest.raises(ValueError):
        stored[0] = 5


def test_none_marks_no_value() -> None:
    m = nnrt.Model()
    i = m.add_operand(T.TENSOR_FLOAT32, (3,))
    m.set_operand_value(i, None)
    assert m.operand(i).lifetime == L.NO_VALUE


class _Pool:
    """A minimal in-memory pool offering the ConstantMemory protocol."""

    def __init__(self, data: bytes) -> None:
        self._data = bytearray(data)

    @property
    def size(self) -> int:
        return len(self._data)

    def view(self, offset: int, length: int) -> memoryview:
        return memoryview(self._data)[offset:offset + length]


def test_value_from_memory_is_read_by_reference() -> None:
    weights = np.arange(8, dtype=np.float32)
    pool = _Pool(b"\0" * 16 + weights.tobytes())
    m = nnrt.Model()
    x = m.add_operand(T.TENSOR_FLOAT32, (8,))
    w = m.add_operand(T.TENSOR_FLOAT32, (8,))
    act = m.add_operand(T.INT32)
    out = m.add_operand(T.TENSOR_FLOAT32, (8,))
    m.set_operand_value_from_memory(w, pool, 16, 32)
    m.set_operand_value(act, 0)
    m.add_operation(Op.ADD, [x, w, act], [out])
    m.identify_inputs_and_outputs([x], [out])
    m.finish()
    assert m.operand(w).lifetime == L.CONSTANT_REFERENCE
    (y,) = nnrt.reference.run(m, [np.ones(8, np.float32)])
    np.testing.assert_array_equal(y, weights + 1)


@pytest.mark.parametrize(("offset", "length", "match"), [
    (40, 32, "outside the memory"),
    (16, 28, "does not match"),
    (18, 32, "not aligned"),
    (-4, 32, "outside the memory"),
])
def test_value_from_memory_bounds(offset: int, length: int, match: str) -> None:
    pool = _Pool(b"\0" * 64)
    m = nnrt.Model()
    w = m.add_operand(T.TENSOR_FLOAT32, (8,))
    with pytest.raises(nnrt.BadData, match=match):
        m.set_operand_value_from_memory(w, pool, offset, length)


def test_per_channel_quant_params() -> None:
    m = nnrt.Model()
    i = m.add_operand(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, (3, 2))
    m.set_operand_symm_per_channel_quant_params(i, 0, [0.5, 0.25, 1.0])
    quant = m.operand(i).channel_quant
    assert quant is not None and quant.scales == (0.5, 0.25, 1.0)
    # As in NNAPI, only TENSOR_QUANT8_SYMM_PER_CHANNEL takes them; the message says why a
    # per-channel convolution's bias (whose scales NNAPI's specs list as hidden) does not.
    bias = m.add_operand(T.TENSOR_INT32, (3,))
    with pytest.raises(nnrt.BadData, match=r"operand 1 .*needs TENSOR_QUANT8_SYMM_PER_CHANNEL, "
                                           r"got TENSOR_INT32 \(the INT32 bias of a per-channel "
                                           r"convolution takes scale 0"):
        m.set_operand_symm_per_channel_quant_params(bias, 0, [0.25, 0.125, 0.5])


def test_subgraph_operand_takes_a_finished_model() -> None:
    inner, _, _ = _add_model()
    m = nnrt.Model()
    s = m.add_operand(T.SUBGRAPH)
    with pytest.raises(nnrt.BadData, match="finished"):
        m.set_operand_value_from_model(s, inner)
    inner.finish()
    m.set_operand_value_from_model(s, inner)
    assert m.operand(s).lifetime == L.SUBGRAPH
    with pytest.raises(nnrt.BadData, match="another, finished"):
        m.set_operand_value_from_model(s, m)


@pytest.mark.parametrize("mutate", [
    lambda m: m.add_operand(T.TENSOR_FLOAT32, (1,)),
    lambda m: m.set_operand_value(0, np.zeros((2, 2), np.float32)),
    lambda m: m.add_operation(Op.ADD, [0, 1, 2], [3]),
    lambda m: m.identify_inputs_and_outputs([0], [3]),
    lambda m: m.relax_computation_float32_to_float16(True),
    lambda m: m.set_operand_symm_per_channel_quant_params(0, 0, [1.0]),
    lambda m: m.finish(),
])
def test_finished_model_is_immutable(mutate) -> None:  # type: ignore[no-untyped-def]
    m, _, _ = _add_model()
    m.finish()
    with pytest.raises(nnrt.BadState, match="finished"):
        mutate(m)


def test_run_requires_finish() -> None:
    m, _, _ = _add_model()
    with pytest.raises(nnrt.BadState, match="not finished"):
        nnrt.reference.run(m, [np.zeros((2, 2), np.float32)])


def test_inputs_by_name_index_and_position() -> None:
    m, _, _ = _add_model()
    m.finish()
    x = np.ones((2, 2), np.float32)
    for inputs in ([x], {0: x}, {"a": x}):
        (y,) = nnrt.reference.run(m, inputs)
        np.testing.assert_array_equal(y, x + 0.5)
    with pytest.raises(nnrt.BadData, match=r"no input named 'b'.*'a'"):
        nnrt.reference.run(m, {"b": x})


@pytest.mark.parametrize(("inputs", "match"), [
    ([], r"expected 1 inputs \(a\), got 0"),
    ([np.ones((3, 2), np.float32)], "does not match the declared dims"),
    ([np.ones((2, 2), np.complex64)], "expected numeric data"),
    ([np.array([["a", "b"], ["c", "d"]])], "numeric"),
    ([None], "no value"),
    ({5: np.ones((2, 2), np.float32)}, "out of range"),
])
def test_bad_inputs_raise_bad_data(inputs, match: str) -> None:  # type: ignore[no-untyped-def]
    m, _, _ = _add_model()
    m.finish()
    with pytest.raises(nnrt.BadData, match=match):
        nnrt.reference.run(m, inputs)


def test_lossy_input_conversions_are_refused() -> None:
    m = nnrt.Model()
    x = m.add_operand(T.TENSOR_INT32, (2,))
    act = m.add_operand(T.INT32)
    out = m.add_operand(T.TENSOR_INT32, (2,))
    m.set_operand_value(act, 0)
    m.add_operation(Op.ADD, [x, x, act], [out])
    m.identify_inputs_and_outputs([x], [out])
    m.finish()
    with pytest.raises(nnrt.BadData, match="cannot convert float64"):
        nnrt.reference.run(m, [np.array([1.5, 2.0])])
    with pytest.raises(nnrt.BadData, match="out of range"):
        nnrt.reference.run(m, [np.array([2**40, 1], np.int64)])
    (y,) = nnrt.reference.run(m, [np.array([3, 4], np.int64)])
    np.testing.assert_array_equal(y, [6, 8])


def test_float64_input_is_accepted_for_float32() -> None:
    m, _, _ = _add_model()
    m.finish()
    (y,) = nnrt.reference.run(m, [np.ones((2, 2))])
    assert y.dtype == np.float32


def test_unsupported_variant_is_reported_not_computed() -> None:
    m = nnrt.Model()
    a = m.add_operand(T.TENSOR_QUANT8_ASYMM, (2,), 0.5, 10)
    out = m.add_operand(T.TENSOR_QUANT8_ASYMM, (2,), 1.0, 0)
    m.add_operation(Op.RSQRT, [a], [out])  # quantised RSQRT: NNAPI feature level 7, no kernel
    m.identify_inputs_and_outputs([a], [out])
    m.finish()  # a valid NNAPI model
    x = np.array([1, 2], np.uint8)
    with pytest.raises(nnrt.Unsupported, match=r"operation 0 \(RSQRT\).*TENSOR_QUANT8_ASYMM"):
        nnrt.reference.run(m, [x])


def test_op_without_kernel_is_reported_unsupported(monkeypatch: pytest.MonkeyPatch) -> None:
    # every NNAPI operation may get a kernel: hide one to stand for an operation without any
    monkeypatch.delitem(registry._REGISTRY, Op.HASHTABLE_LOOKUP)
    m = nnrt.Model()
    x = m.add_operand(T.TENSOR_FLOAT32, (2, 3))
    out = m.add_operand(T.TENSOR_FLOAT32, (2, 3))
    m.add_operation(Op.HASHTABLE_LOOKUP, [x], [out])
    m.identify_inputs_and_outputs([x], [out])
    m.finish()
    with pytest.raises(nnrt.Unsupported, match=r"operation 0 \(HASHTABLE_LOOKUP\)"):
        nnrt.reference.run(m, [np.zeros((2, 3), np.float32)])


def test_dynamic_output_shape_resolved_at_execution() -> None:
    m = nnrt.Model()
    a = m.add_operand(T.TENSOR_FLOAT32, (0, 3))
    b = m.add_operand(T.TENSOR_FLOAT32, (0, 3))
    act = m.add_operand(T.INT32)
    out = m.add_operand(T.TENSOR_FLOAT32, (0, 0))
    m.set_operand_value(act, 0)
    m.add_operation(Op.ADD, [a, b, act], [out])
    m.identify_inputs_and_outputs([a, b], [out])
    m.finish()
    for n in (1, 4):
        (y,) = nnrt.reference.run(m, [np.ones((n, 3), np.float32), np.ones((1, 3), np.float32)])
        assert y.shape == (n, 3)
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(ADD\).*cannot be broadcast"):
        nnrt.reference.run(m, [np.ones((2, 3), np.float32), np.ones((3, 3), np.float32)])


def test_operations_added_out_of_order_run_in_dependency_order() -> None:
    m = nnrt.Model()
    x = m.add_operand(T.TENSOR_FLOAT32, (2,))
    mid = m.add_operand(T.TENSOR_FLOAT32, (2,))
    out = m.add_operand(T.TENSOR_FLOAT32, (2,))
    act = m.add_operand(T.INT32)
    m.set_operand_value(act, 0)
    m.add_operation(Op.MUL, [mid, mid, act], [out])  # consumer first
    m.add_operation(Op.ADD, [x, x, act], [mid])
    m.identify_inputs_and_outputs([x], [out])
    m.finish()
    assert m.run_order == (1, 0)
    (y,) = nnrt.reference.run(m, [np.array([1, 2], np.float32)])
    np.testing.assert_array_equal(y, [4, 16])


def test_operand_records_are_frozen() -> None:
    import dataclasses

    m, _, _ = _add_model()
    m.finish()
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.operands[0].dims = (5, 5)  # type: ignore[misc]
    assert m.operands[0].dims == (2, 2)


def test_inputs_and_outputs_are_described_by_name_shape_and_dtype() -> None:
    m = nnrt.Model()
    x = m.add_operand(nnrt.OperandType.TENSOR_FLOAT32, (0, 4), name="x")
    k = m.add_operand(nnrt.OperandType.INT32, name="k")
    y = m.add_operand(nnrt.OperandType.TENSOR_FLOAT32, (0, 4), name="y")
    m.add_operation(nnrt.OperationType.RELU, [x], [y])
    m.identify_inputs_and_outputs([x, k], [y])
    m.finish()
    info = m.input_info
    assert [(i.name, i.shape, i.dtype, i.position, i.operand) for i in info] == [
        ("x", (None, 4), np.dtype(np.float32), 0, x), ("k", (), np.dtype(np.int32), 1, k)]
    assert [str(i) for i in info] == ["x: float32[?, 4]", "k: int32"]
    (out,) = m.output_info
    assert (out.name, out.shape, out.type) == ("y", (None, 4), nnrt.OperandType.TENSOR_FLOAT32)
