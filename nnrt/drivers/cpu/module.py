"""The cpu driver's bytecode module: msgpack, never pickle.

::

    {"format": 1, "source": str, "entry_points": [str, ...],
     "tensors": {name: [dtype, shape, raw bytes]}, "scratch": {entry point: elements}}

``source`` holds one generated function per entry point (verified by the dispatch before it
runs); ``tensors`` the pre-packed weights and folded constants it reads by name; ``scratch`` the
float32 arena size each entry point needs. :func:`decode_module` treats the bytes as hostile:
every field's type, every name, dtype, shape and size is checked (``BadData`` naming the field).
"""

from __future__ import annotations

import keyword
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgpack
import numpy as np

from nnrt.errors import BadData

__all__ = ["FORMAT", "MAX_SCRATCH_ELEMENTS", "Module", "check_name", "decode_module",
           "encode_module"]

#: Version of the module layout (part of the driver's version string).
FORMAT = 1
#: Largest scratch arena a module may ask for (float32 elements: 4 GiB).
MAX_SCRATCH_ELEMENTS = 1 << 30
_MAX_SOURCE = 16 << 20
_MAX_NAME = 64
_MAX_RANK = 8
_DTYPES = {"float32": np.dtype(np.float32), "int32": np.dtype(np.int32)}
_KEYS = {"format", "source", "entry_points", "tensors", "scratch"}

Array = np.ndarray[Any, Any]


@dataclass(frozen=True)
class Module:
    """A decoded module: source, entry points, read-only tensors and scratch sizes."""

    source: str
    entry_points: tuple[str, ...]
    tensors: Mapping[str, Array]
    scratch: Mapping[str, int]


def check_name(name: Any, what: str) -> str:
    """``name`` if it is a plain identifier (no keyword, no leading underscore), else BadData."""
    if (not isinstance(name, str) or not 0 < len(name) <= _MAX_NAME or not name.isidentifier()
            or not name.isascii() or name.startswith("_") or keyword.iskeyword(name)):
        raise BadData(f"cpu bytecode: {what} {name!r:.80} is not a plain identifier")
    return name


def encode_module(source: str, entry_points: Sequence[str], tensors: Mapping[str, Array],
                  scratch: Mapping[str, int]) -> bytes:
    """The msgpack bytes of a module (deterministic for equal arguments)."""
    packed_tensors = {}
    for name, array in tensors.items():
        arr = np.ascontiguousarray(array)
        packed_tensors[name] = [arr.dtype.name, list(arr.shape), arr.tobytes()]
    data: bytes = msgpack.packb({"format": FORMAT, "source": source,
                                 "entry_points": list(entry_points), "tensors": packed_tensors,
                                 "scratch": dict(scratch)}, use_bin_type=True)
    return data


def decode_module(data: bytes) -> Module:
    """Parse untrusted module bytes (``BadData`` if anything is malformed)."""
    try:
        raw = msgpack.unpackb(data, raw=False, strict_map_key=True, use_list=True)
    except Exception as exc:
        raise BadData(f"cpu bytecode: not a msgpack module ({exc})") from None
    if not isinstance(raw, dict) or set(raw) != _KEYS:
        keys = sorted(map(str, raw)) if isinstance(raw, dict) else type(raw).__name__
        raise BadData(f"cpu bytecode: expected a map with keys {sorted(_KEYS)}, got {keys}")
    if raw["format"] != FORMAT or type(raw["format"]) is not int:
        raise BadData(f"cpu bytecode: format {raw['format']!r:.40} is not {FORMAT}")
    source = raw["source"]
    if not isinstance(source, str) or len(source) > _MAX_SOURCE:
        raise BadData(f"cpu bytecode: source must be text of at most {_MAX_SOURCE} characters")
    entries = raw["entry_points"]
    if not isinstance(entries, list) or not entries:
        raise BadData("cpu bytecode: entry_points must be a non-empty list")
    entry_points = tuple(check_name(e, "entry point") for e in entries)
    if len(set(entry_points)) != len(entry_points):
        raise BadData("cpu bytecode: an entry point is listed twice")
    scratch = raw["scratch"]
    if not isinstance(scratch, dict) or set(scratch) != set(entry_points):
        raise BadData("cpu bytecode: scratch must map every entry point to its arena size")
    for entry, size in scratch.items():
        if type(size) is not int or not 0 <= size <= MAX_SCRATCH_ELEMENTS:
            raise BadData(f"cpu bytecode: scratch[{entry}] must be an int from 0 to "
                          f"{MAX_SCRATCH_ELEMENTS}, got {size!r:.40}")
    tensors = raw["tensors"]
    if not isinstance(tensors, dict):
        raise BadData("cpu bytecode: tensors must be a map")
    arrays = {check_name(name, "tensor name"): _tensor(name, spec)
              for name, spec in tensors.items()}
    clash = set(arrays) & set(entry_points)
    if clash:
        raise BadData(f"cpu bytecode: tensor {sorted(clash)[0]!r} has an entry point's name")
    return Module(source, entry_points, arrays, scratch)


def _tensor(name: str, spec: Any) -> Array:
    where = f"cpu bytecode: tensor {name!r}"
    if not isinstance(spec, list) or len(spec) != 3:
        raise BadData(f"{where}: expected [dtype, shape, data]")
    dtype_name, shape, data = spec
    dtype = _DTYPES.get(dtype_name) if isinstance(dtype_name, str) else None
    if dtype is None:
        raise BadData(f"{where}: dtype {dtype_name!r:.40} is not one of {sorted(_DTYPES)}")
    if not isinstance(shape, list) or len(shape) > _MAX_RANK or not all(
            type(d) is int and 0 <= d < 1 << 31 for d in shape):
        raise BadData(f"{where}: shape must be a list of at most {_MAX_RANK} dims >= 0")
    if not isinstance(data, bytes) or len(data) != math.prod(shape) * dtype.itemsize:
        raise BadData(f"{where}: expected {math.prod(shape) * dtype.itemsize} bytes of data for "
                      f"{dtype_name}{shape}, got "
                      f"{len(data) if isinstance(data, bytes) else type(data).__name__}")
    arr = np.frombuffer(data, dtype=dtype).reshape(shape)
    if not arr.flags.aligned:
        arr = arr.copy()
    arr.flags.writeable = False
    return arr
