"""Quantised operations on the litert driver: TFLite's int8 / uint8 kernels against NNAPI's
integer arithmetic, and the reasons litert refuses where TFLite computes otherwise.

The expected values are computed here, in numpy, the way NNAPI's CPU executor computes them:
int64 accumulators of ``(q - zero point)`` products plus the int32 bias, rescaled by the
quantised multiplier of ``input scale * filter scale / output scale`` (``nnrt.ops.quant``'s
gemmlowp primitives), the output zero point added and the fused activation's range applied.
Both of LiteRT's paths are checked: XNNPACK (the default delegate) and TFLite's builtin kernels
(which run what XNNPACK declines). XNNPACK requantizes in float (``acc * scale`` rounded to
nearest even), so it may be one step off where the fixed-point product lands near a tie:
NNAPI's tolerance for quantised results.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import nnrt
import nnrt.reference

pytest.importorskip("ai_edge_litert", reason="ai-edge-litert has no wheel for this platform")

from ai_edge_litert import schema_py_generated as fb
from ai_edge_litert.interpreter import Interpreter, OpResolverType

from nnrt.drivers.litert import LitertDispatch, LitertDriver
from nnrt.drivers.litert.flatbuffer import write_partition
from nnrt.model.model import Model
from nnrt.ops.quant import (
    QUANT_RANGES,
    activation_range,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
)

Op = nnrt.OperationType
T = nnrt.OperandType
U8, S8 = T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED
PER_CHANNEL = T.TENSOR_QUANT8_SYMM_PER_CHANNEL
RNG = np.random.default_rng(26)
Array = np.ndarray[Any, Any]
PATHS = ("xnnpack", "builtin")


# -- NNAPI's integer arithmetic -----------------------------------------------------------------

def _requantize(acc: Array, real: Array, zero_point: int, type_: T, activation: int,
                scale: float) -> Array:
    """``acc`` rescaled by the quantised multipliers of ``real`` (one per channel, the last
    axis), the zero point added, clamped to the activation's range."""
    pairs = [quantize_multiplier(float(r)) for r in np.atleast_1d(real)]
    multiplier = np.asarray([m for m, _ in pairs], np.int64)
    shift = np.asarray([s for _, s in pairs], np.int64)
    out = multiply_by_quantized_multiplier(acc, multiplier, shift) + zero_point
    low, high = activation_range(activation, scale, zero_point, type_)
    return np.clip(out, low, high)


def _conv(x: Array, x_zero: int, w: Array, w_zero: int, bias: Array, stride: tuple[int, int],
          pads: tuple[int, int, int, int], depthwise: bool, multiplier: int = 1) -> Array:
    """The int64 accumulators of an NHWC convolution (filter OHWI, or 1HWO depthwise)."""
    top, bottom, left, right = pads
    x = np.pad(x.astype(np.int64) - x_zero, ((0, 0), (top, bottom), (left, right), (0, 0)))
    w = w.astype(np.int64) - w_zero
    kh, kw = w.shape[1:3]
    oh = (x.shape[1] - kh) // stride[0] + 1
    ow = (x.shape[2] - kw) // stride[1] + 1
    out = np.zeros((x.shape[0], oh, ow, w.shape[3] if depthwise else w.shape[0]), np.int64)
    for i in range(kh):
        for j in range(kw):
            patch = x[:, i:i + stride[0] * (oh - 1) + 1:stride[0],
                      j:j + stride[1] * (ow - 1) + 1:stride[1]]
            if depthwise:
                out += np.repeat(patch, multiplier, axis=3) * w[0, i, j]
            else:
                out += np.einsum("nhwc,oc->nhwo", patch, w[:, i, j])
    return out + bias


def _add(x1: Array, q1: tuple[float, int], x2: Array, q2: tuple[float, int],
         out: tuple[float, int], type_: T, activation: int, sign: int = 1) -> Array:
    """NNAPI's quantised ADD (SUB: ``sign`` -1): both inputs shifted left 20 bits, rescaled to
    twice the larger input scale, summed, rescaled to the output."""
    scales = [float(np.float32(s)) for s in (q1[0], q2[0], out[0])]
    twice = 2 * max(scales[0], scales[1])
    terms = [multiply_by_quantized_multiplier((x.astype(np.int64) - zero) << 20,
                                              *quantize_multiplier(scale / twice))
             for x, (_, zero), scale in ((x1, q1, scales[0]), (x2, q2, scales[1]))]
    total = terms[0] + sign * terms[1]
    result = multiply_by_quantized_multiplier(
        total, *quantize_multiplier(twice / ((1 << 20) * scales[2]))) + out[1]
    low, high = activation_range(activation, out[0], out[1], type_)
    return np.clip(result, low, high)


def _mul(x1: Array, q1: tuple[float, int], x2: Array, q2: tuple[float, int],
         out: tuple[float, int], type_: T, activation: int) -> Array:
    real = float(np.float32(q1[0]) * np.float32(q2[0])) / float(np.float32(out[0]))
    acc = (x1.astype(np.int64) - q1[1]) * (x2.astype(np.int64) - q2[1])
    result = multiply_by_quantized_multiplier(acc, *quantize_multiplier(real)) + out[1]
    low, high = activation_range(activation, out[0], out[1], type_)
    return np.clip(result, low, high)


# -- models and runs ----------------------------------------------------------------------------

def _values(type_: T, shape: tuple[int, ...]) -> Array:
    low, high = QUANT_RANGES[type_]
    return RNG.integers(low, high + 1, shape).astype(np.uint8 if low == 0 else np.int8)


def _zero(type_: T) -> int:
    low, high = QUANT_RANGES[type_]
    return int(RNG.integers(low, high + 1)) if type_ != PER_CHANNEL else 0


class _Builder:
    """A one-operation model with quantised operands, and its feed."""

    def __init__(self) -> None:
        self.model = Model()
        self.inputs: list[int] = []
        self.feed: list[Array] = []

    def input(self, type_: T, value: Array, scale: float = 0.0, zero: int = 0) -> int:
        index = self.model.add_operand(type_, value.shape, scale, zero)
        self.inputs.append(index)
        self.feed.append(value)
        return index

    def constant(self, type_: T, value: Any, scale: float = 0.0, zero: int = 0,
                 channels: tuple[int, tuple[float, ...]] | None = None) -> int:
        scalar = type_ in (T.INT32, T.BOOL, T.FLOAT32)
        index = self.model.add_operand(type_, () if scalar else np.shape(value), scale, zero)
        if channels is not None:
            self.model.set_operand_symm_per_channel_quant_params(index, *channels)
        self.model.set_operand_value(index, value)
        return index

    def ints(self, *values: int) -> list[int]:
        return [self.constant(T.INT32, np.int32(v)) for v in values]

    def finish(self, kind: Op, inputs: list[int], type_: T, dims: tuple[int, ...],
               scale: float, zero: int) -> Model:
        output = self.model.add_operand(type_, dims, scale, zero)
        self.model.add_operation(kind, inputs, [output])
        self.model.identify_inputs_and_outputs(self.inputs, [output])
        return self.model.finish()


def _run(model: Model, feed: list[Array], path: str) -> Array:
    """The one output of ``model`` wholly on litert: through the driver (XNNPACK), or the same
    flatbuffer on TFLite's builtin kernels alone."""
    if path == "xnnpack":
        driver = LitertDriver()
        assert not driver.support(model).reasons, driver.support(model).reasons
        return np.asarray(driver.prepare(model).execute(feed).outputs[0])
    interpreter = Interpreter(
        model_content=write_partition(model),
        experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    interpreter.allocate_tensors()
    for detail, value in zip(interpreter.get_input_details(), feed, strict=True):
        if detail["dtype"] == np.int8 and value.dtype == np.uint8:  # a partition in int8
            value = value ^ np.uint8(0x80)
        interpreter.set_tensor(detail["index"], value.view(detail["dtype"]))
    interpreter.invoke()
    got = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
    if model.operands[model.outputs[0]].type == U8 and got.dtype == np.int8:
        got = got.view(np.uint8) ^ np.uint8(0x80)
    return np.asarray(got)


def _check(got: Array, want: Array, path: str) -> None:
    """Within one step everywhere, and mostly exact: the builtin kernels' fixed point is
    NNAPI's (off by one at the odd value where TFLite computes a multiplier from the scales in
    double and NNAPI rounds their product to float first); XNNPACK requantizes in float32
    (``acc * scale`` rounded to nearest even), one step off near halfway points: up to 3 % of
    a MUL's outputs (products of up to 16 bits), under 1 % elsewhere."""
    diff = np.abs(got.astype(np.int64) - want.reshape(got.shape))
    assert diff.max() <= 1, f"{path}: {int(diff.max())} steps off"
    assert np.count_nonzero(diff) <= max(2, diff.size // 20), f"{path}: {np.count_nonzero(diff)}"


# -- the operations -----------------------------------------------------------------------------

_CONVS = [  # type, filter type, filter zero point, depthwise, stride, pads, activation, mult
    (U8, U8, 0, False, (1, 1), (1, 1, 1, 1), 0, 1),
    (U8, U8, 140, False, (2, 2), (0, 1, 1, 0), 1, 1),
    (S8, S8, 0, False, (1, 2), (2, 2, 2, 2), 3, 1),
    (S8, S8, 7, False, (1, 1), (0, 0, 0, 0), 2, 1),  # written as the filter minus 7
    (S8, PER_CHANNEL, 0, False, (2, 2), (1, 1, 1, 1), 1, 1),
    (U8, U8, 100, True, (1, 1), (1, 1, 1, 1), 0, 1),
    (S8, S8, -5, True, (2, 1), (0, 1, 1, 0), 3, 1),
    (S8, PER_CHANNEL, 0, True, (1, 1), (2, 2, 2, 2), 1, 2),
    (U8, PER_CHANNEL, 0, False, (1, 1), (0, 1, 0, 1), 3, 1),  # in int8, converted each way
    (U8, PER_CHANNEL, 0, True, (2, 2), (1, 1, 1, 1), 0, 1),
]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(("type_", "filter_type", "filter_zero", "depthwise", "stride", "pads",
                          "activation", "multiplier"), _CONVS)
def test_convolutions_compute_nnapis_integer_arithmetic(
        type_: T, filter_type: T, filter_zero: int, depthwise: bool, stride: tuple[int, int],
        pads: tuple[int, int, int, int], activation: int, multiplier: int, path: str) -> None:
    channels = 6
    out_channels = channels * multiplier if depthwise else 5
    x = _values(type_, (2, 11, 9, channels))
    x_scale, x_zero = 0.02 + RNG.random() * 0.1, _zero(type_)
    shape = (1, 3, 3, out_channels) if depthwise else (out_channels, 3, 3, channels)
    low, high = (-127, 127) if filter_type != U8 else (0, 255)
    w = RNG.integers(max(low, low + filter_zero), min(high, high + filter_zero) + 1,
                     shape).astype(np.uint8 if filter_type == U8 else np.int8)
    per_channel = filter_type == PER_CHANNEL
    w_scales = 0.005 + RNG.random(out_channels if per_channel else 1) * 0.02
    out_scale, out_zero = 0.02 + RNG.random() * 0.1, _zero(type_)
    bias = RNG.integers(-5000, 5000, out_channels).astype(np.int32)
    b = _Builder()
    inputs = [
        b.input(type_, x, x_scale, x_zero),
        b.constant(filter_type, w, 0.0 if per_channel else w_scales[0], filter_zero,
                   (3 if depthwise else 0, tuple(w_scales)) if per_channel else None),
        b.constant(T.TENSOR_INT32, bias, 0.0 if per_channel else float(
            np.float32(x_scale) * np.float32(w_scales[0]))),
        *b.ints(pads[2], pads[3], pads[0], pads[1], stride[1], stride[0]),
        *(b.ints(multiplier) if depthwise else []), *b.ints(activation)]
    acc = _conv(x, x_zero, w, filter_zero, bias, stride, pads, depthwise, multiplier)
    model = b.finish(Op.DEPTHWISE_CONV_2D if depthwise else Op.CONV_2D, inputs, type_,
                     acc.shape, out_scale, out_zero)
    real = (np.float64(np.float32(x_scale)) * w_scales.astype(np.float32)) / np.float32(
        out_scale)
    want = _requantize(acc, real, out_zero, type_, activation, out_scale)
    _check(_run(model, b.feed, path), want, path)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(("type_", "weight_zero", "batch", "units", "size", "activation"), [
    (U8, 0, 1, 10, 64, 0), (U8, 100, 8, 33, 200, 1), (S8, 0, 3, 7, 5, 3), (S8, -9, 8, 16, 96, 1),
])
def test_fully_connected_computes_nnapis_integer_arithmetic(
        type_: T, weight_zero: int, batch: int, units: int, size: int, activation: int,
        path: str) -> None:
    x = _values(type_, (batch, size))
    x_scale, x_zero = 0.02 + RNG.random() * 0.1, _zero(type_)
    w = _values(type_, (units, size))
    if type_ == S8:  # TFLite's int8 weights are symmetric: w - zero point within [-127, 127]
        w = np.clip(w.astype(np.int32), -127 + max(weight_zero, 0),
                    127 + min(weight_zero, 0)).astype(np.int8)
    w_scale = 0.005 + RNG.random() * 0.02
    out_scale, out_zero = 0.01 + RNG.random() * 0.1, _zero(type_)
    bias = RNG.integers(-5000, 5000, units).astype(np.int32)
    b = _Builder()
    inputs = [b.input(type_, x, x_scale, x_zero), b.constant(type_, w, w_scale, weight_zero),
              b.constant(T.TENSOR_INT32, bias, float(np.float32(x_scale) * np.float32(w_scale))),
              *b.ints(activation)]
    model = b.finish(Op.FULLY_CONNECTED, inputs, type_, (batch, units), out_scale, out_zero)
    acc = (x.astype(np.int64) - x_zero) @ (w.astype(np.int64) - weight_zero).T + bias
    real = float(np.float32(x_scale)) * float(np.float32(w_scale)) / float(np.float32(out_scale))
    want = _requantize(acc, np.asarray([real]), out_zero, type_, activation, out_scale)
    _check(_run(model, b.feed, path), want, path)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("type_", [U8, S8])
@pytest.mark.parametrize("kind", [Op.ADD, Op.SUB, Op.MUL])
@pytest.mark.parametrize(("shapes", "activation"), [
    (((4, 8, 8, 8), (4, 8, 8, 8)), 0), (((4, 8, 8, 8), (1, 1, 8)), 1),
    (((2, 3, 4, 5, 6), (2, 1, 4, 1, 6)), 3),
])
def test_arithmetic_computes_nnapis_integer_arithmetic(
        kind: Op, type_: T, shapes: tuple[tuple[int, ...], ...], activation: int,
        path: str) -> None:
    x1, x2 = _values(type_, shapes[0]), _values(type_, shapes[1])
    q1, q2 = ((0.05 + RNG.random(), _zero(type_)) for _ in range(2))
    # a MUL is taken where its product cannot pass TFLite's 16 bits: a larger output scale
    out = ((2.5 if kind == Op.MUL else 0.1) + RNG.random(), _zero(type_))
    b = _Builder()
    inputs = [b.input(type_, x1, *q1), b.input(type_, x2, *q2), *b.ints(activation)]
    model = b.finish(kind, inputs, type_, shapes[0], *out)
    if kind == Op.MUL:
        want = _mul(x1, q1, x2, q2, out, type_, activation)
    else:
        want = _add(x1, q1, x2, q2, out, type_, activation, -1 if kind == Op.SUB else 1)
    _check(_run(model, b.feed, path), want, path)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("type_", [U8, S8])
@pytest.mark.parametrize(("kind", "size", "stride", "pads", "activation"), [
    (Op.MAX_POOL_2D, (2, 2), 2, (0, 0, 0, 0), 0), (Op.MAX_POOL_2D, (3, 2), 1, (1, 2, 0, 1), 2),
    (Op.AVERAGE_POOL_2D, (2, 2), 2, (0, 0, 0, 0), 3), (Op.AVERAGE_POOL_2D, (3, 3), 1,
                                                        (1, 1, 1, 1), 1),
])
@pytest.mark.parametrize("zero_at_minimum", [False, True])
def test_pooling_computes_nnapis_integer_arithmetic(
        kind: Op, size: tuple[int, int], stride: int, pads: tuple[int, int, int, int],
        activation: int, type_: T, path: str, zero_at_minimum: bool) -> None:
    """Max over the real elements (explicit pads: the type's minimum, never a maximum);
    averages over the real elements, rounded half away from zero."""
    x = _values(type_, (2, 9, 10, 4))
    scale, zero = 0.05 + RNG.random(), max(_zero(type_), QUANT_RANGES[type_][0] + 1)
    if zero_at_minimum:  # no value below the zero point: padded with it (PAD, not PADV2)
        zero = QUANT_RANGES[type_][0]
    top, bottom, left, right = pads
    oh = (9 + top + bottom - size[0]) // stride + 1
    ow = (10 + left + right - size[1]) // stride + 1
    b = _Builder()
    inputs = [b.input(type_, x, scale, zero),
              *b.ints(left, right, top, bottom, stride, stride, size[1], size[0], activation)]
    model = b.finish(kind, inputs, type_, (2, oh, ow, 4), scale, zero)
    want = np.zeros((2, oh, ow, 4), np.int64)
    for i in range(oh):
        for j in range(ow):
            r, c = i * stride - top, j * stride - left
            window = x[:, max(r, 0):r + size[0], max(c, 0):c + size[1]].astype(np.int64)
            if kind == Op.MAX_POOL_2D:
                want[:, i, j] = window.max(axis=(1, 2))
            else:
                total, count = window.sum(axis=(1, 2)), window.shape[1] * window.shape[2]
                want[:, i, j] = np.sign(total) * ((np.abs(total) + count // 2) // count)
    low, high = activation_range(activation, scale, zero, type_)
    np.testing.assert_array_equal(_run(model, b.feed, path), np.clip(want, low, high))
    if kind == Op.MAX_POOL_2D and any(pads):
        assert ("PADV2" in _builtins(model)) != zero_at_minimum


def _builtins(model: Model) -> list[str]:
    names = {v: k for k, v in vars(fb.BuiltinOperator).items() if not k.startswith("_")}
    tflite = fb.ModelT.InitFromPackedBuf(write_partition(model), 0)
    return [names[tflite.operatorCodes[o.opcodeIndex].builtinCode]
            for o in tflite.subgraphs[0].operators]


# -- refusals -----------------------------------------------------------------------------------

def _reason(model: Model) -> str:
    reasons = LitertDriver().support(model).reasons
    assert 0 in reasons, "taken"
    return reasons[0]


def _conv_model(type_: T, filter_type: T, filter_value: Array, filter_zero: int = 0) -> Model:
    b = _Builder()
    per_channel = filter_type == PER_CHANNEL
    inputs = [b.input(type_, _values(type_, (1, 4, 4, 2)), 0.5, 0),
              b.constant(filter_type, filter_value, 0.0 if per_channel else 0.25, filter_zero,
                         (0, (0.25, 0.5)) if per_channel else None),
              b.constant(T.TENSOR_INT32, np.zeros(2, np.int32), 0.0 if per_channel else 0.125),
              *b.ints(0, 0, 0, 0, 1, 1, 0)]
    return b.finish(Op.CONV_2D, inputs, type_, (1, 4, 4, 2), 1.0, 0)


def test_what_tflite_computes_otherwise_is_refused_with_the_reason() -> None:
    ones = np.ones((2, 1, 1, 2), np.int8)
    # an int8 filter of zero point 10 holding -128: -138 is not an int8
    shifted = np.full((2, 1, 1, 2), -128, np.int8)
    assert "int8 kernels take symmetric filters" in _reason(_conv_model(S8, S8, shifted, 10))
    assert LitertDriver().support(_conv_model(S8, S8, ones, 10)).reasons == {}

    b = _Builder()
    x = _values(U8, (4, 4))
    inputs = [b.input(U8, x, 1.0, 200), b.input(U8, x, 1.0, 0), *b.ints(0)]
    assert "16 bits" in _reason(b.finish(Op.MUL, inputs, U8, (4, 4), 1.01, 200))

    b = _Builder()
    inputs = [b.constant(S8, _values(S8, (4,)), 0.5, 0)]
    assert "DEQUANTIZE of a constant" in _reason(
        b.finish(Op.DEQUANTIZE, inputs, T.TENSOR_FLOAT32, (4,), 0.0, 0))

    b = _Builder()
    inputs = [b.input(S8, _values(S8, (2, 2)), 0.5, 0), b.input(S8, _values(S8, (2, 2)), 0.25, 0),
              *b.ints(0)]
    assert "int8 kernel does not rescale" in _reason(
        b.finish(Op.CONCATENATION, inputs, S8, (4, 2), 0.5, 0))
    # uint8 too: a uint8 region with per-channel filters is computed in int8
    assert "does not rescale" in _reason(_concatenation_model(U8)[0])


def _two_convs(filter_zero: int) -> Model:
    """A uint8 convolution with a per-channel filter (multipliers 1 and 2: exact), then one
    with a uint8 filter of ``filter_zero`` holding 1 and 255 (a step off in between would be
    32 after it)."""
    b = _Builder()
    x = b.input(U8, _values(U8, (1, 4, 4, 2)), 0.5, 100)
    pc = b.constant(PER_CHANNEL, np.ones((2, 1, 1, 2), np.int8), 0.0, 0, (0, (0.25, 0.5)))
    inputs = [x, pc, b.constant(T.TENSOR_INT32, np.zeros(2, np.int32)), *b.ints(1, 1, 1, 0)]
    middle = b.model.add_operand(U8, (1, 4, 4, 2), 0.125, 120)
    b.model.add_operation(Op.CONV_2D, inputs, [middle])
    w = b.constant(U8, np.array([1, 255, 2, 3], np.uint8).reshape(2, 1, 1, 2), 0.25,
                   filter_zero)
    inputs = [middle, w, b.constant(T.TENSOR_INT32, np.zeros(2, np.int32), 0.03125),
              *b.ints(1, 1, 1, 0)]
    return b.finish(Op.CONV_2D, inputs, U8, (1, 4, 4, 2), 1.0, 128)


@pytest.mark.parametrize("path", PATHS)
def test_a_uint8_convolution_with_a_per_channel_filter_is_computed_in_int8(path: str) -> None:
    """The whole partition in int8 (uint8 values and zero points moved by -128, the inputs and
    outputs as the dispatch copies them); where a uint8 filter moved is not symmetric enough
    for TFLite's int8 kernels (0 and 255 around 128: -128 and 127), that convolution stays
    uint8 and the per-channel one converts each way."""
    # 1 and 255 around 128: -127 and 127; around 129: -128, refused by TFLite's int8 kernels
    model = _two_convs(128)
    graph = fb.ModelT.InitFromPackedBuf(write_partition(model), 0).subgraphs[0]
    assert _builtins(model) == ["CONV_2D", "CONV_2D"]
    assert {graph.tensors[k].type for o in graph.operators for k in o.inputs[:2]} == {
        fb.TensorType.INT8}
    assert list(graph.tensors[graph.inputs[0]].quantization.zeroPoint) == [-28]
    mixed = _two_convs(129)
    assert _builtins(mixed) == ["QUANTIZE", "CONV_2D", "QUANTIZE", "CONV_2D"]
    for built in (model, mixed):
        x = _values(U8, (1, 4, 4, 2))
        want = nnrt.reference.run(built, [x])[0]
        got = _run(built, [x], path)
        assert got.dtype == np.uint8
        assert np.abs(got.astype(int) - want.astype(int)).max() <= 1


def test_a_quantised_operation_without_a_tflite_form_names_the_operation() -> None:
    b = _Builder()
    inputs = [b.input(U8, _values(U8, (1, 4, 4, 1)), 0.5, 0), *b.ints(8, 8),
              b.constant(T.BOOL, np.bool_(False))]
    reason = _reason(b.finish(Op.RESIZE_BILINEAR, inputs, U8, (1, 8, 8, 1), 0.5, 0))
    assert "RESIZE_BILINEAR" in reason


# -- bytecode checks ----------------------------------------------------------------------------

def _quantized_bytecode(edit: Any) -> bytes:
    import flatbuffers

    b = _Builder()
    inputs = [b.input(S8, _values(S8, (2, 4)), 0.5, 1), b.input(S8, _values(S8, (2, 4)), 0.5, 1),
              *b.ints(0)]
    model = fb.ModelT.InitFromPackedBuf(write_partition(
        b.finish(Op.ADD, inputs, S8, (2, 4), 1.0, 0)), 0)
    edit(model.subgraphs[0].tensors[0].quantization)
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def _two_scales(params: Any) -> None:
    params.scale = np.asarray([0.5, 0.25], np.float32)


def _negative_scale(params: Any) -> None:
    params.scale = np.asarray([-0.5], np.float32)


def _zero_point_out_of_range(params: Any) -> None:
    params.zeroPoint = np.asarray([300], np.int64)


def _min_set(params: Any) -> None:
    params.min = np.asarray([0.0], np.float32)


@pytest.mark.parametrize(("edit", "message"), [
    (_two_scales, "2 scales, 1 zero points"), (_negative_scale, "quantisation parameters"),
    (_zero_point_out_of_range, "quantisation parameters"),
    (_min_set, "tensor 0 quantization sets min"),
])
def test_quantisation_parameters_are_checked_before_litert_sees_them(edit: Any,
                                                                     message: str) -> None:
    with pytest.raises(nnrt.BadData, match=message):
        LitertDispatch().load(_quantized_bytecode(edit), "main")


# -- against the reference interpreter ----------------------------------------------------------

def _activation_model(kind: Op, type_: T, scale: float, zero: int) -> tuple[Model, list[Array]]:
    """LOGISTIC / TANH of every value of ``type_``; SOFTMAX of random rows."""
    low, high = QUANT_RANGES[type_]
    dtype = np.uint8 if low == 0 else np.int8
    fixed = {Op.LOGISTIC: (1 / 256, low), Op.TANH: (1 / 128, (low + high + 1) // 2),
             Op.SOFTMAX: (1 / 256, low)}[kind]
    b = _Builder()
    if kind == Op.SOFTMAX:
        x = _values(type_, (16, 33))
        inputs = [b.input(type_, x, scale, zero), b.constant(T.FLOAT32, np.float32(scale * 20))]
    else:
        x = np.arange(low, high + 1).astype(dtype).reshape(4, 64)
        inputs = [b.input(type_, x, scale, zero)]
    return b.finish(kind, inputs, type_, x.shape, *fixed), b.feed


def _mean_model(type_: T, axes: list[int], keep: int) -> tuple[Model, list[Array]]:
    x = _values(type_, (2, 7, 9, 16))
    scale, zero = 0.1 + RNG.random(), _zero(type_)
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape)) if keep else tuple(
        d for i, d in enumerate(x.shape) if i not in axes)
    b = _Builder()
    inputs = [b.input(type_, x, scale, zero), b.constant(T.TENSOR_INT32, np.int32(axes)),
              *b.ints(keep)]
    return b.finish(Op.MEAN, inputs, type_, shape, scale, zero), b.feed


def _quantize_model(type_: T) -> tuple[Model, list[Array]]:
    """Random floats and every halfway point between two steps."""
    scale, zero = 0.05 + RNG.random(), _zero(type_)
    ties = ((np.arange(-300, 300) + 0.5) * np.float32(scale)).astype(np.float32)
    x = np.concatenate([(RNG.standard_normal(2000) * 30).astype(np.float32), ties])
    b = _Builder()
    return b.finish(Op.QUANTIZE, [b.input(T.TENSOR_FLOAT32, x)], type_, x.shape, scale,
                    zero), b.feed


def _concatenation_model(type_: T) -> tuple[Model, list[Array]]:
    """uint8 inputs of other scales and zero points than the output's: rescaled."""
    x1, x2 = _values(type_, (2, 3, 4, 5)), _values(type_, (2, 3, 4, 7))
    b = _Builder()
    inputs = [b.input(type_, x1, 0.1 + RNG.random(), _zero(type_)),
              b.input(type_, x2, 0.1 + RNG.random(), _zero(type_)), *b.ints(3)]
    return b.finish(Op.CONCATENATION, inputs, type_, (2, 3, 4, 12), 0.1 + RNG.random(),
                    _zero(type_)), b.feed


def _batch_matmul_model(rhs_zero: int) -> tuple[Model, list[Array]]:
    """[3, 5, 9] x [3, 9, 4], the second operand transposed (``adj_y``)."""
    lhs, rhs = _values(S8, (3, 5, 9)), _values(S8, (3, 4, 9))
    b = _Builder()
    inputs = [b.input(S8, lhs, 0.5 + RNG.random(), _zero(S8)),
              b.input(S8, rhs, 0.5 + RNG.random(), rhs_zero),
              b.constant(T.BOOL, np.bool_(False)), b.constant(T.BOOL, np.bool_(True))]
    return b.finish(Op.BATCH_MATMUL, inputs, S8, (3, 5, 4), 20 + RNG.random() * 20,
                    _zero(S8)), b.feed


def _transpose_conv_model(type_: T, filter_type: T) -> tuple[Model, list[Array]]:
    """A 3x3 stride-2 transposed convolution, SAME padding, RELU."""
    x = _values(type_, (2, 5, 6, 4))
    per_channel = filter_type == PER_CHANNEL
    scales = tuple(0.01 + RNG.random(3) * 0.02) if per_channel else (0.02,)
    w = RNG.integers(-127, 128, (3, 3, 3, 4)).astype(np.int8) if filter_type != U8 else (
        _values(U8, (3, 3, 3, 4)))
    x_scale = 0.1
    b = _Builder()
    inputs = [b.input(type_, x, x_scale, _zero(type_)),
              b.constant(filter_type, w, 0.0 if per_channel else scales[0],
                         _zero(filter_type) if filter_type == U8 else 0,
                         (0, scales) if per_channel else None),
              b.constant(T.TENSOR_INT32, RNG.integers(-500, 500, 3).astype(np.int32),
                         0.0 if per_channel else x_scale * scales[0]),
              b.constant(T.TENSOR_INT32, np.int32([2, 10, 12, 3])), *b.ints(1, 2, 2, 1),
              b.constant(T.BOOL, np.bool_(False))]
    return b.finish(Op.TRANSPOSE_CONV_2D, inputs, type_, (2, 10, 12, 3), 0.5,
                    _zero(type_)), b.feed


#: (name, model maker, the largest difference from the reference in steps, why).
_AGAINST_REFERENCE = [
    *((f"{kind.name} {t.name}", lambda kind=kind, t=t: _activation_model(
        kind, t, float(RNG.choice([0.004, 0.03, 0.1, 0.7])), _zero(t)), steps)
      for kind, steps in ((Op.LOGISTIC, 1), (Op.TANH, 0), (Op.SOFTMAX, 0)) for t in (U8, S8)),
    *((f"MEAN {t.name} {axes} {keep}", lambda t=t, axes=axes, keep=keep: _mean_model(
        t, axes, keep), 1) for t in (U8, S8) for axes, keep in (([1, 2], 1), ([3], 0))),
    *((f"QUANTIZE {t.name}", lambda t=t: _quantize_model(t), 1) for t in (U8, S8)),
    *((f"BATCH_MATMUL int8 rhs zero {zero}", lambda zero=zero: _batch_matmul_model(zero), 1)
      for zero in (0, 5)),
    *((f"TRANSPOSE_CONV_2D {t.name} {f.name}", lambda t=t, f=f: _transpose_conv_model(t, f), 1)
      for t, f in ((U8, U8), (S8, S8), (S8, PER_CHANNEL), (U8, PER_CHANNEL))),
]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(("name", "make", "steps"), _AGAINST_REFERENCE,
                         ids=[case[0] for case in _AGAINST_REFERENCE])
def test_quantised_operations_against_the_reference(name: str, make: Any, steps: int,
                                                    path: str) -> None:
    """Where TFLite computes NNAPI's fixed point, the same integers (TANH, SOFTMAX, a rescaling
    CONCATENATION, the builtin BATCH_MATMUL); one step off where it rounds otherwise: its 8-bit
    LOGISTIC is a table of float results (3 of the 256 inputs of a scale land a step off),
    MEAN rounds the average where NNAPI truncates it, QUANTIZE multiplies by ``1 / scale`` and
    rounds halfway points to even where NNAPI divides and rounds them away from zero, and
    XNNPACK requantizes products in float."""
    model, feed = make()
    want = nnrt.reference.run(model, feed)[0].astype(np.int64)
    got = _run(model, feed, path).astype(np.int64)
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= steps, name
