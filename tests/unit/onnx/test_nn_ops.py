"""ONNX neural-network operators (MatMul, Gemm, Conv, ConvTranspose, pools, normalisations,
Softmax, Resize) against onnxruntime, their refusals, and a small CNN through the runtime."""

from __future__ import annotations

from typing import Any

import anyio
import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import nnrt  # noqa: E402
import nnrt.onnx  # noqa: E402
import nnrt.reference  # noqa: E402
from nnrt.model.types import OperationType  # noqa: E402

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(1234)
_ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float16): TensorProto.FLOAT16,
         np.dtype(np.int64): TensorProto.INT64, np.dtype(np.int32): TensorProto.INT32}


def rand(*shape: int) -> Array:
    return RNG.standard_normal(shape).astype(np.float32)


def make(node: Any, inputs: dict[str, Array], consts: dict[str, Array] | None = None,
         opset: int = 17) -> Any:
    """A one-node model: ``inputs`` are graph inputs, ``consts`` initializers."""
    consts = consts or {}
    infos = [helper.make_tensor_value_info(k, _ELEM[v.dtype], list(v.shape))
             for k, v in inputs.items()]
    outputs = [onnx.ValueInfoProto(name=o) for o in node.output if o]
    graph = helper.make_graph([node], "g", infos, outputs,
                              [numpy_helper.from_array(v, k) for k, v in consts.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8)


def check(node: Any, inputs: dict[str, Array], consts: dict[str, Array] | None = None, *,
          opset: int = 17, rtol: float = 1e-4, atol: float = 1e-5) -> nnrt.Model:
    """Import and run ``node`` with nnrt's reference interpreter; compare with onnxruntime."""
    model_proto = make(node, inputs, consts, opset)
    session = ort.InferenceSession(model_proto.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    want = session.run(None, inputs)
    model = nnrt.onnx.load(model_proto)
    got = nnrt.reference.run(model, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        if w.ndim == 0:  # ONNX scalars travel in [1] operands
            g = g.reshape(())
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return model


def operations(model: nnrt.Model) -> list[OperationType]:
    return [op.type for op in model.operations]


def refused(node: Any, inputs: dict[str, Array], consts: dict[str, Array] | None = None, *,
            match: str, opset: int = 17) -> None:
    """The import fails naming the node (type and name) and saying why (``match``)."""
    node.name = "the_node"
    with pytest.raises(nnrt.onnx.UnsupportedOnnxModel, match=match) as info:
        nnrt.onnx.load(make(node, inputs, consts, opset))
    assert f"{node.op_type} node 'the_node'" in str(info.value)


def node(op: str, inputs: list[str], outputs: list[str] | None = None, **attrs: Any) -> Any:
    return helper.make_node(op, inputs, outputs or ["y"], **attrs)


# -- MatMul, Gemm ----------------------------------------------------------------------------


@pytest.mark.parametrize(("a", "b"), [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((4,), (4, 5)),
                                      ((2, 3, 4), (4,)), ((2, 1, 3, 4), (4, 6))])
def test_matmul_with_known_weights_is_one_fully_connected(a: tuple[int, ...],
                                                          b: tuple[int, ...]) -> None:
    model = check(node("MatMul", ["a", "b"]), {"a": rand(*a)}, {"b": rand(*b)})
    assert operations(model).count(OperationType.FULLY_CONNECTED) == 1
    assert OperationType.BATCH_MATMUL not in operations(model)


@pytest.mark.parametrize(("a", "b"), [((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)),
                                      ((2, 1, 3, 4), (5, 4, 6)), ((4,), (2, 4, 3)),
                                      ((2, 3, 4), (4,)), ((4,), (4,)), ((3, 2, 3, 4), (4, 2)),
                                      ((3, 4), (2, 2, 4, 5))])
def test_matmul_of_runtime_operands_broadcasts_like_numpy(a: tuple[int, ...],
                                                          b: tuple[int, ...]) -> None:
    check(node("MatMul", ["a", "b"]), {"a": rand(*a), "b": rand(*b)})


def test_matmul_of_known_operands_folds() -> None:
    model = check(node("MatMul", ["a", "b"]), {}, {"a": rand(2, 3), "b": rand(3, 2)})
    assert not {OperationType.FULLY_CONNECTED, OperationType.BATCH_MATMUL} & set(
        operations(model))


def test_matmul_of_rank_7_runtime_operands_is_refused() -> None:
    refused(node("MatMul", ["a", "b"]), {"a": rand(2, 1, 2, 1, 2, 2, 3)}, {"b": rand(2, 3, 2)},
            match=r"RESHAPE takes rank ≤ 6")


def test_matmul_of_rank_5_operands_imports() -> None:
    check(node("MatMul", ["a", "b"]), {"a": rand(2, 1, 2, 2, 3), "b": rand(2, 1, 2, 3, 2)}, {})


@pytest.mark.parametrize("c_shape", [None, (), (1,), (5,), (1, 5), (3, 1), (3, 5)])
@pytest.mark.parametrize(("trans_a", "trans_b"), [(0, 0), (1, 1)])
def test_gemm_with_known_weights_and_unit_factors(c_shape: tuple[int, ...] | None, trans_a: int,
                                                  trans_b: int) -> None:
    consts = {"b": rand(5, 4) if trans_b else rand(4, 5)}
    names = ["a", "b"]
    if c_shape is not None:
        consts["c"] = rand(*c_shape)
        names.append("c")
    a = rand(4, 3) if trans_a else rand(3, 4)
    model = check(node("Gemm", names, transA=trans_a, transB=trans_b), {"a": a}, consts)
    assert OperationType.FULLY_CONNECTED in operations(model)


@pytest.mark.parametrize(("alpha", "beta"), [(0.5, 1.0), (1.0, 2.0), (-1.5, 0.25), (1.0, 0.0)])
@pytest.mark.parametrize("runtime_c", [False, True])
def test_gemm_scaled_is_exact(alpha: float, beta: float, runtime_c: bool) -> None:
    inputs = {"a": rand(3, 4), "b": rand(5, 4)}
    consts: dict[str, Array] = {}
    (inputs if runtime_c else consts)["c"] = rand(3, 5)
    check(node("Gemm", ["a", "b", "c"], alpha=alpha, beta=beta, transB=1), inputs, consts)


def test_gemm_runtime_c_with_known_weights_is_added() -> None:
    check(node("Gemm", ["a", "b", "c"], transA=1), {"a": rand(4, 3), "c": rand(3, 1)},
          {"b": rand(4, 2)})


def test_gemm_needs_matrices() -> None:
    refused(node("Gemm", ["a", "b"]), {"a": rand(2, 3, 4)}, {"b": rand(4, 5)},
            match="A and B must be 2-D")


def test_runtime_integer_matmul_is_refused() -> None:
    ints = np.ones((2, 2), np.int64)
    refused(node("MatMul", ["a", "b"]), {"a": ints}, {"b": ints},
            match="int64 input 'a' is not supported")


# -- Conv ------------------------------------------------------------------------------------


@pytest.mark.parametrize("attrs", [
    {},
    {"pads": [1, 1, 1, 1]},
    {"pads": [0, 1, 2, 1], "strides": [2, 1]},
    {"strides": [2, 2], "dilations": [2, 1], "pads": [1, 2, 1, 0]},
    {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
    {"auto_pad": "SAME_LOWER", "strides": [2, 3]},
    {"auto_pad": "VALID", "strides": [1, 2]},
    {"pads": [3, 3, 4, 4]},  # beyond the filter: an explicit PAD first
])
def test_conv_2d(attrs: dict[str, Any]) -> None:
    check(node("Conv", ["x", "w", "b"], kernel_shape=[3, 3], **attrs), {"x": rand(2, 3, 7, 8)},
          {"w": rand(4, 3, 3, 3), "b": rand(4)})


@pytest.mark.parametrize(("group", "out", "op"), [
    (1, 6, OperationType.CONV_2D), (6, 6, OperationType.DEPTHWISE_CONV_2D),
    (6, 12, OperationType.DEPTHWISE_CONV_2D), (3, 6, OperationType.GROUPED_CONV_2D),
    (2, 4, OperationType.GROUPED_CONV_2D)])
def test_conv_groups_choose_the_nnapi_operation(group: int, out: int, op: OperationType) -> None:
    model = check(node("Conv", ["x", "w", "b"], group=group, pads=[1, 0, 1, 2]),
                  {"x": rand(1, 6, 5, 6)}, {"w": rand(out, 6 // group, 3, 2), "b": rand(out)})
    assert op in operations(model)


def test_grouped_dilated_conv_runs_per_group() -> None:
    model = check(node("Conv", ["x", "w"], group=2, dilations=[2, 2], pads=[2, 2, 2, 2]),
                  {"x": rand(1, 4, 7, 7)}, {"w": rand(6, 2, 3, 3)})
    assert operations(model).count(OperationType.CONV_2D) == 2
    model = check(node("Conv", ["x", "w"], group=4, dilations=[2, 1], strides=[1, 2]),
                  {"x": rand(1, 4, 7, 7)}, {"w": rand(8, 1, 3, 3)})
    assert operations(model) == [OperationType.DEPTHWISE_CONV_2D]


def test_conv_1d_without_bias() -> None:
    check(node("Conv", ["x", "w"], strides=[2], pads=[1, 2], dilations=[2]),
          {"x": rand(2, 3, 11)}, {"w": rand(5, 3, 3)})


def test_conv_with_runtime_weights_transposes_them() -> None:
    model = check(node("Conv", ["x", "w", "b"], pads=[1, 1, 1, 1]),
                  {"x": rand(1, 2, 5, 5), "w": rand(3, 2, 3, 3), "b": rand(3)})
    assert OperationType.TRANSPOSE in operations(model)


def test_conv_3d_is_refused() -> None:
    refused(node("Conv", ["x", "w"]), {"x": rand(1, 1, 3, 3, 3)}, {"w": rand(1, 1, 2, 2, 2)},
            match="only 1-D and 2-D Conv")


def test_conv_refusals() -> None:
    refused(node("Conv", ["x", "w"], kernel_shape=[2, 2]), {"x": rand(1, 1, 4, 4)},
            {"w": rand(1, 1, 3, 3)}, match=r"kernel_shape \[2, 2\] differs")
    refused(node("Conv", ["x", "w"], group=2), {"x": rand(1, 3, 4, 4)},
            {"w": rand(2, 1, 3, 3)}, match="group 2 does not fit input channels 3")
    refused(node("Conv", ["x", "w"], auto_pad="SAME"), {"x": rand(1, 1, 4, 4)},
            {"w": rand(1, 1, 3, 3)}, match="auto_pad 'SAME' is not one of")
    refused(node("Conv", ["x", "w"]), {"x": np.ones((1, 1, 3, 3), np.int32)},
            {"w": np.ones((1, 1, 2, 2), np.int32)}, match="int32 input 'x' is not supported")


@pytest.mark.parametrize(("op", "attrs"), [("Conv", {"pads": [1, 1, 1, 1]}),
                                           ("ConvTranspose", {"strides": [2, 2]})])
def test_float16_convolutions(op: str, attrs: dict[str, Any]) -> None:
    x = rand(1, 2, 5, 5).astype(np.float16)
    w = rand(2, 2, 3, 3).astype(np.float16)
    check(node(op, ["x", "w"], **attrs), {"x": x}, {"w": w}, rtol=1e-2, atol=1e-2)


# -- ConvTranspose ---------------------------------------------------------------------------


@pytest.mark.parametrize("attrs", [
    {},
    {"strides": [2, 2]},
    {"strides": [3, 2], "pads": [1, 0, 2, 1]},
    {"strides": [2, 2], "output_padding": [1, 1]},
    {"strides": [2, 3], "output_shape": [9, 10]},
    {"strides": [2, 2], "output_shape": [10, 8]},
    {"strides": [2, 2], "output_shape": [7, 8], "auto_pad": "SAME_UPPER"},
    {"strides": [2, 2], "auto_pad": "SAME_UPPER"},
    {"strides": [3, 2], "auto_pad": "SAME_LOWER"},
    {"strides": [2, 1], "auto_pad": "VALID", "output_padding": [1, 0]},
])
def test_conv_transpose_2d(attrs: dict[str, Any]) -> None:
    check(node("ConvTranspose", ["x", "w", "b"], **attrs), {"x": rand(2, 3, 4, 5)},
          {"w": rand(3, 2, 3, 3), "b": rand(2)})


def test_conv_transpose_1d_groups_and_runtime_weights() -> None:
    check(node("ConvTranspose", ["x", "w"], strides=[2], pads=[1, 0]), {"x": rand(1, 2, 5)},
          {"w": rand(2, 3, 3)})
    model = check(node("ConvTranspose", ["x", "w", "b"], group=2, strides=[2, 2]),
                  {"x": rand(1, 4, 3, 3), "w": rand(4, 3, 2, 2), "b": rand(6)})
    assert operations(model).count(OperationType.TRANSPOSE_CONV_2D) == 2


def test_dilated_conv_transpose_is_refused() -> None:
    refused(node("ConvTranspose", ["x", "w"], dilations=[2, 2]), {"x": rand(1, 1, 3, 3)},
            {"w": rand(1, 1, 2, 2)}, match="dilations")


# -- pooling ---------------------------------------------------------------------------------


POOL_ATTRS = [
    {"kernel_shape": [2, 2]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [3, 2], "strides": [2, 3], "pads": [1, 0, 2, 1], "ceil_mode": 1},
    {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
    {"kernel_shape": [2, 3], "strides": [3, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1},
    {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"},
    {"kernel_shape": [2, 2], "strides": [2, 2], "auto_pad": "SAME_LOWER"},
    {"kernel_shape": [2, 2], "dilations": [2, 2], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [3, 2], "dilations": [2, 3], "strides": [2, 1], "ceil_mode": 1},
]


@pytest.mark.parametrize("attrs", POOL_ATTRS)
def test_max_pool(attrs: dict[str, Any]) -> None:
    check(node("MaxPool", ["x"], **attrs), {"x": rand(2, 3, 7, 8)})


@pytest.mark.parametrize("include_pad", [0, 1])
@pytest.mark.parametrize("attrs", POOL_ATTRS)
def test_average_pool(attrs: dict[str, Any], include_pad: int) -> None:
    check(node("AveragePool", ["x"], count_include_pad=include_pad, **attrs),
          {"x": rand(2, 3, 7, 8)}, opset=19)


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_pool_1d(op: str) -> None:
    check(node(op, ["x"], kernel_shape=[3], strides=[2], pads=[1, 1], ceil_mode=1),
          {"x": rand(2, 3, 10)})


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 4, 5)])
def test_global_pools(op: str, shape: tuple[int, ...]) -> None:
    check(node(op, ["x"]), {"x": rand(*shape)})


def test_pool_refusals() -> None:
    x = {"x": rand(1, 1, 4, 4)}
    refused(node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2]), x,
            match="Indices output is not supported")
    refused(node("MaxPool", ["x"], kernel_shape=[2, 2, 2]), {"x": rand(1, 1, 3, 3, 3)},
            match="only 1-D and 2-D pooling")
    refused(node("AveragePool", ["x"], kernel_shape=[2, 2], pads=[2, 0, 0, 0]), x,
            match="must be smaller than the kernel")
    refused(node("GlobalMaxPool", ["x"]), {"x": rand(1, 1, 2, 2, 2)}, match="rank 3 or 4")


# -- BatchNormalization ----------------------------------------------------------------------


def bn_params(channels: int) -> dict[str, Array]:
    return {"s": rand(channels), "b": rand(channels), "m": rand(channels),
            "v": (RNG.random(channels) + 0.5).astype(np.float32)}


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (2, 3, 4, 5)])
@pytest.mark.parametrize("opset", [9, 14, 15])
def test_batch_normalization_with_known_statistics_is_mul_add(shape: tuple[int, ...],
                                                              opset: int) -> None:
    model = check(node("BatchNormalization", ["x", "s", "b", "m", "v"], epsilon=1e-3),
                  {"x": rand(*shape)}, bn_params(3), opset=opset)
    assert operations(model) == [OperationType.MUL, OperationType.ADD]


def test_batch_normalization_with_runtime_statistics() -> None:
    check(node("BatchNormalization", ["x", "s", "b", "m", "v"], momentum=0.8),
          {"x": rand(2, 3, 4, 4), **bn_params(3)})


def test_batch_normalization_opset_7_per_position_statistics() -> None:
    params = {k: v.reshape(3, 1, 1) * np.ones((3, 2, 2), np.float32)
              for k, v in bn_params(3).items()}
    model_proto = make(node("BatchNormalization", ["x", "s", "b", "m", "v"], spatial=0),
                       {"x": rand(2, 3, 2, 2)}, params, opset=7)
    x = rand(2, 3, 2, 2)
    got = nnrt.reference.run(nnrt.onnx.load(model_proto), {"x": x})[0]
    want = ((x - params["m"]) / np.sqrt(params["v"] + 1e-5) * params["s"] + params["b"])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_batch_normalization_training_is_refused() -> None:
    refused(node("BatchNormalization", ["x", "s", "b", "m", "v"], training_mode=1),
            {"x": rand(2, 3)}, bn_params(3), match="training_mode")
    refused(node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"]),
            {"x": rand(2, 3)}, bn_params(3), match="training")


# -- LayerNormalization, InstanceNormalization ------------------------------------------------


@pytest.mark.parametrize(("shape", "axis"), [((2, 5), -1), ((2, 3, 4), 1), ((2, 3, 4), -1),
                                             ((2, 3, 2, 4), 0)])
def test_layer_normalization(shape: tuple[int, ...], axis: int) -> None:
    tail = shape[axis:]
    check(node("LayerNormalization", ["x", "s", "b"], axis=axis, epsilon=1e-3),
          {"x": rand(*shape)}, {"s": rand(*tail), "b": rand(*tail)})


def test_layer_normalization_statistics_outputs_and_no_bias() -> None:
    check(node("LayerNormalization", ["x", "s"], ["y", "mean", "inv"], axis=1),
          {"x": rand(2, 3, 4)}, {"s": rand(3, 4)})


def test_layer_normalization_stash_type_0_is_refused() -> None:
    refused(node("LayerNormalization", ["x", "s"], stash_type=0), {"x": rand(2, 3)},
            {"s": rand(3)}, match="stash_type 0")


@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 4, 5)])
@pytest.mark.parametrize("runtime_params", [False, True])
def test_instance_normalization(shape: tuple[int, ...], runtime_params: bool) -> None:
    params = {"s": rand(3), "b": rand(3)}
    inputs = {"x": rand(*shape), **(params if runtime_params else {})}
    check(node("InstanceNormalization", ["x", "s", "b"], epsilon=1e-4), inputs,
          None if runtime_params else params)


# -- Softmax, LogSoftmax ---------------------------------------------------------------------


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize(("opset", "axis"), [(11, None), (11, 0), (11, 2), (11, -1), (13, None),
                                             (13, 1), (13, -3)])
def test_softmax_axis_by_opset(op: str, opset: int, axis: int | None) -> None:
    attrs = {} if axis is None else {"axis": axis}
    check(node(op, ["x"], **attrs), {"x": rand(2, 3, 4)}, opset=opset)


def test_log_softmax_rank_5() -> None:
    check(node("LogSoftmax", ["x"], axis=2), {"x": rand(2, 1, 3, 2, 2)}, opset=13)


def test_softmax_refusals() -> None:
    refused(node("Softmax", ["x"]), {"x": np.ones((2, 2), np.int32)},
            match="int32 input 'x' is not supported")
    refused(node("Softmax", ["x"]), {"x": rand(2, 1, 3, 1, 1, 2, 2)}, match="rank ≤ 6")
    check(node("Softmax", ["x"], axis=2), {"x": rand(2, 1, 3, 2, 2)}, {})


# -- Resize ----------------------------------------------------------------------------------


def resize_inputs(scales: list[float] | None = None, sizes: list[int] | None = None,
                  roi: list[float] | None = None) -> tuple[list[str], dict[str, Array]]:
    consts = {"roi": np.asarray(roi or [], np.float32),
              "scales": np.asarray(scales or [], np.float32)}
    names = ["x", "roi", "scales"]
    if sizes is not None:
        consts["sizes"] = np.asarray(sizes, np.int64)
        names.append("sizes")
    return names, consts


COORDINATES = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
               "tf_half_pixel_for_nn"]


@pytest.mark.parametrize("coordinates", COORDINATES)
@pytest.mark.parametrize("nearest", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
@pytest.mark.parametrize("target", [{"scales": [1, 1, 2, 3]}, {"scales": [1, 1, 0.5, 0.5]},
                                    {"sizes": [1, 2, 7, 3]}])
def test_resize_nearest(coordinates: str, nearest: str, target: dict[str, Any]) -> None:
    names, consts = resize_inputs(**target)
    check(node("Resize", names, mode="nearest", coordinate_transformation_mode=coordinates,
               nearest_mode=nearest), {"x": rand(1, 2, 4, 6)}, consts, opset=13)


@pytest.mark.parametrize("coordinates", [*COORDINATES[:4], "half_pixel_symmetric"])
@pytest.mark.parametrize("target", [{"scales": [1, 1, 2, 1.5]}, {"scales": [1, 1, 0.6, 0.5]},
                                    {"sizes": [1, 2, 9, 4]}, {"sizes": [1, 2, 1, 1]}])
def test_resize_linear(coordinates: str, target: dict[str, Any]) -> None:
    names, consts = resize_inputs(**target)
    check(node("Resize", names, mode="linear", coordinate_transformation_mode=coordinates),
          {"x": rand(1, 2, 4, 6)}, consts, opset=19)


@pytest.mark.parametrize(("coordinates", "mode", "op"), [
    ("asymmetric", "nearest", OperationType.RESIZE_NEAREST_NEIGHBOR),
    ("half_pixel", "linear", OperationType.RESIZE_BILINEAR),
    ("align_corners", "linear", OperationType.RESIZE_BILINEAR),
    ("pytorch_half_pixel", "linear", OperationType.RESIZE_BILINEAR)])
def test_resize_uses_nnapi_where_its_flags_match(coordinates: str, mode: str,
                                                 op: OperationType) -> None:
    names, consts = resize_inputs(scales=[1, 1, 2, 2])
    model = check(node("Resize", names, mode=mode, coordinate_transformation_mode=coordinates,
                       nearest_mode="floor"), {"x": rand(1, 2, 3, 4)}, consts, opset=13)
    assert operations(model) == [op]


@pytest.mark.parametrize("exclude_outside", [0, 1])
@pytest.mark.parametrize("coordinates", ["half_pixel", "align_corners", "asymmetric"])
@pytest.mark.parametrize("scales", [[1, 1, 2, 1.5], [1, 1, 0.8, 0.5]])
def test_resize_cubic(exclude_outside: int, coordinates: str, scales: list[float]) -> None:
    names, consts = resize_inputs(scales=scales)
    check(node("Resize", names, mode="cubic", coordinate_transformation_mode=coordinates,
               exclude_outside=exclude_outside, cubic_coeff_a=-0.5),
          {"x": rand(1, 2, 5, 6)}, consts, opset=13)


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_resize_tf_crop_and_resize(mode: str) -> None:
    names, consts = resize_inputs(sizes=[1, 1, 3, 5], roi=[0, 0, 0.2, -0.3, 1, 1, 0.7, 1.4])
    check(node("Resize", names, mode=mode, coordinate_transformation_mode="tf_crop_and_resize",
               extrapolation_value=7.5), {"x": rand(1, 1, 5, 6)}, consts, opset=13)


@pytest.mark.parametrize("policy", ["stretch", "not_larger", "not_smaller"])
@pytest.mark.parametrize("axes", [[2, 3], [3, 2]])
def test_resize_axes_and_aspect_ratio(policy: str, axes: list[int]) -> None:
    names, consts = resize_inputs(sizes=[7, 5])
    check(node("Resize", names, mode="nearest", axes=axes, keep_aspect_ratio_policy=policy),
          {"x": rand(1, 2, 3, 4)}, consts, opset=18)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("scales", [[1, 1, 2, 3], [1, 1, 0.5, 0.75]])
def test_resize_opset_10_and_upsample(mode: str, scales: list[float]) -> None:
    consts = {"scales": np.asarray(scales, np.float32)}
    check(node("Resize", ["x", "scales"], mode=mode), {"x": rand(1, 2, 4, 4)}, consts,
          opset=10)
    if min(scales) >= 1:
        check(node("Upsample", ["x", "scales"], mode=mode), {"x": rand(1, 2, 4, 4)}, consts,
              opset=9)


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("scales", [[1, 1, 0.6, 0.3], [1, 1, 0.5, 2]])
def test_resize_antialias(mode: str, scales: list[float]) -> None:
    names, consts = resize_inputs(scales=scales)
    check(node("Resize", names, mode=mode, antialias=1), {"x": rand(1, 2, 6, 10)}, consts,
          opset=18)


def test_resize_refusals() -> None:
    x = {"x": rand(1, 1, 4, 4)}
    names, consts = resize_inputs(scales=[1, 1, 0.5, 0.5])
    refused(node("Resize", ["x", "roi", "scales"]), {**x, "scales": np.ones(4, np.float32)},
            {"roi": np.zeros(0, np.float32)}, opset=13, match=r"input 2 \(scales\) must be known")
    refused(node("Resize", names, mode="nearest", nearest_mode="simple"), x, consts, opset=13,
            match="nearest_mode 'simple'")
    refused(node("Resize", names, mode="nearest", antialias=1), x, consts, opset=18,
            match="antialias applies to linear and cubic modes only")


# -- an unknown batch dim ---------------------------------------------------------------------


@pytest.mark.parametrize(("op", "shape", "attrs", "consts"), [
    ("Conv", (2, 3, 6), {"pads": [1, 1]}, {"w": rand(4, 3, 3)}),
    ("Conv", (2, 3, 6, 6), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}, {"w": rand(4, 3, 3, 3)}),
    ("ConvTranspose", (2, 3, 4, 4), {"strides": [2, 2]}, {"w": rand(3, 2, 3, 3)}),
    ("MaxPool", (2, 3, 5, 5), {"kernel_shape": [2, 2], "dilations": [2, 2]}, {}),
    ("AveragePool", (2, 3, 5), {"kernel_shape": [3], "pads": [1, 1], "ceil_mode": 1}, {}),
    ("MatMul", (2, 5, 4), {}, {"w": rand(4, 3)}),
    ("Softmax", (2, 3, 4), {"axis": 1}, {}),
    ("Resize", (2, 3, 4, 4), {"mode": "linear"}, {"": None,
                                                   "s": np.asarray([1, 1, 2, 2], np.float32)}),
])
def test_unknown_batch_dim(op: str, shape: tuple[int, ...], attrs: dict[str, Any],
                           consts: dict[str, Array | None]) -> None:
    params = {k: v for k, v in consts.items() if v is not None}
    graph = helper.make_graph(
        [node(op, ["x", *consts], **attrs)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", *shape[1:]])],
        [onnx.ValueInfoProto(name="y")],
        [numpy_helper.from_array(v, k) for k, v in params.items()])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11 if op == "Softmax"
                                                                        else 17)], ir_version=8)
    x = rand(*shape)
    want = ort.InferenceSession(proto.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = nnrt.reference.run(nnrt.onnx.load(proto), {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


# -- through the runtime ---------------------------------------------------------------------


def small_cnn() -> Any:
    """Conv -> BatchNormalization -> Relu -> MaxPool -> Flatten -> Gemm."""
    consts = {"w": rand(8, 3, 3, 3) * 0.3, "cb": rand(8) * 0.1, **bn_params(8),
              "fw": rand(8 * 4 * 4, 10) * 0.1, "fb": rand(10) * 0.1}
    nodes = [node("Conv", ["x", "w", "cb"], ["c"], pads=[1, 1, 1, 1]),
             node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"]),
             node("Relu", ["n"], ["r"]),
             node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             node("Flatten", ["p"], ["f"]),
             node("Gemm", ["f", "fw", "fb"], ["y"])]
    graph = helper.make_graph(
        nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 10])],
        [numpy_helper.from_array(v, k) for k, v in consts.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_small_cnn_runs_on_the_cpu_driver_like_onnxruntime() -> None:
    proto = small_cnn()
    x = rand(2, 3, 8, 8)
    want = ort.InferenceSession(proto.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    model = nnrt.onnx.load(proto)

    async def run() -> tuple[list[str], Array]:
        async with nnrt.Runtime(drivers=["cpu"], workers=1) as rt:
            compiled = await rt.compile(model, devices=["cpu"])
            drivers = [op.driver for op in compiled.placement().operations]
            (out,) = await compiled.execute({"x": x})
            await compiled.release()
            return drivers, out

    drivers, got = anyio.run(run)
    assert set(drivers) == {"cpu"}
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
