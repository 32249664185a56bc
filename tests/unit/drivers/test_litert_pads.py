"""The litert compiler's explicit pads before a window: a PAD of zeros before a max pool (of
rectified values) written on [N, H, W * C] rows between two RESHAPEs, one before a convolution
left a plain NHWC PAD (XNNPACK fuses that into the convolution); the results as the reference
driver's either way."""

from __future__ import annotations

import numpy as np
import pytest

import nnrt

pytest.importorskip("ai_edge_litert", reason="ai-edge-litert has no wheel for this platform")

from ai_edge_litert import schema_py_generated as fb

from nnrt.drivers.litert import LitertDriver
from nnrt.drivers.litert.flatbuffer import write_partition

Op = nnrt.OperationType
RNG = np.random.default_rng(1127)
_NAMES = {v: k for k, v in vars(fb.BuiltinOperator).items() if not k.startswith("_")}


def _operators(model: nnrt.Model) -> list[tuple[str, list[list[int]]]]:
    """Each operator's builtin and the shapes of its inputs."""
    tflite = fb.ModelT.InitFromPackedBuf(write_partition(model), 0)
    tensors = tflite.subgraphs[0].tensors
    return [(_NAMES[tflite.operatorCodes[o.opcodeIndex].builtinCode],
             [[int(d) for d in tensors[i].shape] for i in o.inputs])
            for o in tflite.subgraphs[0].operators]


def _run(model: nnrt.Model, x: np.ndarray) -> np.ndarray:
    driver = LitertDriver()
    assert not driver.support(model).reasons
    return driver.prepare(model).execute([x]).outputs[0]


@pytest.mark.parametrize(("shape", "nchw", "pads"), [
    ((8, 12, 12, 16), False, (1, 1, 1, 1)),  # the ResNet-style CNN's max pool, in small
    ((2, 5, 9, 7), False, (2, 0, 1, 2)),  # uneven (left, right, top, bottom)
    ((1, 3, 10, 8), True, (1, 1, 1, 1)),  # NCHW (ONNX): in NHWC between the TRANSPOSEs
])
def test_a_max_pool_pad_is_written_on_rows(shape: tuple[int, ...], nchw: bool,
                                           pads: tuple[int, int, int, int]) -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", shape)
    y = b.operation(Op.MAX_POOL_2D, b.relu(x), *pads, 2, 2, 3, 3, 0, nchw)[0]
    b.output(y)
    model = b.build()
    ops = _operators(model)
    names = [name for name, _ in ops]
    at = names.index("PAD")
    assert names[at - 1:at + 3] == ["RESHAPE", "PAD", "RESHAPE", "MAX_POOL_2D"]
    n, height, width, channels = (shape[0], shape[2], shape[3], shape[1]) if nchw else shape
    left, right, top, bottom = pads
    assert ops[at][1][0] == [n, height, width * channels]  # the rows
    assert ops[at + 1][1][0] == [n, height + top + bottom, (width + left + right) * channels]
    value = RNG.standard_normal(shape).astype(np.float32)
    np.testing.assert_array_equal(_run(model, value), nnrt.reference.run(model, [value])[0])


def test_a_convolution_pad_stays_a_plain_pad() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (2, 16, 16, 8))
    filt = RNG.standard_normal((8, 3, 3, 8)).astype(np.float32)
    b.output(b.operation(Op.CONV_2D, x, filt, np.zeros(8, np.float32), 1, 1, 1, 1, 2, 2, 0)[0])
    model = b.build()
    assert [(name, shapes[0]) for name, shapes in _operators(model)] == [
        ("PAD", [2, 16, 16, 8]), ("CONV_2D", [2, 18, 18, 8])]
    value = RNG.standard_normal((2, 16, 16, 8)).astype(np.float32)
    np.testing.assert_allclose(_run(model, value), nnrt.reference.run(model, [value])[0],
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("dtype", "zero_point"), [("uint8", 128), ("int8", 3)])
def test_a_quantised_max_pool_pad_is_written_on_rows_with_the_zero_point(
        dtype: str, zero_point: int) -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (2, 8, 8, 5), dtype, scale=0.1, zero_point=zero_point)
    b.output(b.operation(Op.MAX_POOL_2D, b.relu(x), 1, 1, 1, 1, 2, 2, 3, 3, 0)[0])
    model = b.build()
    names = [name for name, _ in _operators(model)]
    assert names[names.index("PAD") - 1:] == ["RESHAPE", "PAD", "RESHAPE", "MAX_POOL_2D"]
    info = np.iinfo(dtype)
    value = RNG.integers(info.min, info.max + 1, (2, 8, 8, 5)).astype(dtype)
    np.testing.assert_array_equal(_run(model, value), nnrt.reference.run(model, [value])[0])
