"""Quantised models on the cpu driver: placed there whole, bit-exact with the reference
kernels, and refused with a reason where the cpu kernels do not apply."""

from __future__ import annotations

from typing import Any

import anyio
import numpy as np
import pytest

import nnrt
from nnrt.drivers.cpu.support import unsupported_reason
from nnrt.model.model import Model
from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op

QUANT8 = [(T.TENSOR_QUANT8_ASYMM, 128, np.uint8), (T.TENSOR_QUANT8_ASYMM_SIGNED, 0, np.int8)]


def _cnn(qt: T, zp: int, dtype: Any, *, per_channel: bool) -> Model:
    """CONV_2D (padding, relu) -> AVERAGE_POOL -> RESHAPE -> FULLY_CONNECTED -> SOFTMAX, plus
    LOGISTIC, ADD and MUL branches, with scales that keep the values off the clamps."""
    rng = np.random.default_rng(7)
    m = Model()

    def i32(v: int) -> int:
        k = m.add_operand(T.INT32, ())
        m.set_operand_value(k, v)
        return k

    x = m.add_operand(qt, (2, 8, 8, 3), 0.02, zp)
    if per_channel:
        w = m.add_operand(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, (4, 3, 3, 3))
        m.set_operand_symm_per_channel_quant_params(w, 0, [0.004, 0.006, 0.005, 0.003])
        m.set_operand_value(w, rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8))
    else:
        w = m.add_operand(qt, (4, 3, 3, 3), 0.005, zp)
        low = 0 if qt == T.TENSOR_QUANT8_ASYMM else -128
        m.set_operand_value(w, rng.integers(low, low + 256, (4, 3, 3, 3)).astype(dtype))
    b = m.add_operand(T.TENSOR_INT32, (4,), 0.0 if per_channel else 0.02 * 0.005, 0)
    m.set_operand_value(b, rng.integers(-300, 300, 4).astype(np.int32))
    y = m.add_operand(qt, (2, 8, 8, 4), 0.05, zp - 10)
    m.add_operation(Op.CONV_2D, [x, w, b, i32(1), i32(1), i32(1), i32(1), i32(1), i32(1),
                                 i32(1)], [y])
    p = m.add_operand(qt, (2, 4, 4, 4), 0.05, zp - 10)
    m.add_operation(Op.AVERAGE_POOL_2D, [y, i32(0), i32(1), i32(0), i32(1), i32(2), i32(2),
                                         i32(2), i32(2), i32(0)], [p])
    r = m.add_operand(qt, (2, 64), 0.05, zp - 10)
    shape = m.add_operand(T.TENSOR_INT32, (2,))
    m.set_operand_value(shape, np.array([2, 64], np.int32))
    m.add_operation(Op.RESHAPE, [p, shape], [r])
    fw = m.add_operand(qt, (10, 64), 0.01, zp)
    lo = 0 if qt == T.TENSOR_QUANT8_ASYMM else -128
    m.set_operand_value(fw, rng.integers(lo, lo + 256, (10, 64)).astype(dtype))
    fb = m.add_operand(T.TENSOR_INT32, (10,), 0.05 * 0.01, 0)
    m.set_operand_value(fb, rng.integers(-100, 100, 10).astype(np.int32))
    o = m.add_operand(qt, (2, 10), 0.25, zp)
    m.add_operation(Op.FULLY_CONNECTED, [r, fw, fb, i32(0)], [o])
    s = m.add_operand(qt, (2, 10), 1 / 256, lo)
    beta = m.add_operand(T.FLOAT32, ())
    m.set_operand_value(beta, 1.0)
    m.add_operation(Op.SOFTMAX, [o, beta], [s])
    g = m.add_operand(qt, (2, 10), 1 / 256, lo)
    m.add_operation(Op.LOGISTIC, [o], [g])
    a = m.add_operand(qt, (2, 10), 0.3, zp + 3)
    m.add_operation(Op.ADD, [o, g, i32(1)], [a])
    mm = m.add_operand(qt, (2, 10), 0.5, zp)
    m.add_operation(Op.MUL, [o, a, i32(0)], [mm])
    m.identify_inputs_and_outputs([x], [s, a, mm])
    return m.finish()


@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
@pytest.mark.parametrize(("qt", "zp", "dtype"), QUANT8, ids=["uint8", "int8"])
def test_quantised_cnn_runs_whole_on_cpu_equal_to_the_reference(
        qt: T, zp: int, dtype: Any, per_channel: bool) -> None:
    model = _cnn(qt, zp, dtype, per_channel=per_channel)
    rng = np.random.default_rng(3)
    lo = 0 if qt == T.TENSOR_QUANT8_ASYMM else -128
    feeds = [rng.integers(lo, lo + 256, (2, 8, 8, 3)).astype(dtype) for _ in range(3)]

    async def main() -> list[list[Any]]:
        async with nnrt.Runtime(drivers=["cpu"]) as rt:
            compiled = await rt.compile(model)
            steps = compiled.placement().steps
            assert [s.driver for s in steps] == ["cpu"], compiled.placement()
            return [await compiled.execute([f]) for f in feeds]

    for feed, got in zip(feeds, anyio.run(main), strict=True):
        want = nnrt.reference.run(model, [feed])
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)
        assert len({int(v) for v in np.asarray(got[0]).ravel()}) > 3  # not all clamped


def test_refusals_name_the_reason() -> None:
    m = Model()
    x = m.add_operand(T.TENSOR_QUANT8_ASYMM, (1, 4), 0.5, 10)
    w = m.add_operand(T.TENSOR_QUANT8_ASYMM, (3, 4), 0.5, 10)  # weights as an input
    b = m.add_operand(T.TENSOR_INT32, (3,), 0.25, 0)
    m.set_operand_value(b, np.zeros(3, np.int32))
    act = m.add_operand(T.INT32, ())
    m.set_operand_value(act, 0)
    y = m.add_operand(T.TENSOR_QUANT8_ASYMM, (1, 3), 1.0, 0)
    m.add_operation(Op.FULLY_CONNECTED, [x, w, b, act], [y])
    c = m.add_operand(T.TENSOR_QUANT8_ASYMM, (1, 7), 1.0, 0)  # x's quantisation differs
    axis = m.add_operand(T.INT32, ())
    m.set_operand_value(axis, 1)
    m.add_operation(Op.CONCATENATION, [x, y, axis], [c])
    m.identify_inputs_and_outputs([x, w], [c])
    m.finish()
    assert "weights" in (unsupported_reason(m, 0) or "")
    assert "requantisation" in (unsupported_reason(m, 1) or "")
