"""Checks for fields of untrusted plain data (decoded msgpack): maps, ints, floats, lists, codes.

Each check returns the value when it has the expected type and range, and otherwise raises
``BadData`` prefixed with the field's path (``model.operands[3].dims[1]: ...``). ``bool`` is
never accepted where an integer or a number is expected.
"""

from __future__ import annotations

import math
from collections.abc import Set
from enum import IntEnum
from typing import Any, TypeVar

from nnrt.errors import BadData

__all__ = ["INT32_RANGE", "check_code", "check_float", "check_int", "check_ints", "check_list",
           "check_map", "describe"]

#: The inclusive range of a signed 32-bit integer.
INT32_RANGE = (-(2**31), 2**31 - 1)

E = TypeVar("E", bound=IntEnum)


def describe(value: Any) -> str:
    """A short description of an untrusted value for error messages (at most 60 characters).

    Bounded and never recursive: scalars by ``repr``, text and bytes by the ``repr`` of their
    start, containers by their size only (a list nested a thousand deep must not blow the
    stack of whoever reports it).
    """
    if value is None or isinstance(value, bool | float) or (
            isinstance(value, int) and -(10**18) < value < 10**18):
        text = repr(value)
    elif isinstance(value, int):
        text = f"an int of {value.bit_length()} bits"
    elif isinstance(value, str | bytes | bytearray):
        text = repr(value[:64])
    elif isinstance(value, list | tuple) and len(value) <= 8 and all(
            v is None or isinstance(v, bool | float)
            or (isinstance(v, int) and -(10**18) < v < 10**18) for v in value):
        text = repr(value)  # a few scalars: shown (still not recursive)
    elif isinstance(value, list | tuple):
        text = f"a {type(value).__name__} of {len(value)} items"
    elif isinstance(value, dict):
        text = f"a map of {len(value)} entries"
    else:
        text = f"a {type(value).__name__}"
    return text if len(text) <= 60 else f"{text[:57]}..."


def check_map(data: Any, required: Set[str], optional: Set[str], path: str) -> dict[str, Any]:
    """``data`` as a dict with str keys: every ``required`` key, others only from ``optional``."""
    if not isinstance(data, dict):
        raise BadData(f"{path}: expected a map, got {type(data).__name__}")
    known = required | optional
    for key in data:
        if not isinstance(key, str) or key not in known:
            raise BadData(f"{path}: unknown field {describe(key)}; fields are {sorted(known)}")
    missing = sorted(required - data.keys())
    if missing:
        raise BadData(f"{path}: missing field {missing[0]!r}")
    return data


def check_int(value: Any, path: str, lo: int, hi: int) -> int:
    """``value`` as an int in ``[lo, hi]``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadData(f"{path}: expected an integer, got {describe(value)}")
    if not lo <= value <= hi:
        raise BadData(f"{path}: {value} is out of range [{lo}, {hi}]")
    return value


def check_float(value: Any, path: str) -> float:
    """``value`` (an int or a float) as a finite float."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadData(f"{path}: expected a number, got {describe(value)}")
    try:
        result = float(value)
    except OverflowError:
        raise BadData(f"{path}: {describe(value)} is too large for a float") from None
    if not math.isfinite(result):
        raise BadData(f"{path}: expected a finite number, got {result}")
    return result


def check_list(value: Any, path: str, limit: int) -> list[Any]:
    """``value`` as a list of at most ``limit`` entries (not yet checked)."""
    if not isinstance(value, list):
        raise BadData(f"{path}: expected a list, got {type(value).__name__}")
    if len(value) > limit:
        raise BadData(f"{path}: {len(value)} entries exceed the limit of {limit}")
    return value


def check_ints(value: Any, path: str, lo: int, hi: int, limit: int) -> tuple[int, ...]:
    """``value`` as a list of at most ``limit`` ints, each in ``[lo, hi]``."""
    items = check_list(value, path, limit)
    return tuple(check_int(v, f"{path}[{k}]", lo, hi) for k, v in enumerate(items))


def check_code(value: Any, enum: type[E], path: str) -> E:
    """``value`` as a member of ``enum`` (an int code the enum knows)."""
    code = check_int(value, path, *INT32_RANGE)
    try:
        return enum(code)
    except ValueError:
        raise BadData(f"{path}: unknown {enum.__name__} code {code}") from None
