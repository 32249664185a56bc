"""Drivers (HAL): the interface a device implements, and how drivers are found.

A driver subclasses :class:`Driver` (and :class:`PreparedModel`), filling a few ``_`` hooks;
the base classes check arguments and answers and keep the books. The worker service that serves
one driver to the runtime is ``python -m nnrt.worker``.
"""

from nnrt.hal.base import Cancelled as Cancelled
from nnrt.hal.base import Driver as Driver
from nnrt.hal.base import DriverInfo as DriverInfo
from nnrt.hal.base import ExecutionControl as ExecutionControl
from nnrt.hal.base import ExecutionResult as ExecutionResult
from nnrt.hal.base import PerformanceInfo as PerformanceInfo
from nnrt.hal.base import PreparedModel as PreparedModel
from nnrt.hal.base import PrepareOptions as PrepareOptions
from nnrt.hal.base import Timing as Timing
from nnrt.hal.discovery import available_drivers as available_drivers
from nnrt.hal.discovery import load_driver as load_driver

__all__ = [
    "Cancelled",
    "Driver",
    "DriverInfo",
    "ExecutionControl",
    "ExecutionResult",
    "PerformanceInfo",
    "PrepareOptions",
    "PreparedModel",
    "Timing",
    "available_drivers",
    "load_driver",
]
