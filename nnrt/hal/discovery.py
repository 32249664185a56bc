"""Finding drivers: entry points in group ``nnrt.drivers``, or an explicit ``module:factory``.

A driver package declares ``[project.entry-points."nnrt.drivers"] com.example.acme =
"acme.driver:AcmeDriver"``; ``load_driver("com.example.acme")`` imports and calls the factory.
The built-in drivers are found even without package metadata (e.g. from a source tree).

:func:`default_drivers` is what a runtime uses when not told: every installed built-in driver,
fastest first (``litert`` when ai-edge-litert is installed, ``cpu``, ``reference``), or the
list in ``$NNRT_DRIVERS``. Third-party drivers are used when named or configured there, never
merely because they are installed.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import re
from collections.abc import Callable
from typing import Any

from nnrt.errors import BadData, NnrtError, OpFailed
from nnrt.hal.base import Driver

__all__ = ["DRIVERS_VARIABLE", "ENTRY_POINT_GROUP", "available_drivers", "default_drivers",
           "load_driver"]

#: The entry-point group drivers register under.
ENTRY_POINT_GROUP = "nnrt.drivers"
#: Drivers shipped with nnrt: name -> "module:factory".
_BUILTIN = {"reference": "nnrt.reference.driver:ReferenceDriver",
            "cpu": "nnrt.drivers.cpu:CpuDriver",
            "litert": "nnrt.drivers.litert:LitertDriver"}
#: The built-in drivers in preference order, each with the modules it needs beyond nnrt's own.
_PREFERENCE = (("litert", ("ai_edge_litert", "flatbuffers")), ("cpu", ()), ("reference", ()))
#: Environment variable: the drivers a runtime uses by default, comma-separated.
DRIVERS_VARIABLE = "NNRT_DRIVERS"
_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_MAX_SPEC = 512


def available_drivers() -> list[str]:
    """The names ``load_driver`` knows: installed entry points and the built-in drivers."""
    return sorted(set(_entry_points()) | set(_BUILTIN))


def default_drivers() -> list[str]:
    """The drivers ``Runtime()``, ``nnrt run``, ``nnrt inspect`` and ``nnrt serve`` use when
    none are named: ``$NNRT_DRIVERS`` (comma-separated names) if set, else every installed
    built-in driver in preference order — ``litert`` (when ai-edge-litert is importable),
    ``cpu``, ``reference``. Nothing is imported here (a client need not load the drivers)."""
    configured = os.environ.get(DRIVERS_VARIABLE, "").strip()
    if configured:
        names = [name.strip() for name in configured.split(",")]
        if not all(names):
            raise BadData(f"${DRIVERS_VARIABLE} must be comma-separated driver names, got "
                          f"{configured!r:.200}")
        return list(dict.fromkeys(names))
    return [name for name, needs in _PREFERENCE
            if all(importlib.util.find_spec(module) is not None for module in needs)]


def load_driver(spec: str) -> Driver:
    """The driver named ``spec`` (an entry-point name) or made by ``"module.path:factory"``.

    The factory is called without arguments and must return a ``Driver`` (a ``Driver``
    subclass is such a factory). Unknown names raise ``BadData`` listing the known ones.
    """
    if not isinstance(spec, str) or not spec or len(spec) > _MAX_SPEC or not spec.isprintable():
        raise BadData(f"driver spec must be a driver name or 'module.path:factory', got "
                      f"{spec!r:.80}")
    if ":" in spec:
        factory = _resolve(spec, spec)
    else:
        entry_points = _entry_points()
        if spec in entry_points:
            try:
                factory = entry_points[spec].load()
            except Exception as exc:
                raise BadData(f"driver {spec!r}: cannot load entry point "
                              f"{entry_points[spec].value!r}: {exc!r}") from exc
        elif spec in _BUILTIN:
            factory = _resolve(spec, _BUILTIN[spec])
        else:
            raise BadData(f"unknown driver {spec!r}; known drivers: "
                          f"{', '.join(available_drivers())} (or give 'module.path:factory')")
    return _instantiate(spec, factory)


def _entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    found: dict[str, importlib.metadata.EntryPoint] = {}
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(entry_point.name, entry_point)  # the first installation wins
    return found


def _resolve(spec: str, target: str) -> Any:
    module_name, _, attr = target.partition(":")
    if not _DOTTED.fullmatch(module_name) or not _DOTTED.fullmatch(attr):
        raise BadData(f"driver {spec!r}: expected 'module.path:factory' with dotted Python "
                      f"names, got {target!r}")
    try:
        obj: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise BadData(f"driver {spec!r}: no module named {exc.name!r}") from exc
    except Exception as exc:
        raise BadData(f"driver {spec!r}: importing {module_name} failed: {exc!r}") from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise BadData(f"driver {spec!r}: {module_name} has no attribute {attr!r}") from None
    return obj


def _instantiate(spec: str, factory: Callable[[], Any]) -> Driver:
    if not callable(factory):
        raise BadData(f"driver {spec!r}: {factory!r:.80} is not callable")
    try:
        driver = factory()
    except NnrtError:
        raise
    except Exception as exc:
        raise OpFailed(f"driver {spec!r}: creating the driver failed: {exc!r}") from exc
    if not isinstance(driver, Driver):
        raise BadData(f"driver {spec!r}: the factory returned {type(driver).__name__}, "
                      "expected an nnrt.hal.Driver")
    return driver
