"""Kernels over int32 and bool values: comparisons, logic, SELECT, CAST, ARGMAX / ARGMIN.

Also ``typed_slot``, the arena view those values are computed in.

The scratch arena is float32; an int32 or bool value gets a slot of it like any other (a bool
slot holds four elements per arena element) and ``typed_slot`` views those bytes as its type.
Results follow the reference kernels: comparisons follow IEEE 754 (NaN is unequal to
everything); CAST from float to int32 truncates toward zero, saturates and maps NaN to 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from nnrt.drivers.cpu.kernels.base import ufunc_kernel

__all__ = ["TYPED_KERNELS"]

Array = np.ndarray[Any, Any]

_SLOT_TYPES = {"int32": np.dtype(np.int32), "bool": np.dtype(np.bool_),
               "uint8": np.dtype(np.uint8), "int8": np.dtype(np.int8)}
_ARENA_ITEM = 4
_INT32_MIN, _INT32_MAX = float(-(2**31)), float(2**31 - 1)


def typed_slot(arena: Array, offset: int, shape: tuple[int, ...], dtype: str) -> Array:
    """The arena's bytes from element ``offset`` viewed as ``dtype`` (int32, bool, uint8 or
    int8) with ``shape``."""
    kind = _SLOT_TYPES.get(dtype)
    if kind is None:
        raise ValueError(f"typed_slot: dtype {dtype!r:.40} is not one of {sorted(_SLOT_TYPES)}")
    size = math.prod(shape)
    words = -(-size * kind.itemsize // _ARENA_ITEM)
    if offset < 0 or offset + words > arena.shape[0]:
        raise ValueError(f"slot [{offset}, {offset + words}) is outside the scratch arena "
                         f"({arena.shape[0]} elements)")
    return arena[offset:offset + words].view(kind)[:size].reshape(shape)


# -- selection and conversion ----------------------------------------------------------------


def select(out: Array, condition: Array, when_true: Array | float,
           when_false: Array | float) -> None:
    """SELECT: ``when_true`` where ``condition`` holds, else ``when_false`` (either may be a
    number: a constant tensor of one repeated value)."""
    np.copyto(out, when_false)
    np.copyto(out, when_true, where=condition)


def cast(out: Array, x: Array) -> None:
    """CAST to ``out``'s type: float to int32 truncates toward zero and saturates (NaN: 0)."""
    if out.dtype.kind == "i" and x.dtype.kind == "f":
        v = np.trunc(x.astype(np.float64))
        np.clip(v, _INT32_MIN, _INT32_MAX, out=v)
        v[np.isnan(v)] = 0.0
        np.copyto(out, v, casting="unsafe")
    else:
        np.copyto(out, x, casting="unsafe")


def argmax(out: Array, x: Array, axis: int) -> None:
    """ARGMAX along ``axis`` (ties and NaN: the first index), written with ``out``'s shape."""
    np.copyto(out, np.argmax(x, axis=axis).reshape(out.shape), casting="same_kind")


def argmin(out: Array, x: Array, axis: int) -> None:
    """ARGMIN along ``axis`` (ties and NaN: the first index), written with ``out``'s shape."""
    np.copyto(out, np.argmin(x, axis=axis).reshape(out.shape), casting="same_kind")


#: The kernels of this module, by name (merged into the cpu kernel table).
TYPED_KERNELS: dict[str, Callable[..., Any]] = {
    "typed_slot": typed_slot,
    "equal": ufunc_kernel(np.equal, "EQUAL."),
    "not_equal": ufunc_kernel(np.not_equal, "NOT_EQUAL."),
    "greater": ufunc_kernel(np.greater, "GREATER."),
    "greater_equal": ufunc_kernel(np.greater_equal, "GREATER_EQUAL."),
    "less": ufunc_kernel(np.less, "LESS."),
    "less_equal": ufunc_kernel(np.less_equal, "LESS_EQUAL."),
    "logical_and": ufunc_kernel(np.logical_and, "LOGICAL_AND."),
    "logical_or": ufunc_kernel(np.logical_or, "LOGICAL_OR."),
    "logical_not": ufunc_kernel(np.logical_not, "LOGICAL_NOT."),
    "select": select, "cast": cast, "argmax": argmax, "argmin": argmin,
}
