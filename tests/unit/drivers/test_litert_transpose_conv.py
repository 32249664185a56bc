"""The litert compiler's transposed convolutions: those whose windows tile the output (kernel =
stride, square, nothing cropped) written as a 1x1 CONV_2D and a DEPTH_TO_SPACE — the
selfie-segmentation decoders' last layer — and every other one as TRANSPOSE_CONV; the results
as the reference driver's either way."""

from __future__ import annotations

import numpy as np
import pytest

import nnrt

pytest.importorskip("ai_edge_litert", reason="ai-edge-litert has no wheel for this platform")

from ai_edge_litert import schema_py_generated as fb

from nnrt.drivers.litert import LitertDriver
from nnrt.drivers.litert.flatbuffer import write_partition

Op = nnrt.OperationType
T = nnrt.OperandType
RNG = np.random.default_rng(2027)
_NAMES = {v: k for k, v in vars(fb.BuiltinOperator).items() if not k.startswith("_")}


def _builtins(model: nnrt.Model) -> list[str]:
    tflite = fb.ModelT.InitFromPackedBuf(write_partition(model), 0)
    return [_NAMES[tflite.operatorCodes[o.opcodeIndex].builtinCode]
            for o in tflite.subgraphs[0].operators]


def _run(model: nnrt.Model, x: np.ndarray) -> None:
    """Runs whole on litert, with the reference's results (sums of a few products: float
    rounding apart, the same)."""
    driver = LitertDriver()
    assert not driver.support(model).reasons
    got = driver.prepare(model).execute([x]).outputs[0]
    want = nnrt.reference.run(model, [x])[0]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _transpose_conv(shape: tuple[int, ...], filt: np.ndarray, bias: np.ndarray, *,
                    stride: tuple[int, int], pads: tuple[int, int, int, int] = (0, 0, 0, 0),
                    activation: int = 0, nchw: bool = False, float16: bool = False
                    ) -> nnrt.Model:
    """One TRANSPOSE_CONV_2D (explicit padding: left, right, top, bottom); ``float16``: its
    filter and bias are TENSOR_FLOAT16 constants widened by a CAST, as TFLite files keep
    their weights."""
    b = nnrt.ModelBuilder()
    x = b.input("x", shape)
    weights: list[nnrt.Tensor | np.ndarray] = [filt, bias]
    if float16:
        weights = [b.operation(Op.CAST, b.constant(w.astype(np.float16)),
                               output_types=[T.TENSOR_FLOAT32])[0] for w in (filt, bias)]
    b.output(b.operation(Op.TRANSPOSE_CONV_2D, x, *weights, *pads, stride[1], stride[0],
                         activation, nchw)[0])
    return b.build()


def _weights(depth: int, kernel: tuple[int, int], channels: int) -> tuple[np.ndarray, ...]:
    return (RNG.standard_normal((depth, *kernel, channels)).astype(np.float32),
            RNG.standard_normal(depth).astype(np.float32))


@pytest.mark.parametrize(("shape", "depth", "block", "activation", "nchw"), [
    ((1, 9, 16, 16), 1, 2, 0, False),  # the selfie decoders' last layer, in small
    ((2, 5, 4, 3), 4, 3, 1, False),  # RELU fused: on the convolution
    ((1, 6, 5, 7), 2, 2, 3, True),  # NCHW (an ONNX decoder), RELU6
])
def test_a_tiling_transposed_convolution_is_a_1x1_convolution_and_a_depth_to_space(
        shape: tuple[int, ...], depth: int, block: int, activation: int, nchw: bool) -> None:
    channels = shape[1] if nchw else shape[3]
    model = _transpose_conv(shape, *_weights(depth, (block, block), channels),
                            stride=(block, block), activation=activation, nchw=nchw)
    ops = _builtins(model)
    assert "TRANSPOSE_CONV" not in ops
    assert ops[ops.index("CONV_2D") + 1] == "DEPTH_TO_SPACE"
    _run(model, RNG.standard_normal(shape).astype(np.float32) * 3)


def test_float16_weights_widened_by_a_cast_tile_too() -> None:
    model = _transpose_conv((1, 8, 8, 16), *_weights(1, (2, 2), 16), stride=(2, 2),
                            float16=True)
    assert _builtins(model) == ["CONV_2D", "DEPTH_TO_SPACE"]
    _run(model, RNG.standard_normal((1, 8, 8, 16)).astype(np.float32))


def test_a_1x1_transposed_convolution_at_stride_1_is_the_convolution_alone() -> None:
    model = _transpose_conv((1, 4, 4, 5), *_weights(3, (1, 1), 5), stride=(1, 1))
    assert _builtins(model) == ["CONV_2D"]
    _run(model, RNG.standard_normal((1, 4, 4, 5)).astype(np.float32))


@pytest.mark.parametrize(("kernel", "stride", "pads"), [
    ((3, 3), (2, 2), (0, 0, 0, 0)),  # overlapping windows: sums of several taps
    ((2, 2), (2, 2), (0, 1, 0, 1)),  # cropped (SAME, odd output): not input x stride
    ((2, 1), (2, 1), (0, 0, 0, 0)),  # not square: DEPTH_TO_SPACE has one block size
    ((2, 2), (1, 1), (0, 0, 0, 0)),  # kernel over stride: overlapping again
])
def test_other_transposed_convolutions_stay_transpose_conv(
        kernel: tuple[int, int], stride: tuple[int, int],
        pads: tuple[int, int, int, int]) -> None:
    shape = (1, 5, 6, 4)
    model = _transpose_conv(shape, *_weights(3, kernel, 4), stride=stride, pads=pads)
    assert "TRANSPOSE_CONV" in _builtins(model)
    _run(model, RNG.standard_normal(shape).astype(np.float32))


def test_a_filter_computed_in_the_model_stays_transpose_conv() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 4, 4, 2))
    filt, bias = _weights(2, (2, 2), 2)
    doubled = b.add(b.constant(filt), b.constant(filt))  # an ADD of constants: not a constant
    b.output(b.operation(Op.TRANSPOSE_CONV_2D, x, doubled, bias, 0, 0, 0, 0, 2, 2, 0,
                         False)[0])
    model = b.build()
    assert "TRANSPOSE_CONV" in _builtins(model)
    _run(model, RNG.standard_normal((1, 4, 4, 2)).astype(np.float32))
