"""Single-operator TFLite models: nnrt.tflite.load + the reference interpreter against
LiteRT's reference kernels (1e-5 for floats, one step for quantised results)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as fb

import nnrt.reference
import nnrt.tflite
from tests.unit.tflite.flatbuffers_kit import B, TfliteFile, litert_run

RNG = np.random.default_rng(7)
Case = tuple[bytes, list[np.ndarray]]  # type: ignore[type-arg]


def rand(*shape: int) -> np.ndarray:  # type: ignore[type-arg]
    return RNG.standard_normal(shape).astype(np.float32)


def _opts(cls: Any, **fields: Any) -> Any:
    options = cls()
    for key, value in fields.items():
        setattr(options, key, value)
    return options


def unary(builtin: int, shape: tuple[int, ...] = (2, 3, 4), options: Any = None,
          positive: bool = False) -> Case:
    f = TfliteFile()
    x, y = f.tensor(shape, name="x"), f.tensor(shape, name="y")
    f.op(builtin, [x], [y], options)
    value = rand(*shape)
    return f.finish([x], [y]), [np.abs(value) + 0.1 if positive else value]


def binary(builtin: int, options: Any = None, activation: int = 0) -> Case:
    f = TfliteFile()
    a, b, y = f.tensor((2, 3, 4)), f.tensor((1, 4)), f.tensor((2, 3, 4))
    if options is None and builtin in (B.ADD, B.SUB, B.MUL, B.DIV):
        cls = {B.ADD: fb.AddOptionsT, B.SUB: fb.SubOptionsT, B.MUL: fb.MulOptionsT,
               B.DIV: fb.DivOptionsT}[builtin]
        options = _opts(cls, fusedActivationFunction=activation)
    f.op(builtin, [a, b], [y], options)
    other = rand(1, 4) + (3.0 if builtin == B.DIV else 0.0)
    return f.finish([a, b], [y]), [rand(2, 3, 4), other]


def conv(depthwise: bool = False, padding: int = fb.Padding.SAME, stride: int = 2,
         dilation: int = 1) -> Case:
    f = TfliteFile()
    x = f.tensor((1, 9, 8, 3))
    if depthwise:
        w, b = f.const(rand(1, 3, 3, 6)), f.const(rand(6))
        options = _opts(fb.DepthwiseConv2DOptionsT, padding=padding, strideW=stride,
                        strideH=stride, depthMultiplier=2, fusedActivationFunction=1,
                        dilationWFactor=dilation, dilationHFactor=dilation)
    else:
        w, b = f.const(rand(5, 3, 3, 3)), f.const(rand(5))
        options = _opts(fb.Conv2DOptionsT, padding=padding, strideW=stride, strideH=stride,
                        fusedActivationFunction=3, dilationWFactor=dilation,
                        dilationHFactor=dilation)
    y = f.tensor((1, 1, 1, 1))
    f.op(B.DEPTHWISE_CONV_2D if depthwise else B.CONV_2D, [x, w, b], [y], options)
    return f.finish([x], [y]), [rand(1, 9, 8, 3)]


def pool(builtin: int, padding: int) -> Case:
    f = TfliteFile()
    x, y = f.tensor((1, 7, 6, 2)), f.tensor((1, 1, 1, 2))
    f.op(builtin, [x], [y], _opts(fb.Pool2DOptionsT, padding=padding, strideW=2, strideH=2,
                                  filterWidth=3, filterHeight=3))
    return f.finish([x], [y]), [rand(1, 7, 6, 2)]


def fully_connected(keep: bool, bias: bool = True) -> Case:
    f = TfliteFile()
    x, w = f.tensor((2, 3, 6)), f.const(rand(4, 6))
    b = f.const(rand(4)) if bias else -1
    y = f.tensor((2, 3, 4) if keep else (6, 4))
    f.op(B.FULLY_CONNECTED, [x, w, b], [y], _opts(fb.FullyConnectedOptionsT, keepNumDims=keep))
    return f.finish([x], [y]), [rand(2, 3, 6)]


def with_consts(builtin: int, shape: tuple[int, ...], consts: list[Any], options: Any = None,
                outputs: int = 1, first_const: bool = False,
                out_shape: tuple[int, ...] = (1,)) -> Case:
    f = TfliteFile()
    x = f.tensor(shape)
    extra = [f.const(c) for c in consts]
    ys = [f.tensor(out_shape) for _ in range(outputs)]
    f.op(builtin, [*extra, x] if first_const else [x, *extra], ys, options)
    return f.finish([x], ys), [rand(*shape)]


def transpose_conv() -> Case:
    f = TfliteFile()
    x = f.tensor((1, 4, 4, 3))
    shape = f.const(np.asarray([1, 8, 8, 2], np.int32))
    w = f.const(rand(2, 3, 3, 3))
    y = f.tensor((1, 8, 8, 2))
    f.op(B.TRANSPOSE_CONV, [shape, w, x], [y], _opts(fb.TransposeConvOptionsT,
                                                      padding=fb.Padding.SAME, strideW=2,
                                                      strideH=2))
    return f.finish([x], [y]), [rand(1, 4, 4, 3)]


def fp16_weights() -> Case:
    f = TfliteFile()
    x = f.tensor((3, 8))
    w16 = f.const(rand(5, 8).astype(np.float16))
    w = f.tensor((5, 8))
    f.op(B.DEQUANTIZE, [w16], [w])
    y = f.tensor((3, 5))
    f.op(B.FULLY_CONNECTED, [x, w, -1], [y], fb.FullyConnectedOptionsT())
    return f.finish([x], [y]), [rand(3, 8)]


def quantized_conv(per_channel: bool) -> Case:
    f = TfliteFile()
    x = f.tensor((1, 6, 6, 2), fb.TensorType.INT8, scale=[0.05], zero_point=[-3])
    scales = [0.02, 0.03, 0.01] if per_channel else [0.02]
    w = f.const(RNG.integers(-100, 100, (3, 3, 3, 2)).astype(np.int8), scale=scales,
                zero_point=[0] * len(scales), axis=0)
    b = f.const(RNG.integers(-200, 200, 3).astype(np.int32), fb.TensorType.INT32,
                scale=[0.05 * s for s in scales], zero_point=[0] * len(scales))
    y = f.tensor((1, 6, 6, 3), fb.TensorType.INT8, scale=[0.1], zero_point=[2])
    f.op(B.CONV_2D, [x, w, b], [y], _opts(fb.Conv2DOptionsT, padding=fb.Padding.SAME,
                                          strideW=1, strideH=1))
    return f.finish([x], [y]), [RNG.integers(-128, 128, (1, 6, 6, 2)).astype(np.int8)]


def quantize_roundtrip() -> Case:
    f = TfliteFile()
    x = f.tensor((2, 5))
    q = f.tensor((2, 5), fb.TensorType.UINT8, scale=[0.02], zero_point=[128])
    y = f.tensor((2, 5))
    f.op(B.QUANTIZE, [x], [q])
    f.op(B.DEQUANTIZE, [q], [y])
    return f.finish([x], [y]), [rand(2, 5)]


CASES: dict[str, Callable[[], Case]] = {
    "add_relu": lambda: binary(B.ADD, activation=1),
    "sub": lambda: binary(B.SUB),
    "mul_relu6": lambda: binary(B.MUL, activation=3),
    "div": lambda: binary(B.DIV),
    "maximum": lambda: binary(B.MAXIMUM),
    "minimum": lambda: binary(B.MINIMUM),
    "logistic": lambda: unary(B.LOGISTIC),
    "tanh": lambda: unary(B.TANH),
    "relu": lambda: unary(B.RELU),
    "relu6": lambda: unary(B.RELU6),
    "relu_n1_to_1": lambda: unary(B.RELU_N1_TO_1),
    "hard_swish": lambda: unary(B.HARD_SWISH),
    "exp": lambda: unary(B.EXP),
    "sqrt": lambda: unary(B.SQRT, positive=True),
    "rsqrt": lambda: unary(B.RSQRT, positive=True),
    "leaky_relu": lambda: unary(B.LEAKY_RELU, options=_opts(fb.LeakyReluOptionsT, alpha=0.2)),
    "softmax": lambda: unary(B.SOFTMAX, options=_opts(fb.SoftmaxOptionsT, beta=0.7)),
    "prelu": lambda: with_consts(B.PRELU, (2, 3, 4), [rand(4)]),
    "conv_same": conv,
    "conv_valid_dilated": lambda: conv(padding=fb.Padding.VALID, stride=1, dilation=2),
    "depthwise_same": lambda: conv(depthwise=True),
    "depthwise_valid": lambda: conv(depthwise=True, padding=fb.Padding.VALID, stride=1),
    "avg_pool_same": lambda: pool(B.AVERAGE_POOL_2D, fb.Padding.SAME),
    "avg_pool_valid": lambda: pool(B.AVERAGE_POOL_2D, fb.Padding.VALID),
    "max_pool_same": lambda: pool(B.MAX_POOL_2D, fb.Padding.SAME),
    "fc": lambda: fully_connected(False),
    "fc_keep_dims_no_bias": lambda: fully_connected(True, bias=False),
    "transpose_conv": transpose_conv,
    "reshape": lambda: with_consts(B.RESHAPE, (2, 3, 4), [np.asarray([4, -1], np.int32)]),
    "transpose": lambda: with_consts(B.TRANSPOSE, (2, 3, 4), [np.asarray([2, 0, 1], np.int32)]),
    "pad": lambda: with_consts(B.PAD, (2, 3), [np.asarray([[1, 0], [2, 1]], np.int32)]),
    "padv2": lambda: with_consts(B.PADV2, (2, 3), [np.asarray([[1, 0], [2, 1]], np.int32),
                                                   np.asarray([1.5], np.float32)]),
    "mean": lambda: with_consts(B.MEAN, (2, 3, 4), [np.asarray([1, 2], np.int32)],
                                _opts(fb.ReducerOptionsT, keepDims=True)),
    "slice": lambda: with_consts(B.SLICE, (3, 4), [np.asarray([1, 1], np.int32),
                                                   np.asarray([2, -1], np.int32)],
                                  out_shape=(2, 3)),
    "strided_slice": lambda: with_consts(
        B.STRIDED_SLICE, (5, 6), [np.asarray([1, 0], np.int32), np.asarray([5, 6], np.int32),
                                  np.asarray([2, 3], np.int32)],
        _opts(fb.StridedSliceOptionsT, beginMask=2)),
    "gather": lambda: with_consts(B.GATHER, (4, 3), [np.asarray([3, 0, 1], np.int32)],
                                  _opts(fb.GatherOptionsT, axis=0)),
    "split": lambda: with_consts(B.SPLIT, (4, 6), [np.asarray(1, np.int32)],
                                 _opts(fb.SplitOptionsT, numSplits=3), outputs=3,
                                 first_const=True),
    "squeeze": lambda: with_consts(B.SQUEEZE, (1, 3, 1, 4), [],
                                   _opts(fb.SqueezeOptionsT, squeezeDims=[0, 2])),
    "expand_dims": lambda: with_consts(B.EXPAND_DIMS, (3, 4), [np.asarray([1], np.int32)]),
    "concat": lambda: with_consts(B.CONCATENATION, (2, 3), [rand(2, 2)],
                                  _opts(fb.ConcatenationOptionsT, axis=-1)),
    "resize_bilinear": lambda: with_consts(
        B.RESIZE_BILINEAR, (1, 3, 4, 2), [np.asarray([6, 7], np.int32)],
        _opts(fb.ResizeBilinearOptionsT, halfPixelCenters=True)),
    "resize_nearest": lambda: with_consts(
        B.RESIZE_NEAREST_NEIGHBOR, (1, 3, 4, 2), [np.asarray([6, 8], np.int32)],
        fb.ResizeNearestNeighborOptionsT()),
    "batch_matmul": lambda: with_consts(B.BATCH_MATMUL, (2, 3, 4), [rand(2, 5, 4)],
                                        _opts(fb.BatchMatMulOptionsT, adjY=True)),
    "arg_max": lambda: with_consts(B.ARG_MAX, (3, 5), [np.asarray([1], np.int32)],
                                   _opts(fb.ArgMaxOptionsT, outputType=fb.TensorType.INT32)),
    "fp16_weights": fp16_weights,
    "quantized_conv": lambda: quantized_conv(False),
    "quantized_conv_per_channel": lambda: quantized_conv(True),
    "quantize_roundtrip": quantize_roundtrip,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_litert_reference_kernels(name: str) -> None:
    data, inputs = CASES[name]()
    expected = litert_run(data, inputs)
    model = nnrt.tflite.load(data)
    got = nnrt.reference.run(model, inputs)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        g = np.asarray(g)
        assert g.shape == e.shape, (g.shape, e.shape)
        if e.dtype.kind in "iu" and name.startswith("quant"):
            assert np.abs(g.astype(np.int64) - e.astype(np.int64)).max(initial=0) <= 1
        elif e.dtype.kind == "f":
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)
        else:
            np.testing.assert_array_equal(g, e)
