"""The nnrt exception hierarchy.

Every error nnrt raises derives from :class:`NnrtError`. The subclasses mirror NNAPI's result codes
(``ANEURALNETWORKS_BAD_DATA``, ``ANEURALNETWORKS_BAD_STATE``, ...); each docstring says *when* it is
raised. ``transient`` is true where retrying the same call may succeed.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "BadData",
    "BadState",
    "CacheError",
    "DeadlineMissed",
    "NnrtError",
    "OpFailed",
    "OutputInsufficientSize",
    "ResourceExhausted",
    "first_error",
    "UnavailableDevice",
    "Unmappable",
    "Unsupported",
]


class NnrtError(Exception):
    """Root of every error nnrt raises."""

    #: Whether retrying the same request may succeed.
    transient: bool = False


class BadData(NnrtError, ValueError):
    """Raised when an argument is invalid: a malformed model, operand, value, request or role.

    User errors never fall back to another driver: the same data would fail there too.
    """


class BadState(NnrtError, RuntimeError):
    """Raised when an object is used in the wrong state, e.g. mutating a finished model."""


class OpFailed(NnrtError, RuntimeError):
    """Raised when a valid request fails while running: a kernel error, an uninitialised buffer."""


class Unsupported(OpFailed):
    """Raised when a valid model uses an operation or type variant that no kernel implements yet.

    The message names every unsupported operation, its index and the operand type it was given.
    """


class OutputInsufficientSize(NnrtError, ValueError):
    """Raised when a caller-provided output buffer is too small; carries the shapes needed."""

    def __init__(self, message: str, shapes: Sequence[tuple[int, ...]] = ()) -> None:
        super().__init__(message)
        #: The output shapes the execution needs, in output order.
        self.shapes: list[tuple[int, ...]] = [tuple(s) for s in shapes]


class Unmappable(NnrtError, OSError):
    """Raised when a memory pool cannot be mapped (bad fd, protection, size or seals)."""


class UnavailableDevice(NnrtError, ConnectionError):
    """Raised when a driver worker is gone or unreachable; requests in flight on it fail with it."""

    transient = True




class DeadlineMissed(NnrtError, TimeoutError):
    """Raised when a compile or execute request does not finish before its deadline."""

    transient = True


class ResourceExhausted(NnrtError, MemoryError):
    """Raised when a queue, a pool or a driver's memory is full; retry later or with less."""

    transient = True


class CacheError(NnrtError, OSError):
    """Raised when the compilation cache cannot be used (bad directory, token, or store)."""


def first_error(group: BaseExceptionGroup[BaseException],
                kinds: tuple[type[BaseException], ...] = (NnrtError,)) -> BaseException:
    """The first exception of one of ``kinds`` inside nested exception groups (else the first
    exception): what a task group's failure means to its caller."""
    leaves: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        error = pending.pop(0)
        if isinstance(error, BaseExceptionGroup):
            pending[:0] = error.exceptions
        else:
            leaves.append(error)
    return next((e for e in leaves if isinstance(e, kinds)), leaves[0])
