"""Argument checks for byte ranges inside a memory: counts, offsets, shapes, dtypes and bounds.

Shared by :meth:`nnrt.memory.Memory.ndarray` and :class:`nnrt.memory.TensorRef`. Every value is
checked as a Python int, so huge values (``2**63`` and beyond) are simply out of range instead of
wrapping around in C arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from nnrt.errors import BadData

__all__ = ["MAX_SIZE", "as_count", "as_dtype", "as_shape", "check_range"]

#: The largest memory the wire protocol accepts, in bytes (2**48).
MAX_SIZE = 2**48


def as_count(value: object, what: str, *, minimum: int = 0, maximum: int | None = None) -> int:
    """``value`` as a Python int in ``[minimum, maximum]``; ``BadData`` naming ``what`` otherwise.

    bool is refused (``True`` is not a byte count); numpy integers are accepted.
    """
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise BadData(f"{what} must be an int, got {type(value).__name__} {value!r:.40}")
    number = int(value)
    if number < minimum:
        raise BadData(f"{what} must be >= {minimum}, got {number}")
    if maximum is not None and number > maximum:
        raise BadData(f"{what} must be <= {maximum}, got {number}")
    return number


def as_shape(shape: object, what: str) -> tuple[int, ...]:
    """``shape`` (an int or a sequence of ints >= 0) as a tuple of Python ints."""
    if isinstance(shape, int | np.integer) and not isinstance(shape, bool):
        return (as_count(shape, what),)
    if isinstance(shape, str | bytes) or not isinstance(shape, Sequence | np.ndarray):
        raise BadData(f"{what} must be a sequence of ints >= 0, got {type(shape).__name__} "
                      f"{shape!r:.40}")
    return tuple(as_count(dim, f"{what}[{i}]") for i, dim in enumerate(shape))


def as_dtype(dtype: object, what: str) -> np.dtype[Any]:
    """``dtype`` as a numpy dtype holding plain bytes (no Python objects, itemsize > 0)."""
    try:
        result: np.dtype[Any] = np.dtype(dtype)  # type: ignore[call-overload]
    except (TypeError, ValueError) as exc:
        raise BadData(f"{what} {dtype!r:.40} is not a numpy dtype: {exc}") from None
    if result.hasobject:
        raise BadData(f"{what} {result} holds Python objects, not bytes")
    if result.itemsize == 0:
        raise BadData(f"{what} {result} has no size")
    return result


def check_range(where: str, size: int, offset: int, shape: tuple[int, ...],
                dtype: np.dtype[Any]) -> int:
    """The byte count of ``shape`` x ``dtype`` at ``offset`` after checking it fits in ``size``.

    ``where`` names the memory in messages. ``offset`` must be a multiple of the dtype's itemsize
    (alignment within the memory) and the whole range must lie inside ``[0, size)``.
    """
    nbytes = math.prod(shape) * dtype.itemsize
    if offset % dtype.itemsize:
        raise BadData(f"{where}: offset {offset} is not aligned to {dtype} ({dtype.itemsize}-byte "
                      f"elements) for shape {shape}")
    if offset + nbytes > size:
        raise BadData(f"{where}: {dtype} {shape} at offset {offset} needs {nbytes} bytes up to "
                      f"{offset + nbytes}, past the end of the memory's {size} bytes")
    return nbytes
