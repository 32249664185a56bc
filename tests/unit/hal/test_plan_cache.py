"""The execution plan's shape cache: reused only while shapes repeat, never for value-shaped ops."""

from __future__ import annotations

import numpy as np
import pytest

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op
from nnrt.reference.driver import ReferenceDriver


def test_cached_shapes_follow_changing_input_shapes() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (0, 3))
    y = b.input("y", (0, 3))
    b.output(b.add(x, y))
    prepared = ReferenceDriver().prepare(b.build())
    for n in (2, 2, 5, 1, 5):
        out = prepared.execute([np.ones((n, 3), np.float32), np.ones((1, 3), np.float32)])
        assert out.outputs[0].shape == (n, 3)
    with pytest.raises(nnrt.BadData, match="cannot be broadcast"):
        prepared.execute([np.ones((2, 3), np.float32), np.ones((3, 3), np.float32)])
    out = prepared.execute([np.ones((2, 3), np.float32), np.ones((2, 3), np.float32)])
    np.testing.assert_array_equal(out.outputs[0], 2.0)


def test_value_shaped_operations_are_not_cached() -> None:
    m = nnrt.Model()
    x = m.add_operand(T.TENSOR_FLOAT32, (6,))
    shape = m.add_operand(T.TENSOR_INT32, (2,))
    out = m.add_operand(T.TENSOR_FLOAT32, (0, 0))
    m.add_operation(Op.RESHAPE, [x, shape], [out])
    m.identify_inputs_and_outputs([x, shape], [out])
    prepared = ReferenceDriver().prepare(m.finish())
    data = np.arange(6, dtype=np.float32)
    for target in ((2, 3), (3, 2), (6, 1), (2, 3)):
        result = prepared.execute([data, np.array(target, np.int32)]).outputs[0]
        assert result.shape == target
    with pytest.raises(nnrt.BadData):
        prepared.execute([data, np.array([4, 4], np.int32)])
