"""Dynamic dims through nnrt.onnx.load: unknown dims in any form stay unknown (NNAPI 0), shape
sub-graphs run in the model (com.nnrt.SHAPE and int32 operations), and each converter path for
dynamic dims matches onnxruntime at several concrete shapes on the reference interpreter."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

import nnrt  # noqa: E402
import nnrt.onnx  # noqa: E402
from nnrt import OperationType as Op  # noqa: E402

Array = np.ndarray[Any, Any]
_RNG = np.random.default_rng(7)


def _model(nodes: list[Any], inputs: list[Any], outputs: Sequence[str],
           initializers: dict[str, Array] | None = None, opset: int = 17) -> Any:
    graph = helper.make_graph(
        nodes, "g", inputs, [helper.make_empty_tensor_value_info(o) for o in outputs],
        [numpy_helper.from_array(a, k) for k, a in (initializers or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8)


def _x(name: str = "x", dims: Sequence[Any] = ("N", 3, "H", "W"), elem: int = TP.FLOAT) -> Any:
    return helper.make_tensor_value_info(name, elem, list(dims))


def _same_as_ort(proto: Any, feeds: list[dict[str, Array]], atol: float = 1e-5) -> nnrt.Model:
    """Import without input_shapes, then compare with onnxruntime at every feed."""
    model = nnrt.onnx.load(proto)
    session = ort.InferenceSession(proto.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    for feed in feeds:
        want = session.run(None, feed)
        got = nnrt.reference.run(model, feed)
        for g, w in zip(got, want, strict=True):
            g = g.reshape(()) if w.ndim == 0 and g.shape == (1,) else g  # nnrt's scalars
            assert g.shape == w.shape, (g.shape, w.shape, {k: v.shape for k, v in feed.items()})
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), atol=atol,
                                       rtol=1e-5)
    return model


def _images(*shapes: tuple[int, ...]) -> list[dict[str, Array]]:
    return [{"x": _RNG.standard_normal(s).astype(np.float32)} for s in shapes]


def _ops(model: nnrt.Model) -> set[Op]:
    return {op.type for op in model.operations}


# -- unknown dims in any form --------------------------------------------------------------------

@pytest.mark.parametrize("dim", [-1, 0, "batch", None])
def test_every_form_of_unknown_dim_is_an_nnapi_unknown_dim(dim: Any) -> None:
    vi = helper.make_tensor_value_info("x", TP.FLOAT, [dim, 3])
    if dim is None:
        vi.type.tensor_type.shape.dim[0].Clear()  # no dim_value, no dim_param
    elif isinstance(dim, int):
        vi.type.tensor_type.shape.dim[0].dim_value = dim
    proto = _model([helper.make_node("Relu", ["x"], ["y"])], [vi], ["y"])
    model = nnrt.onnx.load(proto)
    assert model.operands[model.inputs[0]].dims == (0, 3)
    for rows in (1, 4):
        x = _RNG.standard_normal((rows, 3)).astype(np.float32)
        np.testing.assert_array_equal(nnrt.reference.run(model, [x])[0], np.maximum(x, 0))


def test_input_shapes_pins_unknown_dims_and_must_fit_known_ones() -> None:
    vi = helper.make_tensor_value_info("x", TP.FLOAT, [-1, 3, "h", 0])
    vi.type.tensor_type.shape.dim[0].dim_value = -1
    proto = _model([helper.make_node("Relu", ["x"], ["y"])], [vi], ["y"])
    model = nnrt.onnx.load(proto, input_shapes={"x": [2, 3, 48, 192]})
    assert model.operands[model.inputs[0]].dims == (2, 3, 48, 192)
    with pytest.raises(nnrt.BadData, match=r"does not fit the model's declared shape "
                                           r"\[0, 3, 0, 0\]"):
        nnrt.onnx.load(proto, input_shapes={"x": [2, 4, 48, 192]})


def test_static_dims_fold_and_dynamic_ones_are_computed_at_execution() -> None:
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "one"], ["c"], axis=0),
             helper.make_node("Gather", ["s", "two"], ["h"], axis=0),
             helper.make_node("Mul", ["c", "h"], ["y"])]
    proto = _model(nodes, [_x()], ["y"], {"one": np.asarray(1, np.int64),
                                          "two": np.asarray(2, np.int64)})
    model = _same_as_ort(proto, _images((1, 3, 5, 7), (2, 3, 9, 4)))
    assert Op.NNRT_SHAPE in _ops(model)  # H is dynamic: never baked in
    pinned = nnrt.onnx.load(proto, input_shapes={"x": [1, 3, 5, 7]})
    assert Op.NNRT_SHAPE not in _ops(pinned)
    only_static = _model([*nodes[:2], helper.make_node("Identity", ["c"], ["y"])], [_x()],
                         ["y"], {"one": np.asarray(1, np.int64)})
    folded = nnrt.onnx.load(only_static)  # C = 3 is static: the output copies a constant
    (last,) = [op for op in folded.operations if folded.outputs[0] in op.outputs]
    assert last.type == Op.CAST and folded.operands[last.inputs[0]].is_constant
    assert Op.GATHER not in _ops(folded)


# -- windows: Conv / pooling / ConvTranspose -----------------------------------------------------

@pytest.mark.parametrize(("kernel", "stride"), [(3, 2), (2, 1), (4, 3)])
def test_conv_same_upper_is_implicit_same(kernel: int, stride: int) -> None:
    w = _RNG.standard_normal((4, 3, kernel, kernel)).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER",
                            strides=[stride, stride], kernel_shape=[kernel, kernel])
    _same_as_ort(_model([node], [_x()], ["y"], {"w": w}), _images((1, 3, 7, 9), (2, 3, 10, 5)))


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_pools_on_dynamic_dims(op: str) -> None:
    same = helper.make_node(op, ["x"], ["y"], kernel_shape=[3, 2], strides=[2, 1],
                            auto_pad="SAME_UPPER")
    explicit = helper.make_node(op, ["x"], ["z"], kernel_shape=[3, 3], strides=[2, 2],
                                pads=[1, 0, 1, 2])
    ceil_unit = helper.make_node(op, ["x"], ["u"], kernel_shape=[2, 2], ceil_mode=1)
    _same_as_ort(_model([same, explicit, ceil_unit], [_x()], ["y", "z", "u"]),
                 _images((1, 3, 7, 9), (2, 3, 12, 6)))


@pytest.mark.parametrize(("attrs", "why"), [
    ({"auto_pad": "SAME_LOWER"}, "SAME_LOWER on the dynamic spatial dims"),
    ({"ceil_mode": 1, "strides": [2, 2]}, "ceil_mode with strides above 1 needs"),
    ({"dilations": [2, 2]}, "dilations needs the spatial dims"),
])
def test_pool_forms_without_an_exact_dynamic_equivalent_say_why(attrs: dict[str, Any],
                                                                 why: str) -> None:
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], **attrs)
    with pytest.raises(nnrt.onnx.UnsupportedOnnxModel, match=why) as info:
        nnrt.onnx.load(_model([node], [_x()], ["y"]))
    assert "input_shapes=" in info.value.nodes[0].reason


def test_conv_transpose_with_explicit_pads_on_dynamic_dims() -> None:
    w = _RNG.standard_normal((3, 2, 3, 3)).astype(np.float32)
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2],
                            pads=[1, 0, 0, 1], output_padding=[1, 0])
    _same_as_ort(_model([node], [_x()], ["y"], {"w": w}), _images((1, 3, 4, 5), (2, 3, 6, 3)))


def test_global_pool_and_reduce_mean_on_dynamic_dims() -> None:
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["y"]),
             helper.make_node("ReduceMean", ["x"], ["z"], axes=[2, 3], keepdims=1)]
    _same_as_ort(_model(nodes, [_x()], ["y", "z"]), _images((1, 3, 5, 8), (2, 3, 7, 2)))


def test_resize_nearest_by_two_on_dynamic_dims_and_a_refusal() -> None:
    scales = np.asarray([1, 1, 2, 4], np.float32)
    node = helper.make_node("Resize", ["x", "", "s"], ["y"], mode="nearest",
                            coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    _same_as_ort(_model([node], [_x()], ["y"], {"s": scales}, opset=13),
                 _images((1, 3, 3, 5), (2, 3, 6, 2)))
    linear = helper.make_node("Resize", ["x", "", "s"], ["y"], mode="linear")
    with pytest.raises(nnrt.onnx.UnsupportedOnnxModel, match="dynamic"):
        nnrt.onnx.load(_model([linear], [_x()], ["y"], {"s": scales}, opset=13))


# -- shape arithmetic at execution ---------------------------------------------------------------

def test_flatten_by_shape_slice_concat_reshape() -> None:
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Slice", ["s", "zero", "one"], ["n"]),
             helper.make_node("Concat", ["n", "minus"], ["t"], axis=0),
             helper.make_node("Reshape", ["x", "t"], ["y"]),
             helper.make_node("MatMul", ["y", "w"], ["z"])]
    init = {"zero": np.asarray([0], np.int64), "one": np.asarray([1], np.int64),
            "minus": np.asarray([-1], np.int64),
            "w": _RNG.standard_normal((24, 5)).astype(np.float32)}
    _same_as_ort(_model(nodes, [_x(dims=("N", 3, 2, 4))], ["z"], init),
                 _images((1, 3, 2, 4), (3, 3, 2, 4)))


def test_shape_start_end_and_reshape_copying_dims_with_zero() -> None:
    nodes = [helper.make_node("Shape", ["x"], ["hw"], start=-2),
             helper.make_node("Concat", ["zeros", "hw"], ["t"], axis=0),
             helper.make_node("Reshape", ["x", "t"], ["y"]),
             helper.make_node("Shape", ["x"], ["s"], start=1, end=3),
             helper.make_node("Cast", ["s"], ["f"], to=TP.FLOAT)]
    init = {"zeros": np.asarray([0, 0], np.int64)}
    _same_as_ort(_model(nodes, [_x()], ["y", "f"], init), _images((1, 3, 2, 5), (2, 3, 4, 1)))


def test_attention_style_split_heads_and_matmul() -> None:
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "i0"], ["b"], axis=0),
             helper.make_node("Gather", ["s", "i1"], ["t"], axis=0),
             helper.make_node("Unsqueeze", ["b", "ax"], ["b1"]),
             helper.make_node("Unsqueeze", ["t", "ax"], ["t1"]),
             helper.make_node("Concat", ["b1", "t1", "heads"], ["target"], axis=0),
             helper.make_node("MatMul", ["x", "wq"], ["q"]),
             helper.make_node("Reshape", ["q", "target"], ["q4"]),
             helper.make_node("Transpose", ["q4"], ["qt"], perm=[0, 2, 1, 3]),
             helper.make_node("Transpose", ["q4"], ["kt"], perm=[0, 2, 3, 1]),
             helper.make_node("MatMul", ["qt", "kt"], ["scores"])]
    init = {"i0": np.asarray(0, np.int64), "i1": np.asarray(1, np.int64),
            "ax": np.asarray([0], np.int64), "heads": np.asarray([2, 4], np.int64),
            "wq": _RNG.standard_normal((8, 8)).astype(np.float32)}
    feeds = [{"x": _RNG.standard_normal(s).astype(np.float32)} for s in ((1, 3, 8), (2, 5, 8))]
    _same_as_ort(_model(nodes, [_x(dims=("B", "T", 8))], ["scores"], init), feeds, atol=1e-4)


def test_mask_expansion_constant_of_shape_expand_equal_where() -> None:
    nodes = [helper.make_node("Shape", ["m"], ["s"]),
             helper.make_node("ConstantOfShape", ["s"], ["ones"],
                              value=numpy_helper.from_array(np.asarray([1], np.int64))),
             helper.make_node("Equal", ["m", "ones"], ["keep"]),
             helper.make_node("Where", ["keep", "m", "ones"], ["y"]),
             helper.make_node("Unsqueeze", ["m", "ax"], ["m3"]),
             helper.make_node("Concat", ["s", "last"], ["s3"], axis=0),
             helper.make_node("Expand", ["m3", "s3"], ["big"]),
             helper.make_node("Cast", ["big"], ["f"], to=TP.FLOAT),
             helper.make_node("Expand", ["fx", "s"], ["grown"])]
    init = {"ax": np.asarray([2], np.int64), "last": np.asarray([3], np.int64),
            "fx": np.asarray([[0.5], [-0.0]], np.float32)[:1]}
    proto = _model(nodes, [_x("m", ("B", "T"), TP.INT64)], ["y", "f", "grown"], init)
    feeds = [{"m": _RNG.integers(0, 2, s).astype(np.int64)} for s in ((1, 4), (3, 2))]
    _same_as_ort(proto, feeds)


def test_slices_of_dynamic_axes() -> None:
    nodes = [helper.make_node("Slice", ["x", "b", "e", "a"], ["y"]),
             helper.make_node("Slice", ["x", "b2", "e2", "a2", "st"], ["z"]),
             helper.make_node("Shape", ["x"], ["s"], start=2, end=3),
             helper.make_node("Slice", ["table", "zero", "s", "one"], ["pos"])]
    init = {"b": np.asarray([1, -3], np.int64), "e": np.asarray([2**62, -1], np.int64),
            "a": np.asarray([2, 3], np.int64), "b2": np.asarray([2**62], np.int64),
            "e2": np.asarray([-(2**62)], np.int64), "a2": np.asarray([3], np.int64),
            "st": np.asarray([-2], np.int64), "zero": np.asarray([0], np.int64),
            "one": np.asarray([1], np.int64),
            "table": np.arange(40, dtype=np.float32).reshape(2, 20)}
    _same_as_ort(_model(nodes, [_x()], ["y", "z", "pos"], init),
                 _images((1, 3, 4, 5), (2, 3, 7, 3)))


def test_a_negative_start_with_a_negative_step_on_a_dynamic_axis_is_refused() -> None:
    node = helper.make_node("Slice", ["x", "b", "e", "a", "st"], ["y"])
    init = {"b": np.asarray([-1], np.int64), "e": np.asarray([-(2**62)], np.int64),
            "a": np.asarray([3], np.int64), "st": np.asarray([-1], np.int64)}
    with pytest.raises(nnrt.onnx.UnsupportedOnnxModel, match="negative start"):
        nnrt.onnx.load(_model([node], [_x()], ["y"], init))
    pinned = nnrt.onnx.load(_model([node], [_x()], ["y"], init),
                            input_shapes={"x": [1, 3, 2, 4]})
    x = _RNG.standard_normal((1, 3, 2, 4)).astype(np.float32)
    np.testing.assert_array_equal(nnrt.reference.run(pinned, [x])[0], x[..., ::-1])


def test_flatten_with_a_dynamic_batch_keeps_it_dynamic() -> None:
    proto = _model([helper.make_node("Flatten", ["x"], ["y"], axis=1)],
                   [_x(dims=("N", 4, 1, 2))], ["y"])
    _same_as_ort(proto, _images((1, 4, 1, 2), (3, 4, 1, 2)))
    both = _model([helper.make_node("Flatten", ["x"], ["y"], axis=1)], [_x(dims=("N", "C"))],
                  ["y"])
    with pytest.raises(nnrt.onnx.UnsupportedOnnxModel, match="needs the dims on one side"):
        nnrt.onnx.load(both)


def test_named_dims_keep_their_onnx_names_for_callers() -> None:
    proto = _model([helper.make_node("Relu", ["x"], ["y"])], [_x(dims=("N", 3, "H", 8))], [])
    proto.graph.output.append(helper.make_tensor_value_info("y", TP.FLOAT, ["N", 3, "H", 8]))
    model = nnrt.onnx.load(proto)
    assert model.input_info[0].shape == ("N", 3, "H", 8)
    assert model.output_info[0].shape == ("N", 3, "H", 8)
    assert str(model.input_info[0]) == "x: float32[N, 3, H, 8]"
    pinned = nnrt.onnx.load(proto, input_shapes={"x": [1, 3, 4, 8]})
    assert pinned.input_info[0].shape == (1, 3, 4, 8)


def test_input_shapes_may_leave_a_dim_unknown_with_zero() -> None:
    vi = helper.make_tensor_value_info("x", TP.FLOAT, ["batch", "t"])
    proto = _model([helper.make_node("Relu", ["x"], ["y"])], [vi], ["y"])
    model = nnrt.onnx.load(proto, input_shapes={"x": [0, 576]})
    assert model.operands[model.inputs[0]].dims == (0, 576)
    with pytest.raises(nnrt.BadData, match="dims must be positive"):
        nnrt.onnx.load(proto, input_shapes={"x": [-1, 576]})


@pytest.mark.parametrize("mode", ["constant", "reflect"])
def test_pad_of_a_known_axis_keeps_an_unknown_batch(mode: str) -> None:
    pads = numpy_helper.from_array(np.array([0, 3, 0, 2], np.int64), "pads")
    proto = _model([helper.make_node("Pad", ["x", "pads"], ["y"], mode=mode)],
                   [_x(dims=("N", 8))], ["y"])
    proto.graph.initializer.append(pads)
    model = _same_as_ort(proto, [{"x": _RNG.standard_normal((n, 8)).astype(np.float32)}
                                 for n in (1, 3)])
    assert model.operands[model.outputs[0]].dims[0] == 0


def test_reflect_pad_of_an_unknown_axis_is_checked_at_execution() -> None:
    pads = numpy_helper.from_array(np.array([2, 0, 1, 0], np.int64), "pads")
    proto = _model([helper.make_node("Pad", ["x", "pads"], ["y"], mode="reflect")],
                   [_x(dims=("N", 8))], ["y"])
    proto.graph.initializer.append(pads)
    model = _same_as_ort(proto, [{"x": _RNG.standard_normal((n, 8)).astype(np.float32)}
                                 for n in (3, 5)])
    with pytest.raises(nnrt.BadData):  # reflecting 2 rows needs at least 3
        nnrt.reference.run(model, [np.ones((2, 8), np.float32)])


def test_a_crop_of_an_unknown_axis_says_why() -> None:
    pads = numpy_helper.from_array(np.array([-1, 0, 0, 0], np.int64), "pads")
    proto = _model([helper.make_node("Pad", ["x", "pads"], ["y"])], [_x(dims=("N", 8))], ["y"])
    proto.graph.initializer.append(pads)
    with pytest.raises(nnrt.onnx.UnsupportedOnnxModel, match="need the input's dims known"):
        nnrt.onnx.load(proto)


@pytest.mark.parametrize("split", [None, [2, 6]])
def test_split_along_a_known_axis_keeps_an_unknown_batch(split: list[int] | None) -> None:
    inputs = ["x"]
    initializers = {}
    if split is not None:
        inputs.append("split")
        initializers["split"] = np.array(split, np.int64)
    proto = _model([helper.make_node("Split", inputs, ["a", "b"], axis=1)],
                   [_x(dims=("N", 8))], ["a", "b"], initializers)
    _same_as_ort(proto, [{"x": _RNG.standard_normal((n, 8)).astype(np.float32)}
                         for n in (1, 4)])


def test_lstm_with_an_unknown_batch_and_given_states() -> None:
    hidden, size = 5, 3
    w = (_RNG.standard_normal((1, 4 * hidden, size)) * 0.4).astype(np.float32)
    r = (_RNG.standard_normal((1, 4 * hidden, hidden)) * 0.4).astype(np.float32)
    node = helper.make_node("LSTM", ["x", "w", "r", "", "", "h0", "c0"], ["y", "h", "c"],
                            hidden_size=hidden)
    proto = _model([node], [_x(dims=(2, "N", size)), _x("h0", (1, "N", hidden)),
                            _x("c0", (1, "N", hidden))], ["y", "h", "c"], {"w": w, "r": r})
    feeds = [{"x": _RNG.standard_normal((2, n, size)).astype(np.float32),
              "h0": _RNG.standard_normal((1, n, hidden)).astype(np.float32),
              "c0": _RNG.standard_normal((1, n, hidden)).astype(np.float32)} for n in (1, 3)]
    _same_as_ort(proto, feeds)
    no_states = _model([helper.make_node("LSTM", ["x", "w", "r"], ["y"], hidden_size=hidden)],
                       [_x(dims=(2, "N", size))], ["y"], {"w": w, "r": r})
    with pytest.raises(nnrt.onnx.UnsupportedOnnxModel, match="initial_h and initial_c"):
        nnrt.onnx.load(no_states)


@pytest.mark.parametrize("to", [TP.FLOAT, TP.INT32, TP.INT64])
def test_cast_of_booleans_with_unknown_dims_fills_at_execution(to: int) -> None:
    nodes = [helper.make_node("Greater", ["x", "zero"], ["b"]),
             helper.make_node("Cast", ["b"], ["y"], to=to)]
    proto = _model(nodes, [_x(dims=("N", 5))], ["y"], {"zero": np.zeros((), np.float32)})
    _same_as_ort(proto, [{"x": _RNG.standard_normal((n, 5)).astype(np.float32)}
                         for n in (1, 3)])


def test_a_scalar_index_on_a_dynamic_axis_gathers_at_execution() -> None:
    nodes = [helper.make_node("Gather", ["x", "i"], ["y"], axis=0)]
    proto = _model(nodes, [_x(dims=("N", 4))], ["y"], {"i": np.array(0, np.int64)})
    _same_as_ort(proto, [{"x": _RNG.standard_normal((n, 4)).astype(np.float32)}
                         for n in (1, 3)])
