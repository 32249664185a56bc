"""ONNX int8 / uint8 / int16 / uint16 / uint32 tensors (held in TENSOR_INT32) against
onnxruntime, wrap-around included."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto as TP  # noqa: E402
from onnx import helper  # noqa: E402

import nnrt.onnx  # noqa: E402
import nnrt.reference  # noqa: E402
from nnrt.errors import NnrtError  # noqa: E402
from nnrt.onnx.errors import UnsupportedOnnxModel  # noqa: E402

Array = np.ndarray[Any, Any]

CODES = {np.dtype(np.int8): TP.INT8, np.dtype(np.uint8): TP.UINT8,
         np.dtype(np.int16): TP.INT16, np.dtype(np.uint16): TP.UINT16,
         np.dtype(np.uint32): TP.UINT32, np.dtype(np.float32): TP.FLOAT,
         np.dtype(np.int32): TP.INT32, np.dtype(np.int64): TP.INT64,
         np.dtype(np.bool_): TP.BOOL}
SMALL = [np.int8, np.uint8, np.int16, np.uint16]


def _model(op: str, inputs: dict[str, Array], out: Any, attrs: dict[str, Any] | None = None,
           opset: int = 17) -> Any:
    node = helper.make_node(op, list(inputs), ["y"], **(attrs or {}))
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(k, CODES[v.dtype], list(v.shape))
         for k, v in inputs.items()],
        [helper.make_tensor_value_info("y", CODES[np.dtype(out)], None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8)


def _check(op: str, inputs: dict[str, Array], out: Any, attrs: dict[str, Any] | None = None,
           opset: int = 17) -> Array:
    m = _model(op, inputs, out, attrs, opset)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, inputs)[0]
    got = np.asarray(nnrt.reference.run(nnrt.onnx.load(m), inputs)[0])
    np.testing.assert_array_equal(got.astype(want.dtype), want)
    assert np.array_equal(got.astype(np.int64), want.astype(np.int64)), "not in the type's range"
    return want


def _extremes(dtype: Any, n: int = 12, seed: int = 0) -> Array:
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    edge = [info.min, info.min + 1, -1 if info.min < 0 else 1, 0, 1, info.max - 1, info.max]
    rest = rng.integers(info.min, int(info.max) + 1, n - len(edge))
    return np.asarray([*edge, *rest], dtype)


@pytest.mark.parametrize("dtype", SMALL)
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul"])
def test_arithmetic_wraps_around(op: str, dtype: Any) -> None:
    a = _extremes(dtype, seed=1)
    b = _extremes(dtype, seed=2)[::-1].copy()
    _check(op, {"a": a, "b": b}, dtype)


@pytest.mark.parametrize("dtype", SMALL)
def test_div_truncates_and_wraps(dtype: Any) -> None:
    a = _extremes(dtype, seed=3)
    b = _extremes(dtype, seed=4)
    b[b == 0] = 3
    if np.iinfo(dtype).min < 0:
        a[0], b[0] = np.iinfo(dtype).min, -1  # min / -1 wraps to min
    _check("Div", {"a": a, "b": b}, dtype)


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
@pytest.mark.parametrize("op", ["Neg", "Abs"])
def test_neg_abs_of_the_minimum_wrap(op: str, dtype: Any) -> None:
    _check(op, {"x": _extremes(dtype)}, dtype)


@pytest.mark.parametrize("dtype", [*SMALL, np.uint32])
@pytest.mark.parametrize("op", ["Max", "Min", "Equal", "Greater", "Less"])
def test_range_keeping_ops(op: str, dtype: Any) -> None:
    a = np.asarray([0, 1, 7, 100, 3, 2], dtype)
    b = np.asarray([3, 1, 9, 90, 3, 0], dtype)
    if op in ("Max", "Min"):  # onnxruntime has no 16-bit Max / Min: numpy is the oracle
        m = _model(op, {"a": a, "b": b}, dtype)
        got = nnrt.reference.run(nnrt.onnx.load(m), {"a": a, "b": b})[0]
        want = np.maximum(a, b) if op == "Max" else np.minimum(a, b)
        np.testing.assert_array_equal(np.asarray(got).astype(np.int64), want.astype(np.int64))
        return
    _check(op, {"a": a, "b": b}, np.bool_)


def test_uint32_div_and_large_values() -> None:
    a = np.asarray([2**31 - 1, 7, 100], np.uint32)
    b = np.asarray([2, 2, 7], np.uint32)
    _check("Div", {"a": a, "b": b}, np.uint32)


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul"])
def test_uint32_arithmetic_is_unsupported(op: str) -> None:
    a = np.asarray([1, 2], np.uint32)
    with pytest.raises(UnsupportedOnnxModel, match="2\\*\\*31 - 1"):
        nnrt.onnx.load(_model(op, {"a": a, "b": a}, np.uint32))


def test_uint32_input_above_int32_is_an_input_error() -> None:
    a = np.asarray([2**31, 1], np.uint32)
    model = nnrt.onnx.load(_model("Max", {"a": a, "b": a}, np.uint32))
    with pytest.raises(NnrtError):
        nnrt.reference.run(model, {"a": a, "b": a})


@pytest.mark.parametrize("target", [*SMALL])
def test_cast_float_truncates_and_keeps_low_bits(target: Any) -> None:
    # within int32's range: beyond it onnxruntime's result is the platform's (x86: INT_MIN)
    x = np.asarray([300.7, -1.5, -129.9, 127.9, 1e6, -1e6, 70000.5, -2.5, 2.1e9, -2.1e9,
                    65535.9, -32768.0], np.float32)
    _check("Cast", {"x": x}, target, {"to": CODES[np.dtype(target)]})


@pytest.mark.parametrize("source", [np.int32, np.int64, *SMALL])
@pytest.mark.parametrize("target", [*SMALL, np.int32, np.float32])
def test_cast_between_integers_wraps(source: Any, target: Any) -> None:
    info = np.iinfo(source)
    lo, hi = max(int(info.min), -(2**31)), min(int(info.max), 2**31 - 1)
    x = np.asarray([lo, lo + 1, -1 if lo < 0 else 2, 0, 255, 256, 32767, 32768, hi],
                   np.int64).clip(lo, hi).astype(source)
    _check("Cast", {"x": x}, target, {"to": CODES[np.dtype(target)]})


def test_cast_float_to_uint32_is_unsupported() -> None:
    x = np.asarray([1.0], np.float32)
    with pytest.raises(UnsupportedOnnxModel, match="uint32"):
        nnrt.onnx.load(_model("Cast", {"x": x}, np.uint32, {"to": TP.UINT32}))


def test_known_values_fold_with_wrap_around() -> None:
    a = helper.make_tensor("a", TP.INT8, [3], [100, -128, 7])
    node = helper.make_node("Add", ["a", "a"], ["s"])
    node2 = helper.make_node("Add", ["s", "x"], ["y"])
    graph = helper.make_graph([node, node2], "g",
                              [helper.make_tensor_value_info("x", TP.INT8, [3])],
                              [helper.make_tensor_value_info("y", TP.INT8, [3])], [a])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    x = np.asarray([100, -1, 127], np.int8)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": x})[0]
    got = nnrt.reference.run(nnrt.onnx.load(m), {"x": x})[0]
    np.testing.assert_array_equal(np.asarray(got).astype(np.int8), want)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_data_movement(dtype: Any) -> None:
    x = _extremes(dtype).reshape(3, 4)
    _check("Transpose", {"x": x}, dtype, {"perm": [1, 0]})
    _check("Where", {"c": np.asarray([True, False, True, False]), "x": x,
                     "z": x[::-1].copy()}, dtype)


def test_clip_int8() -> None:
    bounds = [helper.make_tensor("lo", TP.INT8, [], [-5]),
              helper.make_tensor("hi", TP.INT8, [], [90])]
    graph = helper.make_graph([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TP.INT8, [12])],
                              [helper.make_tensor_value_info("y", TP.INT8, [12])], bounds)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    x = _extremes(np.int8)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": x})[0]
    got = nnrt.reference.run(nnrt.onnx.load(m), {"x": x})[0]
    np.testing.assert_array_equal(np.asarray(got).astype(np.int64), want.astype(np.int64))
