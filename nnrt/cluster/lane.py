"""``NodeLane``: a plain Ray actor on a node that runs executes from other nodes itself, as a
driver worker does.

Ray serves a call to an async actor (the node's :class:`~nnrt.cluster.actor.NodeService`) by
handing it from the thread that received it to the actor's event loop and back: measured
here, 1.3x the time of the same call to a plain actor, whose method runs on the receiving
thread. And the actor's round trip to its node's service and worker crosses two more
processes, each a wake-up on a node busy with Ray's own threads (0.5-0.8 ms there against
0.1-0.2 ms on a quiet machine). A lane is a plain actor (one call at a time) that prepares a
model it is sent with a driver in its own process — the first of the node's drivers that runs
the whole model — and runs each execute there: the data arrives from Ray in the process that
computes, as a plain Ray actor's would. The client sends an execute for another node to a free
lane of that node, else to its actor (which takes any number at once and every model); a node
has ``RayCluster(lanes=...)`` lanes.

A lane is a worker whose transport is Ray: it runs drivers, which may crash, so the client
never retries elsewhere a request whose lane died (as a request whose worker died is not
retried) and uses that lane no more. A model the lane cannot run whole on one driver, or with
dims unknown until run time (the runtime's shape variants), is answered ``("unsuited",
reason)`` and goes to the node's actor. A lane keeps the models it received in a private
directory (``nnrt-ray-<pid>-lane-*``, removed on stop, else by the next node actor starting
there, as the actors' own).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from typing import Any

import ray

from nnrt.cluster.prepared import COMPILE_OPTIONS, Users, model_handle
from nnrt.cluster.process import DIRECTORY_PREFIX
from nnrt.cluster.shipping import (
    check_digest,
    error_reply,
    model_from,
    pack_tensor,
    unpack_tensor,
)
from nnrt.errors import BadData, NnrtError
from nnrt.hal.base import Driver, PreparedModel
from nnrt.hal.discovery import default_drivers, load_driver
from nnrt.hal.info import PrepareOptions
from nnrt.model.model import Model
from nnrt.model.types import ExecutionPreference, Priority
from nnrt.runtime.backends.process import LITERT_THREADS

__all__ = ["NodeLane"]


class NodeLane:
    """One lane of a node (see the module docstring): ``drivers`` it may prepare with, in
    preference order (None: the node's defaults), ``threads`` of their kernels."""

    def __init__(self, drivers: list[str] | None, threads: int | None) -> None:
        if threads is not None:  # read by the litert driver when it loads a model
            os.environ[LITERT_THREADS] = str(threads)
        self._names = list(drivers) if drivers else default_drivers()
        self._drivers: dict[str, Driver] = {}
        self._directory = tempfile.mkdtemp(prefix=f"{DIRECTORY_PREFIX}{os.getpid()}-lane-")
        #: Prepared models by handle, and per handle the clients' prepares not yet released.
        self._models: dict[str, PreparedModel] = {}
        self._users = Users()
        self.received = 0

    def prepare(self, digest: str, model: list[Any], options: dict[str, Any]
                ) -> tuple[Any, ...]:
        """Prepare the model named ``digest`` (``model``: a list holding the object reference
        of its file bytes) with ``options``; replies ``("ok", handle)``, ``("unsuited",
        reason)`` or an error."""
        try:
            handle = model_handle(check_digest(digest), options)
            if handle not in self._models:
                if not (isinstance(model, list) and len(model) == 1):
                    raise BadData("expected the model's object reference in a list")
                loaded = model_from(ray.get(model[0]), digest, self._directory)
                chosen = {k: v for k, v in options.items() if k in COMPILE_OPTIONS}
                unsuited = _unsuited(loaded)
                if unsuited:
                    return ("unsuited", unsuited)
                prepared = self._prepare(loaded, chosen)
                if isinstance(prepared, str):
                    return ("unsuited", prepared)
                self._models[handle] = prepared
            self._users.add(handle)
            return ("ok", handle)
        except NnrtError as exc:
            return error_reply(exc)

    def execute(self, handle: str, timeout: float | None, *inputs: Any) -> tuple[Any, ...]:
        """One execute of the model prepared here as ``handle``; ``("missing",)`` when it
        was not (a restarted lane)."""
        self.received += 1
        prepared = self._models.get(handle) if isinstance(handle, str) else None
        if prepared is None:
            return ("missing",)
        try:
            deadline = None if timeout is None else time.monotonic() + float(timeout)
            arrays = [unpack_tensor(value, f"input {k}") for k, value in enumerate(inputs)]
            result = prepared.execute(arrays, deadline=deadline)
            return ("ok", [pack_tensor(a) for a in result.outputs])
        except NnrtError as exc:
            return error_reply(exc)

    def release(self, handle: str) -> None:
        """A client let go of the model it prepared here as ``handle``; the last one
        releases it."""
        if not self._users.drop(handle):
            return
        prepared = self._models.pop(handle, None)
        if prepared is not None:
            prepared.release()

    def statistics(self) -> dict[str, Any]:
        """Executes received, models prepared here, this process's id and directory."""
        return {"received": self.received, "models": len(self._models), "pid": os.getpid(),
                "directory": self._directory}

    def stop(self) -> None:
        """Release every model and remove the directory."""
        models, self._models = self._models, {}
        self._users.clear()
        for prepared in models.values():
            prepared.release()
        shutil.rmtree(self._directory, ignore_errors=True)

    def _prepare(self, model: Model, options: dict[str, Any]) -> PreparedModel | str:
        """``model`` prepared by the first of the lane's drivers (or of ``devices``) that runs
        every operation of it, or why none did (the node's runtime, which places a model over
        several drivers and falls back, runs it then)."""
        wanted = options.get("devices")
        names = [n for n in self._names if wanted is None or n in wanted]
        settings = PrepareOptions(
            options.get("preference", ExecutionPreference.FAST_SINGLE_ANSWER),
            options.get("priority", Priority.MEDIUM))
        reasons = []
        for name in names:
            try:
                driver = self._drivers.get(name)
                if driver is None:
                    driver = self._drivers[name] = load_driver(name)
                if all(driver.supported_operations(model)):
                    return driver.prepare(model, settings)
                reasons.append(f"{name}: not every operation")
            except NnrtError as exc:
                reasons.append(f"{name}: {exc}"[:200])
        return "no driver of the lane runs the whole model (" + "; ".join(reasons) + ")"


def _unsuited(model: Model) -> str:
    """Why the node's actor, not a lane, runs ``model`` ('' when a lane may: placement options
    other than ``devices`` do not matter to a model run whole on one driver)."""
    if not all(model.operands[k].fully_specified for k in (*model.inputs, *model.outputs)):
        return "a dim of its inputs or outputs is known only at run time"
    return ""
