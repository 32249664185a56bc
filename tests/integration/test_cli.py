"""The ``nnrt`` command in a real subprocess."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from cli_process import run_nnrt


def test_demo_runs_and_verifies() -> None:
    result = run_nnrt("demo")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok: matches an independent numpy computation" in result.stdout


def test_ops_lists_every_operation() -> None:
    result = run_nnrt("ops")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any("REVERSE" in line for line in lines)
    assert any("com.nnrt.ERF" in line for line in lines)  # the extension operations too
    assert "of 110 operations have reference kernels" in lines[-1]


def test_unknown_command_fails_cleanly() -> None:
    result = run_nnrt("frobnicate")
    assert result.returncode == 2
    assert "invalid choice" in result.stderr


def test_docs_op_table_is_current() -> None:
    from pathlib import Path

    from nnrt.cli.optable import render_markdown

    path = Path(__file__).resolve().parents[2] / "docs" / "ops.md"
    assert path.read_text() == render_markdown(), "regenerate: nnrt ops --markdown > docs/ops.md"


def test_drivers_lists_the_reference_driver() -> None:
    result = run_nnrt("drivers")
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if line.startswith("reference"))
    from nnrt.model.types import OperationType
    from nnrt.ops._framework.registry import definitions

    assert "cpu" in line and f"{len(definitions())} of {len(OperationType)}" in line


def test_a_bare_call_prints_the_help_and_version_is_an_option() -> None:
    bare = run_nnrt()
    assert bare.returncode == 0 and "usage: nnrt" in bare.stdout and "serve" in bare.stdout
    version = run_nnrt("--version")
    import nnrt

    assert version.returncode == 0 and version.stdout.strip() == f"nnrt {nnrt.__version__}"


def test_cache_ls_on_a_fresh_machine_says_nothing_is_cached(tmp_path: Path) -> None:
    env = {**os.environ, "NNRT_CACHE_DIR": str(tmp_path / "never-written")}
    result = subprocess.run([sys.executable, "-m", "nnrt", "cache", "ls"], capture_output=True,
                            text=True, timeout=60, check=False, env=env)
    assert result.returncode == 0, result.stderr
    assert "no cache yet" in result.stdout and not result.stderr


def test_stress_has_defaults_for_every_option() -> None:
    from nnrt.cli.main import main

    with pytest.raises(SystemExit) as exit_info:
        main(["stress", "--help"])
    assert exit_info.value.code == 0
    import argparse

    from nnrt.cli.stress import add_stress_parser

    parser = argparse.ArgumentParser()
    add_stress_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["stress", "--duration", "20"])
    assert (args.duration, args.clients, args.kill_every) == (20.0, 4, 5.0)


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def _still_running(pids: list[int], patience: float = 10.0) -> list[int]:
    """Those of ``pids`` still there after up to ``patience`` seconds of waiting."""
    deadline = time.monotonic() + patience
    while any(os.path.exists(f"/proc/{p}") for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return [p for p in pids if os.path.exists(f"/proc/{p}")]


def test_ctrl_c_during_run_bench_is_one_line_and_exit_130(tmp_path: Path) -> None:
    import numpy as np

    import nnrt

    b = nnrt.ModelBuilder()
    x = b.input("x", (1, 4))
    b.output(b.add(x, x))
    nnrt.save(b.build(), tmp_path / "add.nnrt")
    np.save(tmp_path / "x.npy", np.ones((1, 4), np.float32))
    proc = subprocess.Popen(
        [sys.executable, "-m", "nnrt", "run", str(tmp_path / "add.nnrt"), "--driver",
         "reference", "--input", f"x={tmp_path / 'x.npy'}", "--bench", "100000000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not _children(proc.pid) and time.monotonic() < deadline:  # workers up
            time.sleep(0.1)
        workers = _children(proc.pid)
        assert workers, "the run never started its workers"
        time.sleep(1.0)  # benching now
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "nnrt run: interrupted", err
    assert "Traceback" not in err
    assert not _still_running(workers), "workers left behind"


def test_ctrl_c_during_stress_leaves_no_directory_or_process() -> None:
    import glob

    before = set(glob.glob(os.path.join(tempfile.gettempdir(), "nnrt-stress-*")))
    proc = subprocess.Popen([sys.executable, "-m", "nnrt", "stress", "--duration", "60",
                             "--clients", "1", "--kill-every", "0", "--mode", "shared"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while len(_children(proc.pid)) < 2 and time.monotonic() < deadline:  # service, client
            time.sleep(0.1)
        children = _children(proc.pid)
        time.sleep(2.0)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "nnrt stress: interrupted"
    assert set(glob.glob(os.path.join(tempfile.gettempdir(), "nnrt-stress-*"))) == before
    assert not _still_running(children), "processes left behind"


def test_a_partition_warning_is_one_line(tmp_path: Path) -> None:
    import nnrt

    b = nnrt.ModelBuilder()
    y = b.input("x", (1, 512, 512))  # large enough that acme's speed pays for every step
    for _ in range(6):
        y = b.tanh(b.add(y, y))
    b.output(y)
    nnrt.save(b.build(), tmp_path / "split.nnrt")
    vendor = str(Path(__file__).resolve().parents[2] / "examples" / "vendor_plugin")
    env = {**os.environ, "PYTHONPATH": vendor}
    result = subprocess.run(
        [sys.executable, "-m", "nnrt", "run", str(tmp_path / "split.nnrt"), "--random-inputs",
         "--driver", "acme_npu:make_driver", "--driver", "reference"],
        capture_output=True, text=True, timeout=120, check=False, env=env)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines == ["warning: the model splits into 12 partitions over 2 drivers; every "
                     "boundary between them costs a round trip (see compiled.placement())"]


def test_serve_refuses_a_path_it_cannot_use_in_one_line(tmp_path: Path) -> None:
    regular = tmp_path / "file.sock"
    regular.write_text("not a socket")
    for path, why in ((regular, "it exists and is not a socket"),
                      (tmp_path / "missing" / "a.sock", "does not exist")):
        result = run_nnrt("serve", "--socket", str(path), "--driver", "reference")
        assert result.returncode == 1, result.stderr
        assert result.stderr.strip().splitlines() == [
            f"nnrt serve: cannot listen on {path}: " + (
                why if path == regular else f"directory {path.parent} {why}")]
    assert regular.read_text() == "not a socket"  # untouched


def test_a_second_serve_leaves_the_live_service_alone(tmp_path: Path) -> None:
    import socket as sockets

    path = str(tmp_path / "a.sock")
    first = subprocess.Popen([sys.executable, "-m", "nnrt", "serve", "--socket", path,
                              "--driver", "reference", "--workers", "1"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(path) and time.monotonic() < deadline:
            time.sleep(0.05)
        second = run_nnrt("serve", "--socket", path, "--driver", "reference")
        assert second.returncode == 1
        assert second.stderr.strip() == (f"nnrt serve: cannot listen on {path}: a service is "
                                         "already listening there")
        with sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM) as probe:
            probe.connect(path)  # the first service still answers on its socket
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=30)
    assert first.returncode == 0


def test_run_caches_where_nnrt_cache_looks(tmp_path: Path) -> None:
    env = {**os.environ, "NNRT_CACHE_DIR": str(tmp_path / "cache"),
           "NNRT_INTEGRITY_DIR": str(tmp_path / "integrity")}
    model = str(Path(__file__).resolve().parents[2] / "examples" / "models" / "cnn.onnx")
    for _ in range(2):
        ran = subprocess.run([sys.executable, "-m", "nnrt", "run", model, "--input-shape",
                              "x=1x3x32x32", "--random-inputs", "--cache", "--driver", "cpu"],
                             capture_output=True, text=True, timeout=120, check=False, env=env)
        assert ran.returncode == 0, ran.stderr
    listed = subprocess.run([sys.executable, "-m", "nnrt", "cache", "ls"], capture_output=True,
                            text=True, timeout=60, check=False, env=env)
    assert listed.returncode == 0 and "1 entries" in listed.stdout, listed.stdout


def test_machine_readable_output_and_quiet_runs(tmp_path: Path) -> None:
    import json

    drivers = json.loads(run_nnrt("drivers", "--json").stdout)
    names = {row["name"] for row in drivers["drivers"]}
    assert "reference" in names and drivers["defaults"][-1] == "reference"
    model = str(Path(__file__).resolve().parents[2] / "examples" / "models" / "cnn.onnx")
    inspected = run_nnrt("inspect", model, "--input-shape", "x=1x3x32x32", "--json")
    assert inspected.returncode == 0, inspected.stderr
    report = json.loads(inspected.stdout)
    assert report["inputs"] == [{"name": "x", "shape": [1, 3, 32, 32], "dtype": "float32",
                                 "type": "TENSOR_FLOAT32"}]
    assert sum(len(step["operations"]) for step in report["steps"]) == len(report["placement"])
    assert not inspected.stderr  # LiteRT's native "INFO: Created ... delegate" lines included
    assert report["prepared_per_shape"] is False
    dynamic = run_nnrt("inspect", model, "--json")  # the batch dim stays dynamic
    assert json.loads(dynamic.stdout)["prepared_per_shape"] is True
    assert json.loads(dynamic.stdout)["inputs"][0]["shape"] == ["batch", 3, 32, 32]
    assert "static variant per input shape" in run_nnrt("inspect", model).stdout
    vendor = str(Path(__file__).resolve().parents[2] / "examples" / "vendor_plugin")
    import nnrt

    b = nnrt.ModelBuilder()
    y = b.input("x", (1, 512, 512))
    for _ in range(6):
        y = b.tanh(b.add(y, y))
    b.output(y)
    nnrt.save(b.build(), tmp_path / "split.nnrt")
    quiet = subprocess.run(
        [sys.executable, "-m", "nnrt", "-q", "run", str(tmp_path / "split.nnrt"),
         "--random-inputs", "--driver", "acme_npu:make_driver", "--driver", "reference"],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": vendor})
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr  # the warning is silenced


def test_run_prints_json() -> None:
    import json

    model = str(Path(__file__).resolve().parents[2] / "examples" / "models" / "cnn.onnx")
    ran = run_nnrt("run", model, "--input-shape", "x=2x3x32x32", "--random-inputs", "--bench", "5",
                "--json")
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    assert result["outputs"][0]["name"] == "output" and result["outputs"][0]["shape"] == [2, 10]
    assert result["bench"]["runs"] == 5 and result["bench"]["p50_ms"] > 0
    assert result["operations"] == 29 and result["steps"] >= 1


def test_a_model_file_with_dynamic_dims_runs_at_the_shapes_given(tmp_path: Path) -> None:
    model = str(Path(__file__).resolve().parents[2] / "examples" / "models" / "cnn.onnx")
    target = str(tmp_path / "cnn.nnrt")
    compiled = run_nnrt("compile", model, "-o", target)
    assert compiled.returncode == 0 and "prepares it per input shape" in compiled.stderr + \
        compiled.stdout
    ran = run_nnrt("run", target, "--input-shape", "x=2x3x32x32", "--random-inputs")
    assert ran.returncode == 0 and "float32 [2, 10]" in ran.stdout, ran.stderr
    bad = run_nnrt("run", target, "--input-shape", "x=2x3x31x32", "--random-inputs")
    assert bad.returncode == 1 and "does not fit the input's dims" in bad.stderr
