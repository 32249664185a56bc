"""The litert driver: conformance, partition reasons, untrusted bytecode, and runtime use."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import numpy as np
import onnxruntime as ort
import pytest

import nnrt

pytest.importorskip("ai_edge_litert", reason="ai-edge-litert has no wheel for this platform")

from ai_edge_litert import schema_py_generated as fb

from nnrt.drivers.litert import FORMAT, LitertDispatch, LitertDriver
from nnrt.drivers.litert.dispatch import THREADS, threads
from nnrt.drivers.litert.flatbuffer import write_partition
from nnrt.hal.conformance import check_driver
from nnrt.hal.conformance.operations import representative_variants, run_variants
from nnrt.hal.discovery import load_driver
from nnrt.testing.spec import FLOAT32_TOL

sys.path.insert(0, str(Path(__file__).parents[2] / "models"))  # builders: ONNX test models
Op = nnrt.OperationType
T = nnrt.OperandType
ATOL, RTOL = FLOAT32_TOL
#: A chain of operations compounds rounding differences (XNNPACK sums in another order): whole
#: models are compared as onnxruntime's are, within 1e-4.
MODEL_TOL = {"rtol": 1e-4, "atol": 1e-4}
RNG = np.random.default_rng(7)


def _cnn() -> nnrt.Model:
    b = nnrt.ModelBuilder()
    x = b.input("image", (2, 12, 12, 3))
    y = b.conv2d(x, RNG.standard_normal((8, 3, 3, 3)).astype(np.float32),
                 RNG.standard_normal(8).astype(np.float32), stride=1, padding="same",
                 activation="relu6")
    y = b.depthwise_conv2d(y, RNG.standard_normal((1, 3, 3, 8)).astype(np.float32),
                           np.zeros(8, np.float32), padding="valid")
    y = b.average_pool2d(y, 2)
    y = b.reshape(y, (2, -1))
    y = b.fully_connected(y, RNG.standard_normal((5, 200)).astype(np.float32),
                          np.zeros(5, np.float32))
    b.output(b.softmax(b.add(y, y)), names=["probs"])
    return b.build()


def test_the_conformance_kit_passes_on_everything_litert_claims() -> None:
    # every variant litert takes runs on it through the runtime, with the kit's comparison
    # (tests/conformance/test_litert_conformance.py): here the kit's checks and a
    # representative subset (every operation on every tensor type, in every variant kind)
    report = check_driver("litert", variants=0)
    assert report.checks_failed == 0 and not report.checks_skipped, report.summary()
    ops = run_variants(load_driver("litert"), representative_variants())
    assert not ops.failures, [str(f) for f in ops.failures[:20]]
    assert ops.run > 400, (ops.run, ops.skipped)


def test_info_names_litert_and_its_version() -> None:
    info = load_driver("litert").info()
    assert info.name == "litert" and info.device_type == "cpu"
    assert info.version.startswith(f"{nnrt.__version__}+litert") and info.version.endswith(
        f"+fb{FORMAT}")


def test_partition_reasons_name_what_tflite_lacks() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 6, 6, 2))
    i = b.input("i", (1, 4), "int32")
    odd_avg = b.operation(Op.AVERAGE_POOL_2D, x, 1, 0, 1, 0, 1, 1, 2, 2, 0)[0]
    soft = b.softmax(x, axis=1)
    ints = b.operation(Op.DIV, i, i, 0)[0]
    every = b.operation(Op.MEAN, x, np.array([0, 1, 2, 3], np.int32), 0)[0]
    both = b.operation(Op.MAXIMUM, x, x)[0]
    # a 2x2 stride-2 transposed convolution cropping one row at the top: TFLite's SAME crops
    # none for a 13-row output, VALID needs 14 rows
    filt = np.ones((2, 2, 2, 2), np.float32)
    cropped = b.operation(Op.TRANSPOSE_CONV_2D, x, filt, np.zeros(2, np.float32),
                          0, 0, 1, 0, 2, 2, 0, False)[0]
    b.output(odd_avg, soft, ints, every, both, cropped)
    reasons = LitertDriver().support(b.build()).reasons
    assert "AVERAGE_POOL_2D cannot take a PAD" in reasons[0]
    assert "last axis" in reasons[1]
    assert "integer DIV (NNAPI rounds toward -infinity" in reasons[2]
    assert "every dim without keep_dims" in reasons[3]
    assert "MAXIMUM needs a constant input without NaN" in reasons[4]
    assert "neither TFLite's SAME nor VALID for TRANSPOSE_CONV" in reasons[5]


def _builtins(model: nnrt.Model) -> list[str]:
    names = {v: k for k, v in vars(fb.BuiltinOperator).items() if not k.startswith("_")}
    tflite = fb.ModelT.InitFromPackedBuf(write_partition(model), 0)
    return [names[tflite.operatorCodes[o.opcodeIndex].builtinCode]
            for o in tflite.subgraphs[0].operators]


def _nchw_chain() -> nnrt.Model:
    """An NCHW region as ONNX imports it: conv (padding no SAME gives), per-channel scale and
    shift, relu, max pool with odd padding, global mean, then a flat classifier."""
    b = nnrt.ModelBuilder()
    x = b.input("x", (2, 3, 10, 10))
    w = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    y = b.operation(Op.CONV_2D, x, w, RNG.standard_normal(4).astype(np.float32),
                    1, 1, 1, 1, 2, 2, 0, True)[0]
    y = b.mul(y, RNG.standard_normal((4, 1, 1)).astype(np.float32))
    y = b.relu(b.add(y, RNG.standard_normal((4, 1, 1)).astype(np.float32)))
    y = b.operation(Op.MAX_POOL_2D, y, 1, 0, 1, 0, 2, 2, 2, 2, 0, True)[0]
    y = b.operation(Op.MEAN, y, np.array([2, 3], np.int32), 1)[0]
    y = b.reshape(y, (2, 4))
    b.output(b.fully_connected(y, RNG.standard_normal((3, 4)).astype(np.float32),
                               np.zeros(3, np.float32)))
    return b.build()


def test_an_nchw_region_runs_in_nhwc_with_transposes_only_at_its_edges() -> None:
    model = _nchw_chain()
    assert not LitertDriver().support(model).reasons
    ops = _builtins(model)
    assert ops.count("TRANSPOSE") == 2 and ops[0] == "TRANSPOSE"  # in, and out before RESHAPE
    # zeros for the conv, and for the max pool of the ReLU's output (-inf would be a PADV2)
    assert ops.count("PAD") == 2 and "PADV2" not in ops
    x = RNG.standard_normal((2, 3, 10, 10)).astype(np.float32)
    got = LitertDriver().prepare(model).execute([x]).outputs[0]
    np.testing.assert_allclose(got, nnrt.reference.run(model, [x])[0], **MODEL_TOL)


def _nchw_decoder() -> nnrt.Model:
    """An NCHW decoder as ONNX imports PP-OCR's: conv, HardSwish (``x + 3``, Clip as
    MAXIMUM / MINIMUM, ``* x``, ``/ 6``), two nearest-neighbour upsamplings concatenated on the
    channels, a transposed convolution with its bias and batch norm after it, then a
    HardSigmoid (``* 1/6 + 0.5``, MINIMUM 1, MAXIMUM 0)."""
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 3, 6, 6))
    y = b.operation(Op.CONV_2D, x, RNG.standard_normal((4, 3, 3, 3)).astype(np.float32),
                    RNG.standard_normal(4).astype(np.float32), 1, 1, 1, 1, 1, 1, 0, True)[0]
    t = b.operation(Op.MAXIMUM, b.add(y, np.array([3.0], np.float32)),
                    np.array([0.0], np.float32))[0]
    t = b.operation(Op.MINIMUM, t, np.array([6.0], np.float32))[0]
    y = b.operation(Op.DIV, b.mul(y, t), np.array([6.0], np.float32), 0)[0]
    up = b.operation(Op.RESIZE_NEAREST_NEIGHBOR, y, 12, 12, True, False, False)[0]
    half = b.operation(Op.RESIZE_NEAREST_NEIGHBOR, y, 0.5, 0.5, True, False, True)[0]
    half = b.operation(Op.RESIZE_NEAREST_NEIGHBOR, half, 12, 12, True, True, False)[0]
    y = b.operation(Op.CONCATENATION, up, half, 1)[0]
    y = b.operation(Op.TRANSPOSE_CONV_2D, y, RNG.standard_normal((2, 2, 2, 8)).astype(
        np.float32), np.zeros(2, np.float32), 0, 0, 0, 0, 2, 2, 0, True)[0]
    y = b.add(y, RNG.standard_normal((1, 2, 1, 1)).astype(np.float32))
    y = b.mul(y, RNG.standard_normal((2, 1, 1)).astype(np.float32))
    y = b.relu(b.add(y, RNG.standard_normal((2, 1, 1)).astype(np.float32)))
    y = b.add(b.mul(y, np.array([1 / 6], np.float32)), np.array([0.5], np.float32))
    y = b.operation(Op.MINIMUM, y, np.array([1.0], np.float32))[0]
    b.output(b.operation(Op.MAXIMUM, y, np.array([0.0], np.float32))[0])
    return b.build()


def test_an_nchw_decoder_stays_in_nhwc_through_resizes_and_transposed_convolutions() -> None:
    model = _nchw_decoder()
    assert not LitertDriver().support(model).reasons
    ops = _builtins(model)
    assert ops.count("TRANSPOSE") == 2  # the input in, the output out
    assert ops.count("HARD_SWISH") == 1 and ops.count("RESIZE_NEAREST_NEIGHBOR") == 3
    assert ops.count("MAXIMUM") == ops.count("MINIMUM") == 1  # the HardSigmoid's only
    # the transposed convolution (2x2 at stride 2: a 1x1 CONV_2D and a DEPTH_TO_SPACE) with its
    # bias and batch norm folded, its relu fused
    assert ops[ops.index("DEPTH_TO_SPACE") + 1] == "MUL"
    x = RNG.standard_normal((1, 3, 6, 6)).astype(np.float32) * 3
    got = LitertDriver().prepare(model).execute([x]).outputs[0]
    np.testing.assert_allclose(got, nnrt.reference.run(model, [x])[0], **MODEL_TOL)


def test_maximum_and_minimum_write_their_constant_first_so_nan_propagates() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (5,))
    y = b.operation(Op.MAXIMUM, x, np.array([0.0], np.float32))[0]
    b.output(b.operation(Op.MINIMUM, y, np.array([6.0], np.float32))[0])
    model = b.build()
    x_value = np.array([np.nan, -1.0, 3.0, 7.0, np.inf], np.float32)
    got = LitertDriver().prepare(model).execute([x_value]).outputs[0]
    np.testing.assert_array_equal(got, [np.nan, 0.0, 3.0, 6.0, 6.0])


def _softmax_rows(b: nnrt.ModelBuilder, x: nnrt.Tensor, rows: int) -> nnrt.Tensor:
    """A softmax over the last axis as magika's export writes it, operation by operation."""
    top = b.operation(Op.REDUCE_MAX, x, np.array([-1], np.int32), False)[0]
    top = b.operation(Op.MAXIMUM, np.array([-np.inf], np.float32), top)[0]
    shifted = b.operation(Op.SUB, x, b.reshape(top, (rows, 1)), 0)[0]
    exps = b.operation(Op.EXP, shifted)[0]
    total = b.operation(Op.REDUCE_SUM, exps, np.array([1], np.int32), False)[0]
    return b.operation(Op.DIV, exps, b.reshape(total, (rows, 1)), 0)[0]


def test_int32_and_bool_tensors_and_an_exported_softmax_run_whole_on_litert() -> None:
    """magika's head in small: int32 bytes compared with every value (EQUAL, TENSOR_BOOL8),
    one-hot by SELECT, a dense layer, then a softmax written as one SOFTMAX."""
    b = nnrt.ModelBuilder()
    codes = b.input("codes", (3, 5), "int32")
    mask = b.input("mask", (3, 5, 4), "bool")
    hot = b.operation(Op.EQUAL, b.operation(Op.EXPAND_DIMS, codes, 2)[0],
                      np.arange(4, dtype=np.int32).reshape(1, 1, 4),
                      output_types=[T.TENSOR_BOOL8])[0]
    ones = np.ones((3, 5, 4), np.float32)
    floats = [T.TENSOR_FLOAT32]
    onehot = b.operation(Op.SELECT, hot, ones, np.zeros((3, 5, 4), np.float32),
                         output_types=floats)[0]
    masked = b.operation(Op.SELECT, mask, onehot, -ones, output_types=floats)[0]
    logits = b.fully_connected(b.reshape(masked, (3, 20)), RNG.standard_normal((6, 20)).astype(
        np.float32), np.zeros(6, np.float32))
    doubled = b.mul(b.operation(Op.MAXIMUM, codes, np.array([2], np.int32))[0],
                    np.array([2], np.int32))
    b.output(_softmax_rows(b, logits, 3), b.operation(Op.CAST, doubled,
                                                      output_types=[T.TENSOR_FLOAT32])[0])
    model = b.build()
    assert not LitertDriver().support(model).reasons
    ops = _builtins(model)
    assert "SOFTMAX" in ops and "EXP" not in ops and "EQUAL" in ops
    feed = [RNG.integers(0, 5, (3, 5)).astype(np.int32), RNG.random((3, 5, 4)) > 0.3]
    got = LitertDriver().prepare(model).execute(feed).outputs
    for g, w in zip(got, nnrt.reference.run(model, feed), strict=True):
        np.testing.assert_allclose(g, w, **MODEL_TOL)


def _lstm(b: nnrt.ModelBuilder, x: nnrt.Tensor, activation: int, outputs: int = 3
          ) -> list[nnrt.Tensor]:
    """A time-major LSTM (3 steps, batch 2, 4 inputs, 5 units) with peepholes, no projection,
    its states given as inputs."""
    def weights(*shape: int) -> np.ndarray:
        return (RNG.standard_normal(shape) * 0.5).astype(np.float32)

    h = b.input("h", (2, 5))
    c = b.input("c", (2, 5))
    return b.operation(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, x, *(weights(5, 4) for _ in range(4)),
                       *(weights(5, 5) for _ in range(4)), *(weights(5) for _ in range(7)),
                       nnrt.Omitted(), nnrt.Omitted(), h, c, activation, 0.0, 0.0, True,
                       outputs=outputs)


def test_lstm_final_states_read_in_the_partition_come_after_the_lstm() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (3, 2, 4))
    sequence, h, c = _lstm(b, x, activation=4)
    b.output(sequence, b.add(h, np.ones(5, np.float32)), b.add(c, np.ones(5, np.float32)))
    model = b.build()
    assert not LitertDriver().support(model).reasons
    feed = [RNG.standard_normal(shape).astype(np.float32) for shape in ((3, 2, 4), (2, 5),
                                                                          (2, 5))]
    executable = LitertDriver().prepare(model)
    for _ in range(2):  # every run starts from the given states
        got = executable.execute(feed).outputs
        for g, w in zip(got, nnrt.reference.run(model, feed), strict=True):
            np.testing.assert_allclose(g, w, **MODEL_TOL)


def test_partition_reasons_for_what_litert_computes_otherwise() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (3, 2, 4))
    exp = b.operation(Op.EXP, x)[0]
    ints = b.operation(Op.CAST, x, output_types=[T.TENSOR_INT32])[0]
    sigmoid = _lstm(b, x, activation=6, outputs=1)[0]
    b.output(exp, ints, sigmoid)
    reasons = LitertDriver().support(b.build()).reasons
    assert "EXP alone (LiteRT's XNNPACK kernel maps NaN to 0" in reasons[0]
    assert "CAST from float to int" in reasons[1]
    assert "UNIDIRECTIONAL_SEQUENCE_LSTM activation 6" in reasons[2]


def test_a_tensor_read_elsewhere_stops_the_fold_there() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 5, 5, 2))
    y = b.conv2d(x, RNG.standard_normal((2, 3, 3, 2)).astype(np.float32),
                 np.zeros(2, np.float32), padding="same")
    scaled = b.mul(y, np.array([2.0, 3.0], np.float32))
    shifted = b.relu(b.add(scaled, np.array([1.0, -1.0], np.float32)))
    b.output(shifted, scaled)  # the scaled tensor is an output too: the shift cannot fold
    model = b.build()
    ops = _builtins(model)
    assert ops == ["CONV_2D", "ADD"]  # the conv writes the scaled output; RELU fused in ADD
    x_value = RNG.standard_normal((1, 5, 5, 2)).astype(np.float32)
    got = LitertDriver().prepare(model).execute([x_value]).outputs
    for g, w in zip(got, nnrt.reference.run(model, [x_value]), strict=True):
        np.testing.assert_allclose(g, w, **MODEL_TOL)


def test_an_onnx_resnet_runs_whole_on_litert_as_onnxruntime_does() -> None:
    # onnxruntime is imported with the module: its first import opens files for the process
    import onnx
    from builders import resnet_cnn

    import nnrt.onnx

    data = resnet_cnn(size=32, channels=16).SerializeToString()
    model = nnrt.onnx.load(onnx.load_model_from_string(data), input_shapes={"x": [2, 3, 32, 32]})
    driver = LitertDriver()
    assert not driver.support(model).reasons
    ops = _builtins(model)  # batch norm folded into the convolutions, ReLUs fused into them
    assert ops.count("TRANSPOSE") == 2 and "MUL" not in ops and "RELU" not in ops
    x = RNG.standard_normal((2, 3, 32, 32)).astype(np.float32)
    got = driver.prepare(model).execute([x]).outputs[0]
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, **MODEL_TOL)


def test_results_match_the_reference_in_process() -> None:
    model = _cnn()
    driver = LitertDriver()
    assert set(driver.partition(model).selected) == set(range(len(model.operations)))
    image = RNG.standard_normal((2, 12, 12, 3)).astype(np.float32)
    result = driver.prepare(model).execute([image])
    np.testing.assert_allclose(result.outputs[0], nnrt.reference.run(model, [image])[0],
                               **MODEL_TOL)


def _bytecode() -> bytes:
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 4))
    b.output(b.relu(b.add(x, np.ones((1, 4), np.float32))))
    return write_partition(b.build())


def _repacked(edit: object) -> bytes:
    import flatbuffers

    model = fb.ModelT.InitFromPackedBuf(_bytecode(), 0)
    edit(model)  # type: ignore[operator]
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def _bad_opcode(model: object) -> None:
    model.operatorCodes[0].builtinCode = fb.BuiltinOperator.CUSTOM  # type: ignore[attr-defined]


def _short_buffer(model: object) -> None:
    constant = next(b for b in model.buffers if b.data is not None)  # type: ignore[attr-defined]
    constant.data = np.array(constant.data[:8])


def _wild_tensor(model: object) -> None:
    operator = model.subgraphs[0].operators[0]  # type: ignore[attr-defined]
    operator.inputs = np.array([99, *operator.inputs[1:]], np.int32)


def _hidden_opcode(model: object) -> None:  # LiteRT runs max(builtin, deprecated builtin)
    model.operatorCodes[0].deprecatedBuiltinCode = fb.BuiltinOperator.CUSTOM  # type: ignore[attr-defined]


def _quantized(model: object) -> None:
    model.subgraphs[0].tensors[0].quantization = fb.QuantizationParametersT()  # type: ignore[attr-defined]


def _offset_buffer(model: object) -> None:  # data elsewhere in the file, unchecked
    constant = next(b for b in model.buffers if b.data is not None)  # type: ignore[attr-defined]
    constant.data, constant.offset, constant.size = None, 8, 16


def _custom_options(model: object) -> None:
    model.subgraphs[0].operators[0].customOptions = np.zeros(4, np.uint8)  # type: ignore[attr-defined]


def _long_description() -> bytes:
    """A string length running past the end: the object API reads a short slice and checks
    nothing in it; LiteRT's flatbuffer verifier refuses the buffer before reading it."""
    data = bytearray(_bytecode())
    at = data.index(b"nnrt litert partition") - 4
    data[at:at + 4] = (len(data) * 4).to_bytes(4, "little")
    return bytes(data)


@pytest.mark.parametrize(("bytecode", "message"), [
    (b"not a flatbuffer", "no TFL3 identifier"),
    (_bytecode()[:40], "does not parse"),
    (_repacked(_bad_opcode), "never writes"),
    (_repacked(_hidden_opcode), "deprecated builtin code 32 for builtin 0"),
    (_repacked(_short_buffer), "bytes, expected 16"),
    (_repacked(_wild_tensor), "name tensor 99"),
    (_repacked(_quantized), "tensor 0 of type 0 .* quantisation parameters the compiler never"),
    (_repacked(_offset_buffer), r"buffer \d sets offset"),
    (_repacked(_custom_options), "operator 0 sets customOptions"),
    (_long_description(), "LiteRT refused .* not a valid Flatbuffer"),
])
def test_untrusted_bytecode_is_checked_before_litert_sees_it(bytecode: bytes,
                                                             message: str) -> None:
    with pytest.raises(nnrt.BadData, match=message):
        LitertDispatch().load(bytecode, "main")


def test_checked_bytecode_reaches_litert_as_it_is() -> None:
    bytecode = _bytecode()
    executable = LitertDispatch().load(bytecode, "main")
    assert executable.interpreter._model_content is bytecode  # neither copied nor re-packed


def test_valid_bytecode_loads_and_runs() -> None:
    dispatch = LitertDispatch()
    executable = dispatch.load(_bytecode(), "main")
    out = np.empty((1, 4), np.float32)
    dispatch.invoke(executable, [np.array([[-3, 0, 1, 2]], np.float32)], [out])
    assert out.tolist() == [[0, 1, 2, 3]]
    with pytest.raises(nnrt.BadData, match="one entry point"):
        dispatch.load(_bytecode(), "partition_0")


def test_threads_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(THREADS, raising=False)
    assert threads() == 1
    monkeypatch.setenv(THREADS, "3")
    assert threads() == 3
    for bad in ("0", "many", "65"):
        monkeypatch.setenv(THREADS, bad)
        with pytest.raises(nnrt.BadData, match=THREADS):
            threads()


def test_a_runtime_places_the_model_on_litert_and_caches_it(tmp_path: Path) -> None:
    model = _cnn()
    image = RNG.standard_normal((2, 12, 12, 3)).astype(np.float32)
    expected = nnrt.reference.run(model, [image])[0]

    async def run() -> list[tuple[int, int]]:
        counts = []
        for _ in range(2):
            async with nnrt.Runtime(drivers=["litert"], workers=1) as rt:
                compiled = await rt.compile(model, cache_dir=tmp_path / "cache")
                assert compiled.steps == 1 and compiled.device == "litert"
                assert {o.driver for o in compiled.placement().operations} == {"litert"}
                (probs,) = await compiled.execute([image])
                np.testing.assert_allclose(probs, expected, **MODEL_TOL)
                stats = rt.statistics()
                counts.append((stats.cache_misses, stats.cache_hits))
        return counts

    assert anyio.run(run) == [(1, 0), (0, 1)]
    assert os.listdir(tmp_path / "cache")


def test_what_litert_does_not_take_falls_back_to_another_step() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (2, 6))
    y = b.tanh(b.fully_connected(x, RNG.standard_normal((6, 6)).astype(np.float32),
                                 np.zeros(6, np.float32)))
    b.output(b.operation(Op.L2_NORMALIZATION, y)[0])
    model = b.build()
    x_value = RNG.standard_normal((2, 6)).astype(np.float32)

    async def run() -> None:
        async with nnrt.Runtime(drivers=["litert"], workers=1) as rt:
            compiled = await rt.compile(model, step_cost=0)  # each operation where it runs
            drivers = [o.driver for o in compiled.placement().operations]
            assert drivers == ["litert", "litert", "reference"] and compiled.steps == 2
            (out,) = await compiled.execute([x_value])
            np.testing.assert_allclose(out, nnrt.reference.run(model, [x_value])[0],
                                       **MODEL_TOL)

    anyio.run(run)


def test_a_transformer_block_runs_whole_on_litert_with_its_gelu_as_one_builtin() -> None:
    import onnx
    from builders import transformer_block

    import nnrt.onnx

    data = transformer_block(d=32, heads=2).SerializeToString()
    model = nnrt.onnx.load(onnx.load_model_from_string(data), input_shapes={"x": [2, 8, 32]})
    driver = LitertDriver()
    assert not driver.support(model).reasons  # layer norms decomposed, ERF inside a GELU
    ops = _builtins(model)
    assert ops.count("GELU") == 1 and "BATCH_MATMUL" in ops
    x = RNG.standard_normal((2, 8, 32)).astype(np.float32)
    got = driver.prepare(model).execute([x]).outputs[0]
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, **MODEL_TOL)


def test_erf_alone_is_not_taken() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (2, 5))
    half_erf = b.mul(b.operation(Op.NNRT_ERF, x)[0], np.array([0.5], np.float32))
    b.output(half_erf)
    reasons = LitertDriver().support(b.build()).reasons
    assert "ERF has no TFLite builtin (taken only inside GELU" in reasons[0]

