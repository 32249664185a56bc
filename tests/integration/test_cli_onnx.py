"""``nnrt run``, ``nnrt inspect`` and ``nnrt compile`` on ONNX files, in real subprocesses, checked
against onnxruntime."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from cli_process import run_nnrt
from onnx import TensorProto, helper, numpy_helper

Array = np.ndarray[Any, Any]


def mlp() -> onnx.ModelProto:
    """x [batch, 8] -> MatMul, Add, Relu -> MatMul, Add -> Softmax -> probs [batch, 4]."""
    rng = np.random.default_rng(0)
    weights = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
               for name, shape in (("w1", (8, 16)), ("b1", (16,)), ("w2", (16, 4)),
                                   ("b2", (4,)))]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h0"]),
             helper.make_node("Add", ["h0", "b1"], ["h1"]),
             helper.make_node("Relu", ["h1"], ["h2"]),
             helper.make_node("MatMul", ["h2", "w2"], ["h3"]),
             helper.make_node("Add", ["h3", "b2"], ["logits"]),
             helper.make_node("Softmax", ["logits"], ["probs"], axis=-1)]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 4]),
         helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 4])], weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def unsupported() -> onnx.ModelProto:
    """Relu, then two nodes nnrt has no converter for (one outside the default domain)."""
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="fine"),
             helper.make_node("Frobnicate", ["r"], ["f"], name="frob"),
             helper.make_node("Twiddle", ["f"], ["y"], name="twiddle", domain="com.example")]
    graph = helper.make_graph(
        nodes, "bad", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("com.example", 1)])


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("cli-onnx")
    onnx.save(mlp(), tmp / "mlp.onnx")
    onnx.save(unsupported(), tmp / "bad.onnx")
    x = np.random.default_rng(1).standard_normal((3, 8)).astype(np.float32)
    np.save(tmp / "x.npy", x)
    return {"dir": tmp, "mlp": tmp / "mlp.onnx", "bad": tmp / "bad.onnx", "x": tmp / "x.npy"}


def expected(x: Array) -> dict[str, Array]:
    session = ort.InferenceSession(mlp().SerializeToString(), providers=["CPUExecutionProvider"])
    probs, logits = session.run(None, {"x": x})
    return {"probs": probs, "logits": logits}


def test_run_prints_and_saves_the_outputs(files: dict[str, Path]) -> None:
    out = files["dir"] / "out.npz"
    result = run_nnrt("run", files["mlp"], "--input", f"x={files['x']}", "--output", out)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("ran on ") and "first execution" in lines[0]
    assert any(line.startswith("  probs: float32 [3, 4]  min ") for line in lines), lines
    assert any(line.startswith("  logits: float32 [3, 4]") for line in lines), lines
    want = expected(np.load(files["x"]))
    with np.load(out) as saved:
        assert sorted(saved.files) == ["logits", "probs"]
        for name, array in want.items():
            np.testing.assert_allclose(saved[name], array, rtol=1e-5, atol=1e-6)


def test_run_benches_and_profiles(files: dict[str, Path]) -> None:
    result = run_nnrt("run", files["mlp"], "--input", f"x={files['x']}", "--bench", "3",
                   "--profile", "--profile-runs", "2")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    bench = next(line for line in out.splitlines() if line.startswith("bench:"))
    assert "3 warm executions" in bench and "p50" in bench and "p90" in bench
    assert "profile: mean of 2 runs" in out and "total" in out
    profile = out[out.index("profile:"):]
    assert "by operation type:" in profile and "SOFTMAX" in profile


def test_run_with_random_inputs_and_a_fixed_shape(files: dict[str, Path]) -> None:
    result = run_nnrt("run", files["mlp"], "--input-shape", "x=5x8", "--random-inputs")
    assert result.returncode == 0, result.stderr
    assert "  probs: float32 [5, 4]" in result.stdout


def test_run_errors_name_what_is_wrong(files: dict[str, Path]) -> None:
    missing = run_nnrt("run", files["mlp"], "--input-shape", "x=2x8")
    assert missing.returncode == 1
    assert "missing inputs ['x']" in missing.stderr and "TENSOR_FLOAT32[2, 8]" in missing.stderr
    unknown = run_nnrt("run", files["mlp"], "--input", f"y={files['x']}")
    assert unknown.returncode == 1 and "'y'" in unknown.stderr, unknown.stderr
    shape = run_nnrt("run", files["mlp"], "--input-shape", "x=2by8", "--random-inputs")
    assert shape.returncode == 1 and "--input-shape 'x=2by8'" in shape.stderr
    garbage = files["dir"] / "garbage.txt"
    garbage.write_text("not an array")
    for value, why in ((garbage, "not a .npy array file (write one with numpy.save)"),
                       (files["dir"] / "absent.npy", "no such file")):
        bad = run_nnrt("run", files["mlp"], "--input", f"x={value}")
        assert bad.returncode == 1
        assert bad.stderr.strip() == f"nnrt run: --input x={value}: {why}", bad.stderr


def test_inspect_prints_the_graph_and_the_placement(files: dict[str, Path]) -> None:
    result = run_nnrt("inspect", files["mlp"], "--input-shape", "x=2x8", "--driver", "cpu",
                   "--operations")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "0 'x': TENSOR_FLOAT32[2, 8]" in out
    assert "0 'probs': TENSOR_FLOAT32[2, 4]" in out and "1 'logits'" in out
    assert "SOFTMAX 1" in out
    assert "placement: " in out and "    cpu: " in out and "step 0: " in out
    assert "operation 0 (" in out


def test_inspect_lists_every_unsupported_node(files: dict[str, Path]) -> None:
    result = run_nnrt("inspect", files["bad"])
    assert result.returncode == 1
    out = result.stdout
    assert "2 ONNX node(s) unsupported" in out
    assert "Frobnicate node 'frob': no converter for this operator" in out
    assert "Twiddle node 'twiddle': operator domain 'com.example' is not supported" in out
    assert "'fine'" not in out


def test_compile_an_onnx_file_then_run_and_inspect_it(files: dict[str, Path]) -> None:
    target = files["dir"] / "mlp.nnrt"
    compiled = run_nnrt("compile", files["mlp"], "--input-shape", "x=3x8", "-o", target,
                     "--driver", "cpu")
    assert compiled.returncode == 0, compiled.stderr
    assert "compiled ahead of time" in compiled.stderr
    out = files["dir"] / "from-nnrt.npz"
    ran = run_nnrt("run", target, "--input", f"x={files['x']}", "--output", out)
    assert ran.returncode == 0, ran.stderr
    want = expected(np.load(files["x"]))
    with np.load(out) as saved:
        np.testing.assert_allclose(saved["probs"], want["probs"], rtol=1e-5, atol=1e-6)
    inspected = run_nnrt("inspect", target, "--no-placement")
    assert inspected.returncode == 0, inspected.stderr
    assert "compiled ahead of time for cpu" in inspected.stdout
    shaped = run_nnrt("inspect", target, "--input-shape", "x=3x8")
    assert shaped.returncode == 1 and ".onnx models only" in shaped.stderr


@pytest.mark.parametrize("driver", ["cpu", "litert"])
@pytest.mark.parametrize("split", [0, 2, 6])
def test_the_profile_times_every_operation_of_every_step(split: int, driver: str) -> None:
    """Operations in run order: the first ``split`` on the reference driver, the rest on
    ``driver`` (litert: timed as one unit, in LiteRT)."""
    if driver == "litert":
        pytest.importorskip("ai_edge_litert", reason="ai-edge-litert has no wheel here")
    import nnrt.onnx
    from nnrt.cli.profile import profile_model
    from nnrt.runtime.compile.placement import PlacementReport, StepReport

    model = nnrt.onnx.load(mlp(), input_shapes={"x": [3, 8]})
    order = list(model.run_order)
    assert len(order) >= 4
    split = min(split, len(order))
    parts = [("reference", order[:split]), (driver, order[split:])]
    steps = tuple(StepReport(k, driver, tuple(ops), "compiled")
                  for k, (driver, ops) in enumerate(p for p in parts if p[1]))
    x = np.random.default_rng(2).standard_normal((3, 8)).astype(np.float32)
    profile = profile_model(model, [x], PlacementReport((), steps), runs=3)
    assert [(s.driver, s.operations) for s in profile.steps] == [
        (s.driver, len(s.operations)) for s in steps]
    timed = sorted(i for e in profile.entries for i in e.operations)
    untimed = sum(s.untimed for s in profile.steps)
    assert len(timed) == len(set(timed)) and len(timed) + untimed == len(order)
    for entry in profile.entries:
        step = steps[entry.step]
        assert set(entry.operations) <= set(step.operations) and entry.driver == step.driver
        assert entry.seconds >= 0
    # each timed call lies inside its step's run: the parts never exceed the whole
    assert sum(e.seconds for e in profile.entries) <= profile.seconds
    text = profile.render(top=3)
    assert f"slowest {min(3, len(profile.entries))} of {len(profile.entries)}" in text
    assert "SOFTMAX" in text
    if driver == "litert" and split < len(order):
        assert "LiteRT (whole step)" in text


def test_the_profile_skips_the_views_of_int_and_bool_values() -> None:
    """Comparisons and SELECT keep bool / int32 values in typed arena views (``typed_slot``
    calls, not operations): the profile still lines calls up with operations."""
    import nnrt.onnx
    from nnrt.cli.profile import profile_model
    from nnrt.runtime.compile.placement import PlacementReport, StepReport

    nodes = [helper.make_node("Greater", ["x", "t"], ["mask"]),
             helper.make_node("Where", ["mask", "x", "z"], ["y"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
        [numpy_helper.from_array(np.zeros((4, 8), np.float32), "t"),
         numpy_helper.from_array(np.full((4, 8), -1.0, np.float32), "z")])
    model = nnrt.onnx.load(helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 17)], ir_version=8))
    steps = (StepReport(0, "cpu", tuple(model.run_order), "compiled"),)
    x = np.random.default_rng(3).standard_normal((4, 8)).astype(np.float32)
    profile = profile_model(model, [x], PlacementReport((), steps), runs=2)
    assert "GREATER" in profile.render(top=5) and "SELECT" in profile.render(top=5)
