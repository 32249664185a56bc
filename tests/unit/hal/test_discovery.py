"""Finding drivers: entry-point names, the built-in fallback, explicit ``module:factory`` specs."""

from __future__ import annotations

import importlib.metadata
import importlib.util

import anyio
import pytest
from sample_drivers import NoAddDriver

import nnrt
from nnrt.hal import available_drivers, load_driver
from nnrt.hal.discovery import DRIVERS_VARIABLE, default_drivers
from nnrt.reference.driver import ReferenceDriver


def test_reference_is_available_by_name() -> None:
    assert "reference" in available_drivers()
    driver = load_driver("reference")
    assert isinstance(driver, ReferenceDriver)
    assert driver.info().name == "reference"


def test_unknown_name_lists_the_known_drivers() -> None:
    with pytest.raises(nnrt.BadData, match=r"unknown driver 'nope'; known drivers: .*reference"):
        load_driver("nope")


def test_builtin_drivers_load_without_package_metadata(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    # As when running from a source tree: no installed distribution, no entry points.
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **_: [])
    assert available_drivers() == ["cpu", "litert", "reference"]
    assert isinstance(load_driver("reference"), ReferenceDriver)


def test_module_factory_spec_loads_a_test_driver() -> None:
    driver = load_driver("sample_drivers:NoAddDriver")
    assert type(driver) is NoAddDriver  # a real subclass overriding one hook
    assert driver.info().name == "reference"


@pytest.mark.parametrize(("spec", "message"), [
    ("", "driver spec must be"),
    ("no_such_module_xyz:Driver", "no module named 'no_such_module_xyz'"),
    ("sample_drivers:Missing", "sample_drivers has no attribute 'Missing'"),
    ("sample_drivers:", "expected 'module.path:factory'"),
    ("sample drivers:X", "expected 'module.path:factory'"),
    ("sample_drivers:not_a_driver", "the factory returned object"),
    ("sample_drivers:ONES", "is not callable"),
])
def test_bad_specs_are_bad_data(spec: str, message: str) -> None:
    with pytest.raises(nnrt.BadData, match=message):
        load_driver(spec)


def test_the_default_drivers_are_the_installed_built_ins_fastest_first(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DRIVERS_VARIABLE, raising=False)
    litert = importlib.util.find_spec("ai_edge_litert") is not None
    assert default_drivers() == [*(["litert"] if litert else []), "cpu", "reference"]
    # without ai-edge-litert (a platform with no wheel), litert is left out, not an error
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "ai_edge_litert" else real(name, *a))
    assert default_drivers() == ["cpu", "reference"]


def test_nnrt_drivers_configures_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DRIVERS_VARIABLE, " com.example.acme, cpu ,cpu")
    assert default_drivers() == ["com.example.acme", "cpu"]
    monkeypatch.setenv(DRIVERS_VARIABLE, "cpu,,reference")
    with pytest.raises(nnrt.BadData, match="NNRT_DRIVERS"):
        default_drivers()


def test_a_runtime_without_drivers_named_uses_the_default(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DRIVERS_VARIABLE, "cpu")

    async def devices() -> list[str]:
        async with nnrt.Runtime(workers=1) as rt:
            return [info.name for info in rt.devices]

    assert anyio.run(devices) == ["cpu", "reference"]
