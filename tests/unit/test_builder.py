"""ModelBuilder produces the same Model the low-level API builds, with inferred shapes."""

from __future__ import annotations

import numpy as np
import pytest

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op


def test_builder_matches_low_level_model() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (2, 3))
    y = b.mul(b.add(x, np.float32(1.0) * np.ones(3, np.float32), activation="relu6"), x)
    b.output(y)
    built = b.build()

    m = nnrt.Model()
    xi = m.add_operand(T.TENSOR_FLOAT32, (2, 3), name="x")
    ones = m.add_operand(T.TENSOR_FLOAT32, (3,))
    m.set_operand_value(ones, np.ones(3, np.float32))
    act6 = m.add_operand(T.INT32)
    m.set_operand_value(act6, 3)
    mid = m.add_operand(T.TENSOR_FLOAT32, (2, 3))
    m.add_operation(Op.ADD, [xi, ones, act6], [mid])
    act0 = m.add_operand(T.INT32)
    m.set_operand_value(act0, 0)
    out = m.add_operand(T.TENSOR_FLOAT32, (2, 3))
    m.add_operation(Op.MUL, [mid, xi, act0], [out])
    m.identify_inputs_and_outputs([xi], [out])
    m.finish()

    assert [(o.type, o.dims) for o in built.operands] == [(o.type, o.dims) for o in m.operands]
    assert [op.type for op in built.operations] == [op.type for op in m.operations]
    data = np.array([[-2, 0.5, 3], [7, -1, 2]], np.float32)
    np.testing.assert_array_equal(nnrt.reference.run(built, [data])[0],
                                  nnrt.reference.run(m, [data])[0])


def test_builder_infers_broadcast_shapes() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (4, 1))
    y = b.add(x, np.zeros((1, 5), np.float32))
    assert y.shape == (4, 5)


def test_builder_unknown_dims_stay_unknown() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (0, 3))
    y = b.add(x, x)
    assert y.shape == ()  # not inferable statically; resolved at execution
    b.output(y)
    (out,) = nnrt.reference.run(b.build(), [np.ones((5, 3), np.float32)])
    assert out.shape == (5, 3)


def test_builder_reports_errors_at_the_call() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (2, 3))
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(ADD\).*cannot be broadcast"):
        b.add(x, np.zeros((4, 3), np.float32))
    with pytest.raises(nnrt.BadData, match="unknown activation 'gelu'"):
        b.add(x, x, activation="gelu")
    with pytest.raises(nnrt.BadData, match="unsupported dtype"):
        b.input("y", (1,), "complex64")


def test_builder_cnn_runs() -> None:
    rng = np.random.default_rng(0)
    b = nnrt.ModelBuilder()
    x = b.input("image", (1, 8, 8, 2))
    w = rng.standard_normal((4, 3, 3, 2)).astype(np.float32)
    y = b.conv2d(x, w, np.zeros(4, np.float32), stride=2, padding="same", activation="relu")
    assert y.shape == (1, 4, 4, 4)
    z = b.max_pool2d(y, 2)
    assert z.shape == (1, 2, 2, 4)
    flat = b.reshape(z, (1, -1))
    assert flat.shape == (1, 16)
    b.output(b.softmax(b.fully_connected(flat, np.eye(3, 16, dtype=np.float32),
                                         np.zeros(3, np.float32))))
    (p,) = nnrt.reference.run(b.build(), [rng.random((1, 8, 8, 2), dtype=np.float32)])
    assert p.shape == (1, 3)
    np.testing.assert_allclose(p.sum(), 1.0, rtol=1e-6)
