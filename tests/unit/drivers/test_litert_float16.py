"""TENSOR_FLOAT16 on the litert driver: computed in float32, converted at the partition's edges,
rounded to float16 where an operation would otherwise see more than a float16 holds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

import nnrt

pytest.importorskip("ai_edge_litert", reason="ai-edge-litert has no wheel for this platform")

from ai_edge_litert import schema_py_generated as fb

from nnrt.drivers.litert import LitertDispatch, LitertDriver, LitertPlugin
from nnrt.drivers.litert.flatbuffer import write_partition
from nnrt.hal.plugin import PluginDriver
from nnrt.testing.spec import FLOAT16_TOL

Op = nnrt.OperationType
T = nnrt.OperandType
ATOL, RTOL = FLOAT16_TOL
RNG = np.random.default_rng(16)


class RecordingDispatch(LitertDispatch):
    """LiteRT's dispatch, noting the dtypes of the arrays each invoke is handed."""

    def __init__(self) -> None:
        self.seen: list[tuple[list[str], list[str]]] = []

    def invoke(self, executable: Any, inputs: Sequence[np.ndarray],
               outputs: Sequence[np.ndarray]) -> None:
        self.seen.append(([a.dtype.name for a in inputs], [a.dtype.name for a in outputs]))
        super().invoke(executable, inputs, outputs)


def _half(shape: tuple[int, ...], scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float16)


def _cnn16() -> nnrt.Model:
    b = nnrt.ModelBuilder()
    x = b.input("image", (2, 8, 8, 3), "float16")
    y = b.conv2d(x, _half((6, 3, 3, 3), 0.5), _half((6,)), padding="same", activation="relu")
    y = b.average_pool2d(y, 2)
    y = b.reshape(y, (2, -1))
    y = b.fully_connected(y, _half((5, 96), 0.2), _half((5,)))
    b.output(b.softmax(y), y)
    return b.build()


def test_a_float16_model_runs_in_float32_with_float16_arrays_at_its_edges() -> None:
    model = _cnn16()
    dispatch = RecordingDispatch()
    driver = PluginDriver(LitertPlugin(), dispatch, device_type="cpu")
    assert not driver.support(model).reasons
    tflite = fb.ModelT.InitFromPackedBuf(write_partition(model), 0)
    assert {t.type for t in tflite.subgraphs[0].tensors} - {fb.TensorType.INT32} == {
        fb.TensorType.FLOAT32}  # every float tensor, constants too, in float32
    image = _half((2, 8, 8, 3))
    outputs = driver.prepare(model).execute([image]).outputs
    assert dispatch.seen == [(["float16"], ["float16", "float16"])]
    for got, want in zip(outputs, nnrt.reference.run(model, [image]), strict=True):
        assert got.dtype == np.float16
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   atol=ATOL, rtol=RTOL)


def test_casts_and_equal_see_float16_values_not_float32_ones() -> None:
    """``x + 0.1`` computed in float32 is not a float16: a CAST to float32 and an EQUAL read it
    rounded; a CAST to float16 rounds (2049 -> 2048) and overflows (70000 -> inf) before the
    next operation, exactly as the reference does."""
    b = nnrt.ModelBuilder()
    x = b.input("x", (4,), "float16")
    wide = b.input("wide", (4,), "float32")
    shifted = b.add(x, np.full(4, 0.1, np.float16))
    widened = b.operation(Op.CAST, shifted, output_types=[T.TENSOR_FLOAT32])[0]
    same = b.operation(Op.EQUAL, shifted, np.full(4, 1.0996094, np.float16),
                       output_types=[T.TENSOR_BOOL8])[0]
    narrowed = b.operation(Op.CAST, wide, output_types=[T.TENSOR_FLOAT16])[0]
    b.output(widened, same, b.add(narrowed, np.full(4, -10000.0, np.float16)))
    model = b.build()
    driver = LitertDriver()
    assert not driver.support(model).reasons
    feed = [np.array([1.0, 1.0, -3.0, 0.5], np.float16),
            np.array([70000.0, 2049.0, 12001.0, -1e-8], np.float32)]
    got = driver.prepare(model).execute(feed).outputs
    want = nnrt.reference.run(model, feed)
    assert want[1].tolist() == [True, True, False, False]
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_a_relaxed_float32_model_is_computed_in_float32() -> None:
    b = nnrt.ModelBuilder(relaxed=True)
    x = b.input("x", (3, 5))
    b.output(b.softmax(b.fully_connected(x, RNG.standard_normal((4, 5)).astype(np.float32),
                                         np.zeros(4, np.float32))))
    model = b.build()
    assert model.relaxed and not LitertDriver().support(model).reasons
    x_value = RNG.standard_normal((3, 5)).astype(np.float32)
    got = LitertDriver().prepare(model).execute([x_value]).outputs[0]
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, nnrt.reference.run(model, [x_value])[0], atol=1e-5,
                               rtol=1e-5)


def test_an_operation_mixing_float16_and_float32_is_not_taken() -> None:
    from nnrt.drivers.litert.support import _mixed_floats

    model = nnrt.Model()
    half = model.add_operand(T.TENSOR_FLOAT16, (2,))
    single = model.add_operand(T.TENSOR_FLOAT32, (2,))
    model.add_operation(Op.RELU, [half], [single])  # never finished: validation refuses it
    assert "mixes TENSOR_FLOAT16 and TENSOR_FLOAT32" in (_mixed_floats(model, 0) or "")
