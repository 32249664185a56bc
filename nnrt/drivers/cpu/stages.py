"""``CpuPreparedModel``: multi-stage compilation (NNAPI compilation caching's advanced use:
a fast compile first, an optimised one later).

Stage 1 is the module the plugin compiled (fast). After ``optimize_after`` executions the
prepared model starts one background thread that autotunes a stage-2 module
(:func:`~nnrt.drivers.cpu.autotune.autotune`), loads it through the dispatch (verified like
any module), checks it against stage 1 on a copy of the triggering execution's inputs, and
swaps the executable atomically: executions in flight finish on the old one (unloaded when
the last of them ends), later ones use the new. If the model was prepared with cache files,
their descriptors were duplicated at prepare time; after the swap the stage-2 module is saved
through them (``PluginDriver.save_to_cache``, under the cache's lock), so the next start loads
stage 2 and optimises no more. A stage-2 module never starts the background step.

Ownership: the duplicated descriptors belong to the prepared model until the thread starts,
then to the thread, which closes them when it ends; unused ones are closed at ``release()``.
``release()`` stops the thread and joins it for at most :data:`JOIN_TIMEOUT` seconds. A failure
of the background step is logged and leaves stage 1 running.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from nnrt.cache.files import CacheFiles
from nnrt.drivers.cpu.autotune import Trial, TunedModule, autotune, close_enough
from nnrt.drivers.cpu.dispatch import CpuExecutable
from nnrt.drivers.cpu.module import Module
from nnrt.errors import NnrtError, OpFailed
from nnrt.hal.base import ExecutionControl
from nnrt.hal.plugin import FORBID_COMPILE, PluginDriver, PluginPreparedModel
from nnrt.model.model import Model

__all__ = ["JOIN_TIMEOUT", "CpuPreparedModel", "OptimizationState"]

Array = np.ndarray[Any, Any]
#: Seconds ``release()`` waits for a running background step.
JOIN_TIMEOUT = 10.0
#: ``off``: never optimises (disabled, compile forbidden, or already stage 2); ``waiting``:
#: counting executions; ``running``; then ``done``, ``failed`` or ``stopped`` (released).
OptimizationState = Literal["off", "waiting", "running", "done", "failed", "stopped"]
_log = logging.getLogger("nnrt.worker")


class CpuPreparedModel(PluginPreparedModel):
    """A cpu partition that re-optimises itself in the background after some executions."""

    def __init__(self, driver: PluginDriver, model: Model, module: bytes | Module,
                 entry_point: str,
                 cache: CacheFiles | None, optimize_after: int) -> None:
        super().__init__(driver, model, module, entry_point)
        self._driver = driver
        self._entry = entry_point
        self._optimize_after = optimize_after
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._count = 0
        self._in_flight: dict[int, int] = {}
        self._retired: list[Any] = []
        self._thread: threading.Thread | None = None
        self._cache: CacheFiles | None = None
        #: Every candidate the autotuner timed (empty before stage 2 was built here).
        self.trials: tuple[Trial, ...] = ()
        self._state: OptimizationState = "off"
        if (self.stage == 1 and optimize_after > 0
                and os.environ.get(FORBID_COMPILE) != "1"):
            self._state = "waiting"
            if cache is not None:
                self._cache = _duplicate(cache)

    # -- what tests and tools see ------------------------------------------------------------

    @property
    def stage(self) -> int:
        """1 until the stage-2 module is running (or when it was loaded from a cache), then 2."""
        executable = self._executable
        return executable.stage if isinstance(executable, CpuExecutable) else 1

    @property
    def choices(self) -> dict[int, str]:
        """Operation index -> kernel the autotuner chose (empty at stage 1)."""
        executable = self._executable
        return dict(executable.choices) if isinstance(executable, CpuExecutable) else {}

    @property
    def optimization(self) -> OptimizationState:
        """Where the background optimisation stands."""
        return self._state

    def wait_optimized(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for a started background step to end; whether
        none is running now."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
            return not thread.is_alive()
        return True

    # -- executions ------------------------------------------------------------------------

    def _execute(self, inputs: list[Array], control: ExecutionControl) -> Sequence[Array]:
        with self._lock:
            executable = self._executable
            self._in_flight[id(executable)] = self._in_flight.get(id(executable), 0) + 1
            self._count += 1
            if (self._state == "waiting" and self._count >= self._optimize_after
                    and not self._stop.is_set()):
                self._start([a.copy() for a in inputs])
        try:
            return self._run(executable, inputs, control)
        finally:
            self._finished_with(executable)

    def _finished_with(self, executable: Any) -> None:
        with self._lock:
            left = self._in_flight[id(executable)] - 1
            if left:
                self._in_flight[id(executable)] = left
                return
            del self._in_flight[id(executable)]
            if not any(e is executable for e in self._retired):
                return
            self._retired = [e for e in self._retired if e is not executable]
        self._dispatch.unload(executable)

    # -- the background step ---------------------------------------------------------------

    def _start(self, sample: list[Array]) -> None:
        """Start the background step (called with the lock held)."""
        self._state = "running"
        self._thread = threading.Thread(target=self._optimize, args=(sample,),
                                        name=f"nnrt-cpu-optimize-{self._entry}", daemon=True)
        self._thread.start()

    def _build_stage2(self, stop: threading.Event) -> TunedModule | None:
        """The stage-2 module (None when ``stop`` was set meanwhile)."""
        return autotune(self.model, self._entry, stop)

    def _optimize(self, sample: list[Array]) -> None:
        state: OptimizationState = "failed"
        try:
            tuned = self._build_stage2(self._stop)
            if tuned is None or self._stop.is_set():
                state = "stopped"
                return
            new = self._dispatch.load(tuned.module, self._entry)
            try:
                self._check(new, sample)
            except Exception:
                self._dispatch.unload(new)
                raise
            self.trials = tuned.trials
            if not self._swap(new):
                state = "stopped"
                return
            state = "done"
            if self._cache is not None:
                try:
                    self._driver.save_to_cache(self._cache, tuned.module, self._entry)
                except NnrtError as exc:
                    _log.warning("driver cpu: %s: stage 2 runs but could not be saved in the "
                                 "compilation cache: %s", self._entry, exc)
        except Exception as exc:
            _log.warning("driver cpu: %s: the background optimisation failed, stage 1 keeps "
                         "running: %r", self._entry, exc)
        finally:
            self._state = state
            self._close_cache()

    def _check(self, new: Any, sample: list[Array]) -> None:
        """Raise OpFailed unless ``new`` computes what the running executable computes."""
        old = self._executable
        want = self._run(old, sample, ExecutionControl(None, None))
        got = self._run(new, sample, ExecutionControl(None, None))
        for j, (g, w) in enumerate(zip(got, want, strict=True)):
            if not close_enough(g, w):
                raise OpFailed(f"stage 2 output {j} differs from stage 1 beyond float32 "
                               "tolerance; not used")

    def _swap(self, new: Any) -> bool:
        """Make ``new`` the executable (False, and ``new`` unloaded, once released)."""
        with self._lock:
            if self._stop.is_set():
                old = new
            else:
                old, self._executable = self._executable, new
                if self._in_flight.get(id(old)):
                    self._retired.append(old)
                    return True
        self._dispatch.unload(old)
        return old is not new

    # -- ownership -------------------------------------------------------------------------

    def _close_cache(self) -> None:
        cache, self._cache = self._cache, None
        if cache is not None:
            for fd in cache.all:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def _release(self) -> None:
        with self._lock:
            self._stop.set()
            thread = self._thread
            if self._state == "waiting":
                self._state = "stopped"
        if thread is None:
            self._close_cache()
        elif thread is not threading.current_thread():
            thread.join(JOIN_TIMEOUT)
            if thread.is_alive():
                _log.warning("driver cpu: %s: the background optimisation did not stop within "
                             "%g s; it will close its cache files when it ends", self._entry,
                             JOIN_TIMEOUT)
        with self._lock:
            retired, self._retired = self._retired, []
        for executable in retired:
            self._dispatch.unload(executable)
        super()._release()

    def __del__(self) -> None:
        if getattr(self, "_thread", None) is None and getattr(self, "_cache", None) is not None:
            self._close_cache()


def _duplicate(cache: CacheFiles) -> CacheFiles | None:
    """``cache`` with every descriptor duplicated (None, logged, if the system refuses)."""
    copies: list[int] = []
    try:
        for fd in cache.all:
            copies.append(os.dup(fd))
    except OSError as exc:
        for fd in copies:
            os.close(fd)
        _log.warning("driver cpu: cannot duplicate the cache files (%s); stage 2 will not be "
                     "saved", exc.strerror)
        return None
    n_model = len(cache.model)
    return CacheFiles(cache.token, tuple(copies[:n_model]), tuple(copies[n_model:]))
