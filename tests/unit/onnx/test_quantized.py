"""Quantised ONNX models: QDQ groups folded into NNAPI's quantised operations (operand types,
scales, zero points, layouts), what stays float, and what is reported (QLinear operators,
dynamic quantisation and the values against onnxruntime: ``test_quantized_numbers.py``; end to
end: ``tests/models/test_quantized_models.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from qdq_graphs import RNG, Qdq, conv_model, f32, gemm_model, operand, ops, quant, the  # noqa: E402

import nnrt  # noqa: E402
import nnrt.onnx  # noqa: E402
import nnrt.reference  # noqa: E402
from nnrt.model.types import OperandType as T  # noqa: E402
from nnrt.model.types import OperationType as Op  # noqa: E402

Array = np.ndarray[Any, Any]


# -- Conv -----------------------------------------------------------------------------------


def test_a_uint8_conv_group_is_one_quantised_conv_2d_between_quantize_and_dequantize() -> None:
    w = RNG.integers(0, 256, (4, 3, 3, 3)).astype(np.uint8)
    proto, _ = conv_model(np.uint8, w, 0.02, 120, None)
    model = nnrt.onnx.load(proto)
    assert ops(model) == [Op.QUANTIZE, Op.CONV_2D, Op.DEQUANTIZE]
    conv = the(model, Op.CONV_2D)
    x, filt, bias = (operand(model, i) for i in conv.inputs[:3])
    y = operand(model, conv.outputs[0])
    assert quant(x) == (T.TENSOR_QUANT8_ASYMM, f32(0.05), 3)
    assert quant(filt) == (T.TENSOR_QUANT8_ASYMM, f32(0.02), 120)
    np.testing.assert_array_equal(filt.value, w.transpose(0, 2, 3, 1))  # [out, kh, kw, in]
    assert bias.type == T.TENSOR_INT32 and bias.scale == pytest.approx(f32(0.05) * f32(0.02))
    assert quant(y) == (T.TENSOR_QUANT8_ASYMM, f32(0.1), 7)


def test_int8_activations_with_per_channel_weights_take_symm_per_channel_filters() -> None:
    w = RNG.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
    scales = np.asarray([0.01, 0.02, 0.03, 0.04], np.float32)
    proto, _ = conv_model(np.int8, w, scales, np.zeros(4, np.int8), 0)
    model = nnrt.onnx.load(proto)
    conv = the(model, Op.CONV_2D)
    x, filt, bias = (operand(model, i) for i in conv.inputs[:3])
    assert x.type == T.TENSOR_QUANT8_ASYMM_SIGNED
    assert filt.type == T.TENSOR_QUANT8_SYMM_PER_CHANNEL
    assert filt.channel_quant is not None and filt.channel_quant.channel_dim == 0
    assert filt.channel_quant.scales == pytest.approx(scales.tolist())
    assert bias.type == T.TENSOR_INT32 and bias.scale == 0  # per channel: x_scale * w_scale[c]
    assert quant(operand(model, conv.outputs[0]))[0] == T.TENSOR_QUANT8_ASYMM_SIGNED


def test_a_depthwise_per_channel_filter_is_quantised_along_nnapis_last_dim() -> None:
    w = RNG.integers(-127, 128, (6, 1, 3, 3)).astype(np.int8)
    scales = np.linspace(0.01, 0.06, 6).astype(np.float32)
    proto, _ = conv_model(np.uint8, w, scales, np.zeros(6, np.int8), 0, group=6)
    model = nnrt.onnx.load(proto)
    conv = the(model, Op.DEPTHWISE_CONV_2D)
    filt = operand(model, conv.inputs[1])
    assert operand(model, conv.inputs[0]).type == T.TENSOR_QUANT8_ASYMM
    assert filt.type == T.TENSOR_QUANT8_SYMM_PER_CHANNEL and filt.dims == (1, 3, 3, 6)
    assert filt.channel_quant is not None and filt.channel_quant.channel_dim == 3


def test_per_tensor_weights_are_converted_exactly_to_the_activations_8_bit_type() -> None:
    w = RNG.integers(-128, 128, (4, 2, 3, 3)).astype(np.int8)
    proto, _ = conv_model(np.uint8, w, 0.02, -3, None, group=2)
    model = nnrt.onnx.load(proto)
    conv = the(model, Op.GROUPED_CONV_2D)
    filt = operand(model, conv.inputs[1])
    assert quant(filt) == (T.TENSOR_QUANT8_ASYMM, f32(0.02), 125)  # -3 + 128
    np.testing.assert_array_equal(filt.value.astype(int),
                                  w.transpose(0, 2, 3, 1).astype(int) + 128)


def test_weights_never_become_float_constants_when_the_operation_takes_them_quantised() -> None:
    w = RNG.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
    proto, _ = conv_model(np.int8, w, np.full(4, 0.01, np.float32), np.zeros(4, np.int8), 0)
    model = nnrt.onnx.load(proto)
    floats = [o for o in model.operands if o.type == T.TENSOR_FLOAT32 and o.value is not None]
    assert floats == []


@pytest.mark.parametrize("why, change", [
    ("float bias", "float_bias"), ("bias scale", "bad_bias_scale"),
    ("weights with zero points", "asym_per_channel"),
])
def test_a_conv_group_nnapi_cannot_compute_exactly_stays_float(why: str, change: str) -> None:
    g = Qdq(np.uint8)
    x = g.qdq("x", 0.05, 3)
    if change == "asym_per_channel":
        w = g.weight(RNG.integers(0, 256, (2, 3, 3, 3)).astype(np.uint8),
                     np.asarray([0.01, 0.02], np.float32), np.asarray([3, 9], np.uint8), 0)
    else:
        w = g.weight(RNG.integers(0, 256, (2, 3, 3, 3)).astype(np.uint8), 0.02, 128)
    if change == "float_bias":
        b = g.const(np.asarray([0.1, -0.2], np.float32))
    else:
        scale = 0.05 * 0.02 * (1.5 if change == "bad_bias_scale" else 1)
        b = g.weight(np.asarray([5, -7], np.int32), scale, 0)
    (y,) = g.node("Conv", [x, w, b], kernel_shape=[3, 3])
    model = nnrt.onnx.load(g.model({"x": (1, 3, 5, 5)}, g.qdq(y, 0.1, 7)))
    conv = the(model, Op.CONV_2D)
    assert operand(model, conv.inputs[0]).type == T.TENSOR_FLOAT32, why
    assert ops(model)[0] == Op.QUANTIZE and Op.DEQUANTIZE in ops(model)


# -- MatMul / Gemm --------------------------------------------------------------------------



def test_a_gemm_group_is_a_quantised_fully_connected() -> None:
    w = RNG.integers(-128, 128, (5, 8)).astype(np.int8)
    model = nnrt.onnx.load(gemm_model(w, 0.03, 2, None, 1))
    assert ops(model) == [Op.QUANTIZE, Op.FULLY_CONNECTED, Op.DEQUANTIZE]
    fc = the(model, Op.FULLY_CONNECTED)
    weights = operand(model, fc.inputs[1])
    assert quant(weights) == (T.TENSOR_QUANT8_ASYMM_SIGNED, f32(0.03), 2)
    np.testing.assert_array_equal(weights.value, w)  # transB: already [units, in]
    assert quant(operand(model, fc.outputs[0])) == (T.TENSOR_QUANT8_ASYMM_SIGNED, f32(0.2), 4)


def test_per_channel_gemm_weights_run_as_a_1x1_conv_2d() -> None:
    w = RNG.integers(-127, 128, (8, 5)).astype(np.int8)  # [K, N], per channel along N (axis 1)
    scales = np.linspace(0.01, 0.05, 5).astype(np.float32)
    model = nnrt.onnx.load(gemm_model(w, scales, np.zeros(5, np.int8), 1, 0))
    assert ops(model) == [Op.QUANTIZE, Op.RESHAPE, Op.CONV_2D, Op.RESHAPE, Op.DEQUANTIZE]
    conv = the(model, Op.CONV_2D)
    filt = operand(model, conv.inputs[1])
    assert filt.type == T.TENSOR_QUANT8_SYMM_PER_CHANNEL and filt.dims == (5, 1, 1, 8)
    np.testing.assert_array_equal(filt.value.reshape(5, 8), w.T)


def test_matmul_of_two_int8_tensors_is_batch_matmul() -> None:
    g = Qdq(np.int8)
    (y,) = g.node("MatMul", [g.qdq("a", 0.1, 0), g.qdq("b", 0.2, 1)])
    model = nnrt.onnx.load(g.model({"a": (2, 3, 4), "b": (2, 4, 5)}, g.qdq(y, 0.3, -3)))
    assert ops(model).count(Op.BATCH_MATMUL) == 1
    mm = the(model, Op.BATCH_MATMUL)
    assert operand(model, mm.inputs[0]).type == T.TENSOR_QUANT8_ASYMM_SIGNED


# -- element-wise, data movement, activations ----------------------------------------------


def test_add_with_a_quantised_constant_and_concat_keep_each_operands_parameters() -> None:
    g = Qdq(np.uint8)
    x = g.qdq("x", 0.05, 10)
    three = g.weight(np.asarray(200, np.uint8), 0.02, 50)
    (s,) = g.node("Add", [x, three])
    s = g.qdq(s, 0.07, 20)
    (c,) = g.node("Concat", [x, s], axis=1)
    model = nnrt.onnx.load(g.model({"x": (1, 2, 3)}, g.qdq(c, 0.08, 30)))
    assert ops(model) == [Op.QUANTIZE, Op.ADD, Op.CONCATENATION, Op.DEQUANTIZE]
    add, cat = the(model, Op.ADD), the(model, Op.CONCATENATION)
    assert quant(operand(model, add.inputs[1])) == (T.TENSOR_QUANT8_ASYMM, f32(0.02), 50)
    assert quant(operand(model, add.outputs[0])) == (T.TENSOR_QUANT8_ASYMM, f32(0.07), 20)
    assert [operand(model, i).scale for i in cat.inputs[:2]] == [f32(0.05), f32(0.07)]
    assert quant(operand(model, cat.outputs[0])) == (T.TENSOR_QUANT8_ASYMM, f32(0.08), 30)


@pytest.mark.parametrize("op, attrs, nnapi", [
    ("Reshape", {}, Op.RESHAPE), ("Transpose", {"perm": [0, 2, 1, 3]}, Op.TRANSPOSE),
    ("MaxPool", {"kernel_shape": [2, 2]}, Op.MAX_POOL_2D),
    ("AveragePool", {"kernel_shape": [2, 2]}, Op.AVERAGE_POOL_2D),
    ("GlobalAveragePool", {}, Op.AVERAGE_POOL_2D), ("Relu", {}, Op.RELU),
    ("Flatten", {}, Op.RESHAPE),
])
def test_data_movement_and_pools_keeping_the_parameters_run_quantised(
        op: str, attrs: dict[str, Any], nnapi: Op) -> None:
    g = Qdq(np.int8)
    x = g.qdq("x", 0.05, -7)
    extra = [g.const(np.asarray([1, 4, 3, 2], np.int64))] if op == "Reshape" else []
    (y,) = g.node(op, [x, *extra], **attrs)
    model = nnrt.onnx.load(g.model({"x": (1, 3, 4, 2)}, g.qdq(y, 0.05, -7)))
    assert ops(model) == [Op.QUANTIZE, nnapi, Op.DEQUANTIZE]
    moved = the(model, nnapi)
    assert quant(operand(model, moved.outputs[0])) == (T.TENSOR_QUANT8_ASYMM_SIGNED, f32(0.05),
                                                       -7)


def test_an_operation_changing_the_parameters_nnapi_would_keep_runs_in_float() -> None:
    g = Qdq(np.uint8)
    (y,) = g.node("MaxPool", [g.qdq("x", 0.05, 7)], kernel_shape=[2, 2])
    model = nnrt.onnx.load(g.model({"x": (1, 3, 4, 4)}, g.qdq(y, 0.06, 7)))
    assert ops(model) == [Op.QUANTIZE, Op.DEQUANTIZE, Op.MAX_POOL_2D, Op.QUANTIZE,
                          Op.DEQUANTIZE]
    assert operand(model, the(model, Op.MAX_POOL_2D).inputs[0]).type == T.TENSOR_FLOAT32


@pytest.mark.parametrize("scale, zp, folds", [(1 / 256, 0, True), (1 / 255, 0, False)])
def test_sigmoid_and_softmax_fold_with_nnapis_fixed_output_parameters(
        scale: float, zp: int, folds: bool) -> None:
    for op, nnapi in (("Sigmoid", Op.LOGISTIC), ("Softmax", Op.SOFTMAX)):
        g = Qdq(np.uint8)
        (y,) = g.node(op, [g.qdq("x", 0.05, 128)])
        model = nnrt.onnx.load(g.model({"x": (2, 5)}, g.qdq(y, scale, zp)))
        found = the(model, nnapi)
        assert (operand(model, found.inputs[0]).type == T.TENSOR_QUANT8_ASYMM) is folds


def test_a_value_the_graph_returns_keeps_its_float_result() -> None:
    g = Qdq(np.uint8)
    (y,) = g.node("Relu", [g.qdq("x", 0.05, 7)])
    g.qdq(y, 0.05, 7)  # quantised, but y itself is the output
    model = nnrt.onnx.load(g.model({"x": (1, 4)}, y))
    assert operand(model, the(model, Op.RELU).inputs[0]).type == T.TENSOR_FLOAT32


# -- plain QuantizeLinear / DequantizeLinear -------------------------------------------------


def test_quantize_then_dequantize_runs_and_agrees_with_onnxruntime_off_ties() -> None:
    g = Qdq(np.uint8)
    proto = g.model({"x": (4, 50)}, g.qdq("x", 0.1, 100))
    model = nnrt.onnx.load(proto)
    assert ops(model) == [Op.QUANTIZE, Op.DEQUANTIZE]
    x = (RNG.standard_normal((4, 50)) * 5).astype(np.float32)
    x[0, :4] = [0.25, 0.35, -0.45, 30.0]  # halfway cases: ONNX rounds to even, NNAPI away
    (got,) = nnrt.reference.run(model, {"x": x})
    (want,) = ort.InferenceSession(proto.SerializeToString()).run(None, {"x": x})
    steps = np.abs(got - want) / np.float32(0.1)
    assert steps.max() <= 1 + 1e-4
    ties = np.isclose(np.abs(x / np.float32(0.1)) % 1, 0.5)
    assert np.all(steps[~ties] < 1e-4)


@pytest.mark.parametrize("also_cast", [False, True])
def test_a_uint8_graph_input_only_dequantized_is_a_quantised_input(also_cast: bool) -> None:
    """Read only by DequantizeLinear: a TENSOR_QUANT8_ASYMM input (DEQUANTIZE); read by
    anything else too: a TENSOR_INT32 one, dequantised in exact float arithmetic."""
    nodes = [helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])]
    outputs = [onnx.ValueInfoProto(name="y")]
    if also_cast:
        nodes.append(helper.make_node("Cast", ["q"], ["f"], to=TensorProto.FLOAT))
        outputs.append(onnx.ValueInfoProto(name="f"))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("q", TensorProto.UINT8, [3, 4])], outputs,
        [numpy_helper.from_array(np.float32(0.3), "s"), numpy_helper.from_array(np.uint8(77),
                                                                                "z")])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    model = nnrt.onnx.load(proto)
    declared = operand(model, model.inputs[0])
    if also_cast:
        assert declared.type == T.TENSOR_INT32
    else:
        assert quant(declared) == (T.TENSOR_QUANT8_ASYMM, f32(0.3), 77)
        assert ops(model) == [Op.DEQUANTIZE]
    q = RNG.integers(0, 256, (3, 4)).astype(np.uint8)
    got = nnrt.reference.run(model, {"q": q})
    want = ort.InferenceSession(proto.SerializeToString()).run(None, {"q": q})
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("what, attrs, match", [
    ("blocked", {"block_size": 2}, "blocked quantisation"),
    ("per-axis runtime", {"axis": 1}, "per-axis quantisation of a tensor computed"),
])
def test_quantisations_nnapi_cannot_hold_are_reported(what: str, attrs: dict[str, Any],
                                                      match: str) -> None:
    g = Qdq(np.uint8)
    s = g.const(np.full(4 if what != "blocked" else 2, 0.1, np.float32))
    z = g.const(np.zeros(4 if what != "blocked" else 2, np.uint8))
    (q,) = g.node("QuantizeLinear", ["x", s, z], **attrs)
    proto = g.model({"x": (3, 4)}, g.node("DequantizeLinear", [q, s, z], **attrs)[0],
                    opset=21)
    with pytest.raises(nnrt.onnx.UnsupportedOnnxModel, match=match):
        nnrt.onnx.load(proto)


@pytest.mark.parametrize("zero_point, axis", [(np.uint8(3), None), (np.int8(-3), None),
                                              (np.zeros(2, np.int8), 0)])
def test_a_known_quantised_output_is_returned_as_quantised(zero_point: Array,
                                                           axis: int | None) -> None:
    """QuantizeLinear of a constant as a graph output: a per-tensor one is a quantised
    operand copied by CAST (keeping its scale and zero point), a per-channel one its plain
    integers."""
    scale = np.float32(0.5) if axis is None else np.asarray([0.5, 0.25], np.float32)
    inits = {"c": np.asarray([[0, 2], [-3, 1.34]], np.float32), "s": scale, "z": zero_point}
    graph = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["c", "s", "z"], ["y"], axis=axis or 1)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [onnx.ValueInfoProto(name="y")], [numpy_helper.from_array(v, k) for k, v in inits.items()])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    model = nnrt.onnx.load(proto)
    declared = operand(model, model.outputs[0])
    if axis is None:
        assert (declared.scale, declared.zero_point) == (0.5, int(zero_point))
    else:
        assert declared.type == T.TENSOR_INT32
    feed = {"x": np.zeros(1, np.float32)}
    (got,) = nnrt.reference.run(model, feed)
    (want,) = ort.InferenceSession(proto.SerializeToString()).run(None, feed)
    np.testing.assert_array_equal(got, want)


def test_a_quantised_input_returned_unchanged_keeps_its_parameters() -> None:
    """``QuantizeLinear(DequantizeLinear(q))`` of a quantised graph input is the input: the
    output's copy (a CAST) keeps its scale and zero point."""
    inits = [numpy_helper.from_array(np.float32(0.5), "s"),
             numpy_helper.from_array(np.uint8(3), "z")]
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["q", "s", "z"], ["f"]),
         helper.make_node("QuantizeLinear", ["f", "s", "z"], ["y"])], "g",
        [helper.make_tensor_value_info("q", TensorProto.UINT8, [3])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, [3])], inits)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    model = nnrt.onnx.load(proto)
    assert ops(model) == [Op.CAST]
    assert quant(operand(model, model.outputs[0])) == (T.TENSOR_QUANT8_ASYMM, 0.5, 3)
    q = np.asarray([1, 2, 250], np.uint8)
    (got,) = nnrt.reference.run(model, {"q": q})
    np.testing.assert_array_equal(got, q)
