"""ONNX reductions, ArgMax / ArgMin, TopK, LSTM and If against onnxruntime."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

from onnx import TensorProto as TP  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

import nnrt.onnx  # noqa: E402
import nnrt.reference  # noqa: E402
from nnrt.model.types import OperationType  # noqa: E402

Array = np.ndarray[Any, Any]
_TYPES = {np.dtype(np.float32): TP.FLOAT, np.dtype(np.int32): TP.INT32,
          np.dtype(np.int64): TP.INT64, np.dtype(np.bool_): TP.BOOL}
RNG = np.random.default_rng(20240613)


def _info(name: str, array: Array) -> Any:
    return helper.make_tensor_value_info(name, _TYPES[array.dtype], list(array.shape))


def make_model(nodes: Sequence[Any], feeds: dict[str, Array], outputs: Sequence[str], *,
               initializers: dict[str, Array] | None = None, opset: int = 17) -> Any:
    """A one-graph model: ``feeds`` are its inputs (typed from the arrays)."""
    graph = helper.make_graph(
        list(nodes), "g", [_info(k, v) for k, v in feeds.items()],
        [helper.make_empty_tensor_value_info(o) for o in outputs],
        [numpy_helper.from_array(v, k) for k, v in (initializers or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8)


def run_ort(model: Any, feeds: dict[str, Array]) -> list[Array]:
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return [np.asarray(r) for r in session.run(None, feeds)]


def run_nnrt(model: Any, feeds: dict[str, Array]) -> list[Array]:
    imported = nnrt.onnx.load(model)
    given = {k: v.reshape(1) if v.ndim == 0 else v for k, v in feeds.items()}
    return [np.asarray(r) for r in nnrt.reference.run(imported, given)]


def check(model: Any, feeds: dict[str, Array], *, rtol: float = 1e-6,
          atol: float = 1e-6) -> list[Array]:
    """nnrt's results equal onnxruntime's: same shapes, floats within tolerance, ints equal."""
    want = run_ort(model, feeds)
    got = run_nnrt(model, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == (w.shape or (1,))  # an ONNX scalar travels as a [1] tensor
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(g, w.astype(g.dtype))
    return got


def unsupported(model: Any, match: str) -> None:
    with pytest.raises(nnrt.onnx.UnsupportedOnnxModel, match=match):
        nnrt.onnx.load(model)


def operations(model: Any) -> list[OperationType]:
    return [op.type for op in nnrt.onnx.load(model).operations]


# -- reductions -------------------------------------------------------------------------------

REDUCTIONS = ["ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2",
              "ReduceL1", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"]
AXES: list[list[int] | None] = [None, [1], [-1], [0, 2], [0, 1, 2]]


def _reduce_model(op: str, x: Array, axes: list[int] | None, keep: int, opset: int,
                  known: bool = False, **attrs: Any) -> Any:
    axes_input = opset >= 18 or (op == "ReduceSum" and opset >= 13)
    inits: dict[str, Array] = {"x": x} if known else {}
    inputs = ["x"]
    if axes is not None and axes_input:
        inits["axes"] = np.asarray(axes, np.int64)
        inputs.append("axes")
    elif axes is not None:
        attrs["axes"] = axes
    node = helper.make_node(op, inputs, ["y"], keepdims=keep, **attrs)
    return make_model([node], {} if known else {"x": x}, ["y"], initializers=inits,
                      opset=opset)


def _positive(shape: tuple[int, ...]) -> Array:
    return RNG.uniform(0.5, 2.0, shape).astype(np.float32)


@pytest.mark.parametrize("op", REDUCTIONS)
@pytest.mark.parametrize("axes", AXES)
@pytest.mark.parametrize("keep", [0, 1])
def test_reduce_runtime_input_opset18(op: str, axes: list[int] | None, keep: int) -> None:
    x = _positive((2, 3, 4))
    check(_reduce_model(op, x, axes, keep, 18), {"x": x}, rtol=1e-5)


@pytest.mark.parametrize("op", REDUCTIONS)
def test_reduce_axes_attribute_before_opset18(op: str) -> None:
    x = _positive((2, 3, 4))
    check(_reduce_model(op, x, [0, 2], 0, 13), {"x": x}, rtol=1e-5)
    check(_reduce_model(op, x, [1], 1, 11), {"x": x}, rtol=1e-5)


@pytest.mark.parametrize("op", REDUCTIONS)
def test_reduce_known_input_folds(op: str) -> None:
    x = _positive((2, 3, 4))
    model = _reduce_model(op, x, [1], 0, 18, known=True)
    assert operations(model) == [OperationType.CAST]  # only the copy of the known output
    check(model, {}, rtol=1e-5)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceMean", "ReduceProd"])
def test_reduce_known_integers(op: str) -> None:
    x = RNG.integers(-5, 6, (3, 4)).astype(np.int64)
    check(_reduce_model(op, x, [1], 1, 18, known=True), {})


@pytest.mark.parametrize("op", REDUCTIONS)
def test_reduce_noop_with_empty_axes(op: str) -> None:
    x = _positive((2, 3))
    x[0, 0] = -0.75  # ReduceL1 / L2 of one element are |x|
    if op == "ReduceLogSum":
        x = np.abs(x)
    check(_reduce_model(op, x, None, 1, 18, noop_with_empty_axes=1), {"x": x})


def test_reduce_all_axes_without_keepdims_is_a_scalar() -> None:
    x = _positive((2, 3))
    model = _reduce_model("ReduceSum", x, None, 0, 18)
    check(model, {"x": x}, rtol=1e-5)
    assert run_ort(model, {"x": x})[0].shape == ()


def test_reduce_rank7_is_unsupported_and_rank5_imports() -> None:
    x = _positive((2, 1, 2, 1, 2, 1, 2))
    unsupported(_reduce_model("ReduceSum", x, [1], 1, 18),
                r"ReduceSum node .*input 'x' has rank 7; nnrt reductions take ranks 1\.\.6")
    check(_reduce_model("ReduceSum", _positive((2, 2, 2, 2, 2)), [1], 1, 18), {"x": _positive(
        (2, 2, 2, 2, 2))}, rtol=1e-5)
    check(_reduce_model("ReduceSum", x, [1], 1, 18, known=True), {})  # known: numpy


def test_reduce_scalar_input() -> None:
    x = np.asarray(-2.5, np.float32)
    check(_reduce_model("ReduceL2", x, None, 0, 18), {"x": x})
    check(_reduce_model("ReduceSum", x, None, 1, 18), {"x": x})


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
def test_reduce_bool_is_any_all(op: str) -> None:
    x = np.array([[True, False, True], [False, False, False]])
    check(_reduce_model(op, x, [1], 0, 20), {"x": x})


def test_reduce_logsumexp_large_values_do_not_overflow() -> None:
    x = np.array([[100.0, 101.0, 99.0], [-100.0, -101.0, -99.0]], np.float32)
    check(_reduce_model("ReduceLogSumExp", x, [1], 0, 18), {"x": x}, rtol=1e-6)


def test_reduce_errors() -> None:
    x = RNG.integers(0, 5, (2, 3)).astype(np.int32)
    unsupported(_reduce_model("ReduceSum", x, [1], 1, 18),
                r"ReduceSum node .*int32 input 'x' is not supported: nnrt's REDUCE_SUM")
    y = _positive((2, 3))
    unsupported(_reduce_model("ReduceMean", y, [2], 1, 18),
                r"ReduceMean node .*axis 2 is out of range for input 'x' of rank 2")
    runtime_axes = helper.make_node("ReduceMean", ["x", "axes"], ["y"])
    model = make_model([runtime_axes], {"x": y, "axes": np.array([1], np.int64)}, ["y"],
                       opset=18)
    unsupported(model, r"input 1 \(axes\) must be known at import time")


# -- ArgMax / ArgMin --------------------------------------------------------------------------

def _arg_model(op: str, x: Array, known: bool = False, opset: int = 13, **attrs: Any) -> Any:
    node = helper.make_node(op, ["x"], ["y"], **attrs)
    return make_model([node], {} if known else {"x": x}, ["y"],
                      initializers={"x": x} if known else None, opset=opset)


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keep", [0, 1])
@pytest.mark.parametrize("last", [0, 1])
def test_arg_extreme(op: str, axis: int, keep: int, last: int) -> None:
    x = RNG.integers(0, 3, (3, 4, 2)).astype(np.float32)  # many ties
    check(_arg_model(op, x, axis=axis, keepdims=keep, select_last_index=last), {"x": x})
    check(_arg_model(op, x, known=True, axis=axis, keepdims=keep, select_last_index=last), {})


@pytest.mark.parametrize("keep", [0, 1])
def test_arg_extreme_1d_and_int32(keep: int) -> None:
    x = np.array([3, 7, 7, 1], np.int32)
    check(_arg_model("ArgMax", x, keepdims=keep, select_last_index=1), {"x": x})


def test_arg_extreme_default_axis_opset11() -> None:
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    check(_arg_model("ArgMin", x, opset=11), {"x": x})


# -- TopK -------------------------------------------------------------------------------------

def _top_k_model(x: Array, k: int, known: bool = False, opset: int = 11, **attrs: Any) -> Any:
    inits = {"k": np.array([k], np.int64)}
    if known:
        inits["x"] = x
    node = helper.make_node("TopK", ["x", "k"], ["values", "indices"], **attrs)
    return make_model([node], {} if known else {"x": x}, ["values", "indices"],
                      initializers=inits, opset=opset)


@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("largest", [0, 1])
def test_top_k_ties_lower_index_first(axis: int, largest: int) -> None:
    x = RNG.integers(0, 3, (3, 5, 4)).astype(np.float32)
    check(_top_k_model(x, 3, axis=axis, largest=largest), {"x": x})
    check(_top_k_model(x, 3, known=True, axis=axis, largest=largest), {})


@pytest.mark.parametrize("largest", [0, 1])
def test_top_k_int32_extremes(largest: int) -> None:
    info = np.iinfo(np.int32)
    x = np.array([[info.min, 5, info.max, 5, info.min, -1]], np.int32)
    check(_top_k_model(x, 4, largest=largest), {"x": x})


def test_top_k_attribute_k_before_opset10() -> None:
    x = RNG.standard_normal((2, 6)).astype(np.float32)
    node = helper.make_node("TopK", ["x"], ["values", "indices"], k=2)
    check(make_model([node], {"x": x}, ["values", "indices"], opset=9), {"x": x})


def test_top_k_errors() -> None:
    x = RNG.standard_normal((2, 4)).astype(np.float32)
    unsupported(_top_k_model(x, 5), r"TopK node .*k = 5 is out of range: expected 1\.\.4")
    node = helper.make_node("TopK", ["x", "k"], ["values", "indices"])
    model = make_model([node], {"x": x, "k": np.array([2], np.int64)}, ["values", "indices"],
                       opset=11)
    unsupported(model, r"input 1 \(K\) must be known at import time")
    ints = np.arange(8, dtype=np.int32).reshape(2, 4)
    unsupported(_top_k_model(ints, 1, axis=0), r"TopK on int32 values along axis 0")


# -- LSTM -------------------------------------------------------------------------------------

SEQ, BATCH, INPUT, HIDDEN = 4, 3, 5, 6


def _lstm_arrays(dirs: int, peepholes: bool) -> dict[str, Array]:
    arrays = {
        "W": RNG.uniform(-0.5, 0.5, (dirs, 4 * HIDDEN, INPUT)),
        "R": RNG.uniform(-0.5, 0.5, (dirs, 4 * HIDDEN, HIDDEN)),
        "B": RNG.uniform(-0.5, 0.5, (dirs, 8 * HIDDEN)),
    }
    if peepholes:
        arrays["P"] = RNG.uniform(-0.5, 0.5, (dirs, 3 * HIDDEN))
    return {k: v.astype(np.float32) for k, v in arrays.items()}


def _lstm_model(direction: str, *, states: bool, peepholes: bool = False, layout: int = 0,
                runtime_weights: bool = False, **attrs: Any) -> tuple[Any, dict[str, Array]]:
    dirs = 2 if direction == "bidirectional" else 1
    weights = _lstm_arrays(dirs, peepholes)
    x_shape = (SEQ, BATCH, INPUT) if layout == 0 else (BATCH, SEQ, INPUT)
    state_shape = (dirs, BATCH, HIDDEN) if layout == 0 else (BATCH, dirs, HIDDEN)
    feeds = {"X": RNG.standard_normal(x_shape).astype(np.float32)}
    if states:
        feeds["h0"] = RNG.standard_normal(state_shape).astype(np.float32)
        feeds["c0"] = RNG.standard_normal(state_shape).astype(np.float32)
    inputs = ["X", "W", "R", "B", "", "h0" if states else "", "c0" if states else "",
              "P" if peepholes else ""]
    while not inputs[-1]:
        inputs.pop()
    if runtime_weights:
        feeds.update(weights)
        weights = {}
    node = helper.make_node("LSTM", inputs, ["Y", "Y_h", "Y_c"], hidden_size=HIDDEN,
                            direction=direction, **({"layout": layout} if layout else {}),
                            **attrs)
    return make_model([node], feeds, ["Y", "Y_h", "Y_c"], initializers=weights,
                      opset=14), feeds


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("states", [False, True])
def test_lstm_directions(direction: str, states: bool) -> None:
    model, feeds = _lstm_model(direction, states=states)
    y, y_h, y_c = check(model, feeds, rtol=1e-5, atol=1e-5)
    dirs = 2 if direction == "bidirectional" else 1
    assert y.shape == (SEQ, dirs, BATCH, HIDDEN)
    assert y_h.shape == y_c.shape == (dirs, BATCH, HIDDEN)


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_lstm_peepholes_and_runtime_weights(direction: str) -> None:
    model, feeds = _lstm_model(direction, states=True, peepholes=True)
    check(model, feeds, rtol=1e-5, atol=1e-5)
    model, feeds = _lstm_model(direction, states=True, peepholes=True, runtime_weights=True)
    check(model, feeds, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_lstm_batch_first_layout(direction: str) -> None:
    """layout = 1 against onnxruntime's layout 0 (it has no batch-first LSTM) on the
    transposed inputs."""
    model, feeds = _lstm_model(direction, states=True, peepholes=True, layout=1)
    got = run_nnrt(model, feeds)
    node = model.graph.node[0]
    del node.attribute[[a.name for a in node.attribute].index("layout")]
    time_first = {"X": feeds["X"].transpose(1, 0, 2), "h0": feeds["h0"].transpose(1, 0, 2),
                  "c0": feeds["c0"].transpose(1, 0, 2)}
    for name, array in time_first.items():
        model.graph.input[[i.name for i in model.graph.input].index(name)].CopyFrom(
            _info(name, array))
    y, y_h, y_c = run_ort(model, time_first)
    want = [y.transpose(2, 0, 1, 3), y_h.transpose(1, 0, 2), y_c.transpose(1, 0, 2)]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_lstm_relu_activations_and_full_sequence_lens() -> None:
    model, feeds = _lstm_model("forward", states=False,
                               activations=["Sigmoid", "Relu", "Relu"])
    check(model, feeds, rtol=1e-5, atol=1e-5)
    node = model.graph.node[0]
    node.input[4:] = ["lens"]
    model.graph.initializer.append(numpy_helper.from_array(np.full(BATCH, SEQ, np.int32),
                                                           "lens"))
    check(model, feeds, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("attrs", "match"), [
    ({"clip": 3.0}, "clip is not supported: ONNX clips the gates' pre-activations"),
    ({"input_forget": 1}, "input_forget = 1"),
    ({"activations": ["Sigmoid", "Tanh", "Relu"]}, r"activations \['Sigmoid', 'Tanh', 'Relu'\]"),
    ({"activations": ["Sigmoid", "Tanh"]}, "expected 3 activations"),
])
def test_lstm_unsupported_attributes(attrs: dict[str, Any], match: str) -> None:
    model, _ = _lstm_model("forward", states=False, **attrs)
    unsupported(model, f"LSTM node .*{match}")


def test_lstm_partial_sequence_lens_is_unsupported() -> None:
    model, _ = _lstm_model("forward", states=False)
    model.graph.node[0].input[4:] = ["lens"]
    model.graph.initializer.append(numpy_helper.from_array(
        np.array([SEQ, 2, SEQ], np.int32), "lens"))
    unsupported(model, r"sequence_lens \[4, 2, 4\] is not supported")


# -- If ---------------------------------------------------------------------------------------

def _branch(name: str, nodes: Sequence[Any], output: str) -> Any:
    return helper.make_graph(list(nodes), name, [],
                             [helper.make_empty_tensor_value_info(output)])


def _if_model(cond_known: bool | None = None) -> tuple[Any, dict[str, Array]]:
    """y = If(cond, then: x * w + 1, else: Identity(x) - x captured twice); ``cond`` a graph
    input, or a known constant."""
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    w = RNG.standard_normal((2, 3)).astype(np.float32)
    then = _branch("then", [
        helper.make_node("Mul", ["x", "w"], ["t1"]),
        helper.make_node("Add", ["t1", "one"], ["t_out"]),
    ], "t_out")
    other = _branch("else", [
        helper.make_node("Identity", ["x"], ["e1"]),
        helper.make_node("Sub", ["e1", "w"], ["e_out"]),
    ], "e_out")
    nodes = [helper.make_node("If", ["cond"], ["y"], then_branch=then, else_branch=other)]
    inits = {"w": w, "one": np.array(1.0, np.float32)}
    feeds = {"x": x}
    if cond_known is None:
        feeds["cond"] = np.array(True)
    else:
        inits["cond"] = np.array(cond_known)
    return make_model(nodes, feeds, ["y"], initializers=inits), feeds


@pytest.mark.parametrize("value", [True, False])
def test_if_runtime_condition_takes_either_branch(value: bool) -> None:
    model, feeds = _if_model()
    assert OperationType.IF in operations(model)
    feeds["cond"] = np.array(value)
    check(model, feeds)


@pytest.mark.parametrize("value", [True, False])
def test_if_known_condition_is_inlined(value: bool) -> None:
    model, feeds = _if_model(cond_known=value)
    assert OperationType.IF not in operations(model)
    check(model, feeds)


def test_if_branch_passing_an_outer_value_through_and_nested() -> None:
    x = RNG.standard_normal((3,)).astype(np.float32)
    inner = helper.make_node("If", ["c2"], ["i_out"],
                             then_branch=_branch("t2", [helper.make_node("Neg", ["x"], ["n"])],
                                                 "n"),
                             else_branch=_branch("e2", [helper.make_node("Identity", ["x"],
                                                                         ["same"])], "same"))
    then = _branch("t", [helper.make_node("Not", ["c"], ["c2"]), inner], "i_out")
    other = _branch("e", [helper.make_node("Abs", ["x"], ["a"])], "a")
    node = helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)
    model = make_model([node], {"c": np.array(True), "x": x}, ["y"])
    for value in (True, False):
        check(model, {"c": np.array(value), "x": x})


def test_if_branches_with_different_shapes() -> None:
    x = RNG.standard_normal((2, 4)).astype(np.float32)
    starts, ends, axes = (np.array([v], np.int64) for v in (0, 2, 1))
    then = _branch("t", [helper.make_node("Slice", ["x", "s", "e", "a"], ["sl"])], "sl")
    other = _branch("e", [helper.make_node("Relu", ["x"], ["r"])], "r")
    node = helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)
    model = make_model([node], {"c": np.array(True), "x": x}, ["y"],
                       initializers={"s": starts, "e": ends, "a": axes})
    for value in (True, False):
        check(model, {"c": np.array(value), "x": x})


def test_if_reports_unsupported_nodes_inside_branches_by_name() -> None:
    then = _branch("t", [helper.make_node("LSTM", ["x", "w", "r"], ["y1"], name="inner_lstm",
                                          hidden_size=2, clip=1.0)], "y1")
    other = _branch("e", [helper.make_node("TopK", ["x", "k"], ["v", "i"], name="inner_topk")],
                    "v")
    node = helper.make_node("If", ["c"], ["y"], name="the_if", then_branch=then,
                            else_branch=other)
    model = make_model([node], {"c": np.array(True), "x": np.zeros((1, 1, 2), np.float32)},
                       ["y"], initializers={"w": np.zeros((1, 8, 2), np.float32),
                                            "r": np.zeros((1, 8, 2), np.float32),
                                            "k": np.array([5], np.int64)})
    with pytest.raises(nnrt.onnx.UnsupportedOnnxModel) as info:
        nnrt.onnx.load(model)
    found = {(n.op_type, n.name) for n in info.value.nodes}
    assert found == {("LSTM", "inner_lstm"), ("TopK", "inner_topk")}
    message = str(info.value)
    assert "clip is not supported" in message and "k = 5 is out of range" in message
    assert "in then_branch of If node 'the_if'" in message
    assert "in else_branch of If node 'the_if'" in message


def test_if_branches_with_different_output_types_are_unsupported() -> None:
    then = _branch("t", [helper.make_node("Cast", ["x"], ["ci"], to=TP.INT32)], "ci")
    other = _branch("e", [helper.make_node("Relu", ["x"], ["r"])], "r")
    node = helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)
    model = make_model([node], {"c": np.array(True), "x": np.zeros(2, np.float32)}, ["y"])
    unsupported(model, "If node .*output 0 has type int32 in then_branch and float32")


def test_if_branch_returning_an_outer_value_directly() -> None:
    """A branch output may name an outer value (onnxruntime refuses such models: numpy is
    the oracle)."""
    x = RNG.standard_normal((2, 2)).astype(np.float32)
    then = _branch("t", [], "x")
    other = _branch("e", [helper.make_node("Neg", ["x"], ["n"])], "n")
    node = helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)
    model = make_model([node], {"c": np.array(True), "x": x}, ["y"])
    for value, want in ((True, x), (False, -x)):
        (got,) = run_nnrt(model, {"c": np.array(value), "x": x})
        np.testing.assert_array_equal(got, want)


def test_model_outputs_that_are_inputs_or_repeated_are_copied() -> None:
    x = RNG.standard_normal((3,)).astype(np.float32)
    nodes = [helper.make_node("Identity", ["x"], ["a"]), helper.make_node("Identity", ["x"],
                                                                          ["b"])]
    model = make_model(nodes, {"x": x}, ["a", "b"])
    assert operations(model) == [OperationType.CAST, OperationType.CAST]
    for got in run_nnrt(model, {"x": x}):
        np.testing.assert_array_equal(got, x)
