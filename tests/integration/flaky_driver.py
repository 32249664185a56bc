"""Real test drivers: one that refuses to start on demand, one stuck inside a step, others
with fewer abilities (no blobs, small device buffers)."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from nnrt.hal.base import Driver, ExecutionControl, PreparedModel, PrepareOptions
from nnrt.model.model import Model
from nnrt.reference.driver import ReferenceDriver, ReferencePreparedModel


def factory() -> Driver:
    """The reference driver, unless ``$NNRT_TEST_BROKEN_MARKER`` names an existing file."""
    marker = os.environ.get("NNRT_TEST_BROKEN_MARKER")
    if marker and os.path.exists(marker):
        raise RuntimeError("flaky driver: refusing to start while the marker exists")
    return ReferenceDriver()


class _StuckPreparedModel(ReferencePreparedModel):
    """Runs the reference plan after blocking, inside one step, without polling for cancel."""

    def _execute(self, inputs: list[Any], control: ExecutionControl) -> Sequence[Any]:
        time.sleep(float(os.environ.get("NNRT_TEST_STUCK_SECONDS", "30")))
        return super()._execute(inputs, control)


class StuckDriver(ReferenceDriver):
    """The reference driver whose executions sit in one uninterruptible step first."""

    def _prepare(self, model: Model, options: PrepareOptions, cache: Any) -> PreparedModel:
        return _StuckPreparedModel(model)


class SlowPrepareDriver(ReferenceDriver):
    """The reference driver taking ``$NNRT_TEST_PREPARE_SECONDS`` to prepare each model, and
    appending its pid to the file ``$NNRT_TEST_PREPARE_LOG`` (if set) for each prepare."""

    def _prepare(self, model: Model, options: PrepareOptions, cache: Any) -> PreparedModel:
        log = os.environ.get("NNRT_TEST_PREPARE_LOG")
        if log:
            with open(log, "a") as f:
                f.write(f"{os.getpid()}\n")
        time.sleep(float(os.environ.get("NNRT_TEST_PREPARE_SECONDS", "0")))
        return super()._prepare(model, options, cache)


class NoBlobDriver(ReferenceDriver):
    """The reference driver, unable to map POSIX-shm blobs (memfd and mmap_fd only)."""

    def _memory_kinds(self) -> frozenset[str]:
        return frozenset({"memfd", "mmap_fd"})


class SmallBufferDriver(ReferenceDriver):
    """The reference driver whose device buffers hold at most 1 MiB and must have a known size."""

    def __init__(self) -> None:
        super().__init__(max_buffer_bytes=1 << 20, allow_unknown=False)


class TooManyCacheFiles(ReferenceDriver):
    """Asks for 33 model-cache files: more than NNAPI's 32, refused when the worker starts."""

    def _cache_files_needed(self) -> tuple[int, int]:
        return (33, 0)


class _RaisingPreparedModel(ReferencePreparedModel):
    """Raises from inside the kernel when the first input's first element is negative."""

    def _execute(self, inputs: list[Any], control: ExecutionControl) -> Sequence[Any]:
        if inputs and inputs[0].size and float(inputs[0].reshape(-1)[0]) < 0:
            raise RuntimeError("kernel exploded on a negative input")
        return super()._execute(inputs, control)


class RaisingDriver(ReferenceDriver):
    """The reference driver whose kernels raise on inputs starting with a negative value."""

    def _prepare(self, model: Model, options: PrepareOptions, cache: Any) -> PreparedModel:
        return _RaisingPreparedModel(model)


def small_disk_cpu() -> Driver:
    """The cpu driver in a worker whose files may not grow past 16 KiB (``RLIMIT_FSIZE``):
    writing a bigger cache file fails with EFBIG, as on a full disk."""
    import resource
    import sys

    from nnrt.drivers.cpu import CpuDriver

    if sys.argv[0].endswith(os.path.join("nnrt", "worker", "__main__.py")):  # workers only
        resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024, 16 * 1024))
    return CpuDriver()
