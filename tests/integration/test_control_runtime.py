"""A model with an IF runs through the whole runtime: the cpu driver takes the operations around
it, the IF (which only the reference driver runs) falls back, its models travel to the worker
inside the partition."""

from __future__ import annotations

import numpy as np
import pytest

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op
from nnrt.model.builder import ModelBuilder

pytestmark = pytest.mark.anyio

X = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]], np.float32)
Y = np.array([[2.0, 0.5, -1.0], [3.0, 1.0, 2.0]], np.float32)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _branch(op: Op) -> nnrt.Model:
    b = ModelBuilder()
    x, y = b.input("x", (2, 3)), b.input("y", (2, 3))
    b.output(b.operation(op, x, y, 0)[0])
    return b.build()


def if_model() -> nnrt.Model:
    """``relu(IF(c, a * y, a - y) + x)`` with ``a = x + y``."""
    m = nnrt.Model()
    x, y = (m.add_operand(T.TENSOR_FLOAT32, (2, 3), name=n) for n in ("x", "y"))
    c = m.add_operand(T.TENSOR_BOOL8, (1,), name="c")
    then, other = m.add_operand(T.SUBGRAPH), m.add_operand(T.SUBGRAPH)
    m.set_operand_value_from_model(then, _branch(Op.MUL))
    m.set_operand_value_from_model(other, _branch(Op.SUB))
    act = m.add_operand(T.INT32)
    m.set_operand_value(act, 0)
    relu = m.add_operand(T.INT32)
    m.set_operand_value(relu, 1)
    a, r, out = (m.add_operand(T.TENSOR_FLOAT32, dims) for dims in ((2, 3), (0, 0), (2, 3)))
    m.add_operation(Op.ADD, [x, y, act], [a])
    m.add_operation(Op.IF, [c, then, other, a, y], [r])
    m.add_operation(Op.ADD, [r, x, relu], [out])
    m.identify_inputs_and_outputs([x, y, c], [out])
    return m.finish()


async def test_if_model_runs_across_cpu_and_reference() -> None:
    model = if_model()
    async with nnrt.Runtime(drivers=["cpu", "reference"], workers=1) as rt:
        compiled = await rt.compile(model, step_cost=0)
        drivers = [op.driver for op in compiled.placement().operations]
        assert drivers == ["cpu", "reference", "cpu"]
        for condition in (True, False):
            feed = {"x": X, "y": Y, "c": np.array([condition])}
            (out,) = await compiled.execute(feed)
            branch = (X + Y) * Y if condition else (X + Y) - Y
            np.testing.assert_allclose(out, np.maximum(branch + X, 0), rtol=1e-6)
            np.testing.assert_array_equal(out, nnrt.reference.run(model, feed)[0])
        await compiled.release()
