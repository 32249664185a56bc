"""Quantised models as onnxruntime's quantisation tools write them, imported by nnrt and run
against onnxruntime running the same quantised model.

The float models: a small CNN built here with onnx.helper (conv, depthwise conv, relu, pools,
concat, gemm, softmax) and the PP-OCR mobile v2.0 text-direction classifier of the rapidocr
3.10.0 wheel (the test cache of ``tests/models``; skipped offline without it). Each is
quantised by ``onnxruntime.quantization`` after its ``quant_pre_process``:

- static QDQ (``quantize_static``, ``QuantFormat.QDQ``) calibrated on a few random inputs: uint8
  activations and weights per tensor, int8 activations and weights per channel, uint8
  activations with int8 weights per channel;
- dynamic (``quantize_dynamic``: DynamicQuantizeLinear, ConvInteger, MatMulInteger).

nnrt runs each through ``nnrt.reference.run`` and through the runtime at its default drivers.
Static models: at least 99.9% of the output elements are within one quantisation step (the
scale of the output's DequantizeLinear) of onnxruntime's — nnrt computes NNAPI's integer
arithmetic, onnxruntime its own, which rounds differently on rare halfway cases — and the
classifiers pick the same class wherever onnxruntime's choice is clear by more than two steps.
Dynamic models compute in float between the integer products and quantise every layer's input
again: a float32 rounding difference (summation order) occasionally moves a value across a
quantisation boundary, one step, and the next layers spread it (on the classifier a few in 10**5
values at first, some percent of the last layer's). Their outputs are compared within 0.03, with
the same task-level check.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
quantization = pytest.importorskip("onnxruntime.quantization")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from oracle import ort_session  # noqa: E402

import nnrt  # noqa: E402
import nnrt.onnx  # noqa: E402
import nnrt.reference  # noqa: E402

pytestmark = [pytest.mark.anyio]

Array = np.ndarray[Any, Any]
Feeds = dict[str, Array]
Q = quantization.QuantType

#: static QDQ variants: name -> quantize_static keyword arguments.
STATIC = {
    "uint8 per tensor": {"activation_type": Q.QUInt8, "weight_type": Q.QUInt8,
                         "per_channel": False},
    "int8 per channel": {"activation_type": Q.QInt8, "weight_type": Q.QInt8,
                         "per_channel": True},
    "uint8, int8 weights per channel": {"activation_type": Q.QUInt8, "weight_type": Q.QInt8,
                                        "per_channel": True},
}
#: Share of output elements that must be within one quantisation step of onnxruntime's.
AGREEMENT = 0.999
#: How far a dynamically quantised model's outputs may be from onnxruntime's (see above).
DYNAMIC = 0.03


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# -- the float models -------------------------------------------------------------------------


def small_cnn(seed: int = 0) -> Any:
    """x [batch, 3, 16, 16] -> probabilities [batch, 5]: conv + relu, max pool, a depthwise and
    a 1x1 branch concatenated, average pool, global average pool, gemm, softmax."""
    rng = np.random.default_rng(seed)
    inits: list[Any] = []

    def weight(name: str, *shape: int) -> str:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        value = (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)
        inits.append(numpy_helper.from_array(value, name))
        return name

    def bias(name: str, n: int) -> str:
        inits.append(numpy_helper.from_array((rng.standard_normal(n) * 0.1).astype(
            np.float32), name))
        return name

    make = helper.make_node
    nodes = [
        make("Conv", ["x", weight("w1", 8, 3, 3, 3), bias("b1", 8)], ["c1"], pads=[1] * 4),
        make("Relu", ["c1"], ["r1"]),
        make("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        make("Conv", ["p1", weight("w2", 8, 1, 3, 3), bias("b2", 8)], ["c2"], pads=[1] * 4,
             group=8),
        make("Relu", ["c2"], ["r2"]),
        make("Conv", ["p1", weight("w3", 8, 8, 1, 1), bias("b3", 8)], ["c3"]),
        make("Concat", ["r2", "c3"], ["cat"], axis=1),
        make("AveragePool", ["cat"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]),
        make("Conv", ["p2", weight("w4", 16, 16, 3, 3), bias("b4", 16)], ["c4"], pads=[1] * 4),
        make("Relu", ["c4"], ["r4"]),
        make("GlobalAveragePool", ["r4"], ["g"]),
        make("Flatten", ["g"], ["f"]),
        make("Gemm", ["f", weight("w5", 5, 16), bias("b5", 5)], ["logits"], transB=1),
        make("Softmax", ["logits"], ["y"], axis=1),
    ]
    graph = helper.make_graph(
        nodes, "small_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 5])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def _images(shape: tuple[int, ...], count: int, seed: int) -> list[Feeds]:
    rng = np.random.default_rng(seed)
    return [{"x": rng.random(shape, dtype=np.float32)} for _ in range(count)]


class _Calibration(quantization.CalibrationDataReader):  # type: ignore[misc]
    """onnxruntime's calibration over a list of feeds."""

    def __init__(self, feeds: list[Feeds]) -> None:
        self._feeds: Iterator[Feeds] = iter(feeds)

    def get_next(self) -> Feeds | None:
        return next(self._feeds, None)


def _quantized(source: Path, target: Path, calibration: list[Feeds] | None,
               options: dict[str, Any] | None) -> Path:
    """``source`` pre-processed and quantised into ``target``: static QDQ with ``options``
    calibrated on ``calibration``, or dynamic (None)."""
    prepared = target.with_suffix(".pre.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantization.quant_pre_process(str(source), str(prepared), skip_symbolic_shape=True)
        if calibration is None:
            quantization.quantize_dynamic(str(prepared), str(target))
        else:
            quantization.quantize_static(str(prepared), str(target), _Calibration(calibration),
                                         quant_format=quantization.QuantFormat.QDQ,
                                         **(options or {}))
    return target


def _output_steps(path: Path) -> list[float]:
    """Per graph output, the scale of the DequantizeLinear producing it (through Identity)."""
    model = onnx.load(str(path))
    producer = {o: node for node in model.graph.node for o in node.output}
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    steps = []
    for output in model.graph.output:
        node = producer[output.name]
        while node.op_type == "Identity":
            node = producer[node.input[0]]
        assert node.op_type == "DequantizeLinear", f"{output.name} comes from {node.op_type}"
        steps.append(float(inits[node.input[1]].reshape(-1)[0]))
    return steps


# -- checks -------------------------------------------------------------------------------------


def _within_one_step(got: Array, want: Array, step: float, what: str) -> None:
    got = np.asarray(got).reshape(want.shape)
    close = np.abs(got.astype(np.float64) - want) <= step * (1 + 1e-3)
    share = float(np.mean(close))
    worst = float(np.max(np.abs(got - want))) / step
    assert share >= AGREEMENT, (f"{what}: {share:.4%} of the outputs within one step of "
                                f"onnxruntime's (worst {worst:.1f} steps)")


def _same_clear_classes(got: Array, want: Array, margin: float, what: str) -> None:
    """The same argmax wherever onnxruntime's top two differ by more than ``margin``."""
    top = np.sort(want, axis=-1)
    clear = top[..., -1] - top[..., -2] > margin
    agree = np.argmax(got, -1) == np.argmax(want, -1)
    assert np.all(agree[clear]), f"{what}: a clear class differs from onnxruntime's"


async def _compare(path: Path, feeds: list[Feeds],
                   check: Callable[[Array, Array, str], None]) -> None:
    """nnrt (reference interpreter and runtime) against onnxruntime on every feed."""
    model = nnrt.onnx.load(path)
    session = ort_session(path)
    async with nnrt.Runtime() as rt:
        compiled = await rt.compile(model)
        for k, feed in enumerate(feeds):
            want = session.run(None, feed)
            direct = nnrt.reference.run(model, feed)
            served = await compiled.execute(feed)
            for j, w in enumerate(want):
                check(direct[j], w, f"feed {k}, output {j}, reference")
                check(served[j], w, f"feed {k}, output {j}, runtime")


# -- the small CNN ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cnn_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("quantized") / "small_cnn.onnx"
    onnx.save(small_cnn(), str(path))
    return path


@pytest.mark.parametrize("variant", list(STATIC))
async def test_a_static_qdq_cnn_agrees_with_onnxruntime_within_one_step(
        variant: str, cnn_path: Path) -> None:
    path = _quantized(cnn_path, cnn_path.with_name(f"cnn {variant}.onnx"),
                      _images((1, 3, 16, 16), 8, 1), STATIC[variant])
    (step,) = _output_steps(path)

    def check(got: Array, want: Array, what: str) -> None:
        _within_one_step(got, want, step, what)
        _same_clear_classes(np.asarray(got).reshape(want.shape), want, 2 * step, what)

    await _compare(path, _images((4, 3, 16, 16), 3, 2) + _images((1, 3, 16, 16), 2, 3), check)


#: Dynamic quantisation computes its parameters with reductions the litert driver does not take:
#: the model alternates between drivers at every DynamicQuantizeLinear (slow, but exact).
SPLIT_ACROSS_DRIVERS = pytest.mark.filterwarnings(
    "ignore::nnrt.PartitionWarning")


@SPLIT_ACROSS_DRIVERS
async def test_a_dynamically_quantised_cnn_agrees_with_onnxruntime(cnn_path: Path) -> None:
    path = _quantized(cnn_path, cnn_path.with_name("cnn dynamic.onnx"), None, None)

    def check(got: Array, want: Array, what: str) -> None:
        np.testing.assert_allclose(np.asarray(got).reshape(want.shape), want, atol=DYNAMIC,
                                   err_msg=what)
        _same_clear_classes(np.asarray(got).reshape(want.shape), want, 2 * DYNAMIC, what)

    await _compare(path, _images((4, 3, 16, 16), 3, 4), check)


# -- the PP-OCR classifier ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def classifier(rapidocr_models: Path) -> Path:
    return rapidocr_models / "ch_ppocr_mobile_v2.0_cls_mobile.onnx"


@pytest.mark.network
@pytest.mark.parametrize("variant", list(STATIC))
async def test_the_static_qdq_ppocr_classifier_agrees_with_onnxruntime_within_one_step(
        variant: str, classifier: Path, tmp_path: Path) -> None:
    path = _quantized(classifier, tmp_path / "cls.onnx", _images((1, 3, 48, 192), 4, 5),
                      STATIC[variant])
    (step,) = _output_steps(path)

    def check(got: Array, want: Array, what: str) -> None:
        _within_one_step(got, want, step, what)
        _same_clear_classes(np.asarray(got).reshape(want.shape), want, 2 * step, what)

    await _compare(path, _images((2, 3, 48, 192), 2, 6) + _images((1, 3, 48, 160), 1, 7), check)


@pytest.mark.network
@SPLIT_ACROSS_DRIVERS
async def test_the_dynamically_quantised_ppocr_classifier_agrees_with_onnxruntime(
        classifier: Path, tmp_path: Path) -> None:
    path = _quantized(classifier, tmp_path / "cls dynamic.onnx", None, None)

    def check(got: Array, want: Array, what: str) -> None:
        np.testing.assert_allclose(np.asarray(got).reshape(want.shape), want, atol=DYNAMIC,
                                   err_msg=what)
        _same_clear_classes(np.asarray(got).reshape(want.shape), want, 2 * DYNAMIC, what)

    await _compare(path, _images((2, 3, 48, 192), 2, 8), check)
