"""Waiting for Ray results from the runtime's event loop (asyncio or trio) without blocking it.

Ray's ``ObjectRef.future()`` is a ``concurrent.futures.Future``: under asyncio it is awaited
through ``asyncio.wrap_future``; under trio a worker thread waits for it. A wait given up
(deadline, cancellation) cancels the Ray task, so that a node does not run work nobody waits
for; Ray's errors are translated here, at the boundary, into nnrt's.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from typing import Any

import anyio
import ray
from ray.exceptions import (
    ActorDiedError,
    ActorUnavailableError,
    GetTimeoutError,
    ObjectLostError,
    OwnerDiedError,
    RayActorError,
    RayTaskError,
    TaskCancelledError,
)

from nnrt.errors import DeadlineMissed, OpFailed, UnavailableDevice
from nnrt.runtime.backends.framed import running_asyncio

__all__ = ["NodeLost", "remaining", "resolve"]


class NodeLost(UnavailableDevice):
    """Raised when a node's actor died (or could not be reached) while a request was on it:
    the request may be retried elsewhere, and whether Ray brings the actor back is found out by
    asking it again (``RaySession``): ``dead`` when Ray says the actor is dead for good (a
    call sent to an actor Ray restarts waits for it instead)."""

    def __init__(self, message: str, dead: bool = False) -> None:
        super().__init__(message)
        self.dead = dead


def remaining(deadline: float | None) -> float:
    """Seconds left until the monotonic ``deadline`` (inf without one; never negative)."""
    return math.inf if deadline is None else max(0.0, deadline - time.monotonic())


async def resolve(ref: Any, deadline: float | None, where: str) -> Any:
    """The value of ``ref`` (``ray.get`` without blocking the event loop); ``where`` names the
    node in error messages. ``DeadlineMissed`` at ``deadline``; the node's loss raises
    :class:`NodeLost`."""
    future = ref.future()
    try:
        with anyio.fail_after(None if deadline is None else remaining(deadline)):
            if running_asyncio():
                return await asyncio.wrap_future(future)
            return await anyio.to_thread.run_sync(future.result, abandon_on_cancel=True)
    except TimeoutError:
        _cancel(ref)
        raise DeadlineMissed(f"{where}: no reply before the deadline") from None
    except ActorDiedError as exc:
        raise NodeLost(f"{where}: its nnrt actor died ({_first_line(exc)})", True) from None
    except (ActorUnavailableError, RayActorError, ObjectLostError, OwnerDiedError) as exc:
        raise NodeLost(f"{where}: its nnrt actor was lost ({_first_line(exc)})") from None
    except TaskCancelledError:
        raise DeadlineMissed(f"{where}: the request was cancelled") from None
    except GetTimeoutError:
        raise DeadlineMissed(f"{where}: no reply before the deadline") from None
    except RayTaskError as exc:
        cause = getattr(exc, "cause", None) or exc
        raise OpFailed(f"{where}: the node's actor failed: {type(cause).__name__}: "
                       f"{_first_line(cause)}") from None
    except BaseException:
        _cancel(ref)
        raise


def _cancel(ref: Any) -> None:
    with contextlib.suppress(Exception):  # finished or gone meanwhile: nothing to cancel
        ray.cancel(ref)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines() or [type(exc).__name__])[0][:300]
