"""ONNX tensor and shape operators (``nnrt/onnx/ops/shape.py``, ``tensor.py``) against onnxruntime.

Every case is one ONNX node, run two ways: with its data as runtime graph inputs (the converter
emits NNAPI operations, run on the reference driver) and with its data as initializers (the
converter folds the node to a known value, no operation at all). Both must equal onnxruntime
exactly — these operators only move data. Each case runs on float32, int64 (the whole int32
range: NNAPI's float-only kernels carry integers as two exact float halves) and bool tensors;
where onnxruntime has no kernel for a type, the oracle is onnxruntime on float positions
(``arange``) mapped back onto the data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import nnrt.onnx  # noqa: E402
import nnrt.reference  # noqa: E402
from nnrt.model.types import OperationType as Op  # noqa: E402
from nnrt.onnx.graph import Graph, Value  # noqa: E402
from nnrt.onnx.importer import convert_nodes  # noqa: E402

Array = np.ndarray[Any, Any]

_TP = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float16): TensorProto.FLOAT16,
       np.dtype(np.int64): TensorProto.INT64, np.dtype(np.int32): TensorProto.INT32,
       np.dtype(np.bool_): TensorProto.BOOL}
_I64 = np.int64
_INT32 = np.iinfo(np.int32)


def _ints(*values: int) -> Array:
    return np.asarray(values, _I64)


@dataclass(frozen=True)
class Like:
    """A known tensor (initializer) of the case's data type."""

    shape: tuple[int, ...]


@dataclass
class Case:
    """One node: ``data`` are shapes of tensors of the case's dtype (runtime or folded);
    ``runtime`` are fixed-dtype inputs treated like data; ``params`` are always initializers
    (a Python scalar becomes a scalar of the data's dtype)."""

    op: str
    data: dict[str, tuple[int, ...]]
    params: dict[str, Any] = field(default_factory=dict)
    attrs: dict[str, Any] = field(default_factory=dict)
    opset: int = 17
    outputs: int = 1
    order: list[str] | None = None
    runtime: dict[str, Array] = field(default_factory=dict)
    float_only: bool = False  # the operator's opset types only floats
    empty_output: bool = False  # an output has no elements: no model can output it


def _data(shape: tuple[int, ...], dtype: Any, seed: int) -> Array:
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return np.asarray(rng.random(shape) > 0.5)
    if dtype == np.int64:
        x = rng.integers(_INT32.min, _INT32.max, shape, dtype=_I64, endpoint=True)
        x.reshape(-1)[:2] = [_INT32.min, _INT32.max][: x.size]
        return x
    return rng.standard_normal(shape).astype(dtype)


def _arrays(case: Case, dtype: Any) -> tuple[dict[str, Array], dict[str, Array]]:
    data = {k: _data(s, dtype, i) for i, (k, s) in enumerate(case.data.items())}
    data.update(case.runtime)
    params = {k: _data(v.shape, dtype, 10 + i) if isinstance(v, Like) else
              np.asarray(v, dtype) if np.isscalar(v) else v
              for i, (k, v) in enumerate(case.params.items())}
    return data, params


def _model(case: Case, data: dict[str, Array], params: dict[str, Array]) -> Any:
    order = case.order if case.order is not None else [*data, *params]
    inputs = [helper.make_tensor_value_info(k, _TP[v.dtype], v.shape) for k, v in data.items()]
    outputs = [helper.make_empty_tensor_value_info(f"y{i}") for i in range(case.outputs)]
    node = helper.make_node(case.op, order, [o.name for o in outputs], name="node", **case.attrs)
    graph = helper.make_graph([node], "g", inputs, outputs,
                              [numpy_helper.from_array(v, k) for k, v in params.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", case.opset)],
                             ir_version=8)


def _onnxruntime(model: Any, feeds: dict[str, Array]) -> list[Array]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return [np.asarray(y) for y in session.run(None, feeds)]


def _oracle(case: Case, data: dict[str, Array], params: dict[str, Array]) -> list[Array]:
    """onnxruntime's outputs; for a type it lacks, its outputs on float positions of the data
    (a padding constant becomes position -1), mapped back onto the data."""
    try:
        return _onnxruntime(_model(case, data, params), data)
    except Exception as exc:
        if "NOT_IMPLEMENTED" not in str(exc) or len(case.data) != 1:
            raise
    (name,) = case.data
    x = data[name]
    positions = {**data, name: np.arange(x.size, dtype=np.float32).reshape(x.shape)}
    like_data = [k for k, v in case.params.items() if np.isscalar(v)]
    fixed = {k: np.asarray(-1.0, np.float32) if k in like_data else v for k, v in params.items()}
    pad_value = params[like_data[0]] if like_data else None
    result = []
    for p in _onnxruntime(_model(case, positions, fixed), positions):
        picked = x.reshape(-1)[np.maximum(p, 0).astype(np.intp)]
        result.append(np.where(p < 0, pad_value, picked) if pad_value is not None else picked)
    return result


def _run_nnrt(case: Case, data: dict[str, Array], params: dict[str, Array]) -> list[Array]:
    model = nnrt.onnx.load(_model(case, data, params))
    # an ONNX scalar input is a [1] operand
    return _run_and_list(model, {k: v.reshape(v.shape or (1,)) for k, v in data.items()})


def _fold(case: Case, data: dict[str, Array], params: dict[str, Array]) -> list[Value]:
    """The node converted with every input known: its outputs, which must be known values."""
    model = _model(case, {}, {**data, **params})
    graph = Graph(case.opset)
    for k, v in {**data, **params}.items():
        graph.define(Value(k, v.dtype, v.shape, const=v))
    failed: list[Any] = []
    convert_nodes(graph, model.graph.node, case.opset, failed,
                  outputs=[o.name for o in model.graph.output])
    assert not failed, failed
    outputs = [graph.lookup(f"y{i}") for i in range(case.outputs)]
    assert all(v.known for v in outputs), "the node did not fold"
    assert not graph.builder.model.operations, "folding added operations"
    return outputs


def _same(got: Array, want: Array) -> None:
    assert got.size == want.size, (got.shape, want.shape)
    np.testing.assert_array_equal(got.reshape(want.shape).astype(want.dtype), want)


F32, I64, BOOL = np.dtype(np.float32), np.dtype(np.int64), np.dtype(np.bool_)

CASES: dict[str, Case] = {
    # -- shape.py ---------------------------------------------------------------------------
    "reshape_copy_and_infer": Case("Reshape", {"x": (2, 3, 4)}, {"s": _ints(4, 0, -1)}),
    "reshape_flat": Case("Reshape", {"x": (2, 3, 4)}, {"s": _ints(-1)}),
    "reshape_rank4": Case("Reshape", {"x": (2, 3, 4)}, {"s": _ints(2, 3, 1, 4)}),
    "reshape_to_scalar": Case("Reshape", {"x": (1, 1)}, {"s": np.zeros(0, _I64)}),
    "reshape_allowzero": Case("Reshape", {"x": (2, 3, 4)}, {"s": _ints(6, 4)},
                              {"allowzero": 1}, opset=14),
    "flatten_default": Case("Flatten", {"x": (2, 3, 4)}),
    "flatten_axis0": Case("Flatten", {"x": (2, 3, 4)}, attrs={"axis": 0}),
    "flatten_axis_last": Case("Flatten", {"x": (2, 3, 4)}, attrs={"axis": 3}),
    "flatten_axis_negative": Case("Flatten", {"x": (2, 3, 4)}, attrs={"axis": -1}),
    "squeeze_axes": Case("Squeeze", {"x": (1, 3, 1, 2)}, {"a": _ints(0, -2)}),
    "squeeze_all": Case("Squeeze", {"x": (1, 3, 1, 2)}),
    "squeeze_to_scalar": Case("Squeeze", {"x": (1, 1)}),
    "squeeze_opset11": Case("Squeeze", {"x": (1, 3, 1, 2)}, attrs={"axes": [2]}, opset=11),
    "unsqueeze": Case("Unsqueeze", {"x": (3, 2)}, {"a": _ints(0, 3)}),
    "unsqueeze_negative": Case("Unsqueeze", {"x": (3, 2)}, {"a": _ints(-1, 1)}),
    "unsqueeze_scalar": Case("Unsqueeze", {"x": ()}, {"a": _ints(0, 1)}),
    "unsqueeze_opset11": Case("Unsqueeze", {"x": (3, 2)}, attrs={"axes": [1]}, opset=11),
    "expand_new_dims": Case("Expand", {"x": (3, 1)}, {"s": _ints(2, 1, 4)}),
    "expand_two_way": Case("Expand", {"x": (1, 4)}, {"s": _ints(3, 1)}),
    "expand_same": Case("Expand", {"x": (3, 4)}, {"s": _ints(1, 4)}),
    # -- tensor.py --------------------------------------------------------------------------
    "transpose_default": Case("Transpose", {"x": (2, 3, 4)}),
    "transpose_perm": Case("Transpose", {"x": (2, 3, 4)}, attrs={"perm": [1, 0, 2]}),
    "transpose_4d": Case("Transpose", {"x": (2, 3, 4, 5)}, attrs={"perm": [0, 2, 3, 1]}),
    "transpose_unit_dims": Case("Transpose", {"x": (1, 3, 1, 4)}, attrs={"perm": [1, 0, 3, 2]}),
    "concat_axis1": Case("Concat", {"a": (2, 3, 4), "b": (2, 1, 4)}, attrs={"axis": 1}),
    "concat_with_known": Case("Concat", {"a": (2, 3)}, {"k": Like((2, 2)), "e": Like((2, 0))},
                              attrs={"axis": 1}),
    "concat_negative_axis": Case("Concat", {"a": (2, 3), "b": (2, 2), "c": (2, 1)},
                                 attrs={"axis": -1}),
    "split_equal": Case("Split", {"x": (2, 6)}, attrs={"axis": 1}, outputs=3),
    "split_sizes": Case("Split", {"x": (5, 2)}, {"s": _ints(1, 4)}, outputs=2),
    "split_zero_part": Case("Split", {"x": (5, 2)}, {"s": _ints(2, 0, 3)}, outputs=3,
                            empty_output=True),
    "split_opset11": Case("Split", {"x": (2, 5)}, attrs={"axis": -1, "split": [3, 2]},
                          opset=11, outputs=2),
    "split_num_outputs": Case("Split", {"x": (7, 2)}, attrs={"num_outputs": 3}, opset=18,
                              outputs=3),
    "slice_basic": Case("Slice", {"x": (4, 5)}, {"b": _ints(1, 0), "e": _ints(3, -1)}),
    "slice_axes_steps": Case("Slice", {"x": (4, 5, 6)},
                             {"b": _ints(1, -5), "e": _ints(2**63 - 1, 6),
                              "a": _ints(2, 0), "t": _ints(2, 3)}),
    "slice_negative_step": Case("Slice", {"x": (4, 5)},
                                {"b": _ints(-1, 3), "e": _ints(-2**63, 0),
                                 "a": _ints(0, 1), "t": _ints(-1, -2)}),
    "slice_negative_step_inner": Case("Slice", {"x": (6,)}, {"b": _ints(4), "e": _ints(1),
                                                             "a": _ints(0), "t": _ints(-2)}),
    "slice_opset9": Case("Slice", {"x": (4, 5)},
                         attrs={"starts": [1], "ends": [1000], "axes": [1]}, opset=9),
    "slice_clamped_starts": Case("Slice", {"x": (4, 5)}, {"b": _ints(-100, 2),
                                                          "e": _ints(100, 2**31)}),
    "gather_known_negative": Case("Gather", {"x": (3, 4)}, {"i": _ints(-1, 0, 2, -3)}),
    "gather_axis1_matrix": Case("Gather", {"x": (2, 3, 4)}, {"i": np.asarray([[0, -1], [2, 1]],
                                                                              _I64)},
                                attrs={"axis": 1}),
    "gather_scalar": Case("Gather", {"x": (3, 4)}, {"i": np.asarray(-2, _I64)},
                          attrs={"axis": -1}),
    "gather_scalar_to_scalar": Case("Gather", {"x": (5,)}, {"i": np.asarray(3, _I64)}),
    "gather_runtime_indices": Case("Gather", {"x": (4, 3)},
                                   runtime={"i": np.asarray([[-1, 0], [3, -4]], _I64)}),
    "gather_runtime_scalar": Case("Gather", {"x": (4, 3)}, attrs={"axis": 1},
                                  runtime={"i": np.asarray(-1, _I64)}),
    "gathernd": Case("GatherND", {"x": (2, 3, 4)}, {"i": np.asarray([[1, -1], [0, 2]], _I64)}),
    "gathernd_batch": Case("GatherND", {"x": (2, 3, 4)},
                           {"i": np.asarray([[[1]], [[-3]]], _I64)}, {"batch_dims": 1}),
    "gathernd_runtime": Case("GatherND", {"x": (2, 3)},
                             runtime={"i": np.asarray([[1, 2], [0, -1]], _I64)}),
    "tile": Case("Tile", {"x": (2, 3)}, {"r": _ints(2, 3)}),
    "tile_ones": Case("Tile", {"x": (2, 3)}, {"r": _ints(1, 1)}),
    "pad_constant": Case("Pad", {"x": (2, 3)}, {"p": _ints(1, 0, 2, 1), "v": 1}),
    "pad_constant_extreme": Case("Pad", {"x": (2, 3)}, {"p": _ints(0, 2, 1, 1), "v": -2**31}),
    "pad_constant_negative": Case("Pad", {"x": (3, 4)}, {"p": _ints(-1, 2, 1, -2)}),
    "pad_constant_axes": Case("Pad", {"x": (2, 3, 4)}, {"p": _ints(1, 2, 0, 1), "v": 0,
                                                        "a": _ints(-1, 0)},
                              order=["x", "p", "v", "a"], opset=18),
    "pad_opset10": Case("Pad", {"x": (2, 3)}, attrs={"pads": [0, 1, 1, 0], "value": 1.0},
                        opset=10, float_only=True),
    "pad_reflect": Case("Pad", {"x": (3, 4)}, {"p": _ints(2, 1, 0, 3)},
                        attrs={"mode": "reflect"}),
    "pad_reflect_crop": Case("Pad", {"x": (3, 5)}, {"p": _ints(-1, 2, 0, -1)},
                             attrs={"mode": "reflect"}),
    "pad_edge": Case("Pad", {"x": (2, 3)}, {"p": _ints(2, 1, 3, 2)}, attrs={"mode": "edge"}),
    "pad_edge_crop": Case("Pad", {"x": (3, 4)}, {"p": _ints(2, -1, -2, 3)},
                          attrs={"mode": "edge"}),
    "pad_wrap": Case("Pad", {"x": (2, 3)}, {"p": _ints(1, 4, 0, 2)}, attrs={"mode": "wrap"},
                     opset=19),
    "pad_wrap_crop": Case("Pad", {"x": (3, 4)}, {"p": _ints(0, -1, 0, 2)},
                          attrs={"mode": "wrap"}, opset=19),
    "depth_to_space_dcr": Case("DepthToSpace", {"x": (1, 8, 2, 3)}, attrs={"blocksize": 2}),
    "depth_to_space_crd": Case("DepthToSpace", {"x": (2, 8, 2, 3)},
                               attrs={"blocksize": 2, "mode": "CRD"}),
    "space_to_depth": Case("SpaceToDepth", {"x": (2, 2, 4, 6)}, attrs={"blocksize": 2}),
}


def _case(name: str, dtype: np.dtype[Any]) -> Case:
    case = CASES[name]
    if case.float_only and dtype != F32:
        pytest.skip(f"{case.op}-{case.opset} takes float tensors only")
    return case


@pytest.mark.parametrize("dtype", [F32, I64, BOOL], ids=str)
@pytest.mark.parametrize("name", sorted(CASES))
def test_runtime_matches_onnxruntime(name: str, dtype: np.dtype[Any]) -> None:
    case = _case(name, dtype)
    if case.empty_output:
        pytest.skip("NNAPI operands cannot have zero elements (the folded test covers it)")
    data, params = _arrays(case, dtype)
    want = _oracle(case, data, params)
    got = _run_nnrt(case, data, params)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        _same(g, w)


@pytest.mark.parametrize("dtype", [F32, I64, BOOL], ids=str)
@pytest.mark.parametrize("name", sorted(CASES))
def test_known_inputs_fold(name: str, dtype: np.dtype[Any]) -> None:
    case = _case(name, dtype)
    data, params = _arrays(case, dtype)
    want = _oracle(case, data, params)
    folded = _fold(case, data, params)
    for value, w in zip(folded, want, strict=True):
        assert value.const is not None
        assert value.shape == w.shape and value.const.dtype == w.dtype
        np.testing.assert_array_equal(value.const, w)


LOWERINGS = [
    ("reshape_copy_and_infer", F32, [Op.RESHAPE]),
    ("squeeze_to_scalar", F32, [Op.RESHAPE]),
    ("unsqueeze", I64, [Op.EXPAND_DIMS, Op.EXPAND_DIMS]),
    ("transpose_unit_dims", F32, [Op.RESHAPE]),
    ("transpose_perm", F32, [Op.TRANSPOSE]),
    ("expand_same", F32, [Op.CAST]),  # no operation: the model output copies its input
    ("expand_new_dims", F32, [Op.RESHAPE, Op.TILE]),
    ("split_equal", I64, [Op.SPLIT]),
    ("split_sizes", F32, [Op.SLICE, Op.SLICE]),
    ("slice_basic", I64, [Op.SLICE]),
    ("slice_negative_step", F32, [Op.STRIDED_SLICE]),
    ("gather_known_negative", I64, [Op.GATHER]),
    ("gather_runtime_indices", F32, [Op.LESS, Op.ADD, Op.SELECT, Op.GATHER]),
    ("tile_ones", F32, [Op.CAST]),
    ("pad_constant_negative", F32, [Op.SLICE, Op.PAD]),
    ("pad_constant", F32, [Op.PAD_V2]),
    ("pad_reflect", I64, [Op.MIRROR_PAD]),
    ("pad_edge", F32, [Op.GATHER, Op.GATHER]),
    ("depth_to_space_dcr", F32, [Op.DEPTH_TO_SPACE]),
    ("depth_to_space_crd", F32, [Op.GATHER, Op.DEPTH_TO_SPACE]),
    ("space_to_depth", F32, [Op.SPACE_TO_DEPTH]),
    # float-only kernels carry integers as two halves: split, move twice, join
    ("transpose_perm", I64, [Op.DIV, Op.MUL, Op.SUB, Op.CAST, Op.CAST, Op.TRANSPOSE,
                             Op.TRANSPOSE, Op.CAST, Op.MUL, Op.CAST, Op.ADD]),
    ("transpose_perm", BOOL, [Op.SELECT, Op.TRANSPOSE, Op.NOT_EQUAL]),
]


@pytest.mark.parametrize(("name", "dtype", "ops"), LOWERINGS,
                         ids=[f"{n}-{d}" for n, d, _ in LOWERINGS])
def test_lowering(name: str, dtype: np.dtype[Any], ops: list[Op]) -> None:
    """The NNAPI operations a runtime node becomes (no more than needed)."""
    case = CASES[name]
    data, params = _arrays(case, dtype)
    model = nnrt.onnx.load(_model(case, data, params))
    assert [op.type for op in model.operations] == ops


def test_float16_moves_exactly() -> None:
    case = Case("Pad", {"x": (2, 3)}, {"p": _ints(1, 0, -1, 2), "v": 1.5})
    data, params = _arrays(case, np.float16)
    for g, w in zip(_run_nnrt(case, data, params), _oracle(case, data, params), strict=True):
        _same(g, w)


# -- operators that always fold (shapes are known at import) ---------------------------------

FOLDED: dict[str, tuple[Case, list[Array]]] = {
    "shape": (Case("Shape", {"x": (2, 3, 4)}), [_ints(2, 3, 4)]),
    "shape_start_end": (Case("Shape", {"x": (2, 3, 4, 5)}, attrs={"start": 1, "end": -1},
                             opset=15), [_ints(3, 4)]),
    "shape_clipped": (Case("Shape", {"x": (2, 3)}, attrs={"start": -10, "end": 10},
                           opset=15), [_ints(2, 3)]),
    "size": (Case("Size", {"x": (2, 3, 4)}), [np.asarray(24, _I64)]),
    "range_int": (Case("Range", {}, {"a": np.asarray(10, _I64), "b": np.asarray(-3, _I64),
                                     "d": np.asarray(-4, _I64)}), [_ints(10, 6, 2, -2)]),
    "range_float": (Case("Range", {}, {"a": np.float32(0.1), "b": np.float32(2.0),
                                       "d": np.float32(0.3)}), []),
    "range_empty": (Case("Range", {}, {"a": np.asarray(5, np.int32),
                                       "b": np.asarray(1, np.int32),
                                       "d": np.asarray(2, np.int32)}), []),
    "constant_of_shape": (Case("ConstantOfShape", {}, {"s": _ints(2, 3)}),
                          [np.zeros((2, 3), np.float32)]),
    "constant_of_shape_int": (
        Case("ConstantOfShape", {}, {"s": _ints(4)},
             attrs={"value": numpy_helper.from_array(np.asarray([7], _I64))}),
        [np.full(4, 7, _I64)]),
    "constant_of_shape_scalar": (
        Case("ConstantOfShape", {}, {"s": np.zeros(0, _I64)},
             attrs={"value": numpy_helper.from_array(np.asarray([True]))}),
        [np.asarray(True)]),
}


@pytest.mark.parametrize("name", sorted(FOLDED))
def test_shape_operators_fold(name: str) -> None:
    case, expected = FOLDED[name]
    data, params = _arrays(case, F32)
    want = _onnxruntime(_model(case, data, params), data)
    for w, e in zip(want, expected, strict=False):
        np.testing.assert_array_equal(w, e)  # the case says what it tests
    for value, w in zip(_fold(case, data, params), want, strict=True):
        assert value.shape == w.shape and value.dtype == w.dtype
        np.testing.assert_array_equal(value.const, w)


def _flatten_model(scalar_index: bool) -> Any:
    """``x.view(x.shape[0], -1)`` as PyTorch exports it (``Gather`` by a scalar, then
    ``Unsqueeze``), or with a one-element index instead."""
    index = np.asarray(0 if scalar_index else [0], _I64)
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "index"], ["batch"], axis=0),
             helper.make_node("Concat", ["batch1", "minus1"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"])]
    if scalar_index:
        nodes.insert(2, helper.make_node("Unsqueeze", ["batch", "axes"], ["batch1"]))
    else:
        nodes[1].output[0] = "batch1"
    inits = [numpy_helper.from_array(index, "index"), numpy_helper.from_array(_ints(0), "axes"),
             numpy_helper.from_array(_ints(-1), "minus1")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, 4])],
        [helper.make_empty_tensor_value_info("y")], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("scalar_index", [False, True], ids=["vector_index", "scalar_index"])
def test_shape_subgraph_folds_to_one_reshape(scalar_index: bool) -> None:
    """The shape computation folds away: only the RESHAPE reaches the model."""
    proto = _flatten_model(scalar_index)
    model = nnrt.onnx.load(proto, input_shapes={"x": (2, 3, 4)})
    assert [op.type for op in model.operations] == [Op.RESHAPE]
    x = _data((2, 3, 4), np.float32, 0)
    (got,) = _run_and_list(model, {"x": x})
    _same(got, _onnxruntime(proto, {"x": x})[0])


def _run_and_list(model: Any, feeds: dict[str, Array]) -> list[Array]:
    got = nnrt.reference.run(model, feeds)
    return [np.asarray(v) for v in (got.values() if isinstance(got, dict) else got)]


# -- errors: the node, its operator and the reason ---------------------------------------------

ERRORS: dict[str, tuple[Case, str]] = {
    "tile_runtime_repeats": (Case("Tile", {"x": (2, 3)},
                                  runtime={"r": _ints(3, 2)}), r"repeats\) must be known"),
    "reshape_bad_count": (Case("Reshape", {"x": (2, 3)}, {"s": _ints(4, -1)}),
                          r"cannot hold the 6 elements"),
    "reshape_two_inferred": (Case("Reshape", {"x": (2, 3)}, {"s": _ints(-1, -1)}),
                             r"several -1"),
    "squeeze_non_unit": (Case("Squeeze", {"x": (1, 3)}, {"a": _ints(1)}),
                         r"cannot squeeze axis 1 of size 3"),
    "unsqueeze_repeated_axis": (Case("Unsqueeze", {"x": (3,)}, {"a": _ints(0, -3)}),
                                r"repeats an axis"),
    "expand_not_broadcastable": (Case("Expand", {"x": (3,)}, {"s": _ints(2, 4)}),
                                 r"does not broadcast"),
    "transpose_bad_perm": (Case("Transpose", {"x": (2, 3)}, attrs={"perm": [0, 0]}),
                           r"not a permutation"),
    "transpose_rank7": (Case("Transpose", {"x": (1, 2, 1, 2, 1, 1, 2)},
                             attrs={"perm": [6, 5, 4, 3, 2, 1, 0]}), r"TRANSPOSE.*rank"),
    "split_uneven": (Case("Split", {"x": (5,)}, outputs=2), r"cannot be split into 2 equal"),
    "split_bad_sizes": (Case("Split", {"x": (5,)}, {"s": _ints(2, 2)}, outputs=2),
                        r"does not cut a dim of 5"),
    "slice_zero_step": (Case("Slice", {"x": (4,)}, {"b": _ints(0), "e": _ints(4),
                                                    "a": _ints(0), "t": _ints(0)}),
                        r"steps\[0\] is 0"),
    "gather_out_of_range": (Case("Gather", {"x": (3, 2)}, {"i": _ints(3)}),
                            r"index 3 is out of range for axis 0 of size 3"),
    "gathernd_bad_indices": (Case("GatherND", {"x": (2, 3)}, {"i": _ints(0, 1, 2)}),
                             r"do not address data"),
    "tile_wrong_length": (Case("Tile", {"x": (2, 3)}, {"r": _ints(2)}),
                          r"one non-negative count per dim"),
    "pad_reflect_too_far": (Case("Pad", {"x": (3,)}, {"p": _ints(3, 0)},
                                 attrs={"mode": "reflect"}), r"cannot pad an axis of 3"),
    "pad_unknown_mode": (Case("Pad", {"x": (3,)}, {"p": _ints(1, 0)},
                              attrs={"mode": "mirror"}), r"mode 'mirror' is not supported"),
    "pad_crop_too_much": (Case("Pad", {"x": (3,)}, {"p": _ints(-2, -2)}),
                          r"remove more than input"),
    "depth_to_space_bad_mode": (Case("DepthToSpace", {"x": (1, 4, 1, 1)},
                                     attrs={"blocksize": 2, "mode": "XYZ"}),
                                r"mode 'XYZ'"),
    "space_to_depth_indivisible": (Case("SpaceToDepth", {"x": (1, 1, 3, 4)},
                                        attrs={"blocksize": 2}), r"does not divide"),
    "range_zero_delta": (Case("Range", {}, {"a": np.asarray(0, _I64), "b": np.asarray(3, _I64),
                                            "d": np.asarray(0, _I64)}), r"delta is 0"),
    "pad_axes_before_opset18": (Case("Pad", {"x": (2, 3)}, {"p": _ints(1, 1), "v": 0.0,
                                                            "a": _ints(0)},
                                     order=["x", "p", "v", "a"], opset=17),
                                r"input 3 \(axes\) exists from opset 18 on"),
    "squeeze_axes_input_opset11": (Case("Squeeze", {"x": (1, 3)}, {"a": _ints(0)}, opset=11),
                                   r"input 1 \(axes\) exists from opset 13 on"),
    "concat_without_axis": (Case("Concat", {"a": (2,), "b": (2,)}), r"attribute axis is required"),
    "range_not_scalar": (Case("Range", {}, {"a": _ints(0, 1), "b": np.asarray(3, _I64),
                                            "d": np.asarray(1, _I64)}),
                         r"must be scalars"),
    "unknown_attribute": (Case("Transpose", {"x": (2, 3)}, attrs={"perm": [1, 0],
                                                                  "colour": 3}),
                          r"attribute\(s\) colour not supported"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_unsupported_nodes_say_why(name: str) -> None:
    case, reason = ERRORS[name]
    data, params = _arrays(case, F32)
    with pytest.raises(nnrt.onnx.UnsupportedOnnxModel, match=rf"{case.op} node 'node': .*{reason}"):
        nnrt.onnx.load(_model(case, data, params))


def test_every_unsupported_node_is_reported() -> None:
    nodes = [helper.make_node("Tile", ["x", "s"], ["a"], name="first"),
             helper.make_node("Transpose", ["x"], ["b"], name="second", perm=[2, 0]),
             helper.make_node("Flatten", ["x"], ["c"], name="fine")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                     helper.make_tensor_value_info("s", TensorProto.INT64, [2])],
        [helper.make_empty_tensor_value_info(o) for o in "abc"])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    with pytest.raises(nnrt.onnx.UnsupportedOnnxModel) as info:
        nnrt.onnx.load(proto)
    assert [(n.op_type, n.name) for n in info.value.nodes] == [("Tile", "first"),
                                                               ("Transpose", "second")]
