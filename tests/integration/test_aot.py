"""Ahead-of-time compilation end to end: ``nnrt compile`` a CNN for acme and cpu, run the file
in new processes — without any compile call, with a stale stamp, and without the acme plugin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from plugin_drivers import ACME, VENDOR

import nnrt
from nnrt.model.builder import ModelBuilder

HERE = Path(__file__).resolve().parent


def cnn() -> nnrt.Model:
    """conv+relu (cpu) -> MUL, ADD by constants (acme) -> max pool, FC, softmax (cpu)."""
    rng = np.random.default_rng(3)
    b = ModelBuilder()
    x = b.input("image", (1, 8, 8, 2))
    y = b.conv2d(x, b.constant(rng.standard_normal((4, 3, 3, 2)).astype(np.float32)),
                 b.constant(rng.standard_normal(4).astype(np.float32)), padding="same",
                 activation="relu")
    y = b.mul(y, b.constant(np.full((4,), 0.5, np.float32)))
    y = b.add(y, b.constant(rng.standard_normal((1, 8, 8, 4)).astype(np.float32)))
    y = b.max_pool2d(y, 2, stride=2)
    y = b.reshape(y, (1, 64))
    y = b.fully_connected(y, b.constant(rng.standard_normal((10, 64)).astype(np.float32)),
                          b.constant(np.zeros(10, np.float32)))
    b.output(b.softmax(y))
    return b.build()


def _env(*, acme: bool, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    paths = [str(HERE)] + ([VENDOR] if acme else [])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(extra)
    return env


def _run(args: list[str], env: dict[str, str]) -> tuple[str, str]:
    done = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, done.stderr


@pytest.fixture(scope="module")
def compiled_file(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("aot")
    model = cnn()
    nnrt.save(model, tmp / "cnn.nnrt")
    x = np.random.default_rng(5).standard_normal((1, 8, 8, 2)).astype(np.float32)
    np.save(tmp / "x.npy", x)
    np.save(tmp / "expected.npy", nnrt.reference.run(model, [x])[0])
    output = _run(["-m", "nnrt", "compile", str(tmp / "cnn.nnrt"), "-o", str(tmp / "aot.nnrt"),
                   "--driver", ACME, "--driver", "cpu", "--soc", "acme-n2", "--step-cost", "0"],
                   _env(acme=True))
    assert "compiled ahead of time" in output[1]
    return {"file": tmp / "aot.nnrt", "x": tmp / "x.npy", "expected": tmp / "expected.npy"}


def _steps(files: dict[str, Path], drivers: list[str], env: dict[str, str]
           ) -> list[dict[str, object]]:
    out = _run([str(HERE / "aot_run.py"), str(files["file"]), str(files["x"]),
                str(files["expected"]), *drivers], env)
    result = json.loads(out[0].strip().splitlines()[-1])
    assert result["aot"] is True
    steps: list[dict[str, object]] = result["steps"]
    return steps


def test_the_file_holds_dispatch_records_for_both_plugins(compiled_file: dict[str, Path]
                                                          ) -> None:
    model = nnrt.load(compiled_file["file"])
    assert model.aot is not None
    drivers = sorted(r.driver for r in model.aot.dispatches)
    assert drivers == ["com.example.acme", "cpu", "cpu"]
    acme = next(r for r in model.aot.dispatches if r.driver == "com.example.acme")
    assert [model.operations[i].type.name for i in acme.operations] == ["MUL", "ADD"]
    assert acme.stamp.soc == "acme-n2"
    assert len(model.operations) == 7  # the original operations are all kept


def test_runs_in_a_new_process_without_any_compile_call(compiled_file: dict[str, Path]) -> None:
    env = _env(acme=True, ACME_FORBID_COMPILE="1", ACME_SOC="acme-n2",
               NNRT_FORBID_COMPILE="1")
    steps = _steps(compiled_file, [ACME, "cpu", "reference"], env)
    assert [(s["driver"], s["source"]) for s in steps] == [
        ("cpu", "aot"), (ACME, "aot"), ("cpu", "aot")]


def test_a_stale_stamp_compiles_instead(compiled_file: dict[str, Path]) -> None:
    # the file was compiled for acme-n2; this acme targets acme-n1, which has no SUB but does
    # MUL and ADD: the partition is compiled again instead of loading the bytecode
    steps = _steps(compiled_file, [ACME, "cpu", "reference"], _env(acme=True))
    acme = next(s for s in steps if s["driver"] == ACME)
    assert acme["source"] == "compiled"
    assert "soc 'acme-n2' != 'acme-n1'" in str(acme["note"])


def test_runs_without_the_acme_plugin(compiled_file: dict[str, Path]) -> None:
    steps = _steps(compiled_file, ["cpu", "reference"], _env(acme=False))
    assert {s["driver"] for s in steps} <= {"cpu", "reference"}
    assert all(s["source"] == "aot" for s in steps if s["driver"] == "cpu")
    covered = sorted(i for s in steps for i in s["operations"])  # type: ignore[attr-defined]
    assert covered == list(range(7))
