"""Quantised ONNX models, continued from ``test_quantized.py``: QLinearConv / QLinearMatMul,
dynamic quantisation, and each folded group's values against onnxruntime."""

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
