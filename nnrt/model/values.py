"""Turning user values into operand data: type, range and shape checks with clear errors."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from nnrt.errors import BadData
from nnrt.model.operand import Operand, dtype_of, is_scalar

__all__ = ["coerce_input", "coerce_value", "dims_compatible", "narrowed_int32"]


_INT32 = np.dtype(np.int32)
_INT64 = np.dtype(np.int64)


def narrowed_int32(value: Any) -> np.ndarray[Any, Any] | None:
    """An int64 ndarray as int32 when every value fits (what :func:`coerce_input` makes of it
    for an int32 input, in one range test: the hot paths' shortcut), else None (not int64, or
    out of range: the general check names the element)."""
    if value.__class__ is not np.ndarray or value.dtype is not _INT64:
        return None
    narrowed = value.astype(_INT32)
    return narrowed if (narrowed == value).all() else None


@functools.cache
def _iinfo(dtype: np.dtype[Any]) -> np.iinfo[Any]:
    """``np.iinfo(dtype)``, made once per dtype (it is built anew on every call)."""
    return np.iinfo(dtype)


def coerce_value(operand: Operand, value: Any, where: str) -> np.ndarray[Any, Any]:
    """Convert ``value`` to an array of ``operand``'s dtype and shape, or raise ``BadData``.

    Accepts numpy arrays, Python scalars and nested lists. Conversions that could change values
    silently are refused: floats into integer or boolean operands, integers out of range.
    ``where`` prefixes error messages (e.g. ``"operand 3"``).
    """
    dtype = dtype_of(operand.type)
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise BadData(f"{where}: value is not array-like ({exc})") from None
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise BadData(f"{where}: expected numeric data for {operand.type.name}, got {arr.dtype}")
    if arr.dtype != dtype:
        if not np.can_cast(arr.dtype, dtype, casting="same_kind"):
            raise BadData(
                f"{where}: cannot convert {arr.dtype} data to {operand.type.name} ({dtype}) "
                "without changing values"
            )
        if dtype.kind in "iu" and arr.size:
            info = _iinfo(dtype)
            if arr.min() < info.min or arr.max() > info.max:
                raise BadData(
                    f"{where}: values out of range for {operand.type.name} "
                    f"([{info.min}, {info.max}])"
                )
        arr = arr.astype(dtype)
    if is_scalar(operand.type):
        if arr.size != 1:
            raise BadData(f"{where}: scalar {operand.type.name} needs one value, got shape "
                          f"{arr.shape}")
        return arr.reshape(())
    return arr


def coerce_input(operand: Operand, value: Any, where: str) -> np.ndarray[Any, Any]:
    """:func:`coerce_value` for an execution input, with one more rule for arrays: a numpy
    array of another dtype is converted only when no value changes (a float64 array into a
    float32 input only if each value is a float32; int64 into int32 when in range), as
    onnxruntime refuses a tensor of another type; Python numbers and lists, which have no
    dtype of their own, are converted to the input's type (floats rounded to nearest)."""
    dtype = dtype_of(operand.type)
    if isinstance(value, np.ndarray) and value.dtype != dtype and value.dtype.kind in "fiu" \
            and dtype.kind == "f" and not np.can_cast(value.dtype, dtype, casting="safe"):
        with np.errstate(over="ignore", invalid="ignore"):
            converted = value.astype(dtype)
            back = converted.astype(value.dtype) if value.dtype.kind == "f" else None
        if back is not None:
            changed = ~((back == value) | (np.isnan(back) & np.isnan(value)))
        else:  # integers: every one representable exactly in the float type
            changed = converted.astype(np.float64) != value.astype(np.float64)
        if changed.any():
            first = int(np.flatnonzero(changed.reshape(-1))[0])
            raise BadData(
                f"{where}: {value.dtype} values would change as {dtype} (element {first}: "
                f"{value.reshape(-1)[first].item()!r} -> {converted.reshape(-1)[first].item()!r})"
                f"; convert the array first (.astype(numpy.{dtype})) if that is what you mean")
        value = converted
    return coerce_value(operand, value, where)


def dims_compatible(declared: tuple[int, ...], actual: tuple[int, ...]) -> bool:
    """Whether ``actual`` dims fit ``declared`` ones (0 = unknown dim, ``()`` = unknown rank)."""
    if not declared:
        return True
    if len(declared) != len(actual):
        return False
    return all(d == 0 or d == a for d, a in zip(declared, actual, strict=True))


def element_count(dims: tuple[int, ...]) -> int:
    """Number of elements of a fully specified shape."""
    return math.prod(dims)
