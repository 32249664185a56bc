"""A real driver whose factory refuses to start while a marker file exists (restart tests)."""

from __future__ import annotations

import os

from nnrt.driver.base import Driver
from nnrt.drivers.reference import ReferenceDriver


def factory() -> Driver:
    """The reference driver, unless ``$NNRT_TEST_BROKEN_MARKER`` names an existing file."""
    marker = os.environ.get("NNRT_TEST_BROKEN_MARKER")
    if marker and os.path.exists(marker):
        raise RuntimeError("flaky driver: refusing to start while the marker exists")
    return ReferenceDriver()
