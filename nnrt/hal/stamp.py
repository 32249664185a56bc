"""Compatibility stamps of ahead-of-time bytecode: what a driver must be to load it.

An AOT partition in a ``.nnrt`` file carries the :class:`~nnrt.model.aot.Stamp` of the driver
that compiled it (driver name and version, SoC model, nnrt and Python versions). A driver loads
the bytecode only when its own stamp is the same; otherwise the runtime compiles the partition's
original operations instead.
"""

from __future__ import annotations

import sys

from nnrt._version import __version__
from nnrt.hal.base import Driver
from nnrt.model.aot import Stamp

__all__ = ["driver_stamp", "stamp_mismatch"]

_FIELDS = ("driver", "version", "soc", "nnrt", "python")


def driver_stamp(driver: Driver) -> Stamp:
    """The stamp bytecode compiled by ``driver`` (in this interpreter) carries."""
    info = driver.info()
    soc = getattr(driver, "soc_model", None)
    return Stamp(driver=info.name, version=info.version,
                 soc=soc if isinstance(soc, str) else None, nnrt=__version__,
                 python=f"{sys.version_info.major}.{sys.version_info.minor}")


def stamp_mismatch(stamp: Stamp, driver: Driver) -> str | None:
    """Why bytecode stamped ``stamp`` cannot run on ``driver`` (None: it can)."""
    own = driver_stamp(driver)
    differences = [f"{field} {getattr(stamp, field)!r} != {getattr(own, field)!r}"
                   for field in _FIELDS if getattr(stamp, field) != getattr(own, field)]
    return ", ".join(differences) if differences else None
