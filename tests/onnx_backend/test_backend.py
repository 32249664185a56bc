"""nnrt.onnx.backend: outputs in ONNX form, inputs bound at run time, run_node, and its errors;
onnxruntime is the oracle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto as TP  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

import nnrt.onnx.backend as backend_module  # noqa: E402
from nnrt.errors import BadData  # noqa: E402
from nnrt.onnx import UnsupportedOnnxModel  # noqa: E402
from nnrt.onnx.backend import NnrtBackend  # noqa: E402

Array = np.ndarray[Any, Any]


def _model(nodes: list[Any], inputs: list[Any], outputs: list[Any],
           initializers: list[Any] | None = None, opset: int = 17) -> Any:
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializers or [])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _ort(model: Any, feeds: dict[str, Array]) -> list[Array]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return list(session.run(None, feeds))


def _vi(name: str, elem: int, shape: list[Any]) -> Any:
    return helper.make_tensor_value_info(name, elem, shape)


def _argmax_and_sum() -> Any:
    """int64 and rank-0 outputs: ArgMax (keepdims 0) and a full ReduceSum."""
    nodes = [helper.make_node("ArgMax", ["x"], ["i"], axis=1, keepdims=0),
             helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0)]
    return _model(nodes, [_vi("x", TP.FLOAT, [2, 3])],
                  [_vi("i", TP.INT64, [2]), _vi("s", TP.FLOAT, [])])


def test_outputs_come_back_in_onnx_dtypes_and_shapes() -> None:
    model = _argmax_and_sum()
    x = np.array([[1, 5, 2], [7, 0, 3]], np.float32)
    rep = NnrtBackend.prepare(model)
    got = rep.run([x])
    want = _ort(model, {"x": x})
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-6)
    assert got["i"] is got[0] and got.s is got[1]
    assert rep.bound_inputs == () and rep.output_names == ["i", "s"]


def test_inputs_by_name_single_array_int64_and_rank_0() -> None:
    nodes = [helper.make_node("Add", ["a", "b"], ["c"])]
    model = _model(nodes, [_vi("a", TP.INT64, [3]), _vi("b", TP.INT64, [])],
                   [_vi("c", TP.INT64, [3])])
    a, b = np.array([1, -2, 3], np.int64), np.array(40, np.int64)
    rep = NnrtBackend.prepare(model)
    (by_name,) = rep.run({"b": b, "a": a})
    (by_order,) = rep.run([a, b])
    (want,) = _ort(model, {"a": a, "b": b})
    np.testing.assert_array_equal(by_name, want)
    np.testing.assert_array_equal(by_order, want)
    assert by_name.dtype == np.int64
    (y,) = NnrtBackend.prepare(_model([helper.make_node("Neg", ["x"], ["y"])],
                                      [_vi("x", TP.FLOAT, [2])],
                                      [_vi("y", TP.FLOAT, [2])])).run(np.ones(2, np.float32))
    np.testing.assert_array_equal(y, -np.ones(2, np.float32))


def test_an_int64_input_outside_int32_is_refused() -> None:
    model = _model([helper.make_node("Neg", ["x"], ["y"])], [_vi("x", TP.INT64, [2])],
                   [_vi("y", TP.INT64, [2])])
    with pytest.raises(BadData, match="out of range"):
        NnrtBackend.prepare(model).run([np.array([1, 2**40], np.int64)])


def _tile() -> Any:
    nodes = [helper.make_node("Tile", ["x", "repeats"], ["y"])]
    return _model(nodes, [_vi("x", TP.FLOAT, [2, 6]), _vi("repeats", TP.INT64, [2])],
                  [_vi("y", TP.FLOAT, [None, None])])


def _reshape() -> Any:
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["y"])]
    return _model(nodes, [_vi("x", TP.FLOAT, [2, 6]), _vi("shape", TP.INT64, [2])],
                  [_vi("y", TP.FLOAT, [None, None])])


def test_inputs_needed_at_import_are_bound_at_run() -> None:
    model = _tile()
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    rep = NnrtBackend.prepare(model)
    for repeats in ([1, 2], [1, 2], [3, 1]):
        feeds = {"x": x, "repeats": np.array(repeats, np.int64)}
        (got,) = rep.run(feeds)
        (want,) = _ort(model, feeds)
        np.testing.assert_array_equal(got, want)
        assert rep.bound_inputs == ("repeats",)
    assert rep.model is not None
    assert [rep.model.operands[i].name for i in rep.model.inputs] == ["x"]


def test_a_runtime_shape_is_an_input_of_the_model() -> None:
    rep = NnrtBackend.prepare(_reshape())  # Reshape takes its shape at execution
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    for shape in ([3, 4], [-1, 2]):
        (got,) = rep.run({"x": x, "shape": np.array(shape, np.int64)})
        np.testing.assert_array_equal(got, x.reshape(shape))
    assert rep.bound_inputs == ()


def test_a_bound_input_must_have_its_declared_type() -> None:
    rep = NnrtBackend.prepare(_tile())
    x = np.zeros((2, 6), np.float32)
    (y,) = rep.run([x, np.array([2, 1], np.int32)])  # exact integers convert
    assert y.shape == (4, 6)
    with pytest.raises(BadData, match="'repeats'"):
        rep.run([x, np.array([4.0, 3.5])])


def test_other_import_failures_raise_at_prepare() -> None:
    unknown = _model([helper.make_node("Reshape", ["x", "shape"], ["r"]),
                      helper.make_node("Einsum", ["r"], ["y"], equation="ij->ji")],
                     [_vi("x", TP.FLOAT, [2, 6]), _vi("shape", TP.INT64, [2])],
                     [_vi("y", TP.FLOAT, [None, None])])
    with pytest.raises(UnsupportedOnnxModel, match="Einsum"):
        NnrtBackend.prepare(unknown)
    doubles = _model([helper.make_node("Neg", ["x"], ["y"])], [_vi("x", TP.DOUBLE, [2])],
                     [_vi("y", TP.DOUBLE, [2])])
    with pytest.raises(UnsupportedOnnxModel, match="DOUBLE"):
        NnrtBackend.prepare(doubles)


def test_run_node_infers_or_takes_output_types() -> None:
    x = np.array([[3, 1, 2], [0, 5, 4]], np.float32)
    node = helper.make_node("TopK", ["x", "k"], ["values", "indices"], axis=1)
    k = np.array([2], np.int64)
    values, indices = NnrtBackend.run_node(node, [x, k])
    np.testing.assert_array_equal(values, [[3, 2], [5, 4]])
    np.testing.assert_array_equal(indices, [[0, 2], [1, 2]])
    assert indices.dtype == np.int64
    (y,) = backend_module.run_node(helper.make_node("Relu", ["x"], ["y"]), {"x": x - 2},
                                   outputs_info=[(np.dtype(np.float32), (2, 3))])
    np.testing.assert_array_equal(y, np.maximum(x - 2, 0))


def test_run_node_at_an_older_opset() -> None:
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    node = helper.make_node("Softmax", ["x"], ["y"], axis=1)
    (got,) = NnrtBackend.run_node(node, [x], opset_version=11)
    model = _model([node], [_vi("x", TP.FLOAT, [2, 3, 4])], [_vi("y", TP.FLOAT, [2, 3, 4])],
                   opset=11)
    (want,) = _ort(model, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_sources_devices_and_arguments(tmp_path: Path) -> None:
    model = _argmax_and_sum()
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    x = np.ones((2, 3), np.float32)
    for source in (model, model.SerializeToString(), path, str(path)):
        np.testing.assert_array_equal(NnrtBackend.run_model(source, [x])[1], np.float32(6))
    assert NnrtBackend.supports_device("CPU") and backend_module.supports_device("CPU")
    assert not NnrtBackend.supports_device("CUDA")
    assert not NnrtBackend.supports_device("TPU:0")
    with pytest.raises(ValueError, match="'CUDA'"):
        NnrtBackend.prepare(model, "CUDA")
    with pytest.raises(TypeError, match="bogus"):
        NnrtBackend.prepare(model, bogus=1)
    with pytest.raises(TypeError, match="list"):
        NnrtBackend.prepare([model])
    NnrtBackend.prepare(model, rtol=1e-3, atol=1e-7)  # what onnx's runner passes along


def test_input_shapes_reach_the_importer() -> None:
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", TP.FLOAT, ["n", 2])],
                   [_vi("y", TP.FLOAT, ["n", 2])])
    rep = NnrtBackend.prepare(model, input_shapes={"x": [3, 2]})
    assert rep.model is not None and rep.model.operands[rep.model.inputs[0]].dims == (3, 2)


def test_bad_inputs_name_what_is_wrong() -> None:
    rep = NnrtBackend.prepare(_argmax_and_sum())
    with pytest.raises(BadData, match=r"expected 1 inputs \['x'\], got 2"):
        rep.run([np.ones((2, 3), np.float32)] * 2)
    with pytest.raises(BadData, match=r"\['y'\] are not graph inputs, \['x'\] are missing"):
        rep.run({"y": np.ones((2, 3), np.float32)})
    with pytest.raises(TypeError, match="unexpected keyword"):
        rep.run([np.ones((2, 3), np.float32)], device="CPU")


def test_an_invalid_model_fails_the_onnx_checker() -> None:
    model = _argmax_and_sum()
    model.graph.node[0].input[0] = "missing"
    with pytest.raises(onnx.checker.ValidationError):
        NnrtBackend.prepare(model)


def test_initializers_listed_as_inputs_are_not_inputs() -> None:
    w = numpy_helper.from_array(np.full((2,), 3, np.float32), "w")
    model = _model([helper.make_node("Mul", ["x", "w"], ["y"])],
                   [_vi("x", TP.FLOAT, [2]), _vi("w", TP.FLOAT, [2])],
                   [_vi("y", TP.FLOAT, [2])], [w])
    rep = NnrtBackend.prepare(model)
    assert rep.input_names == ["x"]
    np.testing.assert_array_equal(rep.run([np.ones(2, np.float32)])[0], [3, 3])
