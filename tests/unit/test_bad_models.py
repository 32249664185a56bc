"""Malformed models: each raises BadData naming the operation / operand and the rule.

Every case builds a model step by step; the error may come from the offending call or from
``finish()``. None may hang, crash or raise anything but ``BadData``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op

Case = Callable[[nnrt.Model], None]
CASES: dict[str, tuple[Case, str]] = {}


def case(match: str) -> Callable[[Case], Case]:
    def register(fn: Case) -> Case:
        CASES[fn.__name__] = (fn, match)
        return fn
    return register


def _add(m: nnrt.Model, a: int, b: int, act_value: object = 0, out_type: T = T.TENSOR_FLOAT32,
         out_dims: tuple[int, ...] = (2,), act_type: T = T.INT32) -> int:
    act = m.add_operand(act_type)
    m.set_operand_value(act, act_value)
    out = m.add_operand(out_type, out_dims)
    m.add_operation(Op.ADD, [a, b, act], [out])
    return out


def _f32(m: nnrt.Model, dims: tuple[int, ...] = (2,)) -> int:
    return m.add_operand(T.TENSOR_FLOAT32, dims)


def _single(m: nnrt.Model, op: Op, ins: list[int], out: int) -> None:
    m.add_operation(op, ins, [out])
    m.identify_inputs_and_outputs([i for i in ins if m.operand(i).lifetime == 0], [out])
    m.finish()


def _const(m: nnrt.Model, t: T, value: object, dims: tuple[int, ...] = ()) -> int:
    i = m.add_operand(t, dims)
    m.set_operand_value(i, value)
    return i


# -- operands -----------------------------------------------------------------------------------

@case(r"operand 0: unknown operand type 99")
def unknown_operand_type(m: nnrt.Model) -> None:
    m.add_operand(99, (2,))


@case(r"operand 0: dimension 1 is negative \(-3\)")
def negative_dim(m: nnrt.Model) -> None:
    m.add_operand(T.TENSOR_FLOAT32, (2, -3))


@case(r"operand 0: scalar INT32 must have no dims")
def scalar_with_dims(m: nnrt.Model) -> None:
    m.add_operand(T.INT32, (1,))


@case(r"operand 0: scale must be finite")
def nan_scale(m: nnrt.Model) -> None:
    m.add_operand(T.TENSOR_QUANT8_ASYMM, (2,), float("nan"), 0)


@case(r"operand 0: TENSOR_QUANT8_ASYMM needs a positive scale")
def zero_scale_quant(m: nnrt.Model) -> None:
    m.add_operand(T.TENSOR_QUANT8_ASYMM, (2,), 0.0, 0)


@case(r"operand 0: TENSOR_QUANT8_ASYMM zero point must be in \[0, 255\], got 300")
def zero_point_out_of_range(m: nnrt.Model) -> None:
    m.add_operand(T.TENSOR_QUANT8_ASYMM, (2,), 0.5, 300)


@case(r"operand 0: TENSOR_QUANT8_ASYMM_SIGNED zero point must be in \[-128, 127\]")
def signed_zero_point_out_of_range(m: nnrt.Model) -> None:
    m.add_operand(T.TENSOR_QUANT8_ASYMM_SIGNED, (2,), 0.5, 128)


@case(r"operand 0: TENSOR_FLOAT32 takes no quantisation")
def float_with_scale(m: nnrt.Model) -> None:
    m.add_operand(T.TENSOR_FLOAT32, (2,), 0.5, 0)


@case(r"operand 0: TENSOR_INT32 zero point must be 0")
def int32_zero_point(m: nnrt.Model) -> None:
    m.add_operand(T.TENSOR_INT32, (2,), 0.0, 3)


@case(r"operand 0: rank 17 exceeds the maximum 16")
def rank_too_large(m: nnrt.Model) -> None:
    m.add_operand(T.TENSOR_FLOAT32, (1,) * 17)


@case(r"operand 0 .*: 2 scales for channel dimension of size 3")
def per_channel_scale_count(m: nnrt.Model) -> None:
    i = m.add_operand(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, (3, 2))
    m.set_operand_symm_per_channel_quant_params(i, 0, [0.5, 0.5])


@case(r"operand 0 .*: channel_dim 2 is out of range for rank 2")
def per_channel_dim_out_of_range(m: nnrt.Model) -> None:
    i = m.add_operand(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, (3, 2))
    m.set_operand_symm_per_channel_quant_params(i, 2, [0.5, 0.5])


@case(r"operand 0 .*: per-channel scales must be finite and positive")
def per_channel_negative_scale(m: nnrt.Model) -> None:
    i = m.add_operand(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, (2, 2))
    m.set_operand_symm_per_channel_quant_params(i, 0, [0.5, -1.0])


@case(r"operand 0 .*: per-channel quantisation parameters were never set")
def per_channel_missing(m: nnrt.Model) -> None:
    x = m.add_operand(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, (2,))
    out = m.add_operand(T.TENSOR_FLOAT32, (2,))
    m.add_operation(Op.DEQUANTIZE, [x], [out])
    m.identify_inputs_and_outputs([x], [out])
    m.finish()


@case(r"operand 1 .*: a constant needs fully specified dims")
def constant_with_unknown_dims(m: nnrt.Model) -> None:
    _f32(m)
    i = m.add_operand(T.TENSOR_FLOAT32, (0, 2))
    m.set_operand_value(i, np.zeros((1, 2), np.float32))


@case(r"operand 0 .*: value has 3 elements .* operand needs 4")
def constant_wrong_size(m: nnrt.Model) -> None:
    i = m.add_operand(T.TENSOR_FLOAT32, (2, 2))
    m.set_operand_value(i, np.zeros(3, np.float32))


@case(r"operand 0 \(TENSOR_INT32\[2\]\): cannot convert float64 data to TENSOR_INT32")
def float_value_into_int_operand(m: nnrt.Model) -> None:
    i = m.add_operand(T.TENSOR_INT32, (2,))
    m.set_operand_value(i, [1.5, 2.5])


@case(r"operand 0 \(INT32\): values out of range for INT32")
def scalar_out_of_range(m: nnrt.Model) -> None:
    i = m.add_operand(T.INT32)
    m.set_operand_value(i, 2**40)


@case(r"operand 0 .*: SUBGRAPH operand has no model")
def subgraph_without_model(m: nnrt.Model) -> None:
    s = m.add_operand(T.SUBGRAPH)
    x = _f32(m)
    out = _f32(m)
    m.add_operation(Op.IF, [s, x], [out])
    m.identify_inputs_and_outputs([x], [out])
    m.finish()


@case(r"operand 0 .*: only SUBGRAPH operands take a model value")
def model_value_on_tensor(m: nnrt.Model) -> None:
    i = _f32(m)
    inner = nnrt.Model()
    m.set_operand_value_from_model(i, inner)


# -- operations and graph -------------------------------------------------------------------------

@case(r"operation 0: unknown operation type 999")
def unknown_operation_type(m: nnrt.Model) -> None:
    a = _f32(m)
    m.add_operation(999, [a], [a])


@case(r"operation 0 \(ADD\), input: operand index 42 is out of range \(the model has 2")
def operand_index_out_of_range(m: nnrt.Model) -> None:
    a, out = _f32(m), _f32(m)
    m.add_operation(Op.ADD, [a, 42], [out])


@case(r"operation 0 \(RELU\): an operation needs at least one output")
def operation_without_outputs(m: nnrt.Model) -> None:
    a = _f32(m)
    m.add_operation(Op.RELU, [a], [])


@case(r"the graph has a cycle: operations 0 \(ADD\), 1 \(ADD\)")
def two_op_cycle(m: nnrt.Model) -> None:
    x, p, q = _f32(m), _f32(m), _f32(m)
    act = _const(m, T.INT32, 0)
    out = _f32(m)
    m.add_operation(Op.ADD, [x, q, act], [p])
    m.add_operation(Op.ADD, [p, x, act], [q])
    m.add_operation(Op.RELU, [q], [out])
    m.identify_inputs_and_outputs([x], [out])
    m.finish()


@case(r"the graph has a cycle: operations 0 \(ADD\)")
def self_loop(m: nnrt.Model) -> None:
    x, p = _f32(m), _f32(m)
    act = _const(m, T.INT32, 0)
    m.add_operation(Op.ADD, [x, p, act], [p])
    m.identify_inputs_and_outputs([x], [p])
    m.finish()


@case(r"operation 0 \(ADD\), input 1: operand 1 is never written")
def dangling_operand(m: nnrt.Model) -> None:
    x, dangling = _f32(m), _f32(m)
    out = _add(m, x, dangling)
    m.identify_inputs_and_outputs([x], [out])
    m.finish()


@case(r"operation 1 \(RELU\), output 0: operand 3 is already written by operation 0")
def operand_written_twice(m: nnrt.Model) -> None:
    x = _f32(m)
    y = _f32(m)
    out = _add(m, x, y)
    m.add_operation(Op.RELU, [x], [out])
    m.identify_inputs_and_outputs([x, y], [out])
    m.finish()


@case(r"operation 0 \(RELU\), output 0: operand 1 is a constant copy and cannot be written")
def op_writes_constant(m: nnrt.Model) -> None:
    x = _f32(m)
    c = _const(m, T.TENSOR_FLOAT32, [1.0, 2.0], (2,))
    out = _f32(m)
    m.add_operation(Op.RELU, [x], [c])
    m.add_operation(Op.RELU, [c], [out])
    m.identify_inputs_and_outputs([x], [out])
    m.finish()


@case(r"operation 0 \(RELU\), output 0: operand 0 is a subgraph input and cannot be written")
def op_writes_model_input(m: nnrt.Model) -> None:
    x, out = _f32(m), _f32(m)
    m.add_operation(Op.RELU, [out], [x])
    m.identify_inputs_and_outputs([x], [out])
    m.finish()


@case(r"model output 0 \(operand 1\) is never written")
def output_never_written(m: nnrt.Model) -> None:
    x, out = _f32(m), _f32(m)
    m.identify_inputs_and_outputs([x], [out])
    m.finish()


@case(r"model inputs and outputs are not identified")
def not_identified(m: nnrt.Model) -> None:
    x, out = _f32(m), _f32(m)
    m.add_operation(Op.RELU, [x], [out])
    m.finish()


@case(r"model input: operand 0 is listed twice")
def duplicate_model_input(m: nnrt.Model) -> None:
    x, out = _f32(m), _f32(m)
    m.identify_inputs_and_outputs([x, x], [out])


@case(r"operand 0 cannot be both a model input and a model output")
def input_and_output(m: nnrt.Model) -> None:
    x = _f32(m)
    m.identify_inputs_and_outputs([x], [x])


@case(r"model input: operand 0 already has a value \(CONSTANT_COPY\)")
def constant_as_model_input(m: nnrt.Model) -> None:
    c = _const(m, T.TENSOR_FLOAT32, [1.0, 2.0], (2,))
    out = _f32(m)
    m.identify_inputs_and_outputs([c], [out])


@case(r"operand 0: a model input cannot have a constant value")
def value_on_model_input(m: nnrt.Model) -> None:
    x, out = _f32(m), _f32(m)
    m.identify_inputs_and_outputs([x], [out])
    m.set_operand_value(x, np.zeros(2, np.float32))


@case(r"model output: operand index 7 is out of range")
def output_index_out_of_range(m: nnrt.Model) -> None:
    x = _f32(m)
    m.identify_inputs_and_outputs([x], [7])


# -- operation-specific rules (ADD) ---------------------------------------------------------------

@case(r"operation 0 \(ADD\): expected 3 inputs, got 2")
def add_wrong_input_count(m: nnrt.Model) -> None:
    a, b, out = _f32(m), _f32(m), _f32(m)
    _single(m, Op.ADD, [a, b], out)


@case(r"operation 0 \(ADD\), input 1 \(input2\): expected TENSOR_FLOAT32 like input 0, got "
      r"TENSOR_INT32")
def add_type_mismatch(m: nnrt.Model) -> None:
    a, b = _f32(m), m.add_operand(T.TENSOR_INT32, (2,))
    out = _add(m, a, b)
    m.identify_inputs_and_outputs([a, b], [out])
    m.finish()


@case(r"operation 0 \(ADD\), input 2 \(activation\): invalid fused activation code 7")
def add_bad_activation(m: nnrt.Model) -> None:
    a, b = _f32(m), _f32(m)
    out = _add(m, a, b, act_value=7)
    m.identify_inputs_and_outputs([a, b], [out])
    m.finish()


@case(r"operation 0 \(ADD\), input 2 \(activation\): expected INT32, got FLOAT32")
def add_activation_wrong_scalar_type(m: nnrt.Model) -> None:
    a, b = _f32(m), _f32(m)
    out = _add(m, a, b, act_value=0.0, act_type=T.FLOAT32)
    m.identify_inputs_and_outputs([a, b], [out])
    m.finish()


@case(r"operation 0 \(ADD\), input 0 \(input1\): expected rank between 1 and 6, got 7")
def add_rank_too_high(m: nnrt.Model) -> None:
    a, b = _f32(m, (1, 1, 1, 1, 1, 1, 2)), _f32(m)
    out = _add(m, a, b, out_dims=(1, 1, 1, 1, 1, 1, 2))
    m.identify_inputs_and_outputs([a, b], [out])
    m.finish()


@case(r"operation 0 \(ADD\), output 0 \(output\): expected TENSOR_FLOAT32 like input 0, got "
      r"TENSOR_INT32")
def add_output_type_mismatch(m: nnrt.Model) -> None:
    a, b = _f32(m), _f32(m)
    out = _add(m, a, b, out_type=T.TENSOR_INT32)
    m.identify_inputs_and_outputs([a, b], [out])
    m.finish()


@case(r"operation 0 \(ADD\), input 2 \(activation\): TENSOR_INT32 requires fused activation NONE")
def add_int32_with_relu(m: nnrt.Model) -> None:
    a, b = m.add_operand(T.TENSOR_INT32, (2,)), m.add_operand(T.TENSOR_INT32, (2,))
    out = _add(m, a, b, act_value=1, out_type=T.TENSOR_INT32)
    m.identify_inputs_and_outputs([a, b], [out])
    m.finish()


@case(r"operation 0 \(ADD\), input 1 \(input2\): shapes \(2, 3\) and \(4, 3\) .* cannot be "
      r"broadcast")
def add_not_broadcastable(m: nnrt.Model) -> None:
    a, b = _f32(m, (2, 3)), _f32(m, (4, 3))
    out = _add(m, a, b, out_dims=(0, 3))
    m.identify_inputs_and_outputs([a, b], [out])
    m.finish()


@case(r"operation 0 \(ADD\), output 0 \(output\): declared dims \(3, 2\) contradict the "
      r"shape \(2, 3\)")
def add_output_dims_contradict(m: nnrt.Model) -> None:
    a, b = _f32(m, (2, 3)), _f32(m, (1, 3))
    out = _add(m, a, b, out_dims=(3, 2))
    m.identify_inputs_and_outputs([a, b], [out])
    m.finish()


@case(r"operation 1 \(MUL\), input 1 \(input2\): shapes \(2, 3\) and \(2, 2\)")
def inferred_shape_propagates(m: nnrt.Model) -> None:
    a, b = _f32(m, (2, 3)), _f32(m, (2, 2))
    mid = _add(m, a, a, out_dims=(0, 0))  # inferred (2, 3)
    act = _const(m, T.INT32, 0)
    out = _f32(m, (0, 0))
    m.add_operation(Op.MUL, [mid, b, act], [out])
    m.identify_inputs_and_outputs([a, b], [out])
    m.finish()


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_model_raises_bad_data(name: str) -> None:
    build, match = CASES[name]
    with pytest.raises(nnrt.BadData, match=match):
        build(nnrt.Model())


def test_at_least_forty_distinct_cases() -> None:
    assert len(CASES) >= 40
    assert len({m for _, m in CASES.values()}) == len(CASES)
