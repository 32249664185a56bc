"""Quantised ONNX models: QDQ groups folded into NNAPI's quantised operations (operand types,
scales, zero points, layouts), QLinearConv / QLinearMatMul, what stays float, and what is
reported. The numbers are checked end to end in ``tests/models/test_quantized_models.py``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import nnrt  # noqa: E402
import nnrt.onnx  # noqa: E402
import nnrt.reference  # noqa: E402
from nnrt.model.operand import Operand  # noqa: E402
from nnrt.model.types import OperandType as T  # noqa: E402
from nnrt.model.types import OperationType as Op  # noqa: E402

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(26)


class Qdq:
    """An ONNX graph written the way onnxruntime's QDQ quantiser writes one."""

    def __init__(self, act: Any = np.uint8) -> None:
        self.act = np.dtype(act)
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.count = 0

    def name(self, stem: str) -> str:
        self.count += 1
        return f"{stem}{self.count}"

    def const(self, value: Any, stem: str = "c") -> str:
        name = self.name(stem)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], outputs: int = 1, **attrs: Any) -> list[str]:
        names = [self.name(op.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, names, name=self.name(op), **attrs))
        return names

    def qdq(self, x: str, scale: float, zero_point: int, dtype: Any = None) -> str:
        """Q then DQ of activation ``x`` (the same parameters)."""
        kind = np.dtype(dtype or self.act)
        s = self.const(np.float32(scale), "scale")
        z = self.const(np.asarray(zero_point, kind), "zp")
        (q,) = self.node("QuantizeLinear", [x, s, z])
        return self.node("DequantizeLinear", [q, s, z])[0]

    def weight(self, q: Array, scale: Any, zero_point: Any, axis: int | None = None) -> str:
        """DQ of a quantised initializer (per tensor, or per axis with 1-D scale / zp)."""
        attrs = {} if axis is None else {"axis": axis}
        return self.node("DequantizeLinear", [self.const(q, "w"), self.const(
            np.asarray(scale, np.float32), "ws"), self.const(np.asarray(zero_point, q.dtype),
                                                             "wz")], **attrs)[0]

    def model(self, inputs: dict[str, tuple[int, ...]], output: str, opset: int = 13) -> Any:
        infos = [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v))
                 for k, v in inputs.items()]
        self.nodes.append(helper.make_node("Identity", [output], ["y"]))
        graph = helper.make_graph(self.nodes, "qdq", infos, [onnx.ValueInfoProto(name="y")],
                                  self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                                 ir_version=8)


def ops(model: nnrt.Model) -> list[Op]:
    return [op.type for op in model.operations]


def the(model: nnrt.Model, op_type: Op) -> Any:
    (found,) = [op for op in model.operations if op.type == op_type]
    return found


def operand(model: nnrt.Model, index: int) -> Operand:
    return model.operands[index]


def quant(o: Operand) -> tuple[T, float, int]:
    return o.type, o.scale, o.zero_point


def f32(x: float) -> float:
    return float(np.float32(x))


# -- Conv -----------------------------------------------------------------------------------


def conv_model(act: Any, w_q: Array, w_scale: Any, w_zp: Any, axis: int | None,
               group: int = 1, bias: bool = True) -> tuple[Any, float]:
    """x [1, C, 6, 6] -> Q/DQ -> Conv(DQ(w), DQ(b)) -> Q/DQ; returns the model and x_scale."""
    g = Qdq(act)
    zp_x = 3 if np.dtype(act) == np.uint8 else -5
    x = g.qdq("x", 0.05, zp_x)
    out = w_q.shape[0]
    inputs = [x, g.weight(w_q, w_scale, w_zp, axis)]
    if bias:
        b_scale = np.float32(0.05) * np.asarray(w_scale, np.float32)
        b = RNG.integers(-300, 300, out).astype(np.int32)
        inputs.append(g.weight(b, b_scale, np.zeros_like(b_scale, np.int32),
                               0 if axis is not None else None))
    (y,) = g.node("Conv", inputs, kernel_shape=list(w_q.shape[2:]), pads=[1, 1, 1, 1],
                  group=group)
    channels = w_q.shape[1] * group
    return g.model({"x": (1, channels, 6, 6)}, g.qdq(y, 0.1, 7 if zp_x == 3 else -2)), 0.05


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


def gemm_model(w: Array, scale: Any, zp: Any, axis: int | None, trans_b: int) -> Any:
    g = Qdq(np.int8)
    x = g.qdq("x", 0.04, -1)
    units = w.shape[0] if trans_b else w.shape[1]
    b_scale = np.float32(0.04) * np.asarray(scale, np.float32)
    b = g.weight(RNG.integers(-500, 500, units).astype(np.int32), b_scale,
                 np.zeros_like(b_scale, np.int32), 0 if axis is not None else None)
    (y,) = g.node("Gemm", [x, g.weight(w, scale, zp, axis), b], transB=trans_b)
    k = w.shape[1] if trans_b else w.shape[0]
    return g.model({"x": (2, k)}, g.qdq(y, 0.2, 4))


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


# -- QLinearConv / QLinearMatMul -------------------------------------------------------------


def test_qlinear_conv_and_matmul_are_quantised_nnapi_operations() -> None:
    g = Qdq(np.uint8)
    xs, xz = g.const(np.float32(0.05)), g.const(np.uint8(3))
    (xq,) = g.node("QuantizeLinear", ["x", xs, xz])
    w = g.const(RNG.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8))
    ws = g.const(np.linspace(0.01, 0.04, 4).astype(np.float32))
    wz = g.const(np.zeros(4, np.int8))
    ys, yz = g.const(np.float32(0.1)), g.const(np.uint8(9))
    b = g.const(np.arange(4, dtype=np.int32))
    (yq,) = g.node("QLinearConv", [xq, xs, xz, w, ws, wz, ys, yz, b], pads=[1, 1, 1, 1])
    (flat,) = g.node("Flatten", [yq])
    m = g.const(RNG.integers(0, 256, (4 * 5 * 5, 6)).astype(np.uint8))
    ms, mz = g.const(np.float32(0.02)), g.const(np.uint8(128))
    zs, zz = g.const(np.float32(0.5)), g.const(np.uint8(100))
    (zq,) = g.node("QLinearMatMul", [flat, ys, yz, m, ms, mz, zs, zz])
    (y,) = g.node("DequantizeLinear", [zq, zs, zz])
    model = nnrt.onnx.load(g.model({"x": (1, 3, 5, 5)}, y))
    assert ops(model) == [Op.QUANTIZE, Op.CONV_2D, Op.RESHAPE, Op.FULLY_CONNECTED,
                          Op.DEQUANTIZE]
    conv = the(model, Op.CONV_2D)
    assert operand(model, conv.inputs[1]).type == T.TENSOR_QUANT8_SYMM_PER_CHANNEL
    fc = the(model, Op.FULLY_CONNECTED)
    assert quant(operand(model, fc.inputs[1])) == (T.TENSOR_QUANT8_ASYMM, f32(0.02), 128)
    assert quant(operand(model, fc.outputs[0])) == (T.TENSOR_QUANT8_ASYMM, 0.5, 100)


def test_qlinear_matmul_takes_float16_scales_exactly() -> None:
    """Opset 21 scales may be float16: widened to float32 (exact), the operands hold the same
    real scales, and the product is the quantised product of those scales (within NNAPI's one
    step of fixed-point rounding)."""
    scales = {"as": 0.0066, "bs": 0.00705, "ys": 0.0107}
    inits = {**{k: np.asarray([v], np.float16) for k, v in scales.items()},
             "az": np.asarray([113], np.uint8), "bz": np.asarray([114], np.uint8),
             "yz": np.asarray([118], np.uint8),
             "b": RNG.integers(0, 256, (4, 3)).astype(np.uint8)}
    graph = helper.make_graph(
        [helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"],
                          ["y"])], "g",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, [5, 4])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, [5, 3])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    model = nnrt.onnx.load(proto)
    assert ops(model) == [Op.FULLY_CONNECTED]
    a_scale, y_scale = (float(np.float16(scales[k])) for k in ("as", "ys"))
    assert quant(operand(model, model.inputs[0])) == (T.TENSOR_QUANT8_ASYMM, a_scale, 113)
    assert quant(operand(model, model.outputs[0])) == (T.TENSOR_QUANT8_ASYMM, y_scale, 118)
    a = RNG.integers(0, 256, (5, 4)).astype(np.uint8)
    (got,) = nnrt.reference.run(model, {"a": a})
    product = (a.astype(np.int64) - 113) @ (inits["b"].astype(np.int64) - 114)
    real = product * (a_scale * float(np.float16(scales["bs"])) / y_scale) + 118
    want = np.clip(np.rint(real), 0, 255)
    assert np.abs(got.astype(np.int64) - want).max() <= 1


# -- dynamic quantisation --------------------------------------------------------------------


def dynamic_model(weights: Array, matrix: Array, x_shape: tuple[int, ...] = (1, 3, 5, 5)
                  ) -> Any:
    """x -> DynamicQuantizeLinear -> ConvInteger and (flattened) MatMulInteger."""
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"]),
             helper.make_node("ConvInteger", ["q", "w", "z"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Reshape", ["q", "shape"], ["rows"]),
             helper.make_node("MatMulInteger", ["rows", "m", "z"], ["d"])]
    inits = [numpy_helper.from_array(weights, "w"), numpy_helper.from_array(matrix, "m"),
             numpy_helper.from_array(np.asarray([-1, matrix.shape[0]], np.int64), "shape")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
        [onnx.ValueInfoProto(name=name) for name in ("q", "s", "z", "c", "d")], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def test_dynamic_quantisation_and_integer_products_equal_onnxruntime_exactly() -> None:
    proto = dynamic_model(RNG.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8),
                          RNG.integers(-127, 128, (15, 6)).astype(np.int8))
    model = nnrt.onnx.load(proto)
    session = ort.InferenceSession(proto.SerializeToString())
    ties = np.zeros((1, 3, 5, 5), np.float32)
    ties.reshape(-1)[:6] = [255.0, 0.5, 1.5, 2.5, -0.0, 3.5]  # scale 1, zero point 0: halves
    inputs = [ties, np.zeros((1, 3, 5, 5), np.float32)] + [
        (RNG.standard_normal((1, 3, 5, 5)) * RNG.random() * 4 + RNG.random()).astype(
            np.float32) for _ in range(8)]
    for x in inputs:
        got = nnrt.reference.run(model, {"x": x})
        want = session.run(None, {"x": x})
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(np.asarray(g).reshape(w.shape), w)


def test_integer_products_float32_cannot_hold_exactly_are_reported() -> None:
    proto = dynamic_model(np.full((4, 3, 3, 3), 127, np.int8), np.full((600, 6), 127, np.int8),
                          (1, 3, 10, 20))  # 255 * 127 * 600 > 2**24
    with pytest.raises(nnrt.onnx.UnsupportedOnnxModel, match=r"MatMulInteger .*beyond the 2"):
        nnrt.onnx.load(proto)


def test_a_qlinear_model_with_uint8_inputs_and_outputs_is_quantised_end_to_end() -> None:
    inits = {"as": np.float32(0.1), "az": np.uint8(128), "b": RNG.integers(
        0, 256, (4, 3)).astype(np.uint8), "bs": np.float32(0.02), "bz": np.uint8(120),
        "ys": np.float32(0.25), "yz": np.uint8(10)}
    graph = helper.make_graph(
        [helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"],
                          ["y"])], "g",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, [2, 3])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    model = nnrt.onnx.load(proto)
    assert ops(model) == [Op.FULLY_CONNECTED]
    assert quant(operand(model, model.inputs[0])) == (T.TENSOR_QUANT8_ASYMM, f32(0.1), 128)
    assert quant(operand(model, model.outputs[0])) == (T.TENSOR_QUANT8_ASYMM, 0.25, 10)


# -- each folded group computes what onnxruntime computes -----------------------------------


def _single(op: str, act: Any, same: bool = True, **attrs: Any) -> tuple[Any, float]:
    """Q/DQ -> ``op`` -> Q/DQ on x [2, 4, 6, 6]: the model and its output step."""
    g = Qdq(act)
    zp = 9 if np.dtype(act) == np.uint8 else -9
    x = g.qdq("x", 0.04, zp)
    extra: list[str] = []
    if op in ("Add", "Mul") or op == "Concat":
        extra = [g.qdq("x2", 0.03, zp + 5)]
    elif op == "Reshape":
        extra = [g.const(np.asarray([2, -1], np.int64))]
    (y,) = g.node(op, [x, *extra], **attrs)
    if op in ("Sigmoid", "Softmax"):
        scale, out_zp = 1 / 256, (0 if np.dtype(act) == np.uint8 else -128)
    else:
        scale, out_zp = (0.04, zp) if same else (0.05, zp + 3)
    inputs = {"x": (2, 4, 6, 6)} | ({"x2": (2, 4, 6, 6)} if extra and op != "Reshape" else {})
    return g.model(inputs, g.qdq(y, scale, out_zp)), scale


GROUPS = {
    "Add": ("Add", {}, False), "Mul": ("Mul", {}, False),
    "Concat": ("Concat", {"axis": 1}, False), "Reshape": ("Reshape", {}, True),
    "MaxPool": ("MaxPool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, True),
    "AveragePool": ("AveragePool", {"kernel_shape": [2, 2], "strides": [2, 2]}, True),
    "GlobalAveragePool": ("GlobalAveragePool", {}, True),
    "Relu": ("Relu", {}, True), "Sigmoid": ("Sigmoid", {}, True),
    "Softmax": ("Softmax", {"axis": 1}, True),
}


@pytest.mark.parametrize("act", [np.uint8, np.int8], ids=["uint8", "int8"])
@pytest.mark.parametrize("group", list(GROUPS))
def test_each_folded_group_agrees_with_onnxruntime_within_one_step(group: str,
                                                                   act: Any) -> None:
    op, attrs, same = GROUPS[group]
    proto, step = _single(op, act, same, **attrs)
    model = nnrt.onnx.load(proto)
    assert ops(model).count(Op.QUANTIZE) == 1 + (op in ("Add", "Mul", "Concat"))
    feeds = {i.name: (RNG.standard_normal((2, 4, 6, 6)) * 2).astype(np.float32)
             for i in proto.graph.input}
    (want,) = ort.InferenceSession(proto.SerializeToString()).run(None, feeds)
    (got,) = nnrt.reference.run(model, feeds)
    steps = np.abs(np.asarray(got).reshape(want.shape) - want) / step
    # NNAPI rounds an average pool's halfway sums up, onnxruntime to even: one step on ties
    assert steps.max() <= 1 + 1e-3, f"{group}: {steps.max():.2f} steps"


@pytest.mark.parametrize("case", ["uint8", "int8 per channel", "depthwise per channel",
                                  "grouped int8 weights", "gemm", "gemm per channel"])
def test_folded_convolutions_and_products_agree_with_onnxruntime_within_one_step(
        case: str) -> None:
    if case == "uint8":
        proto, _ = conv_model(np.uint8, RNG.integers(0, 256, (4, 3, 3, 3)).astype(np.uint8),
                              0.02, 120, None)
    elif case == "int8 per channel":
        proto, _ = conv_model(np.int8, RNG.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8),
                              np.linspace(0.01, 0.04, 4).astype(np.float32),
                              np.zeros(4, np.int8), 0)
    elif case == "depthwise per channel":
        proto, _ = conv_model(np.uint8, RNG.integers(-127, 128, (6, 1, 3, 3)).astype(np.int8),
                              np.linspace(0.01, 0.06, 6).astype(np.float32),
                              np.zeros(6, np.int8), 0, group=6)
    elif case == "grouped int8 weights":
        proto, _ = conv_model(np.uint8, RNG.integers(-128, 128, (4, 2, 3, 3)).astype(np.int8),
                              0.02, -3, None, group=2)
    elif case == "gemm":
        proto = gemm_model(RNG.integers(-128, 128, (5, 8)).astype(np.int8), 0.03, 2, None, 1)
    else:
        proto = gemm_model(RNG.integers(-127, 128, (8, 5)).astype(np.int8),
                           np.linspace(0.01, 0.05, 5).astype(np.float32), np.zeros(5, np.int8),
                           1, 0)
    (shape,) = [tuple(d.dim_value for d in i.type.tensor_type.shape.dim)
                for i in proto.graph.input]
    step = 0.2 if case.startswith("gemm") else 0.1
    model = nnrt.onnx.load(proto)
    assert ops(model)[0] == Op.QUANTIZE and ops(model).count(Op.DEQUANTIZE) == 1
    for seed in range(3):
        x = {"x": np.random.default_rng(seed).standard_normal(shape).astype(np.float32)}
        (want,) = ort.InferenceSession(proto.SerializeToString()).run(None, x)
        (got,) = nnrt.reference.run(model, x)
        steps = np.abs(np.asarray(got) - want) / step
        assert steps.max() <= 1 + 1e-3 and np.mean(steps > 0.5) <= 0.01, case
