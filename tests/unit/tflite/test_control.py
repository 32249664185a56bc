"""TFLite WHILE / IF → NNAPI WHILE / IF (the subgraphs as referenced models), against LiteRT's
reference kernels; CALL_ONCE and unsupported operators inside a subgraph."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as fb

import nnrt
import nnrt.reference
import nnrt.tflite
from nnrt.model.types import OperationType
from tests.unit.tflite.flatbuffers_kit import B, TfliteFile, litert_run

I32, BOOL = fb.TensorType.INT32, fb.TensorType.BOOL


def _options(cls: Any, **fields: Any) -> Any:
    options = cls()
    for key, value in fields.items():
        setattr(options, key, value)
    return options


def _add(f: TfliteFile, a: int, b: int, out: int) -> None:
    f.op(B.ADD, [a, b], [out], _options(fb.AddOptionsT))


def counter_loop(body_op: tuple[int, bytes] | None = None) -> bytes:
    """``while i < 10: i, x = i + 1, x * 1.5 + 1`` (``body_op``: a custom operator in the body
    instead of the ADD)."""
    f = TfliteFile()
    i, x = f.tensor((1,), I32), f.tensor((2, 3))
    less = f.tensor((1,), BOOL)
    f.op(B.LESS, [i, f.const(np.asarray([10], np.int32))], [less])
    cond = f.subgraph([i, x], [less])
    i, x = f.tensor((1,), I32), f.tensor((2, 3))
    i2, scaled, x2 = f.tensor((1,), I32), f.tensor((2, 3)), f.tensor((2, 3))
    _add(f, i, f.const(np.asarray([1], np.int32)), i2)
    f.op(B.MUL, [x, f.const(np.full((1,), 1.5, np.float32))], [scaled],
         _options(fb.MulOptionsT))
    if body_op is None:
        _add(f, scaled, f.const(np.ones((1,), np.float32)), x2)
    else:
        f.op(body_op[0], [scaled], [x2], custom=body_op[1])
    body = f.subgraph([i, x], [i2, x2])
    i, x = f.tensor((1,), I32, name="i"), f.tensor((2, 3), name="x")
    i_out, x_out = f.tensor((1,), I32, name="i_out"), f.tensor((2, 3), name="x_out")
    f.op(B.WHILE, [i, x], [i_out, x_out],
         _options(fb.WhileOptionsT, condSubgraphIndex=cond, bodySubgraphIndex=body))
    return f.finish([i, x], [i_out, x_out])


def branches() -> bytes:
    """``y = x + x if c else x * x - 3`` (then: one ADD; else: MUL then SUB)."""
    f = TfliteFile()
    x, y = f.tensor((2, 3)), f.tensor((2, 3))
    _add(f, x, x, y)
    then = f.subgraph([x], [y])
    x, sq, y = f.tensor((2, 3)), f.tensor((2, 3)), f.tensor((2, 3))
    f.op(B.MUL, [x, x], [sq], _options(fb.MulOptionsT))
    f.op(B.SUB, [sq, f.const(np.full((1,), 3.0, np.float32))], [y], _options(fb.SubOptionsT))
    other = f.subgraph([x], [y])
    c, x, y = f.tensor((1,), BOOL, name="c"), f.tensor((2, 3), name="x"), f.tensor((2, 3),
                                                                                  name="y")
    f.op(B.IF, [c, x], [y], _options(fb.IfOptionsT, thenSubgraphIndex=then,
                                     elseSubgraphIndex=other))
    return f.finish([c, x], [y])


def test_while_counter_loop_matches_litert() -> None:
    data = counter_loop()
    model = nnrt.tflite.load(data)
    assert [op.type for op in model.operations] == [OperationType.WHILE]
    for start in (0, 7, 12):  # ten, three and no iterations
        i = np.asarray([start], np.int32)
        x = np.random.default_rng(start).standard_normal((2, 3)).astype(np.float32)
        got = nnrt.reference.run(model, {"i": i, "x": x})
        want = litert_run(data, [i, x])
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("condition", [True, False])
def test_if_runs_the_chosen_branch_as_litert(condition: bool) -> None:
    data = branches()
    model = nnrt.tflite.load(data)
    assert [op.type for op in model.operations] == [OperationType.IF]
    c = np.asarray([condition], np.bool_)
    x = np.random.default_rng(3).standard_normal((2, 3)).astype(np.float32)
    (got,) = nnrt.reference.run(model, {"c": c, "x": x})
    np.testing.assert_allclose(got, litert_run(data, [c, x])[0], rtol=1e-5, atol=1e-5)


def test_an_unsupported_operator_in_a_subgraph_is_reported_under_the_while() -> None:
    with pytest.raises(nnrt.tflite.UnsupportedTfliteModel) as info:
        nnrt.tflite.load(counter_loop((B.CUSTOM, b"Frobnicate")))
    (op,) = info.value.operators
    assert (op.index, op.op) == (0, "WHILE")
    assert "bodySubgraphIndex 2: operator 2 (CUSTOM(Frobnicate)): no NNAPI conversion" in (
        op.reason)


def test_call_once_with_an_empty_initialiser_converts_to_nothing() -> None:
    f = TfliteFile()
    init = f.subgraph([], [])
    x, y = f.tensor((2, 3), name="x"), f.tensor((2, 3), name="y")
    f.op(B.CALL_ONCE, [], [], _options(fb.CallOnceOptionsT, initSubgraphIndex=init))
    f.op(B.RELU, [x], [y])
    data = f.finish([x], [y])
    model = nnrt.tflite.load(data)
    x_value = np.random.default_rng(4).standard_normal((2, 3)).astype(np.float32)
    (got,) = nnrt.reference.run(model, {"x": x_value})
    np.testing.assert_array_equal(got, np.maximum(x_value, 0))


def test_call_once_initialising_variables_is_unsupported() -> None:
    f = TfliteFile()
    a, b = f.tensor((1,)), f.tensor((1,))
    f.op(B.RELU, [f.const(np.ones((1,), np.float32))], [b])
    del a
    init = f.subgraph([], [])
    x, y = f.tensor((2, 3), name="x"), f.tensor((2, 3), name="y")
    f.op(B.CALL_ONCE, [], [], _options(fb.CallOnceOptionsT, initSubgraphIndex=init))
    f.op(B.RELU, [x], [y])
    with pytest.raises(nnrt.tflite.UnsupportedTfliteModel, match=r"operator 0 \(CALL_ONCE\): "
                       "its subgraph 1 initialises resource variables"):
        nnrt.tflite.load(f.finish([x], [y]))


def test_while_over_tflite_scalars() -> None:
    """The counter and the condition of shape ``[]``, as TFLite's converter writes them."""
    f = TfliteFile()
    i, x, less = f.tensor((), I32), f.tensor((2, 3)), f.tensor((), BOOL)
    f.op(B.LESS, [i, f.const(np.asarray(10, np.int32))], [less])
    cond = f.subgraph([i, x], [less])
    i, x, i2, x2 = f.tensor((), I32), f.tensor((2, 3)), f.tensor((), I32), f.tensor((2, 3))
    _add(f, i, f.const(np.asarray(1, np.int32)), i2)
    _add(f, x, x, x2)
    body = f.subgraph([i, x], [i2, x2])
    i, x = f.tensor((), I32, name="i"), f.tensor((2, 3), name="x")
    i_out, x_out = f.tensor((), I32, name="i_out"), f.tensor((2, 3), name="x_out")
    f.op(B.WHILE, [i, x], [i_out, x_out],
         _options(fb.WhileOptionsT, condSubgraphIndex=cond, bodySubgraphIndex=body))
    data = f.finish([i, x], [i_out, x_out])
    x_value = np.random.default_rng(5).standard_normal((2, 3)).astype(np.float32)
    want = litert_run(data, [np.asarray(3, np.int32), x_value])
    # a TFLite scalar input is held with shape [1]
    got = nnrt.reference.run(nnrt.tflite.load(data), {"i": np.asarray([3], np.int32),
                                                      "x": x_value})
    assert int(got[0].reshape(-1)[0]) == int(want[0]) == 10
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
