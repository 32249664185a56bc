"""nnrt's rank extension (``com.nnrt.rank6``): which operations take rank 5 and 6, what stays
NNAPI's, how a model is marked (``Model.extensions``), and reference results at rank 5 / 6."""

from __future__ import annotations

import numpy as np
import pytest
from single_op import build as _model

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op
from nnrt.model.types import NNRT_RANK_EXTENSION

F32 = T.TENSOR_FLOAT32
I32 = T.TENSOR_INT32
RNG = np.random.default_rng(3)
R5, R6, R7 = (2, 1, 3, 1, 2), (1, 2, 1, 3, 1, 2), (1, 2, 1, 1, 3, 1, 2)


def _single(op: Op, dims: tuple[int, ...]) -> nnrt.Model:
    """A one-operation model of ``op`` on a ``dims`` input (parameters constant)."""
    rank = len(dims)
    inputs: dict[Op, list[tuple[object, ...]]] = {
        Op.RESHAPE: [(I32, (1,), [-1])],
        Op.TRANSPOSE: [(I32, (rank,), list(reversed(range(rank))))],
        Op.SQUEEZE: [(I32, (1,), [-2])],
        Op.PAD: [(I32, (rank, 2), [[0, 1]] * rank)],
        Op.STRIDED_SLICE: [(I32, (rank,), [0] * rank), (I32, (rank,), list(dims)),
                           (I32, (rank,), [1] * rank), (T.INT32, (), 0), (T.INT32, (), 0),
                           (T.INT32, (), 0)],
        Op.MEAN: [(I32, (1,), [0]), (T.INT32, (), 1)],
        Op.REDUCE_SUM: [(I32, (1,), [-1]), (T.BOOL, (), True)],
        Op.SOFTMAX: [(T.FLOAT32, (), 1.0)],
        Op.ADD: [(F32, (1,), [1.0]), (T.INT32, (), 0)],
        Op.POW: [(F32, (1,), [2.0])],
        Op.TANH: [],
    }[op]
    return _model(op, [(F32, dims, None), *inputs], [(F32, ())])


RANK4_OPS = [Op.RESHAPE, Op.TRANSPOSE, Op.SQUEEZE, Op.PAD, Op.STRIDED_SLICE, Op.MEAN,
             Op.REDUCE_SUM, Op.SOFTMAX, Op.ADD, Op.POW, Op.TANH]


@pytest.mark.parametrize("op", RANK4_OPS, ids=lambda op: op.name)
def test_rank_5_and_6_are_accepted_and_marked(op: Op) -> None:
    for dims in (R5, R6):
        model = _single(op, dims).finish()
        assert model.extensions == {NNRT_RANK_EXTENSION}
    assert _single(op, (2, 3, 1, 2)).finish().extensions == frozenset()


@pytest.mark.parametrize("op", RANK4_OPS, ids=lambda op: op.name)
def test_rank_7_is_refused_naming_operation_input_and_rank(op: Op) -> None:
    low = 0 if op == Op.POW else 1
    with pytest.raises(nnrt.BadData, match=rf"operation 0 \({op.name}\), input 0 \(\w+\): "
                                           rf"expected rank between {low} and 6, got 7"):
        _single(op, R7).finish()


def test_batch_matmul_takes_batch_dims_up_to_rank_6() -> None:
    lhs, rhs = (1, 2, 1, 2, 2, 3), (1, 2, 1, 2, 3, 4)
    model = _model(Op.BATCH_MATMUL, [(F32, lhs, None), (F32, rhs, None), (T.BOOL, (), False),
                                     (T.BOOL, (), False)], [(F32, ())]).finish()
    assert model.inferred_dims[model.outputs[0]] == (1, 2, 1, 2, 2, 4)
    assert model.extensions == {NNRT_RANK_EXTENSION}
    a, b = RNG.standard_normal(lhs), RNG.standard_normal(rhs)
    (got,) = nnrt.reference.run(model, [a.astype(np.float32), b.astype(np.float32)])
    np.testing.assert_allclose(got, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-5,
                               atol=1e-6)


def test_nnapi_only_operations_keep_their_rank_limits() -> None:
    dims = (1, 1, 4, 4, 1)
    model = _model(Op.CONV_2D, [(F32, dims, None), (F32, (1, 1, 1, 1), np.ones((1, 1, 1, 1))),
                                (F32, (1,), [0.0]), *[(T.INT32, (), v) for v in
                                                      (1, 1, 1, 0)]], [(F32, ())])
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(CONV_2D\), input 0 \(input\): "
                                           r"expected rank 4, got 5"):
        model.finish()
    model = _model(Op.L2_NORMALIZATION, [(F32, dims, None)], [(F32, dims)])
    with pytest.raises(nnrt.BadData, match=r"\(L2_NORMALIZATION\), input 0 \(input\): expected "
                                           r"rank between 1 and 4, got 5"):
        model.finish()


def test_operations_without_an_nnapi_rank_cap_are_not_marked() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", R6)
    y = b.operation(Op.EXPAND_DIMS, b.operation(Op.ABS, x)[0], 0)[0]  # rank 7: no NNAPI cap
    b.output(y)
    model = b.build()
    assert model.extensions == frozenset() and model.inferred_dims[model.outputs[0]] == (
        1, *R6)


def test_extension_operations_and_ranks_are_both_listed() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", R5)
    b.output(b.transpose(b.operation(Op.NNRT_ERF, x)[0], (4, 3, 2, 1, 0)))
    assert b.build().extensions == {"com.nnrt", NNRT_RANK_EXTENSION}
    b = nnrt.ModelBuilder()
    b.output(b.operation(Op.NNRT_ERF, b.input("x", (2, 3)))[0])
    assert b.build().extensions == {"com.nnrt"}


def test_extensions_count_inside_referenced_models() -> None:
    branches = []
    for op in (Op.TANH, Op.ABS):  # TANH is capped at rank 4 by NNAPI, ABS is not
        branch = nnrt.ModelBuilder()
        branch.output(branch.operation(op, branch.input("x", R5))[0])
        branches.append(branch.build())
    assert [m.extensions for m in branches] == [{NNRT_RANK_EXTENSION}, frozenset()]
    for then_model, expected in ((branches[0], {NNRT_RANK_EXTENSION}),
                                 (branches[1], frozenset())):
        model = nnrt.Model()
        cond = model.add_operand(T.TENSOR_BOOL8, (1,))
        x = model.add_operand(F32, R5)
        then_, else_ = model.add_operand(T.SUBGRAPH), model.add_operand(T.SUBGRAPH)
        model.set_operand_value_from_model(then_, then_model)
        model.set_operand_value_from_model(else_, branches[1])
        y = model.add_operand(F32, R5)
        model.add_operation(Op.IF, [cond, then_, else_, x], [y])
        model.identify_inputs_and_outputs([cond, x], [y])
        assert model.finish().extensions == expected


def test_extensions_need_a_finished_model() -> None:
    with pytest.raises(nnrt.BadState, match="extensions is only available after finish"):
        _ = nnrt.Model().extensions


def test_a_rank_6_chain_matches_numpy_on_the_reference() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (2, 12))
    y = b.reshape(x, (2, 1, 2, 3, 2, 1))
    y = b.transpose(y, (0, 3, 1, 4, 2, 5))
    y = b.mul(y, np.linspace(0.5, 1.5, 2, dtype=np.float32).reshape(1, 1, 1, 2, 1, 1))
    y = b.operation(Op.SOFTMAX, y, 1.0, 0)[0]
    y = b.operation(Op.REDUCE_SUM, y, np.array([1, -1], np.int32), False)[0]
    b.output(y)
    model = b.build()
    data = RNG.standard_normal((2, 12)).astype(np.float32)
    t = data.reshape(2, 1, 2, 3, 2, 1).transpose(0, 3, 1, 4, 2, 5).astype(np.float64)
    t = t * np.linspace(0.5, 1.5, 2).reshape(1, 1, 1, 2, 1, 1)
    e = np.exp(t - t.max(axis=0, keepdims=True))
    want = (e / e.sum(axis=0, keepdims=True)).sum(axis=(1, 5))
    (got,) = nnrt.reference.run(model, [data])
    assert got.shape == (2, 1, 2, 2)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
