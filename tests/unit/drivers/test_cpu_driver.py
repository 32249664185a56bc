"""The cpu driver end to end: discovery, partition reasons, results vs the reference, threads."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from cpu_models import benchmark_module, random_graph

import nnrt
from nnrt.drivers.cpu import FORMAT, CpuDispatch, CpuDriver, CpuPlugin
from nnrt.hal.discovery import available_drivers, load_driver
from nnrt.hal.plugin import CompiledResult, PluginDriver
from nnrt.testing.spec import FLOAT32_TOL

BENCH = benchmark_module()
Op = nnrt.OperationType
ATOL, RTOL = FLOAT32_TOL


def test_load_driver_finds_cpu_and_its_info() -> None:
    assert "cpu" in available_drivers()
    driver = load_driver("cpu")
    assert isinstance(driver, CpuDriver) and isinstance(driver, PluginDriver)
    info = driver.info()
    assert info.name == "cpu" and info.device_type == "cpu"
    assert info.version == f"{nnrt.__version__}+cpu{FORMAT}"
    assert (info.performance.exec_time, info.performance.power_usage) == (0.6, 0.9)


def _support(model: nnrt.Model) -> dict[int, str]:
    return CpuDriver().support(model).reasons


def test_partition_rejects_other_ops_and_types_with_reasons() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (2, 3))
    h = b.input("h", (2, 3), "float16")
    g = b.operation(Op.L2_NORMALIZATION, x)[0]
    b.output(b.relu(g), b.relu(h), b.relu(x))
    reasons = _support(b.build())
    assert reasons == {0: "operation type L2_NORMALIZATION not accelerated",
                       2: "TENSOR_FLOAT16 not supported"}


def test_partition_rejects_dilation_and_parameter_inputs() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 8, 8, 2))
    w, bias = np.ones((3, 3, 3, 2), np.float32), np.zeros(3, np.float32)
    b.output(b.conv2d(x, w, bias, dilation=2), b.conv2d(x, w, bias))
    assert _support(b.build()) == {0: "dilated CONV_2D not supported"}
    model = nnrt.Model()
    t = nnrt.OperandType
    a = model.add_operand(t.TENSOR_FLOAT32, (2,))
    act = model.add_operand(t.INT32)
    out = model.add_operand(t.TENSOR_FLOAT32, (2,))
    model.add_operation(Op.ADD, [a, a, act], [out])
    model.identify_inputs_and_outputs([a, act], [out])
    reasons = _support(model.finish())
    assert reasons == {0: "input 2 (activation) is not a constant (parameters must be)"}
    with pytest.raises(nnrt.Unsupported, match=r"operation 0 \(ADD\): input 2"):
        CpuDriver().prepare(model)


def _compare(model: nnrt.Model, inputs: list[np.ndarray], atol: float = ATOL,
             rtol: float = RTOL) -> None:
    want = nnrt.reference.run(model, inputs)
    with CpuDriver().prepare(model) as prepared:
        got = prepared.execute(inputs).outputs
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, atol=atol, rtol=rtol)


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("make", ["mlp", "cnn", "transformer"])
def test_benchmark_models_match_the_reference(make: str, batch: int) -> None:
    model, inputs = getattr(BENCH, make)(batch)
    # float32 accumulation vs the reference's float64 over hundreds of terms
    _compare(model, inputs, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("seed", range(25))
def test_random_small_graphs_match_the_reference(seed: int) -> None:
    model, inputs = random_graph(seed)
    _compare(model, inputs, atol=1e-5, rtol=1e-5)


def test_nchw_convolution_and_pooling_with_padding_match_the_reference() -> None:
    rng = np.random.default_rng(3)
    b = nnrt.ModelBuilder()
    x = b.input("x", (2, 3, 7, 6))
    y = b.conv2d(x, rng.standard_normal((4, 3, 3, 3)).astype(np.float32),
                 rng.standard_normal(4).astype(np.float32), stride=2, layout="NCHW",
                 activation="relu6")
    y = b.depthwise_conv2d(y, rng.standard_normal((1, 3, 3, 8)).astype(np.float32),
                           np.zeros(8, np.float32), depth_multiplier=2, layout="NCHW")
    b.output(b.average_pool2d(y, 3, stride=1, padding="same", layout="NCHW"),
             b.max_pool2d(y, 2, stride=1, padding=(1, 0, 0, 1), layout="NCHW"))
    _compare(b.build(), [rng.standard_normal((2, 3, 7, 6)).astype(np.float32)])


def test_weights_given_as_inputs_are_packed_at_execution() -> None:
    rng = np.random.default_rng(4)
    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 5, 5, 2))
    w = b.input("w", (3, 3, 3, 2))
    fw = b.input("fw", (4, 75))
    y = b.reshape(b.conv2d(x, w, np.zeros(3, np.float32)), (1, 75))
    b.output(b.fully_connected(y, fw, np.ones(4, np.float32)))
    inputs = [rng.standard_normal(s).astype(np.float32) for s in
              ((1, 5, 5, 2), (3, 3, 3, 2), (4, 75))]
    _compare(b.build(), inputs, rtol=1e-5)


def test_prepare_compiled_runs_ahead_of_time_bytecode() -> None:
    model, inputs = BENCH.mlp(2)
    plugin = CpuPlugin()
    compiled = plugin.compile([model], None)
    blob = CompiledResult.from_bytes(compiled.to_bytes())
    driver = CpuDriver()
    with driver.prepare_compiled(model, blob.modules[0], blob.calls[0][1]) as prepared:
        got = prepared.execute(inputs).outputs[0]
    assert driver.compile_count == 0
    np.testing.assert_allclose(got, nnrt.reference.run(model, inputs)[0], atol=1e-5, rtol=1e-4)


def test_outputs_aliasing_inputs_are_computed_safely() -> None:
    b = nnrt.ModelBuilder()
    x = b.input("x", (4,))
    b.output(b.add(b.mul(x, x), x))
    model = b.build()
    module = CpuPlugin().compile([model], None).modules[0]
    dispatch = CpuDispatch()
    executable = dispatch.load(module, "partition_0")
    buffer = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    dispatch.invoke(executable, [buffer], [buffer])   # output is the input's memory
    assert buffer.tolist() == [2.0, 6.0, 12.0, 20.0]


def test_two_threads_invoking_one_executable_share_no_scratch() -> None:
    model, _ = BENCH.transformer(1)
    rng = np.random.default_rng(5)
    inputs = [[rng.standard_normal((1, 32, 128)).astype(np.float32)] for _ in range(2)]
    expected = [nnrt.reference.run(model, i)[0] for i in inputs]
    prepared = CpuDriver().prepare(model)
    failures: list[str] = []
    start = threading.Barrier(2)

    def work(k: int) -> None:
        start.wait()
        for _ in range(40):
            got = prepared.execute(inputs[k]).outputs[0]
            if not np.allclose(got, expected[k], atol=1e-4, rtol=1e-4):
                failures.append(f"thread {k}: wrong result")
                return

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    prepared.release()
    assert not failures
