"""The driver conformance kit: :func:`check_driver` runs a driver against nnrt's contract.

Operation cases (:mod:`~nnrt.hal.conformance.operations`), HAL protocol checks
(:mod:`~nnrt.hal.conformance.checks`) and the driver served by a real worker process
(:mod:`~nnrt.hal.conformance.process`); see ``docs/driver-conformance.md``.
"""

from nnrt.hal.conformance.kit import ConformanceReport as ConformanceReport
from nnrt.hal.conformance.kit import check_driver as check_driver

__all__ = ["ConformanceReport", "check_driver"]
