"""Deprecated alias of :mod:`nnrt.hal` (the driver contract), kept for one release.

Driver plugins written against earlier releases import ``nnrt.driver`` and its modules
(``nnrt.driver.base``, ``nnrt.driver.plugin``, ``nnrt.driver.testing``, ...); those names still
resolve, to the same objects, with a ``DeprecationWarning``. New code imports :mod:`nnrt.hal`
(and :func:`nnrt.hal.conformance.check_driver` for the conformance kit). The worker service is
``python -m nnrt.worker``.
"""

import importlib
import sys
import warnings

from nnrt.hal import *  # noqa: F403 - the alias re-exports the whole contract
from nnrt.hal import __all__ as __all__

warnings.warn("nnrt.driver is deprecated: import nnrt.hal (the driver contract) and "
              "nnrt.hal.conformance (check_driver) instead", DeprecationWarning, stacklevel=2)

#: Old module name -> where it lives now.
MOVED = {
    "base": "nnrt.hal.base",
    "buffers": "nnrt.hal.buffers",
    "control": "nnrt.hal.control",
    "discovery": "nnrt.hal.discovery",
    "info": "nnrt.hal.info",
    "outputs": "nnrt.hal.outputs",
    "plugin": "nnrt.hal.plugin",
    "stamp": "nnrt.hal.stamp",
    "testing": "nnrt.hal.conformance.kit",
}
for _old, _new in MOVED.items():
    sys.modules[f"{__name__}.{_old}"] = importlib.import_module(_new)
