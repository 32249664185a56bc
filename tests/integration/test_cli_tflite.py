"""``nnrt run``, ``nnrt inspect`` and ``nnrt compile`` on TFLite files, in real subprocesses,
checked against LiteRT's reference kernels."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as fb
from cli_process import run_nnrt

from tests.unit.tflite.flatbuffers_kit import B, TfliteFile, litert_run
from tests.unit.tflite.test_control import counter_loop

Array = np.ndarray[Any, Any]
SIGNATURE = {"key": "serving_default", "inputs": {"x": 0}, "outputs": {"probs": 3}}


def classifier() -> bytes:
    """x [batch, 8] -> FULLY_CONNECTED (relu) -> SOFTMAX -> probs [batch, 4]; the batch dim
    dynamic (``shape_signature`` -1), the tensors named by the signature ``serving_default``."""
    f = TfliteFile()
    x = f.tensor((1, 8), name="serving_x", signature=(-1, 8))
    w = f.const(np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32))
    logits = f.tensor((1, 4), name="logits", signature=(-1, 4))
    probs = f.tensor((1, 4), name="serving_probs", signature=(-1, 4))
    options = fb.FullyConnectedOptionsT()
    options.fusedActivationFunction = fb.ActivationFunctionType.RELU
    f.op(B.FULLY_CONNECTED, [x, w, -1], [logits], options)
    softmax = fb.SoftmaxOptionsT()
    softmax.beta = 1.0
    f.op(B.SOFTMAX, [logits], [probs], softmax)
    assert (x, logits, probs) == (0, 2, 3)
    return f.finish([x], [probs], SIGNATURE)


def unsupported() -> bytes:
    """RELU, then a custom operator nnrt has no converter for."""
    f = TfliteFile()
    x, r, y = f.tensor((2, 3)), f.tensor((2, 3)), f.tensor((2, 3))
    f.op(B.RELU, [x], [r])
    f.op(B.CUSTOM, [r], [y], custom=b"Frobnicate")
    return f.finish([x], [y])


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("cli-tflite")
    (tmp / "clf.tflite").write_bytes(classifier())
    (tmp / "bad.tflite").write_bytes(unsupported())
    x = np.random.default_rng(1).standard_normal((3, 8)).astype(np.float32)
    np.save(tmp / "x.npy", x)
    return {"dir": tmp, "clf": tmp / "clf.tflite", "bad": tmp / "bad.tflite",
            "x": tmp / "x.npy"}


def expected(x: Array) -> Array:
    return litert_run(classifier(), [x])[0]


def test_run_prints_and_saves_the_outputs(files: dict[str, Path]) -> None:
    out = files["dir"] / "out.npz"
    result = run_nnrt("run", files["clf"], "--input", f"x={files['x']}", "--output", out)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("ran on ") and "first execution" in lines[0]
    assert any(line.startswith("  probs: float32 [3, 4]  min ") for line in lines), lines
    with np.load(out) as saved:
        assert saved.files == ["probs"]
        np.testing.assert_allclose(saved["probs"], expected(np.load(files["x"])), rtol=1e-5,
                                   atol=1e-6)


def test_run_with_random_inputs_a_fixed_shape_and_a_signature(files: dict[str, Path]) -> None:
    result = run_nnrt("run", files["clf"], "--input-shape", "x=5x8", "--random-inputs",
                   "--signature", "serving_default", "--driver", "cpu")
    assert result.returncode == 0, result.stderr
    assert "  probs: float32 [5, 4]" in result.stdout
    wrong = run_nnrt("run", files["clf"], "--random-inputs", "--signature", "other")
    assert wrong.returncode == 1
    assert "no signature 'other'" in wrong.stderr and "serving_default" in wrong.stderr


def test_inspect_prints_the_graph_and_the_placement(files: dict[str, Path]) -> None:
    result = run_nnrt("inspect", files["clf"], "--input-shape", "x=2x8", "--driver", "cpu",
                   "--operations")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "0 'x': TENSOR_FLOAT32[2, 8]" in out
    assert "0 'probs': TENSOR_FLOAT32[2, 4]" in out
    assert "FULLY_CONNECTED 1" in out and "SOFTMAX 1" in out
    assert "placement: " in out and "    cpu: " in out and "step 0: " in out


def test_inspect_lists_every_unsupported_operator(files: dict[str, Path]) -> None:
    result = run_nnrt("inspect", files["bad"])
    assert result.returncode == 1
    out = result.stdout
    assert "1 TFLite operator(s) unsupported" in out
    assert "operator 1 (CUSTOM(Frobnicate)): no NNAPI conversion" in out
    assert "RELU" not in out


def test_compile_a_tflite_file_then_run_it(files: dict[str, Path]) -> None:
    target = files["dir"] / "clf.nnrt"
    compiled = run_nnrt("compile", files["clf"], "--input-shape", "x=3x8", "-o", target,
                     "--driver", "cpu")
    assert compiled.returncode == 0, compiled.stderr
    assert "compiled ahead of time" in compiled.stderr
    out = files["dir"] / "from-nnrt.npz"
    ran = run_nnrt("run", target, "--input", f"x={files['x']}", "--output", out)
    assert ran.returncode == 0, ran.stderr
    with np.load(out) as saved:
        np.testing.assert_allclose(saved["probs"], expected(np.load(files["x"])), rtol=1e-5,
                                   atol=1e-6)
    signed = run_nnrt("inspect", target, "--no-placement", "--signature", "serving_default")
    assert signed.returncode == 1 and "--signature applies to .tflite" in signed.stderr


def test_run_a_while_loop(files: dict[str, Path]) -> None:
    """WHILE (NNAPI control flow) through the runtime's default drivers."""
    model = files["dir"] / "loop.tflite"
    data = counter_loop()
    model.write_bytes(data)
    i, x = np.asarray([4], np.int32), np.load(files["x"])[:2, :3].copy()
    np.save(files["dir"] / "i.npy", i)
    np.save(files["dir"] / "x23.npy", x)
    out = files["dir"] / "loop.npz"
    ran = run_nnrt("run", model, "--input", f"i={files['dir'] / 'i.npy'}", "--input",
                f"x={files['dir'] / 'x23.npy'}", "--output", out)
    assert ran.returncode == 0, ran.stderr
    want = litert_run(data, [i, x])
    with np.load(out) as saved:
        np.testing.assert_array_equal(saved["i_out"], want[0])
        np.testing.assert_allclose(saved["x_out"], want[1], rtol=1e-5, atol=1e-5)
