"""Floating-point errors during executions: NNAPI semantics (inf / NaN results, no warnings).

Kernels run under :func:`ignoring_float_errors`. A driver worker process, which does nothing
but execute, calls :func:`ignore_float_errors_here` once at start; executions on its main
thread then skip entering ``np.errstate`` (about 1.4 µs each).
"""

from __future__ import annotations

import contextlib
import threading
from contextlib import AbstractContextManager

import numpy as np

__all__ = ["float_errors_state", "ignore_float_errors_here", "ignoring_float_errors"]

_NOTHING = contextlib.nullcontext()
#: Threads that ignore floating-point errors for good (numpy's setting is per thread).
_QUIET_THREADS: set[int] = set()


def ignore_float_errors_here() -> None:
    """Ignore floating-point errors in the calling thread from now on (worker processes)."""
    np.seterr(all="ignore")
    _QUIET_THREADS.add(threading.get_ident())


def ignoring_float_errors() -> AbstractContextManager[object]:
    """``np.errstate(all="ignore")``, or nothing when this thread ignores them already."""
    state = float_errors_state()
    return _NOTHING if state is None else state


def float_errors_state() -> np.errstate | None:
    """None when this thread ignores float errors already, else an ``np.errstate`` ignoring
    them, to enter and exit around the work (for hot paths: no context-manager calls)."""
    if threading.get_ident() in _QUIET_THREADS:
        return None
    return np.errstate(all="ignore")
