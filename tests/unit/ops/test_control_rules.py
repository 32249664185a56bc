"""IF and WHILE (nnrt/ops/control.py): malformed models and referenced models that do not fit
are rejected with errors naming the operation and operand; shapes; running."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

import nnrt
import nnrt.ops.control
from nnrt import OperandType as T
from nnrt import OperationType as Op
from nnrt.model.builder import ModelBuilder
from nnrt.reference.interpreter import ExecutionPlan

F32, BOOL8 = T.TENSOR_FLOAT32, T.TENSOR_BOOL8
IF = r"operation 0 \(IF\)"
WHILE = r"operation 0 \(WHILE\)"
X = np.array([1.0, 2.0], np.float32)
Y = np.array([3.0, -4.0], np.float32)

Spec = tuple[Any, ...]  # (type, dims[, scale, zero point])


def _binary(op: Op, dims: Sequence[int] = (2,), dtype: Any = "float32",
            out_dims: Sequence[int] | None = None) -> nnrt.Model:
    """A model ``op(x, y)`` over two inputs of ``dims``."""
    m = nnrt.Model()
    t = T.TENSOR_FLOAT16 if dtype == "float16" else F32
    x, y = m.add_operand(t, dims), m.add_operand(t, dims)
    act = m.add_operand(T.INT32)
    m.set_operand_value(act, 0)
    out = m.add_operand(t, out_dims if out_dims is not None else dims)
    m.add_operation(op, [x, y, act], [out])
    m.identify_inputs_and_outputs([x, y], [out])
    return m.finish()


def _if(then: nnrt.Model | None = None, other: nnrt.Model | None = None, *,
        condition: Spec = (BOOL8, (1,)), values: Sequence[Spec] = ((F32, (2,)), (F32, (2,))),
        outputs: Sequence[Spec] = ((F32, (2,)),), constant: bool | None = None) -> nnrt.Model:
    """An unfinished IF model; the condition is a model input unless ``constant`` is given."""
    m = nnrt.Model()
    c = m.add_operand(*condition)
    models = []
    for model in (then or _binary(Op.ADD), other or _binary(Op.MUL)):
        index = m.add_operand(T.SUBGRAPH)
        m.set_operand_value_from_model(index, model)
        models.append(index)
    ins = [m.add_operand(*spec) for spec in values]
    outs = [m.add_operand(*spec) for spec in outputs]
    m.add_operation(Op.IF, [c, *models, *ins], outs)
    if constant is not None:
        m.set_operand_value(c, [constant])
    m.identify_inputs_and_outputs(([c] if constant is None else []) + ins, outs)
    return m


def test_if_runs_the_model_the_condition_selects() -> None:
    model = _if().finish()
    (out,) = nnrt.reference.run(model, [np.array([True]), X, Y])
    np.testing.assert_array_equal(out, X + Y)
    (out,) = nnrt.reference.run(model, [np.array([False]), X, Y])
    np.testing.assert_array_equal(out, X * Y)


def test_if_counts_and_condition() -> None:
    m = nnrt.Model()
    c, out = m.add_operand(BOOL8, (1,)), m.add_operand(F32, (2,))
    m.add_operation(Op.IF, [c], [out])
    m.identify_inputs_and_outputs([c], [out])
    with pytest.raises(nnrt.BadData, match=f"{IF}: expected at least 3 inputs"):
        m.finish()
    with pytest.raises(nnrt.BadData, match=f"{IF}, input 0 \\(condition\\): expected "
                                           "TENSOR_BOOL8, got TENSOR_INT32"):
        _if(condition=(T.TENSOR_INT32, (1,))).finish()
    with pytest.raises(nnrt.BadData, match=f"{IF}, input 0 \\(condition\\): expected shape "
                                           r"\(1,\), got \(2,\)"):
        _if(condition=(BOOL8, (2,))).finish()
    model = _if(condition=(BOOL8, (0,))).finish()
    with pytest.raises(nnrt.BadData, match=f"{IF}, input 0 \\(condition\\): expected one "
                                           r"element, got shape \(2,\)"):
        nnrt.reference.run(model, [np.array([True, False]), X, Y])


def test_if_model_operands() -> None:
    m = _if()
    m._update(1, type=F32)  # the then slot holding a tensor instead of a model
    with pytest.raises(nnrt.BadData, match=f"{IF}, input 1 \\(then_model\\): expected "
                                           "SUBGRAPH, got TENSOR_FLOAT32"):
        m.finish()
    m = nnrt.Model()
    c, then, other = m.add_operand(BOOL8, (1,)), m.add_operand(T.SUBGRAPH), m.add_operand(
        T.SUBGRAPH)
    m.set_operand_value_from_model(then, _binary(Op.ADD))
    x, out = m.add_operand(F32, (2,)), m.add_operand(F32, (2,))
    m.add_operation(Op.IF, [c, then, other, x, x], [out])
    m.identify_inputs_and_outputs([c, other, x], [out])
    with pytest.raises(nnrt.BadData, match=f"{IF}, input 2 \\(else_model\\): expected a "
                                           "reference to a model"):
        m.finish()
    m = nnrt.Model()
    c, then = m.add_operand(BOOL8, (1,)), m.add_operand(T.SUBGRAPH)
    m.set_operand_value_from_model(then, _binary(Op.ADD))
    out = m.add_operand(F32, (2,))
    m.add_operation(Op.IF, [c, then, then, then, then], [out])
    m.identify_inputs_and_outputs([c], [out])
    with pytest.raises(nnrt.BadData, match=f"{IF}, input 3: a model cannot be passed as a "
                                           "value"):
        m.finish()


def _three_inputs() -> nnrt.Model:
    b = ModelBuilder()
    x, y, z = (b.input(n, (2,)) for n in "xyz")
    b.output(b.add(b.add(x, y), z))
    return b.build()


@pytest.mark.parametrize(("model", "kw", "message"), [
    (_three_inputs(), {}, r"input 2 \(else_model\): the inputs of the referenced model: it has "
                          "3, the operation needs 2"),
    (_binary(Op.MUL), {"outputs": ((F32, (2,)), (F32, (2,)))},
     r"input 1 \(then_model\): the outputs of the referenced model: it has 1, the operation "
     "needs 2"),
    (_binary(Op.MUL, dtype="float16"), {}, r"input 2 \(else_model\): its input 0 "
     r"\(TENSOR_FLOAT16\[2\]\) does not match the operation's input 3 \(TENSOR_FLOAT32\[2\]\): "
     "the types differ"),
    (_binary(Op.MUL, dims=(3,)), {"values": ((F32, (0,)), (F32, (2,)))},
     r"input 2 \(else_model\): its input 1 \(TENSOR_FLOAT32\[3\]\) does not match the "
     r"operation's input 4 \(TENSOR_FLOAT32\[2\]\): the dims are incompatible"),
    (_binary(Op.MUL, dims=(0,), out_dims=(0, 0)), {}, r"input 2 \(else_model\): its output 0 "
     r"\(TENSOR_FLOAT32\[\?, \?\]\) does not match the operation's output 0, "
     r"TENSOR_FLOAT32\[2\]: the dims are incompatible"),
])
def test_if_models_must_fit_the_signature(model: nnrt.Model, kw: dict[str, Any],
                                          message: str) -> None:
    with pytest.raises(nnrt.BadData, match=f"{IF}, {message}"):
        _if(other=model, **kw).finish()


def test_if_quantisation_must_match() -> None:
    q = (T.TENSOR_QUANT8_ASYMM, (2,), 0.5, 3)
    b = ModelBuilder()
    x = b.input("x", (2,), T.TENSOR_QUANT8_ASYMM, scale=0.5, zero_point=3)
    y = b.input("y", (2,), T.TENSOR_QUANT8_ASYMM, scale=0.25, zero_point=3)
    b.output(b.add(x, y))
    branch = b.build()
    with pytest.raises(nnrt.BadData, match=f"{IF}, input 1 \\(then_model\\): its input 1 .*: "
                                           "the scales or zero points differ"):
        _if(branch, branch, values=(q, q), outputs=(q,)).finish()


def test_if_static_output_shapes() -> None:
    unknown = ((F32, (0,)),)
    model = _if(outputs=unknown).finish()
    assert model.inferred_dims[model.operations[0].outputs[0]] == (2,)
    # The models disagree on the shape: known only once the condition is.
    b = ModelBuilder()
    x, y = b.input("x", (2,)), b.input("y", (2,))
    b.output(b.reshape(b.add(x, y), (2, 1)))
    reshaping = b.build()
    model = _if(reshaping, outputs=((F32, ()),)).finish()
    assert model.inferred_dims[model.operations[0].outputs[0]] == ()
    model = _if(reshaping, outputs=((F32, ()),), constant=True).finish()
    assert model.inferred_dims[model.operations[0].outputs[0]] == (2, 1)
    (out,) = nnrt.reference.run(model, [X, Y])
    np.testing.assert_array_equal(out, (X + Y).reshape(2, 1))


def test_if_shape_errors_name_the_operation() -> None:
    # Statically: the model's own shape inference fails on the operation's shapes.
    broadcasting = _binary(Op.ADD, dims=(0,))
    with pytest.raises(nnrt.BadData, match=f"{IF}, input 1 \\(then_model\\): in the referenced "
                                           r"model: operation 0 \(ADD\), input 1 \(input2\): "
                                           r"shapes \(2,\) and \(3,\) of inputs 0 and 1 cannot "
                                           "be broadcast"):
        _if(broadcasting, broadcasting, values=((F32, (2,)), (F32, (3,))),
            outputs=((F32, (0,)),)).finish()
    # The model's result contradicts the operation's declared output.
    model = _if(_binary(Op.ADD, dims=(0,)), _binary(Op.MUL, dims=(0,)),
                values=((F32, (0,)), (F32, (0,))), outputs=((F32, (3,)),)).finish()
    with pytest.raises(nnrt.BadData, match=f"{IF}, output 0: computed shape \\(2,\\) does not "
                                           r"match the declared dims \(3,\)"):
        nnrt.reference.run(model, [np.array([True]), X, Y])
    # At execution: the values do not fit the model's inputs.
    model = _if(values=((F32, (0,)), (F32, (0,)))).finish()
    z = np.ones(3, np.float32)
    with pytest.raises(nnrt.BadData, match=f"{IF}, input 2 \\(else_model\\): in the referenced "
                                           r"model: input 0 \(operand 0, TENSOR_FLOAT32\[2\]\): "
                                           r"shape \(3,\) does not match"):
        nnrt.reference.run(model, [np.array([False]), z, z])


def test_if_with_an_unsupported_operation_is_unsupported() -> None:
    q = (T.TENSOR_QUANT8_ASYMM, (2,), 0.5, 0)
    b = ModelBuilder()
    x = b.input("x", (2,), T.TENSOR_QUANT8_ASYMM, scale=0.5, zero_point=0)
    y = b.input("y", (2,), T.TENSOR_QUANT8_ASYMM, scale=0.5, zero_point=0)
    # RSQRT's quantised variant (NNAPI feature level 7) has no reference kernel.
    (root,) = b.operation(Op.RSQRT, x)
    b.output(b.add(root, y))
    quantised = b.build()
    model = _if(_binary(Op.ADD), quantised, values=(q, q), outputs=(q,))
    with pytest.raises(nnrt.BadData, match=f"{IF}, input 1 \\(then_model\\): its input 0 "):
        model.finish()
    model = _if(quantised, quantised, values=(q, q), outputs=(q,)).finish()
    with pytest.raises(nnrt.Unsupported, match=f"{IF}: its then model's operation 0 "
                                               r"\(RSQRT\): the TENSOR_QUANT8_ASYMM variant"):
        nnrt.reference.run(model, [np.array([True]), X.astype(np.uint8), X.astype(np.uint8)])


def test_if_plan_shared_between_threads() -> None:
    plan = ExecutionPlan(_if().finish())
    failures: list[str] = []

    def work(k: int) -> None:
        for n in range(30):
            condition = (k + n) % 2 == 0
            x = X + k
            (out,) = plan.execute(plan.binder.bind([np.array([condition]), x, Y]))
            if not np.array_equal(out, x + Y if condition else x * Y):
                failures.append(f"thread {k}, run {n}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


# -- WHILE ----------------------------------------------------------------------------------------

def _model(inputs: Sequence[tuple[Sequence[int], Any]], body: Any) -> nnrt.Model:
    b = ModelBuilder()
    tensors = [b.input(f"in{k}", shape, dtype) for k, (shape, dtype) in enumerate(inputs)]
    b.output(*body(b, tensors))
    return b.build()


def _positive(b: ModelBuilder, t: list[Any]) -> list[Any]:
    return [b.operation(Op.GREATER, t[0], np.array([0.0], np.float32),
                        output_types=[BOOL8])[0]]


def _while(condition: nnrt.Model, body: nnrt.Model, n_outputs: int = 1) -> nnrt.Model:
    m = nnrt.Model()
    models = []
    for model in (condition, body):
        models.append(m.add_operand(T.SUBGRAPH))
        m.set_operand_value_from_model(models[-1], model)
    x = m.add_operand(F32, (1,))
    outs = [m.add_operand(F32, (1,)) for _ in range(n_outputs)]
    m.add_operation(Op.WHILE, [*models, x], outs)
    m.identify_inputs_and_outputs([x], outs)
    return m


_ONE = [((1,), "float32")]
_CONDITION = _model(_ONE, _positive)
_DECREMENT = _model(_ONE, lambda b, t: [b.sub(t[0], np.array([1.0], np.float32))])


def test_while_runs_until_the_condition_is_false() -> None:
    model = _while(_CONDITION, _DECREMENT).finish()
    (out,) = nnrt.reference.run(model, [np.array([3.5], np.float32)])
    np.testing.assert_array_equal(out, [-0.5])


@pytest.mark.parametrize(("condition", "body", "n_outputs", "message"), [
    (_model(_ONE, lambda b, t: [*_positive(b, t), *_positive(b, t)]), _DECREMENT, 1,
     r"input 0 \(condition_model\): the outputs of the referenced model: it has 2, the "
     "operation needs 1"),
    (_model(_ONE, lambda b, t: [b.add(t[0], t[0])]), _DECREMENT, 1,
     r"input 0 \(condition_model\): its output 0 \(TENSOR_FLOAT32\[1\]\) does not match a "
     r"condition, TENSOR_BOOL8\[1\]: the types differ"),
    (_CONDITION, _DECREMENT, 2, r"input 1 \(body_model\): the body model has 1 outputs, fewer "
                                "than the operation's 2"),
    (_CONDITION, _model(_ONE, lambda b, t: [b.operation(Op.CAST, t[0],
                                                        output_types=[T.TENSOR_INT32])[0]]),
     1, r"input 1 \(body_model\): its output 0 \(TENSOR_INT32\[1\]\) does not match the "
        r"operation's output 0"),
    (_CONDITION, _model([*_ONE, *_ONE], lambda b, t: [b.add(t[0], t[1])]), 1,
     r"input 1 \(body_model\): the inputs of the referenced model: it has 2, the operation "
     "needs 1"),
])
def test_while_models_must_fit_the_signature(condition: nnrt.Model, body: nnrt.Model,
                                             n_outputs: int, message: str) -> None:
    with pytest.raises(nnrt.BadData, match=f"{WHILE}, {message}"):
        _while(condition, body, n_outputs).finish()


def test_while_replaced_values_keep_their_types() -> None:
    # Input-output x (float) and state s (int): the body gives s back as a float.
    m = nnrt.Model()
    inputs = [((1,), "float32"), ((1,), "int32")]
    condition = _model(inputs, _positive)
    body = _model(inputs, lambda b, t: [b.sub(t[0], np.float32([1])),
                                        b.operation(Op.CAST, t[1], output_types=[F32])[0]])
    models = []
    for model in (condition, body):
        models.append(m.add_operand(T.SUBGRAPH))
        m.set_operand_value_from_model(models[-1], model)
    x, s, out = m.add_operand(F32, (1,)), m.add_operand(T.TENSOR_INT32, (1,)), m.add_operand(
        F32, (1,))
    m.add_operation(Op.WHILE, [*models, x, s], [out])
    m.identify_inputs_and_outputs([x, s], [out])
    with pytest.raises(nnrt.BadData, match=f"{WHILE}, input 1 \\(body_model\\): its output 1 "
                                           r"\(TENSOR_FLOAT32\[1\]\) does not match its input 1 "
                                           r"\(the value it replaces\), TENSOR_INT32\[1\]: "
                                           "the types differ"):
        m.finish()


def test_while_loop_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nnrt.ops.control, "MAX_WHILE_ITERATIONS", 25)
    model = _while(_CONDITION, _DECREMENT).finish()
    (out,) = nnrt.reference.run(model, [np.array([24.5], np.float32)])
    np.testing.assert_array_equal(out, [-0.5])
    with pytest.raises(nnrt.OpFailed, match=f"{WHILE}: the loop did not end within 25 "
                                            "iterations"):
        nnrt.reference.run(model, [np.array([25.5], np.float32)])
