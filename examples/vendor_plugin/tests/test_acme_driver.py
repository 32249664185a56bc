"""The Acme NPU served as an nnrt driver: ``make_driver().prepare(model).execute(inputs)``."""

from __future__ import annotations

import tomllib
from pathlib import Path

import nnrt
import numpy as np
import pytest
from nnrt.hal.discovery import load_driver
from nnrt.hal.plugin import PluginDriver

from acme_npu import AcmePlugin, make_driver

from acme_cases import broadcast_model, mixed_model, random_inputs

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def sub_model() -> nnrt.Model:
    b = nnrt.ModelBuilder()
    x = b.input("x", (4, 1))
    y = b.input("y", (1, 5))
    b.output(b.sub(b.mul(x, y, "relu6"), x))
    return b.build()


def check_run(driver: PluginDriver, model: nnrt.Model, seed: int = 0) -> None:
    inputs = random_inputs(model, seed)
    with driver.prepare(model) as prepared:
        result = prepared.execute(inputs)
    for got, want in zip(result.outputs, nnrt.reference.run(model, inputs), strict=True):
        np.testing.assert_array_equal(got, want)


def test_info(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACME_SOC", raising=False)
    driver = make_driver()
    info = driver.info()
    assert (info.name, info.version, info.device_type) == ("com.example.acme", "1.0",
                                                           "accelerator")
    assert (info.performance.exec_time, info.performance.power_usage) == (0.2, 0.2)
    assert driver.soc_model == "acme-n1"


def test_end_to_end_on_the_default_soc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACME_SOC", raising=False)
    driver = make_driver()
    check_run(driver, broadcast_model())
    assert driver.compile_count == 1


def test_acme_soc_selects_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACME_SOC", "acme-n1")
    with pytest.raises(nnrt.Unsupported, match=r"operation 1 \(SUB\): SUB is not available "
                                               "on acme-n1"):
        make_driver().prepare(sub_model())
    monkeypatch.setenv("ACME_SOC", "acme-n2")
    check_run(make_driver(), sub_model(), seed=5)
    monkeypatch.setenv("ACME_SOC", "acme-n7")
    with pytest.raises(nnrt.BadData, match="unknown SoC model 'acme-n7'"):
        make_driver()


def test_prepare_refuses_a_mixed_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACME_SOC", "acme-n2")
    with pytest.raises(nnrt.Unsupported) as caught:
        make_driver().prepare(mixed_model())
    message = str(caught.value)
    assert "operation 2 (DIV): DIV is not accelerated by the Acme NPU" in message
    assert "operation 4 (ADD): ADD with input 0 (operand 2) of TENSOR_FLOAT16" in message


def test_outputs_are_written_into_destinations(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACME_SOC", "acme-n2")
    model = sub_model()
    inputs = random_inputs(model, seed=2)
    destination = np.full((4, 5), np.nan, np.float32)
    with make_driver().prepare(model) as prepared:
        result = prepared.execute(inputs, outputs=[destination])
    np.testing.assert_array_equal(destination, nnrt.reference.run(model, inputs)[0])
    assert np.shares_memory(result.outputs[0], destination)


def test_precompiled_bytecode_runs_without_compiling(monkeypatch: pytest.MonkeyPatch) -> None:
    model = broadcast_model()
    compiled = AcmePlugin().compile([model], "acme-n2")
    module, entry = compiled.calls[0]
    monkeypatch.setenv("ACME_SOC", "acme-n2")
    monkeypatch.setenv("ACME_FORBID_COMPILE", "1")
    driver = make_driver()
    with pytest.raises(nnrt.OpFailed, match="compile called although ACME_FORBID_COMPILE=1"):
        driver.prepare(model)
    inputs = random_inputs(model, seed=9)
    with driver.prepare_compiled(model, compiled.modules[module], entry) as prepared:
        outputs = prepared.execute(inputs).outputs
    for got, want in zip(outputs, nnrt.reference.run(model, inputs), strict=True):
        np.testing.assert_array_equal(got, want)
    assert driver.compile_count == 0
    with pytest.raises(nnrt.BadData, match=r"header\.magic"):
        driver.prepare_compiled(model, b"NOPE" + compiled.modules[module][4:], entry)


def test_entry_point_names_the_factory() -> None:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    assert project["name"] == "acme-npu"
    assert "nnrt" in project["dependencies"]
    target = project["entry-points"]["nnrt.drivers"]["com.example.acme"]
    assert target == "acme_npu:make_driver"
    driver = load_driver(target)  # what nnrt does with the installed entry point
    assert isinstance(driver, PluginDriver) and driver.info().name == "com.example.acme"
