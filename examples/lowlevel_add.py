"""The NNAPI-style low-level API: ADD with a fused RELU, run on the reference interpreter."""

from __future__ import annotations

import numpy as np

import nnrt
from nnrt import OperandType as T


def main() -> None:
    m = nnrt.Model()
    a = m.add_operand(T.TENSOR_FLOAT32, (2, 2), name="a")
    c = m.add_operand(T.TENSOR_FLOAT32, (2, 2))
    act = m.add_operand(T.INT32)
    out = m.add_operand(T.TENSOR_FLOAT32, (2, 2), name="y")
    m.set_operand_value(c, np.ones((2, 2), np.float32))
    m.set_operand_value(act, nnrt.FusedActivation.RELU)
    m.add_operation(nnrt.OperationType.ADD, [a, c, act], [out])
    m.identify_inputs_and_outputs([a], [out])
    m.finish()
    (y,) = nnrt.reference.run(m, {"a": np.array([[1, -5], [2, 3]], np.float32)})
    print(y)


if __name__ == "__main__":
    main()
