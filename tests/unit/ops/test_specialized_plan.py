"""Specialised plans: a model whose every shape, type and constant is fixed runs its kernels as
plain calls, computing bit for bit what the general kernels compute; anything unexpected goes
back to the general path, which checks and reports as usual."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import nnrt
from nnrt.errors import BadData, DeadlineMissed, OpFailed
from nnrt.hal.discovery import load_driver
from nnrt.model.operand import dtype_of
from nnrt.reference.interpreter import ExecutionPlan

T = nnrt.OperandType
OPS = [nnrt.OperationType.ADD, nnrt.OperationType.SUB, nnrt.OperationType.MUL,
       nnrt.OperationType.DIV]
ACTIVATIONS = [nnrt.FusedActivation.NONE, nnrt.FusedActivation.RELU,
               nnrt.FusedActivation.RELU1, nnrt.FusedActivation.RELU6]


def _binary_model(op: nnrt.OperationType, operand_type: T, activation: int,
                  a_dims: tuple[int, ...] = (2, 3), b_dims: tuple[int, ...] = (1, 3),
                  out_dims: tuple[int, ...] = (2, 3), constant_b: bool = False) -> nnrt.Model:
    m = nnrt.Model()
    a = m.add_operand(operand_type, a_dims)
    b = m.add_operand(operand_type, b_dims)
    act = m.add_operand(T.INT32)
    out = m.add_operand(operand_type, out_dims)
    if constant_b:
        dtype = np.float16 if operand_type == T.TENSOR_FLOAT16 else np.float32
        m.set_operand_value(b, np.linspace(-2, 2, int(np.prod(b_dims))).astype(dtype)
                            .reshape(b_dims))
    m.set_operand_value(act, activation)
    m.add_operation(op, [a, b, act], [out])
    m.identify_inputs_and_outputs([a] if constant_b else [a, b], [out])
    m.finish()
    return m


def _values(dtype: Any, shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    flat = x.reshape(-1)  # the awkward values too: signed zeros, infinities, NaN, tiny, huge
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, 6e4], dtype)
    flat[:min(flat.size, specials.size)] = specials[:flat.size]
    return x


def _general(plan: ExecutionPlan, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The general path: giving output destinations (here none) bypasses the program."""
    return plan.execute(inputs, outputs=[None] * len(plan.model.outputs))


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
@pytest.mark.parametrize("activation", ACTIVATIONS, ids=lambda a: a.name)
@pytest.mark.parametrize("operand_type", [T.TENSOR_FLOAT32, T.TENSOR_FLOAT16],
                         ids=lambda t: t.name)
def test_binary_program_matches_the_general_kernel_bit_for_bit(
        op: nnrt.OperationType, activation: int, operand_type: T) -> None:
    plan = ExecutionPlan(_binary_model(op, operand_type, activation))
    assert plan.specialized
    dtype = np.float16 if operand_type == T.TENSOR_FLOAT16 else np.float32
    inputs = [_values(dtype, (2, 3), 1), _values(dtype, (1, 3), 2)]
    fast, general = plan.execute(inputs), _general(plan, inputs)
    assert fast[0].dtype == general[0].dtype == dtype
    assert fast[0].shape == general[0].shape == (2, 3)
    assert fast[0].tobytes() == general[0].tobytes()  # NaN payloads and signed zeros too


def test_a_chain_with_a_constant_operand_is_specialised() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (4, 5))
    y = b.add(x, np.full((1, 5), 0.5, np.float32))
    b.output(b.mul(y, np.float32(3.0) * np.ones((4, 5), np.float32)))
    plan = ExecutionPlan(b.build())
    assert plan.specialized
    data = _values(np.float32, (4, 5), 3)
    assert plan.execute([data])[0].tobytes() == _general(plan, [data])[0].tobytes()
    np.testing.assert_array_equal(plan.execute([np.ones((4, 5), np.float32)])[0],
                                  np.full((4, 5), 4.5, np.float32))


def _maximum_model() -> nnrt.Model:
    b = nnrt.ModelBuilder()
    x = b.input("x", (2, 3))
    (y,) = b.operation(nnrt.OperationType.MAXIMUM, x, b.constant(np.zeros((1, 3), np.float32)))
    b.output(y)
    return b.build()


@pytest.mark.parametrize("model", [
    pytest.param(lambda: _binary_model(nnrt.OperationType.ADD, T.TENSOR_INT32, 0),
                 id="int32 (the general integer kernel)"),
    pytest.param(lambda: _binary_model(nnrt.OperationType.ADD, T.TENSOR_FLOAT32, 0,
                                       a_dims=(0, 3), out_dims=(0, 3)),
                 id="an input of unknown dims"),
    pytest.param(lambda: _binary_model(nnrt.OperationType.ADD, T.TENSOR_FLOAT32, 0,
                                       out_dims=(0, 3)),
                 id="an output of unknown dims"),
    pytest.param(_maximum_model, id="an operation without a specialised kernel"),
])
def test_plans_that_are_not_specialised_still_run(model: Any) -> None:
    m = model()
    plan = ExecutionPlan(m)
    assert not plan.specialized
    dims = [tuple(d or 2 if k == 0 else d for k, d in enumerate(m.operands[i].dims))
            for i in m.inputs]  # an unknown leading dim: 2
    inputs = [np.ones(shape, dtype_of(m.operands[i].type)) for shape, i in zip(
        dims, m.inputs, strict=True)]
    out = plan.execute(inputs)[0]
    assert out.shape == (2, 3)
    np.testing.assert_array_equal(out, _general(plan, inputs)[0])


def test_a_large_output_keeps_the_threaded_general_kernel() -> None:
    m = _binary_model(nnrt.OperationType.ADD, T.TENSOR_FLOAT32, 0, a_dims=(1024, 4096),
                      b_dims=(1, 4096), out_dims=(1024, 4096))  # 16 MiB of output
    assert not ExecutionPlan(m).specialized


def test_a_kernel_that_fails_in_the_program_is_reported_by_the_general_path() -> None:
    plan = ExecutionPlan(_binary_model(nnrt.OperationType.ADD, T.TENSOR_FLOAT32, 0))
    inputs = [np.ones((2, 3), np.float32), np.ones((1, 3), np.float32)]
    expected = plan.execute(inputs)[0]
    call, *form = plan._program[0]  # type: ignore[index]

    def failing(values: list[Any]) -> Any:
        raise ValueError("kernel blew up")

    plan._program = ((failing, *form),)  # type: ignore[assignment]
    # the general kernel runs instead (it does not fail): the same answer
    np.testing.assert_array_equal(plan.execute(inputs)[0], expected)

    def wrong_shape(values: list[Any]) -> Any:
        return np.ones((3, 2), np.float32)

    plan._program = ((wrong_shape, *form),)  # type: ignore[assignment]
    np.testing.assert_array_equal(plan.execute(inputs)[0], expected)
    plan._program = ((call, *form),)  # type: ignore[assignment]
    np.testing.assert_array_equal(plan.execute(inputs)[0], expected)


def test_the_check_runs_between_specialised_operations_and_stops_them() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (2, 2))
    b.output(b.add(b.add(b.add(x, x), x), x))
    plan = ExecutionPlan(b.build())
    assert plan.specialized
    calls = []
    plan.execute([np.ones((2, 2), np.float32)], check=lambda: calls.append(1))
    assert len(calls) == 2  # between the three operations, not before the first

    def late() -> None:
        raise DeadlineMissed("late")

    with pytest.raises(DeadlineMissed):
        plan.execute([np.ones((2, 2), np.float32)], check=late)


def test_wrong_inputs_are_still_refused_by_the_driver() -> None:
    prepared = load_driver("reference").prepare(
        _binary_model(nnrt.OperationType.ADD, T.TENSOR_FLOAT32, 0))
    with pytest.raises(BadData, match="input 1"):
        prepared.execute([np.ones((2, 3), np.float32), np.ones((2, 3), np.float32)])
    with pytest.raises((BadData, OpFailed)):
        prepared.execute([np.ones((2, 3), np.float32)])
