"""nnrt.onnx.load: sources, inputs, weights in pools, external data, the unsupported-node report,
and the elementwise converters against onnxruntime."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto as TP  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

import nnrt.onnx  # noqa: E402
import nnrt.reference  # noqa: E402
from nnrt.errors import BadData  # noqa: E402
from nnrt.model.types import OperandLifetime  # noqa: E402

Array = np.ndarray[Any, Any]


def _model(nodes: list[Any], inputs: list[Any], outputs: list[Any],
           initializers: list[Any] | None = None, opset: int = 17) -> Any:
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializers or [])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _ort(model: Any, feeds: dict[str, Array]) -> list[Array]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return list(session.run(None, feeds))


def _nnrt(model: Any, feeds: dict[str, Array], **kw: Any) -> list[Array]:
    return list(nnrt.reference.run(nnrt.onnx.load(model, **kw), feeds))


def _vi(name: str, elem: int, shape: list[Any]) -> Any:
    return helper.make_tensor_value_info(name, elem, shape)


def _mlp() -> Any:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 4)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
             helper.make_node("Add", ["h", "b"], ["a"], name="add"),
             helper.make_node("Relu", ["a"], ["y"], name="relu")]
    return _model(nodes, [_vi("x", TP.FLOAT, ["batch", 8])], [_vi("y", TP.FLOAT, ["batch", 4])],
                  [w, b])


def test_sources_path_bytes_and_proto_agree(tmp_path: Path) -> None:
    proto = _mlp()
    path = tmp_path / "mlp.onnx"
    onnx.save(proto, str(path))
    x = np.random.default_rng(1).standard_normal((3, 8)).astype(np.float32)
    want = _ort(proto, {"x": x})[0]
    shapes = {"x": [3, 8]}
    for source in (proto, proto.SerializeToString(), path, str(path)):
        got = _nnrt(source, {"x": x}, input_shapes=shapes)[0]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_names_are_kept() -> None:
    model = nnrt.onnx.load(_mlp(), input_shapes={"x": [2, 8]})
    inputs = [model.operand(i) for i in model.inputs]
    outputs = [model.operand(i) for i in model.outputs]
    assert [o.name for o in inputs] == ["x"] and [o.name for o in outputs] == ["y"]
    assert inputs[0].dims == (2, 8)


def test_input_shapes_are_checked() -> None:
    with pytest.raises(BadData, match=r"input_shapes names \['nope'\]"):
        nnrt.onnx.load(_mlp(), input_shapes={"nope": [1, 8]})
    with pytest.raises(BadData, match=r"input_shapes\['x'\] = \[2, 9\] does not fit"):
        nnrt.onnx.load(_mlp(), input_shapes={"x": [2, 9]})
    with pytest.raises(BadData, match="dims must be positive"):
        nnrt.onnx.load(_mlp(), input_shapes={"x": [-1, 8]})


def test_bad_sources() -> None:
    with pytest.raises(BadData, match="not a valid ONNX model"):
        nnrt.onnx.load(b"\x08\x07garbage that is not protobuf \xff\xff\xff")
    with pytest.raises(BadData, match=r"expected a path, bytes or an onnx\.ModelProto"):
        nnrt.onnx.load(42)
    with pytest.raises(FileNotFoundError):
        nnrt.onnx.load("/nonexistent/model.onnx")


def test_every_unsupported_node_is_reported_at_once() -> None:
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="fine"),
             helper.make_node("Celu", ["a"], ["b"], name="no_converter"),
             helper.make_node("LeakyRelu", ["a"], ["c"], name="odd_attr", bogus=3),
             helper.make_node("Cast", ["a"], ["d"], name="to_double", to=TP.DOUBLE),
             helper.make_node("Relu", ["d"], ["e"], name="downstream")]
    model = _model(nodes, [_vi("x", TP.FLOAT, [2])],
                   [_vi("b", TP.FLOAT, [2]), _vi("c", TP.FLOAT, [2]), _vi("e", TP.DOUBLE, [2])])
    with pytest.raises(nnrt.onnx.UnsupportedOnnxModel) as info:
        nnrt.onnx.load(model)
    # an unknown operator is found before conversion; then the conversion failures
    names = {n.name for n in info.value.nodes}
    assert "no_converter" in names
    assert "Celu node 'no_converter': no converter for this operator" in str(info.value)
    del nodes[1]
    model = _model(nodes, [_vi("x", TP.FLOAT, [2])],
                   [_vi("c", TP.FLOAT, [2]), _vi("e", TP.DOUBLE, [2])])
    with pytest.raises(nnrt.onnx.UnsupportedOnnxModel) as info:
        nnrt.onnx.load(model)
    assert [(n.op_type, n.name) for n in info.value.nodes] == [
        ("LeakyRelu", "odd_attr"), ("Cast", "to_double")]  # not the downstream Relu
    assert "attribute(s) bogus not supported" in info.value.nodes[0].reason
    assert "cast to element type 11" in info.value.nodes[1].reason


def test_old_opsets_import_operators_defined_as_at_opset_7() -> None:
    same = _model([helper.make_node("Not", ["x"], ["y"])], [_vi("x", TP.BOOL, [2])],
                  [_vi("y", TP.BOOL, [2])], opset=1)  # Not is unchanged since opset 1
    np.testing.assert_array_equal(_nnrt(same, {"x": np.array([True, False])})[0],
                                  [False, True])
    changed = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", TP.FLOAT, [2])],
                     [_vi("y", TP.FLOAT, [2])], opset=5)  # Relu-1 had consumed_inputs
    with pytest.raises(nnrt.onnx.UnsupportedOnnxModel, match="differs from its opset-7"):
        nnrt.onnx.load(changed)
    helper_model = _model([], [], [], opset=1)
    helper_model.opset_import[0].version = 0
    with pytest.raises(nnrt.onnx.UnsupportedOnnxModel, match="opset 0 is outside"):
        nnrt.onnx.load(helper_model)


def test_newer_opsets_import_operators_that_only_gained_types() -> None:
    pool = _model([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
                  [_vi("x", TP.FLOAT, [1, 1, 4, 4])], [_vi("y", TP.FLOAT, [1, 1, 2, 2])],
                  opset=22)  # MaxPool-22 only added bfloat16
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    np.testing.assert_array_equal(_nnrt(pool, {"x": x})[0], [[[[5, 7], [13, 15]]]])
    changed = _model([helper.make_node("ReduceLogSum", ["x"], ["y"], keepdims=0)],
                     [_vi("x", TP.FLOAT, [4])], [_vi("y", TP.FLOAT, [])], opset=28)
    if onnx.defs.onnx_opset_version() >= 28:
        with pytest.raises(nnrt.onnx.UnsupportedOnnxModel, match="redefined at opset 28"):
            nnrt.onnx.load(changed)


def test_large_initializers_live_in_a_shared_memory_pool() -> None:
    w = numpy_helper.from_array(np.arange(64, dtype=np.float32), "w")
    small = numpy_helper.from_array(np.ones(1, np.float32), "small")
    proto = _model([helper.make_node("Add", ["x", "w"], ["a"]),
                    helper.make_node("Add", ["a", "small"], ["y"])],
                   [_vi("x", TP.FLOAT, [4, 16, 64])], [_vi("y", TP.FLOAT, [4, 16, 64])],
                   [w, small])
    model = nnrt.onnx.load(proto)
    refs = [o for o in model.operands if o.lifetime == OperandLifetime.CONSTANT_REFERENCE
            and o.location is not None]
    assert refs, "the 8x4 weight should be referenced from a pool"
    assert {o.location.memory.kind for o in refs} == {"memfd"}  # type: ignore[union-attr]


def test_external_data_is_mapped_not_copied(tmp_path: Path) -> None:
    proto = _mlp()
    onnx.save_model(proto, str(tmp_path / "m.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    model = nnrt.onnx.load(tmp_path / "m.onnx", input_shapes={"x": [2, 8]})
    kinds = {o.location.memory.kind for o in model.operands if o.location is not None}
    assert kinds == {"mmap_fd"}
    x = np.ones((2, 8), np.float32)
    np.testing.assert_allclose(nnrt.reference.run(model, {"x": x})[0],
                               _ort(_mlp(), {"x": x})[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("location", ["../outside.bin", "/etc/passwd", ""])
def test_external_data_must_stay_in_the_model_directory(tmp_path: Path, location: str) -> None:
    proto = _mlp()
    onnx.save_model(proto, str(tmp_path / "m.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    loaded = onnx.load(str(tmp_path / "m.onnx"), load_external_data=False)
    for t in loaded.graph.initializer:
        for entry in t.external_data:
            if entry.key == "location":
                entry.value = location
    onnx.save(loaded, str(tmp_path / "evil.onnx"))
    with pytest.raises(BadData, match="external data location"):
        nnrt.onnx.load(tmp_path / "evil.onnx")


def test_external_data_ranges_are_checked(tmp_path: Path) -> None:
    onnx.save_model(_mlp(), str(tmp_path / "m.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    loaded = onnx.load(str(tmp_path / "m.onnx"), load_external_data=False)
    for entry in loaded.graph.initializer[0].external_data:
        if entry.key == "offset":
            entry.value = str(10**6)
    onnx.save(loaded, str(tmp_path / "bad.onnx"))
    with pytest.raises(BadData, match="lie outside"):
        nnrt.onnx.load(tmp_path / "bad.onnx")


def test_int64_inputs_are_narrowed_with_a_range_check() -> None:
    model = _model([helper.make_node("Add", ["a", "b"], ["y"])],
                   [_vi("a", TP.INT64, [3]), _vi("b", TP.INT64, [3])], [_vi("y", TP.INT64, [3])])
    imported = nnrt.onnx.load(model)
    a = np.array([1, -2, 3], np.int64)
    b = np.array([10, 20, -30], np.int64)
    np.testing.assert_array_equal(nnrt.reference.run(imported, {"a": a, "b": b})[0], a + b)
    with pytest.raises(BadData, match="out of range"):
        nnrt.reference.run(imported, {"a": a + 2**40, "b": b})


# -- elementwise converters against onnxruntime ---------------------------------------------

_F = np.array([[-2.5, -1.5, -0.5, 0.0], [0.5, 1.5, 2.5, np.nan]], np.float32)
_P = np.array([[0.5, 1.0, 2.0, 3.0], [4.0, 0.25, 9.0, 16.0]], np.float32)
_I = np.array([[7, -7, 7, -7], [6, -6, 0, 5]], np.int64)
_J = np.array([[2, 2, -2, -2], [4, 4, 3, -3]], np.int64)

_UNARY_CASES = [("Sqrt", _P), ("Exp", _F), ("Log", _P), ("Tanh", _F), ("Sigmoid", _F),
                ("Abs", _F), ("Neg", _F), ("Floor", _F), ("Ceil", _F), ("Reciprocal", _P),
                ("Relu", _F), ("Sin", _F), ("IsNaN", _F), ("Abs", _I), ("Neg", _I)]


@pytest.mark.parametrize(("op", "x"), _UNARY_CASES, ids=[f"{o}-{x.dtype}" for o, x in
                                                         _UNARY_CASES])
def test_unary_matches_onnxruntime(op: str, x: Array) -> None:
    elem = TP.FLOAT if x.dtype == np.float32 else TP.INT64
    out_elem = TP.BOOL if op == "IsNaN" else elem
    model = _model([helper.make_node(op, ["x"], ["y"])], [_vi("x", elem, list(x.shape))],
                   [_vi("y", out_elem, list(x.shape))], opset=13)
    want = _ort(model, {"x": x})[0]
    got = _nnrt(model, {"x": x})[0]
    np.testing.assert_allclose(got.astype(want.dtype), want, rtol=1e-6, atol=1e-7)


_BINARY_CASES = [("Add", _F, _P), ("Sub", _F, _P[0]), ("Mul", _F, _P), ("Div", _F, _P),
                 ("Div", _I, _J), ("Mul", _I, _J), ("Pow", _P, _P[:, :1]),
                 ("Max", _F, _P), ("Min", _I, _J), ("Equal", _I, _J), ("Greater", _F, _P),
                 ("GreaterOrEqual", _I, _J), ("Less", _F, _P), ("LessOrEqual", _I, _J)]


@pytest.mark.parametrize(("op", "a", "b"), _BINARY_CASES,
                         ids=[f"{o}-{a.dtype}-{b.shape}" for o, a, b in _BINARY_CASES])
def test_binary_matches_onnxruntime(op: str, a: Array, b: Array) -> None:
    elem = TP.FLOAT if a.dtype == np.float32 else TP.INT64
    out_elem = TP.BOOL if op in ("Equal", "Greater", "GreaterOrEqual", "Less",
                                 "LessOrEqual") else elem
    shape = list(np.broadcast_shapes(a.shape, b.shape))
    model = _model([helper.make_node(op, ["a", "b"], ["y"])],
                   [_vi("a", elem, list(a.shape)), _vi("b", elem, list(b.shape))],
                   [_vi("y", out_elem, shape)])
    want = _ort(model, {"a": a, "b": b})[0]
    got = _nnrt(model, {"a": a, "b": b})[0]
    np.testing.assert_allclose(got.astype(want.dtype), want, rtol=1e-6, atol=1e-7)


def test_integer_division_truncates_like_onnx_when_folded() -> None:
    a = numpy_helper.from_array(_I, "a")
    b = numpy_helper.from_array(_J, "b")
    model = _model([helper.make_node("Div", ["a", "b"], ["q"]),
                    helper.make_node("Add", ["q", "x"], ["y"])],
                   [_vi("x", TP.INT64, [2, 4])], [_vi("y", TP.INT64, [2, 4])], [a, b])
    x = np.zeros((2, 4), np.int64)
    np.testing.assert_array_equal(_nnrt(model, {"x": x})[0], _ort(model, {"x": x})[0])


def test_activations_logic_where_cast_match_onnxruntime() -> None:
    cond = np.array([[True, False, True, False]])
    nodes = [helper.make_node("HardSigmoid", ["x"], ["hs"], alpha=0.3, beta=0.4),
             helper.make_node("LeakyRelu", ["x"], ["lr"], alpha=0.2),
             helper.make_node("Clip", ["x", "lo", "hi"], ["cl"]),
             helper.make_node("Erf", ["x"], ["erf"]),
             helper.make_node("Where", ["c", "x", "p"], ["wh"]),
             helper.make_node("Cast", ["x"], ["ci"], to=TP.INT32),
             helper.make_node("Cast", ["c"], ["cf"], to=TP.FLOAT),
             helper.make_node("Not", ["c"], ["nc"]),
             helper.make_node("And", ["c", "nc"], ["an"]),
             helper.make_node("Or", ["c", "nc"], ["o"]),
             helper.make_node("Xor", ["c", "c"], ["xo"]),
             helper.make_node("Max", ["x", "p", "lo"], ["mx"])]
    lo = numpy_helper.from_array(np.array(-1.0, np.float32), "lo")
    hi = numpy_helper.from_array(np.array(1.25, np.float32), "hi")
    outputs = [("hs", TP.FLOAT), ("lr", TP.FLOAT), ("cl", TP.FLOAT), ("erf", TP.FLOAT),
               ("wh", TP.FLOAT), ("ci", TP.INT32), ("cf", TP.FLOAT), ("nc", TP.BOOL),
               ("an", TP.BOOL), ("o", TP.BOOL), ("xo", TP.BOOL), ("mx", TP.FLOAT)]
    model = _model(nodes, [_vi("x", TP.FLOAT, [2, 4]), _vi("p", TP.FLOAT, [2, 4]),
                           _vi("c", TP.BOOL, [1, 4])],
                   [_vi(n, e, None) for n, e in outputs], [lo, hi], opset=13)
    x = np.where(np.isnan(_F), 0.75, _F).astype(np.float32)
    feeds = {"x": x, "p": _P, "c": cond}
    want = _ort(model, feeds)
    got = _nnrt(model, feeds)
    for (name, _), w, g in zip(outputs, want, got, strict=True):
        np.testing.assert_allclose(np.asarray(g).astype(w.dtype).reshape(w.shape), w,
                                   rtol=1e-6, atol=1e-7, err_msg=name)


def test_clip_attributes_before_opset_11() -> None:
    model = _model([helper.make_node("Clip", ["x"], ["y"], min=-0.5, max=0.5)],
                   [_vi("x", TP.FLOAT, [2, 4])], [_vi("y", TP.FLOAT, [2, 4])], opset=10)
    x = np.where(np.isnan(_F), 0.0, _F).astype(np.float32)
    np.testing.assert_array_equal(_nnrt(model, {"x": x})[0], _ort(model, {"x": x})[0])


def test_rank0_results_keep_rank0_shape() -> None:
    a = numpy_helper.from_array(np.array(3.0, np.float32), "a")
    model = _model([helper.make_node("Mul", ["x", "a"], ["y"])], [_vi("x", TP.FLOAT, [])],
                   [_vi("y", TP.FLOAT, [])], [a])
    got = _nnrt(model, {"x": np.array([2.0], np.float32)})[0]
    assert got.reshape(()) == 6.0


def test_an_input_that_must_be_known_is_flagged() -> None:
    model = _model([helper.make_node("Tile", ["x", "repeats"], ["y"], name="r"),
                    helper.make_node("Celu", ["x"], ["z"], name="c")],
                   [_vi("x", TP.FLOAT, [2, 3]), _vi("repeats", TP.INT64, [2])],
                   [_vi("y", TP.FLOAT, [4, 3])])
    del model.graph.node[1]  # an unknown operator would be reported before conversion
    with pytest.raises(nnrt.onnx.UnsupportedOnnxModel) as info:
        nnrt.onnx.load(model)
    (node,) = info.value.nodes
    assert node.needs_constant and "input 1 (repeats) must be known at import time" in node.reason
    bad_cast = _model([helper.make_node("Cast", ["x"], ["y"], to=TP.DOUBLE)],
                      [_vi("x", TP.FLOAT, [2])], [_vi("y", TP.DOUBLE, [2])])
    with pytest.raises(nnrt.onnx.UnsupportedOnnxModel) as info:
        nnrt.onnx.load(bad_cast)
    assert not info.value.nodes[0].needs_constant


def test_load_reports_its_progress_node_by_node() -> None:
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["a"], ["b"]),
             helper.make_node("Abs", ["b"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TP.FLOAT, [2])],
                   [helper.make_tensor_value_info("y", TP.FLOAT, [2])])
    seen: list[tuple[int, int]] = []
    loaded = nnrt.onnx.load(model, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(0, 3), (1, 3), (2, 3), (3, 3)]
    x = np.array([-1.0, 2.0], np.float32)
    np.testing.assert_array_equal(nnrt.reference.run(loaded, [x])[0], [0.0, 2.0])


def test_int64_inputs_and_outputs_stay_int64_for_callers() -> None:
    model = _model([helper.make_node("Add", ["a", "b"], ["y"])],
                   [helper.make_tensor_value_info("a", TP.INT64, [3]),
                    helper.make_tensor_value_info("b", TP.INT64, [3])],
                   [helper.make_tensor_value_info("y", TP.INT64, [3])])
    feeds = {"a": np.array([1, -2, 3], np.int64), "b": np.array([10, 20, 2**30], np.int64)}
    (expected,) = _ort(model, feeds)
    loaded = nnrt.onnx.load(model)
    assert [i.dtype for i in (*loaded.input_info, *loaded.output_info)] == [np.int64] * 3
    (got,) = nnrt.reference.run(loaded, feeds)
    assert got.dtype == expected.dtype == np.int64
    np.testing.assert_array_equal(got, expected)
