"""Quantised models as onnxruntime's quantisation tools write them, imported by nnrt and run
against onnxruntime running the same quantised model.

The float models: a small CNN built here with onnx.helper (conv, depthwise conv, relu, pools,
concat, gemm, softmax) and the PP-OCR mobile v2.0 text-direction classifier of the rapidocr
3.10.0 wheel (the test cache of ``tests/models``; skipped offline without it). Each is
quantised by ``onnxruntime.quantization`` after its ``quant_pre_process``:

- static QDQ (``quantize_static``, ``QuantFormat.QDQ``) calibrated on a few inputs (random
  images for the CNN, synthetic text lines for the classifier): uint8 activations and weights
  per tensor, int8 activations and weights per channel, uint8 activations with int8 weights per
  channel;
- dynamic (``quantize_dynamic``: DynamicQuantizeLinear, ConvInteger, MatMulInteger).

nnrt runs each through ``nnrt.reference.run`` and through the runtime at its default drivers.
Static models: at least 99.9% of the output elements are within one quantisation step (the
scale of the output's DequantizeLinear) of onnxruntime's — nnrt computes NNAPI's integer
arithmetic, onnxruntime its own, which rounds differently on rare halfway cases — and the
classifiers pick the same class wherever onnxruntime's choice is clear by more than two steps.
The PP-OCR classifier amplifies those rare differences through its 50 quantised layers: its
first layers are held to the one-step rule, its output to the task (see its test).
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

from onnx import TensorProto, helper, numpy_helper, version_converter  # noqa: E402
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
#: Quantised models alternate between drivers: quantised operations run where a driver takes
#: them (the reference driver at least), the float operations between them (HardSigmoid, Div,
#: a dynamic quantisation's reductions) on others. Slow, but what is checked here is the result.
SPLIT_ACROSS_DRIVERS = pytest.mark.filterwarnings("ignore::nnrt.PartitionWarning")
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
    model = onnx.load(str(source))
    if _default_opset(model) < 13:  # per-axis DequantizeLinear needs opset 13
        source = target.with_suffix(".opset13.onnx")
        onnx.save(version_converter.convert_version(model, 13), str(source))
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


def _default_opset(model: Any) -> int:
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


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


@SPLIT_ACROSS_DRIVERS
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


def _text_lines(count: int, seed: int, width: int = 192) -> Feeds:
    """``count`` synthetic text-line crops (dark strokes on white, half upside down),
    normalised as PP-OCR's classifier expects (``(x - 0.5) / 0.5``)."""
    rng = np.random.default_rng(seed)
    images = np.ones((count, 3, 48, width), np.float32)
    for image in images:
        for k in range(int(rng.integers(5, width // 16))):
            x, y = 8 + 15 * k + int(rng.integers(0, 5)), int(rng.integers(10, 20))
            image[:, y:y + int(rng.integers(10, 25)), x:x + int(rng.integers(3, 10))] = (
                rng.random() * 0.3)
        if rng.random() < 0.5:
            image[:] = image[:, ::-1, ::-1]
    return {"x": (images - 0.5) / 0.5}


def _exposing(path: Path, count: int) -> tuple[Path, list[float]]:
    """A copy of quantised model ``path`` returning, after its outputs, its first ``count``
    activations as quantised (the outputs of DequantizeLinear nodes of runtime tensors),
    and those activations' steps."""
    model = onnx.load(str(path))
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    steps = []
    for node in model.graph.node:
        if node.op_type == "DequantizeLinear" and node.input[0] not in inits:
            model.graph.output.append(onnx.ValueInfoProto(name=node.output[0]))
            steps.append(float(inits[node.input[1]].reshape(-1)[0]))
            if len(steps) == count:
                break
    exposed = path.with_name(f"{path.stem} exposed.onnx")
    onnx.save(model, str(exposed))
    return exposed, steps


@pytest.mark.network
@SPLIT_ACROSS_DRIVERS
@pytest.mark.parametrize("variant", list(STATIC))
async def test_the_static_qdq_ppocr_classifier_matches_onnxruntime_layer_by_layer_and_by_task(
        variant: str, classifier: Path, tmp_path: Path) -> None:
    """The first quantised layers agree within one step on 99.9% of their values, as
    everywhere; this MobileNetV3 then amplifies the rare one-step differences (a requantised
    value within 2**-11 of a half step rounds differently in NNAPI's two-step fixed-point
    rescaling than in onnxruntime's float32 one, some 3 in 10**4 values per layer) through
    its 50 quantised layers, so its outputs are checked at the task level: no farther from
    the float model than onnxruntime's quantised run, and the same class as onnxruntime with
    per-channel weights. Per-tensor uint8 weights quantise this model too coarsely for its
    class to be stable: onnxruntime's own run of it changes the float model's class on 3 of 8
    text lines (and nnrt's as often), so its class is not compared."""
    path = _quantized(classifier, tmp_path / "cls.onnx",
                      [_text_lines(1, seed) for seed in range(8)], STATIC[variant])
    (step,) = _output_steps(path)
    exposed, steps = _exposing(path, 4)
    model = nnrt.onnx.load(exposed)
    session, float_session = ort_session(exposed), ort_session(path.with_suffix(".pre.onnx"))
    async with nnrt.Runtime() as rt:
        compiled = await rt.compile(model)
        for k, feed in enumerate([_text_lines(4, 100), _text_lines(2, 101, width=160)]):
            want = session.run(None, feed)
            (exact,) = float_session.run(None, feed)
            for how, got in (("reference", nnrt.reference.run(model, feed)),
                             ("runtime", await compiled.execute(feed))):
                what = f"feed {k}, {how}"
                for j, layer_step in enumerate(steps):
                    _within_one_step(got[1 + j], want[1 + j], layer_step, f"{what}, layer {j}")
                probabilities = np.asarray(got[0]).reshape(want[0].shape)
                if STATIC[variant]["per_channel"]:
                    _same_clear_classes(probabilities, want[0], 2 * step, what)
                ours, theirs = (float(np.max(np.abs(p - exact))) for p in (probabilities,
                                                                             want[0]))
                assert ours <= 1.5 * theirs + 2 * step, (
                    f"{what}: {ours:.3f} from the float model, onnxruntime {theirs:.3f}")


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
