"""Rules of nnrt's extension operations com.nnrt.ERF, com.nnrt.LAYER_NORMALIZATION and
com.nnrt.GATHER_ND (nnrt/ops/erf.py, layer_norm.py, gather_nd.py), and parity of their reference
kernels with onnxruntime's Erf, LayerNormalization and GatherND."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from single_op import OMIT, Spec
from single_op import build as _model

import nnrt
from nnrt import OperandType as T
from nnrt import OperationType as Op

F32, F16, I32, Q8 = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM
Array = np.ndarray[Any, Any]


# -- com.nnrt.ERF ---------------------------------------------------------------------------------

def test_erf_types_and_counts() -> None:
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(com\.nnrt\.ERF\), input 0 \(input\): "
                                           "expected TENSOR_FLOAT32 or TENSOR_FLOAT16, got "
                                           "TENSOR_INT32"):
        _model(Op.NNRT_ERF, [(I32, (2,), None)], [(I32, (2,))]).finish()
    with pytest.raises(nnrt.BadData, match=r"\(com\.nnrt\.ERF\), output 0 \(output\): expected "
                                           "TENSOR_FLOAT32 like input 0, got TENSOR_FLOAT16"):
        _model(Op.NNRT_ERF, [(F32, (2,), None)], [(F16, (2,))]).finish()
    with pytest.raises(nnrt.BadData, match=r"\(com\.nnrt\.ERF\): expected 1 inputs, got 2"):
        _model(Op.NNRT_ERF, [(F32, (2,), None), (F32, (2,), None)], [(F32, (2,))]).finish()


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_erf_is_math_erf_rounded_once(dtype: type) -> None:
    x = np.concatenate([np.linspace(-6.0, 6.0, 20001), [0.0, -0.0, np.inf, -np.inf, 1e-30]])
    x = x.astype(dtype)
    model = _model(Op.NNRT_ERF, [(F32 if dtype is np.float32 else F16, (x.size,), None)],
                   [(F32 if dtype is np.float32 else F16, (x.size,))]).finish()
    got = nnrt.reference.run(model, [x])[0]
    want: Array = np.array([math.erf(float(v)) for v in x]).astype(dtype)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)
    assert np.signbit(got[x.size - 4])  # erf(-0) = -0


def test_erf_of_a_scalar_tensor_and_nan() -> None:
    model = _model(Op.NNRT_ERF, [(F32, (), None)], [(F32, ())]).finish()
    assert nnrt.reference.run(model, [np.float32(0.5)])[0] == np.float32(math.erf(0.5))
    assert np.isnan(nnrt.reference.run(model, [np.array([np.nan], np.float32)])[0]).all()


# -- com.nnrt.LAYER_NORMALIZATION -----------------------------------------------------------------

def _ln(x: Spec = (F32, (2, 3, 4), None), scale: Spec = (F32, (4,), None),
        bias: Spec = (F32, (4,), OMIT), axis: Spec = (T.INT32, (), -1),
        epsilon: Spec = (T.FLOAT32, (), 1e-5), output: Spec | None = None) -> nnrt.Model:
    out = output if output is not None else (x[0], x[1])
    return _model(Op.NNRT_LAYER_NORMALIZATION, [x, scale, bias, axis, epsilon], [out])


def test_layer_norm_types() -> None:
    where = r"operation 0 \(com\.nnrt\.LAYER_NORMALIZATION\)"
    with pytest.raises(nnrt.BadData, match=where + r", input 0 \(input\): expected "
                                               "TENSOR_FLOAT32 or TENSOR_FLOAT16, got "
                                               "TENSOR_INT32"):
        _ln(x=(I32, (2, 4), None)).finish()
    with pytest.raises(nnrt.BadData, match=where + r", input 1 \(scale\): expected "
                                               "TENSOR_FLOAT32, got TENSOR_FLOAT16"):
        _ln(scale=(F16, (4,), None)).finish()
    with pytest.raises(nnrt.BadData, match=where + r", input 2 \(bias\): expected "
                                               "TENSOR_FLOAT16, got TENSOR_FLOAT32"):
        _ln(x=(F16, (2, 4), None), scale=(F16, (4,), None), bias=(F32, (4,), None),
            epsilon=(T.FLOAT16, (), 1e-3)).finish()
    with pytest.raises(nnrt.BadData, match=where + r", input 4 \(epsilon\): expected FLOAT16, "
                                               "got FLOAT32"):
        _ln(x=(F16, (2, 4), None), scale=(F16, (4,), None)).finish()
    with pytest.raises(nnrt.BadData, match=where + r", output 0 \(output\): expected "
                                               "TENSOR_FLOAT32 like input 0"):
        _ln(output=(F16, (2, 3, 4))).finish()
    with pytest.raises(nnrt.BadData, match=where + ": expected 5 inputs, got 4"):
        _model(Op.NNRT_LAYER_NORMALIZATION, [(F32, (2, 4), None), (F32, (4,), None),
                                             (T.INT32, (), -1), (T.FLOAT32, (), 1e-5)],
               [(F32, (2, 4))]).finish()


def test_layer_norm_axis_and_epsilon() -> None:
    where = r"\(com\.nnrt\.LAYER_NORMALIZATION\)"
    with pytest.raises(nnrt.BadData, match=where + r", input 3 \(axis\): axis 3 is out of range "
                                               r"for rank 3 \(expected \[-3, 3\)\)"):
        _ln(axis=(T.INT32, (), 3)).finish()
    with pytest.raises(nnrt.BadData, match=where + r", input 3 \(axis\): expected INT32"):
        _ln(axis=(T.FLOAT32, (), 1.0)).finish()
    for bad in (0.0, -1e-5, math.nan, math.inf):
        with pytest.raises(nnrt.BadData, match=where + r", input 4 \(epsilon\): epsilon must be "
                                                   "positive and finite"):
            _ln(epsilon=(T.FLOAT32, (), bad)).finish()


def test_layer_norm_parameters_known_only_at_execution() -> None:
    where = r"\(com\.nnrt\.LAYER_NORMALIZATION\)"
    model = _ln(axis=(T.INT32, (), None), epsilon=(T.FLOAT32, (), None)).finish()
    x, scale = np.ones((2, 3, 4), np.float32), np.ones(4, np.float32)
    assert nnrt.reference.run(model, [x, scale, np.int32(-1), np.float32(1e-5)])[0].shape == (
        2, 3, 4)
    with pytest.raises(nnrt.BadData, match=where + r", input 4 \(epsilon\): epsilon must be "
                                               "positive and finite, got -1.0"):
        nnrt.reference.run(model, [x, scale, np.int32(-1), np.float32(-1.0)])
    with pytest.raises(nnrt.BadData, match=where + r", input 3 \(axis\): axis -4 is out of "
                                               "range for rank 3"):
        nnrt.reference.run(model, [x, scale, np.int32(-4), np.float32(1e-5)])


def test_layer_norm_scale_and_bias_must_broadcast_to_the_normalised_dims() -> None:
    where = r"\(com\.nnrt\.LAYER_NORMALIZATION\)"
    with pytest.raises(nnrt.BadData, match=where + r", input 1 \(scale\): shape \(3,\) does not "
                                               r"broadcast to the normalised dims \(3, 4\)"):
        _ln(scale=(F32, (3,), None), axis=(T.INT32, (), 1)).finish()
    with pytest.raises(nnrt.BadData, match=where + r", input 2 \(bias\): shape \(2, 3, 4\) does "
                                               r"not broadcast to the normalised dims \(3, 4\)"):
        _ln(bias=(F32, (2, 3, 4), None), scale=(F32, (1, 4), None),
            axis=(T.INT32, (), -2)).finish()
    # Broadcastable shapes are accepted; unknown dims are checked at execution.
    _ln(scale=(F32, (3, 1), None), bias=(F32, (1,), None), axis=(T.INT32, (), 1)).finish()
    model = _ln(scale=(F32, (0,), None)).finish()
    x = np.ones((2, 3, 4), np.float32)
    with pytest.raises(nnrt.BadData, match=where + r", input 1 \(scale\): shape \(3,\) does not "
                                               r"broadcast to the normalised dims \(4,\)"):
        nnrt.reference.run(model, [x, np.ones(3, np.float32)])


def test_layer_norm_rank_zero_input_is_rejected_at_execution() -> None:
    model = _ln(x=(F32, (), None), scale=(F32, (1,), np.ones(1, np.float32)),
                axis=(T.INT32, (), 0), output=(F32, ())).finish()
    with pytest.raises(nnrt.BadData, match=r"\(com\.nnrt\.LAYER_NORMALIZATION\), input 0 "
                                           r"\(input\): expected rank of at least 1, got 0"):
        nnrt.reference.run(model, [np.float32(2.0)])


# -- com.nnrt.GATHER_ND ---------------------------------------------------------------------------

def _gnd(data: Spec = (F32, (2, 3, 4), None), indices: Spec = (I32, (5, 2), None),
         batch_dims: Spec = (T.INT32, (), 0), output: Spec | None = None) -> nnrt.Model:
    out = output if output is not None else (data[0], ())
    return _model(Op.NNRT_GATHER_ND, [data, indices, batch_dims], [out])


def test_gather_nd_types() -> None:
    where = r"operation 0 \(com\.nnrt\.GATHER_ND\)"
    with pytest.raises(nnrt.BadData, match=where + r", input 1 \(indices\): expected "
                                               "TENSOR_INT32, got TENSOR_FLOAT32"):
        _gnd(indices=(F32, (5, 2), None)).finish()
    with pytest.raises(nnrt.BadData, match=where + r", input 0 \(data\): expected .* got "
                                               "TENSOR_QUANT16_ASYMM"):
        _gnd(data=(T.TENSOR_QUANT16_ASYMM, (2, 3), None, 0.5, 0),
             output=(T.TENSOR_QUANT16_ASYMM, (5,), 0.5, 0)).finish()
    with pytest.raises(nnrt.BadData, match=where + r", input 2 \(batch_dims\): expected INT32"):
        _gnd(batch_dims=(T.FLOAT32, (), 0.0)).finish()
    with pytest.raises(nnrt.BadData, match=where + r", output 0 \(output\): expected the scale "
                                               "and zero point of input 0"):
        _gnd(data=(Q8, (2, 3), None, 0.5, 1), indices=(I32, (1, 2), None),
             output=(Q8, (1,), 0.5, 2)).finish()


def test_gather_nd_batch_dims_and_index_depth() -> None:
    where = r"\(com\.nnrt\.GATHER_ND\)"
    with pytest.raises(nnrt.BadData, match=where + r", input 2 \(batch_dims\): batch_dims must "
                                               "be non-negative, got -1"):
        _gnd(batch_dims=(T.INT32, (), -1)).finish()
    with pytest.raises(nnrt.BadData, match=where + r", input 2 \(batch_dims\): batch_dims = 2 "
                                               r"must be less than the rank of indices \(2\)"):
        _gnd(indices=(I32, (2, 1), None), batch_dims=(T.INT32, (), 2)).finish()
    with pytest.raises(nnrt.BadData, match=where + r", input 2 \(batch_dims\): batch_dims = 3 "
                                               r"must be less than the rank of data \(3\)"):
        _gnd(indices=(I32, (2, 3, 4, 1), None), batch_dims=(T.INT32, (), 3)).finish()
    with pytest.raises(nnrt.BadData, match=where + r", input 1 \(indices\): the last dimension "
                                               r"of indices \(4\) must be in \[1, 3\]"):
        _gnd(indices=(I32, (5, 4), None)).finish()
    with pytest.raises(nnrt.BadData, match=where + r", input 1 \(indices\): the last dimension "
                                               r"of indices \(3\) must be in \[1, 2\]"):
        _gnd(indices=(I32, (2, 3), None), batch_dims=(T.INT32, (), 1)).finish()
    with pytest.raises(nnrt.BadData, match=where + r", input 1 \(indices\): dimension 0 \(3\) "
                                               r"must equal data's dimension 0 \(2\)"):
        _gnd(indices=(I32, (3, 1), None), batch_dims=(T.INT32, (), 1)).finish()
    with pytest.raises(nnrt.BadData, match=where + r", output 0 \(output\): declared dims "
                                               r"\(5, 3\) contradict the shape \(5, 4\)"):
        _gnd(output=(F32, (5, 3))).finish()


def test_gather_nd_checks_batch_dims_given_at_execution() -> None:
    model = _gnd(indices=(I32, (2, 1), None), batch_dims=(T.INT32, (), None)).finish()
    data, indices = np.zeros((2, 3, 4), np.float32), np.array([[1], [0]], np.int32)
    assert nnrt.reference.run(model, [data, indices, np.int32(1)])[0].shape == (2, 4)
    with pytest.raises(nnrt.BadData, match=r"\(com\.nnrt\.GATHER_ND\), input 2 \(batch_dims\): "
                                           "batch_dims = 2 must be less than the rank of indices"):
        nnrt.reference.run(model, [data, indices, np.int32(2)])


def test_gather_nd_constant_out_of_range_index_fails_at_finish() -> None:
    model = _gnd(indices=(I32, (2, 2), np.array([[0, 1], [1, 3]], np.int32)))
    with pytest.raises(nnrt.BadData, match=r"\(com\.nnrt\.GATHER_ND\), input 1 \(indices\): "
                                           r"index 3 at position \(1, 1\) is out of range for "
                                           r"data dimension 1 of size 3 \(expected \[-3, 3\)\)"):
        model.finish()


@pytest.mark.parametrize(("indices", "value", "position", "axis", "size"), [
    ([[0, 0], [2, 0]], 2, "1, 0", 0, 2),
    ([[0, 0], [-3, 0]], -3, "1, 0", 0, 2),
    ([[0, 3], [0, 0]], 3, "0, 1", 1, 3),
    ([[0, -4], [0, 0]], -4, "0, 1", 1, 3),
])
def test_gather_nd_out_of_range_index_at_execution(indices: list[list[int]], value: int,
                                                   position: str, axis: int, size: int) -> None:
    model = _gnd(indices=(I32, (2, 2), None)).finish()
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    with pytest.raises(nnrt.BadData, match=rf"operation 0 \(com\.nnrt\.GATHER_ND\), input 1 "
                                           rf"\(indices\): index {value} at position "
                                           rf"\({position}\) is out of range for data "
                                           rf"dimension {axis} of size {size}"):
        nnrt.reference.run(model, [data, np.array(indices, np.int32)])


def test_gather_nd_batch_out_of_range_is_per_batch_dimension() -> None:
    # With batch_dims 1, index 0 of each tuple addresses data dimension 1 (size 3), not 0.
    model = _gnd(indices=(I32, (2, 1), None), batch_dims=(T.INT32, (), 1)).finish()
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    got = nnrt.reference.run(model, [data, np.array([[2], [-3]], np.int32)])[0]
    np.testing.assert_array_equal(got, np.stack([data[0, 2], data[1, 0]]))
    with pytest.raises(nnrt.BadData, match="index 3 at position \\(1, 0\\) is out of range for "
                                           "data dimension 1 of size 3"):
        nnrt.reference.run(model, [data, np.array([[2], [3]], np.int32)])


def test_gather_nd_scalar_output_and_quantised_data() -> None:
    model = _gnd(data=(F32, (3,), None), indices=(I32, (1,), None), output=(F32, ())).finish()
    got = nnrt.reference.run(model, [np.array([1.5, 2.5, 3.5], np.float32),
                                     np.array([-1], np.int32)])[0]
    assert got.shape == () and got == np.float32(3.5)
    model = _gnd(data=(Q8, (2, 3), None, 0.5, 7), indices=(I32, (2, 1), None),
                 output=(Q8, (2, 3), 0.5, 7)).finish()
    data = np.array([[1, 2, 3], [250, 251, 252]], np.uint8)
    got = nnrt.reference.run(model, [data, np.array([[1], [0]], np.int32)])[0]
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, data[::-1])


# -- parity with onnxruntime ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def ort() -> Any:
    """onnxruntime, imported once per module: its import opens files that stay open, which the
    per-test leak check would otherwise blame on the first test using it."""
    pytest.importorskip("onnx")
    return pytest.importorskip("onnxruntime")


def _onnx_run(ort: Any, node: Any, inputs: dict[str, Array], initializers: dict[str, Array],
              opset: int) -> Array:
    """Run a one-node ONNX graph with a float32 output on onnxruntime's CPU provider."""
    import onnx  # optional: the ``ort`` fixture skips when it is missing

    helper, numpy_helper = onnx.helper, onnx.numpy_helper

    def info(name: str, arr: Array) -> Any:
        elem = helper.np_dtype_to_tensor_dtype(arr.dtype)
        return helper.make_tensor_value_info(name, elem, arr.shape)

    graph = helper.make_graph(
        [node], "parity", [info(k, v) for k, v in inputs.items()],
        [helper.make_tensor_value_info(node.output[0], onnx.TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    result: Array = session.run(None, inputs)[0]
    return result


def _nnrt_run(op: Op, *args: Any, inputs: list[Array]) -> Array:
    """Build ``op`` over ``args`` (arrays become model inputs, in order) and run the reference."""
    b = nnrt.ModelBuilder()
    operands: list[Any] = []
    feed_index = 0
    for arg in args:
        if isinstance(arg, np.ndarray):
            dtype = "int32" if arg.dtype.kind == "i" else "float32"
            operands.append(b.input(f"in{feed_index}", arg.shape, dtype))
            feed_index += 1
        else:
            operands.append(arg)
    b.output(b.operation(op, *operands)[0])
    return np.asarray(nnrt.reference.run(b.build(), inputs)[0])


def test_erf_matches_onnxruntime(ort: Any) -> None:
    import onnx

    rng = np.random.default_rng(7)
    x = np.concatenate([rng.normal(0.0, 2.0, 2000), np.linspace(-5.0, 5.0, 1001)])
    x = x.astype(np.float32).reshape(3001)
    want = _onnx_run(ort, onnx.helper.make_node("Erf", ["x"], ["y"]), {"x": x}, {}, 13)
    got = _nnrt_run(Op.NNRT_ERF, x, inputs=[x])
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-7)


@pytest.mark.parametrize(("shape", "axis", "with_bias"), [
    ((4, 16), -1, True), ((2, 3, 8), 1, True), ((2, 5, 6), -1, False), ((3, 4), 0, True)])
def test_layer_norm_matches_onnxruntime(shape: tuple[int, ...], axis: int,
                                        with_bias: bool, ort: Any) -> None:
    import onnx

    rng = np.random.default_rng(len(shape) * 10 + axis)
    x = rng.normal(0.5, 2.0, shape).astype(np.float32)
    tail = shape[axis % len(shape):]
    scale = rng.uniform(0.5, 1.5, tail).astype(np.float32)
    bias = rng.normal(0.0, 0.3, tail).astype(np.float32)
    names = ["x", "scale", "bias"] if with_bias else ["x", "scale"]
    node = onnx.helper.make_node("LayerNormalization", names, ["y"], axis=axis, epsilon=1e-5)
    initializers = {"scale": scale, **({"bias": bias} if with_bias else {})}
    want = _onnx_run(ort, node, {"x": x}, initializers, 17)
    got = _nnrt_run(Op.NNRT_LAYER_NORMALIZATION, x, scale,
                    bias if with_bias else nnrt.Omitted(F32), axis, 1e-5,
                    inputs=[x, scale, bias] if with_bias else [x, scale])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)


@pytest.mark.parametrize(("data_shape", "indices", "batch_dims"), [
    ((3, 4), [[0, 1], [2, -1], [-3, 0]], 0),
    ((3, 4, 5), [[[1], [-1]], [[0], [2]]], 0),
    ((2, 3, 4), [[[0, -1]], [[-2, 2]]], 0),
    ((2, 3, 4), [[2], [-3]], 1),
    ((2, 3, 4), [[[0, 1], [-1, -4]], [[1, 2], [2, 0]]], 1),
    ((2, 3, 4, 2), [[[1], [0], [2]], [[-1], [1], [0]]], 2),
])
def test_gather_nd_matches_onnxruntime(data_shape: tuple[int, ...], indices: list[Any],
                                       batch_dims: int, ort: Any) -> None:
    import onnx

    data = np.arange(math.prod(data_shape), dtype=np.float32).reshape(data_shape) * 0.5 - 3.0
    idx = np.asarray(indices, np.int64)
    node = onnx.helper.make_node("GatherND", ["data", "indices"], ["y"], batch_dims=batch_dims)
    want = _onnx_run(ort, node, {"data": data, "indices": idx}, {}, 13)
    idx32 = idx.astype(np.int32)
    got = _nnrt_run(Op.NNRT_GATHER_ND, data, idx32, batch_dims, inputs=[data, idx32])
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


# -- com.nnrt.SHAPE -------------------------------------------------------------------------------

def test_shape_types_and_counts() -> None:
    with pytest.raises(nnrt.BadData, match=r"operation 0 \(com\.nnrt\.SHAPE\), output 0 "
                                           r"\(output\): expected TENSOR_INT32, got "
                                           "TENSOR_FLOAT32"):
        _model(Op.NNRT_SHAPE, [(F32, (2, 3), None)], [(F32, (2,))]).finish()
    with pytest.raises(nnrt.BadData, match=r"\(com\.nnrt\.SHAPE\): expected 1 inputs, got 2"):
        _model(Op.NNRT_SHAPE, [(F32, (2,), None), (F32, (2,), None)], [(I32, (1,))]).finish()
    with pytest.raises(nnrt.BadData, match=r"\(com\.nnrt\.SHAPE\), input 0 \(input\): expected "):
        _model(Op.NNRT_SHAPE, [(T.INT32, (), 3)], [(I32, (1,))]).finish()


def test_shape_output_is_the_rank_even_with_unknown_dims() -> None:
    model = _model(Op.NNRT_SHAPE, [(F32, (0, 3, 0), None)], [(I32, (0,))]).finish()
    assert model.inferred_dims[model.outputs[0]] == (3,)
    with pytest.raises(nnrt.BadData, match=r"declared dims \(2\) contradict the shape \(3\)"):
        _model(Op.NNRT_SHAPE, [(F32, (0, 3, 0), None)], [(I32, (2,))]).finish()


@pytest.mark.parametrize("shape", [(4,), (2, 5, 1), (1, 3, 48, 192), (2, 0, 3)])
def test_shape_reference_kernel_returns_the_runtime_dims(shape: tuple[int, ...]) -> None:
    model = _model(Op.NNRT_SHAPE, [(F32, (0,) * len(shape), None)], [(I32, (0,))]).finish()
    (got,) = nnrt.reference.run(model, [np.ones(shape, np.float32)])
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.asarray(shape))


def test_shape_of_int_and_bool_tensors() -> None:
    for op_type, arr in ((I32, np.arange(6, dtype=np.int32).reshape(3, 2)),
                         (T.TENSOR_BOOL8, np.zeros((1, 4, 2), np.bool_))):
        model = _model(Op.NNRT_SHAPE, [(op_type, (0,) * arr.ndim, None)], [(I32, (0,))]).finish()
        np.testing.assert_array_equal(nnrt.reference.run(model, [arr])[0], arr.shape)
