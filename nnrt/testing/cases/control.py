"""Conformance cases for IF and WHILE.

The referenced models are small finished models built here; they travel in SUBGRAPH arguments
(``subgraph(model)``). Expected outputs are literal, computed below in float64 with numpy
independently of the interpreter. The float16 variant does not apply (the referenced models'
types would have to change with the operation's): a float16 case is written out instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nnrt.model.builder import ModelBuilder, Tensor
from nnrt.model.model import Model
from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.testing.spec import Arg, OpCase, b8, f16, f32, i32, i32s, out

CASES: list[OpCase] = []

_NO_F16 = ("float16",)
Body = Callable[[ModelBuilder, list[Tensor]], Sequence[Tensor]]


def subgraph(model: Model) -> Arg:
    """A SUBGRAPH argument referring to ``model``."""
    return Arg(T.SUBGRAPH, (), model, role="const")


def _model(inputs: Sequence[tuple[Sequence[int], str | T]], body: Body) -> Model:
    """A finished model with ``inputs`` ((shape, dtype) pairs) and ``body``'s outputs."""
    b = ModelBuilder()
    tensors = [b.input(f"in{k}", shape, dtype) for k, (shape, dtype) in enumerate(inputs)]
    b.output(*body(b, tensors))
    return b.build()


_A = np.array([[1.0, -2.0, 3.5], [0.25, 4.0, -1.5]], np.float32)
_B = np.array([[0.5, 2.0, -1.0], [3.0, -0.75, 2.0]], np.float32)
_AD, _BD = _A.astype(np.float64), _B.astype(np.float64)
_F2 = [((2, 3), "float32"), ((2, 3), "float32")]
_ADD = _model(_F2, lambda b, t: [b.add(t[0], t[1])])
_MUL = _model(_F2, lambda b, t: [b.mul(t[0], t[1])])


def _if(name: str, condition: bool, then: Model, otherwise: Model, inputs: Sequence[Arg],
        outputs: Sequence[Arg], skip: tuple[str, ...] = _NO_F16) -> OpCase:
    return OpCase(f"if_{name}", Op.IF, (b8([condition]), subgraph(then), subgraph(otherwise),
                                        *inputs), tuple(outputs), skip=skip)


CASES += [
    _if("then_add", True, _ADD, _MUL, (f32(_A), f32(_B)),
        (out(T.TENSOR_FLOAT32, (2, 3), _AD + _BD),)),
    _if("else_mul", False, _ADD, _MUL, (f32(_A), f32(_B)),
        (out(T.TENSOR_FLOAT32, (2, 3), _AD * _BD),)),
]

# Models declaring unknown dims run on the operation's shapes.
_ANY = [((0, 0), "float32"), ((0, 3), "float32")]
CASES.append(_if("unknown_model_dims", False, _model(_ANY, lambda b, t: [b.sub(t[0], t[1])]),
                 _model(_ANY, lambda b, t: [b.div(t[0], t[1])]), (f32(_A), f32(_B)),
                 (out(T.TENSOR_FLOAT32, (2, 3), _AD / _BD),)))

# Two outputs of TENSOR_INT32.
_IA = np.array([3, -4, 7, 0], np.int32)
_IB = np.array([2, 5, -1, 6], np.int32)
_I2 = [((4,), "int32"), ((4,), "int32")]
CASES.append(_if("two_int32_outputs", True,
                 _model(_I2, lambda b, t: [b.add(t[0], t[1]), b.mul(t[0], t[1])]),
                 _model(_I2, lambda b, t: [b.sub(t[0], t[1]), b.sub(t[1], t[0])]),
                 (i32(_IA), i32(_IB)),
                 (out(T.TENSOR_INT32, (4,), _IA + _IB), out(T.TENSOR_INT32, (4,), _IA * _IB))))


# A scalar passed to the models: the fused activation code of their operation.
def _with_activation(op: Op) -> Model:
    b = ModelBuilder()
    x, y = b.input("x", (2, 3)), b.input("y", (2, 3))
    code = b.input("activation", (), T.INT32)
    b.output(b.operation(op, x, y, code)[0])
    return b.build()


CASES.append(_if("scalar_input_relu", True, _with_activation(Op.ADD), _with_activation(Op.MUL),
                 (f32(_A), f32(_B), i32s(1)),
                 (out(T.TENSOR_FLOAT32, (2, 3), np.maximum(_AD + _BD, 0.0)),)))


# IF inside the then model.
def _nested(b: ModelBuilder, t: list[Tensor]) -> list[Tensor]:
    model = b.model
    indices = [model.add_operand(T.SUBGRAPH) for _ in range(2)]
    model.set_operand_value_from_model(indices[0], _ADD)
    model.set_operand_value_from_model(indices[1], _MUL)
    result = model.add_operand(T.TENSOR_FLOAT32, (2, 3))
    model.add_operation(Op.IF, [t[0].index, *indices, t[1].index, t[2].index], [result])
    return [Tensor(result, T.TENSOR_FLOAT32, (2, 3))]


_NESTED = _model([((1,), "bool"), *_F2], _nested)
_OUTER_ELSE = _model([((1,), "bool"), *_F2], lambda b, t: [b.sub(t[1], t[2])])
CASES += [
    _if("nested_inner_else", True, _NESTED, _OUTER_ELSE, (b8([False]), f32(_A), f32(_B)),
        (out(T.TENSOR_FLOAT32, (2, 3), _AD * _BD),)),
    _if("nested_outer_else", False, _NESTED, _OUTER_ELSE, (b8([True]), f32(_A), f32(_B)),
        (out(T.TENSOR_FLOAT32, (2, 3), _AD - _BD),)),
]

# TENSOR_FLOAT16 throughout.
_H2 = [((3,), "float16"), ((3,), "float16")]
_HA = np.array([0.5, -1.25, 2.0], np.float16)
_HB = np.array([1.5, 0.25, -3.0], np.float16)
CASES.append(_if("float16", True, _model(_H2, lambda b, t: [b.mul(t[0], t[1])]),
                 _model(_H2, lambda b, t: [b.add(t[0], t[1])]), (f16(_HA), f16(_HB)),
                 (out(T.TENSOR_FLOAT16, (3,), _HA.astype(np.float64) * _HB),)))


# -- WHILE ------------------------------------------------------------------------------------

def _less_than_sum(b: ModelBuilder, t: list[Tensor]) -> list[Tensor]:
    """``sum(x) < limit`` for inputs ``(x, limit)``, a TENSOR_BOOL8 [1]."""
    total = b.operation(Op.REDUCE_SUM, t[0], b.constant(np.array([0], np.int32)), True)[0]
    return [b.operation(Op.LESS, total, t[1], output_types=[T.TENSOR_BOOL8])[0]]


_X2 = ((2,), "float32")
_LIMIT = ((1,), "float32")
_DOUBLE_COND = _model([_X2, _LIMIT], _less_than_sum)
_DOUBLE_BODY = _model([_X2, _LIMIT], lambda b, t: [b.mul(t[0], np.array([2.0], np.float32))])


def _doubled(x: np.ndarray[Any, Any], limit: float) -> np.ndarray[Any, Any]:
    values = np.array(x, np.float64)
    while values.sum() < limit:
        values = values * 2.0
    return values


_XW = np.array([0.75, 1.5], np.float32)
CASES += [
    OpCase("while_double_until_limit", Op.WHILE,
           (subgraph(_DOUBLE_COND), subgraph(_DOUBLE_BODY), f32(_XW), f32([100.0])),
           (out(T.TENSOR_FLOAT32, (2,), _doubled(_XW, 100.0)),), skip=_NO_F16),
    OpCase("while_zero_iterations", Op.WHILE,
           (subgraph(_DOUBLE_COND), subgraph(_DOUBLE_BODY), f32(_XW), f32([1.0])),
           (out(T.TENSOR_FLOAT32, (2,), _XW),), skip=_NO_F16),
]


# Input-output x, state-only counter i, input-only step and count:
#     while i < count: x, i = x + step, i + 1
def _counter_cond(b: ModelBuilder, t: list[Tensor]) -> list[Tensor]:
    return [b.operation(Op.LESS, t[1], t[3], output_types=[T.TENSOR_BOOL8])[0]]


def _counter_body(b: ModelBuilder, t: list[Tensor]) -> list[Tensor]:
    return [b.add(t[0], t[2]), b.add(t[1], np.array([1], np.int32))]


_COUNTER_INPUTS = [((3,), "float32"), ((1,), "int32"), ((3,), "float32"), ((1,), "int32")]
_XC = np.array([1.0, -2.0, 0.5], np.float32)
_STEP = np.array([0.25, 1.0, -0.5], np.float32)
CASES.append(OpCase(
    "while_state_and_input_only_values", Op.WHILE,
    (subgraph(_model(_COUNTER_INPUTS, _counter_cond)),
     subgraph(_model(_COUNTER_INPUTS, _counter_body)), f32(_XC), i32([0]), f32(_STEP),
     i32([5])),
    (out(T.TENSOR_FLOAT32, (3,), _XC.astype(np.float64) + 5 * _STEP.astype(np.float64)),),
    skip=_NO_F16))
