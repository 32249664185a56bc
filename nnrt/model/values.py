"""Turning user values into operand data: type, range and shape checks with clear errors."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nnrt.errors import BadData
from nnrt.model.operand import Operand, dtype_of, is_scalar

__all__ = ["coerce_value", "dims_compatible"]


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
            info = np.iinfo(dtype)
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
