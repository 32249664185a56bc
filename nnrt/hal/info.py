"""The plain records a driver exchanges: who it is, how to prepare, what an execution returned.

``DriverInfo`` crosses the process boundary (the worker's ``hello`` / ``info`` replies), so
:meth:`DriverInfo.from_wire` checks every field of untrusted data; the constructors check too,
so a driver cannot describe itself with values the wire would refuse.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from nnrt.errors import BadData
from nnrt.model.types import ExecutionPreference, Priority

__all__ = [
    "DEVICE_TYPES",
    "MAX_FEATURE_LEVEL",
    "DriverInfo",
    "ExecutionResult",
    "PerformanceInfo",
    "PrepareOptions",
    "Timing",
]

#: The device types a driver may report (NNAPI ``DeviceTypeCode``, lower case).
DEVICE_TYPES = ("cpu", "gpu", "accelerator", "other")
#: Highest NNAPI feature level nnrt knows (FL8 = Android 14); levels start at 1.
MAX_FEATURE_LEVEL = 8
_MAX_TEXT = 256
_INFO_FIELDS = ("name", "version", "device_type", "feature_level", "performance")
_PERFORMANCE_FIELDS = ("exec_time", "power_usage")


@dataclass(frozen=True)
class PerformanceInfo:
    """A driver's speed and power relative to the reference CPU (lower is better; 1.0 = equal).

    Like NNAPI's ``PerformanceInfo``: ``exec_time`` and ``power_usage`` are ratios, positive
    and finite. The runtime compares them to pick a driver for each operation.
    """

    exec_time: float = 1.0
    power_usage: float = 1.0

    def __post_init__(self) -> None:
        for name in _PERFORMANCE_FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not (
                    math.isfinite(value) and value > 0):
                raise BadData(f"driver info.performance.{name}: expected a positive finite "
                              f"number, got {value!r}")
            object.__setattr__(self, name, float(value))


@dataclass(frozen=True)
class DriverInfo:
    """Who a driver is: name, version, device type, NNAPI feature level and performance.

    ``name`` is what ``load_driver`` finds it by (vendor names in reverse domain form,
    ``com.example.acme``); ``device_type`` is one of ``DEVICE_TYPES``.
    """

    name: str
    version: str
    device_type: str
    feature_level: int
    performance: PerformanceInfo = PerformanceInfo()

    def __post_init__(self) -> None:
        for field in ("name", "version"):
            value = getattr(self, field)
            if not isinstance(value, str) or not value or len(value) > _MAX_TEXT or (
                    not value.isprintable()):
                raise BadData(f"driver info.{field}: expected printable text of 1 to "
                              f"{_MAX_TEXT} characters, got {value!r:.80}")
        if self.device_type not in DEVICE_TYPES:
            raise BadData(f"driver info.device_type: expected one of {', '.join(DEVICE_TYPES)}, "
                          f"got {self.device_type!r:.80}")
        level = self.feature_level
        if isinstance(level, bool) or not isinstance(level, int) or not (
                1 <= level <= MAX_FEATURE_LEVEL):
            raise BadData(f"driver info.feature_level: expected an integer from 1 to "
                          f"{MAX_FEATURE_LEVEL}, got {level!r:.80}")
        if not isinstance(self.performance, PerformanceInfo):
            raise BadData(f"driver info.performance: expected a PerformanceInfo, got "
                          f"{type(self.performance).__name__}")

    def to_wire(self) -> dict[str, Any]:
        """This record as plain msgpack-able data."""
        return {
            "name": self.name,
            "version": self.version,
            "device_type": self.device_type,
            "feature_level": self.feature_level,
            "performance": {"exec_time": self.performance.exec_time,
                            "power_usage": self.performance.power_usage},
        }

    @classmethod
    def from_wire(cls, data: Any) -> DriverInfo:
        """Rebuild a record from untrusted data; ``BadData`` names the first bad field."""
        _check_keys("driver info", data, _INFO_FIELDS)
        performance = data["performance"]
        _check_keys("driver info.performance", performance, _PERFORMANCE_FIELDS)
        return cls(
            name=data["name"],
            version=data["version"],
            device_type=data["device_type"],
            feature_level=data["feature_level"],
            performance=PerformanceInfo(performance["exec_time"], performance["power_usage"]),
        )


def _check_keys(where: str, data: Any, fields: tuple[str, ...]) -> None:
    if not isinstance(data, dict):
        raise BadData(f"{where}: expected a map, got {type(data).__name__}")
    unknown = sorted(str(k)[:40] for k in data if k not in fields)
    if unknown:
        raise BadData(f"{where}: unknown fields {unknown} (expected {', '.join(fields)})")
    missing = [k for k in fields if k not in data]
    if missing:
        raise BadData(f"{where}: missing fields {missing}")


@dataclass(frozen=True)
class PrepareOptions:
    """How to prepare a model: what to optimise for and how urgent its work is (NNAPI codes)."""

    preference: ExecutionPreference = ExecutionPreference.FAST_SINGLE_ANSWER
    priority: Priority = Priority.MEDIUM

    def __post_init__(self) -> None:
        for field, enum in (("preference", ExecutionPreference), ("priority", Priority)):
            value = getattr(self, field)
            try:
                if isinstance(value, bool):
                    raise ValueError
                object.__setattr__(self, field, enum(value))
            except (TypeError, ValueError):
                codes = ", ".join(f"{m.name}={int(m)}" for m in enum)
                raise BadData(f"prepare options.{field}: expected one of {codes}, got "
                              f"{value!r:.80}") from None


class Timing(NamedTuple):
    """How long an execution took, in nanoseconds (NNAPI ``Timing``).

    ``on_device_ns`` covers the driver's own computation, ``in_driver_ns`` the whole call
    including input checks and bookkeeping. (A named tuple: built once per execution, it must
    be cheap.)
    """

    on_device_ns: int
    in_driver_ns: int


class ExecutionResult(NamedTuple):
    """The outputs of one execution, in model output order, and its timing."""

    outputs: list[np.ndarray[Any, Any]]
    timing: Timing
