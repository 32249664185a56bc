"""The cpu driver's bytecode module: msgpack, never pickle.

::

    {"format": 2, "programs": {entry point: program}, "entry_points": [str, ...],
     "tensors": {name: [dtype, shape, raw bytes]}, "scratch": {entry point: elements},
     "stage": 2, "choices": [[operation index, kernel], ...]}      # last two: stage 2 only

``programs`` holds one program per entry point (:mod:`nnrt.drivers.cpu.program`: kernel calls
as data, checked by the dispatch when it loads them); ``tensors`` the pre-packed weights and
folded constants they read by name; ``scratch`` the float32 arena size each entry point
needs. ``stage`` and ``choices`` are present only in modules the background optimiser built
(stage 2): the kernel it chose for each tuned operation. A module without them is stage 1.
:func:`decode_module` treats the bytes as hostile: every field's type, every name, dtype, shape
and size is checked (``BadData`` naming the field).
"""

from __future__ import annotations

import keyword
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgpack
import numpy as np

from nnrt.drivers.cpu.program import pack_default, unpack_ext
from nnrt.errors import BadData

__all__ = ["FORMAT", "MAX_CHOICES", "MAX_SCRATCH_ELEMENTS", "Module", "check_fields",
           "check_name", "decode_module", "encode_module", "pack_fields", "tensor_layout"]

#: Version of the module layout (part of the driver's version string). Format 1 held Python
#: source per entry point; format 2 holds programs (data).
FORMAT = 2
#: Largest scratch arena a module may ask for (float32 elements: 4 GiB).
MAX_SCRATCH_ELEMENTS = 1 << 30
_MAX_NAME = 64
_MAX_RANK = 8
_DTYPES = {"float32": np.dtype(np.float32), "int32": np.dtype(np.int32),
           "bool": np.dtype(np.bool_), "float64": np.dtype(np.float64),
           "int64": np.dtype(np.int64), "uint8": np.dtype(np.uint8), "int8": np.dtype(np.int8)}
#: Most tuned operations a module may record.
MAX_CHOICES = 1 << 16
_KEYS = {"format", "programs", "entry_points", "tensors", "scratch"}
_STAGE_KEYS = {"stage", "choices"}

Array = np.ndarray[Any, Any]


@dataclass(frozen=True)
class Module:
    """A decoded module: programs, entry points, read-only tensors and scratch sizes."""

    #: Entry point -> its program map (unchecked until the dispatch loads it).
    programs: Mapping[str, Any]
    entry_points: tuple[str, ...]
    tensors: Mapping[str, Array]
    scratch: Mapping[str, int]
    #: 1: compiled by the plugin; 2: rebuilt by the background optimiser with ``choices``.
    stage: int = 1
    #: ``(operation index, kernel name)`` for each operation the optimiser tuned.
    choices: tuple[tuple[int, str], ...] = ()


def check_name(name: Any, what: str) -> str:
    """``name`` if it is a plain identifier (no keyword, no leading underscore), else BadData."""
    if (not isinstance(name, str) or not 0 < len(name) <= _MAX_NAME or not name.isidentifier()
            or not name.isascii() or name.startswith("_") or keyword.iskeyword(name)):
        raise BadData(f"cpu bytecode: {what} {name!r:.80} is not a plain identifier")
    return name


def pack_fields(programs: Mapping[str, Any], entry_points: Sequence[str],
                tensors: Mapping[str, Any], scratch: Mapping[str, int], stage: int,
                choices: Sequence[tuple[int, str]]) -> dict[str, Any]:
    """The module's msgpack map, with ``tensors`` already packed (specs or descriptors)."""
    fields: dict[str, Any] = {"format": FORMAT, "programs": dict(programs),
                              "entry_points": list(entry_points), "tensors": dict(tensors),
                              "scratch": dict(scratch)}
    if stage != 1 or choices:
        fields["stage"] = stage
        fields["choices"] = [[index, kernel] for index, kernel in choices]
    return fields


def encode_module(programs: Mapping[str, Any], entry_points: Sequence[str],
                  tensors: Mapping[str, Array], scratch: Mapping[str, int], *, stage: int = 1,
                  choices: Sequence[tuple[int, str]] = ()) -> bytes:
    """The msgpack bytes of a module (deterministic for equal arguments)."""
    packed_tensors = {}
    for name, array in tensors.items():
        arr = np.ascontiguousarray(array)
        packed_tensors[name] = [arr.dtype.name, list(arr.shape), arr.tobytes()]
    data: bytes = msgpack.packb(pack_fields(programs, entry_points, packed_tensors, scratch,
                                            stage, choices), use_bin_type=True,
                                default=pack_default)
    return data


def _unpack(data: bytes, what: str) -> dict[str, Any]:
    try:
        raw = msgpack.unpackb(data, raw=False, strict_map_key=True, use_list=True,
                              ext_hook=unpack_ext)
    except Exception as exc:
        raise BadData(f"cpu bytecode: not a msgpack {what} ({exc})") from None
    if not isinstance(raw, dict):
        raise BadData(f"cpu bytecode: expected a map with keys {sorted(_KEYS)}, got "
                      f"{type(raw).__name__}")
    return raw


def check_fields(raw: dict[str, Any]) -> Module:
    """Every field of an unpacked module map except ``tensors`` checked (``BadData`` if not);
    the result has no tensors."""
    keys = set(raw)
    if not (_KEYS <= keys <= _KEYS | _STAGE_KEYS) or len(keys & _STAGE_KEYS) == 1:
        raise BadData(f"cpu bytecode: expected a map with keys {sorted(_KEYS)} (and "
                      f"{sorted(_STAGE_KEYS)} together), got {sorted(map(str, raw))}")
    if raw["format"] != FORMAT or type(raw["format"]) is not int:
        raise BadData(f"cpu bytecode: format {raw['format']!r:.40} is not {FORMAT}")
    entries = raw["entry_points"]
    if not isinstance(entries, list) or not entries:
        raise BadData("cpu bytecode: entry_points must be a non-empty list")
    entry_points = tuple(check_name(e, "entry point") for e in entries)
    if len(set(entry_points)) != len(entry_points):
        raise BadData("cpu bytecode: an entry point is listed twice")
    programs = raw["programs"]
    if not isinstance(programs, dict) or set(programs) != set(entry_points):
        raise BadData("cpu bytecode: programs must map every entry point to its program")
    scratch = raw["scratch"]
    if not isinstance(scratch, dict) or set(scratch) != set(entry_points):
        raise BadData("cpu bytecode: scratch must map every entry point to its arena size")
    for entry, size in scratch.items():
        if type(size) is not int or not 0 <= size <= MAX_SCRATCH_ELEMENTS:
            raise BadData(f"cpu bytecode: scratch[{entry}] must be an int from 0 to "
                          f"{MAX_SCRATCH_ELEMENTS}, got {size!r:.40}")
    stage = raw.get("stage", 1)
    if type(stage) is not int or stage not in (1, 2):
        raise BadData(f"cpu bytecode: stage must be 1 or 2, got {stage!r:.40}")
    return Module(programs, entry_points, {}, scratch, stage, _choices(raw.get("choices", [])))


def _choices(raw: Any) -> tuple[tuple[int, str], ...]:
    if not isinstance(raw, list) or len(raw) > MAX_CHOICES:
        raise BadData(f"cpu bytecode: choices must be a list of at most {MAX_CHOICES} pairs")
    choices = []
    for pair in raw:
        if not (isinstance(pair, list) and len(pair) == 2 and type(pair[0]) is int
                and 0 <= pair[0] < 1 << 31):
            raise BadData(f"cpu bytecode: a choice must be [operation index, kernel name], got "
                          f"{pair!r:.60}")
        choices.append((pair[0], check_name(pair[1], "chosen kernel")))
    return tuple(choices)


def decode_module(data: bytes) -> Module:
    """Parse untrusted module bytes (``BadData`` if anything is malformed)."""
    raw = _unpack(data, "module")
    module = check_fields(raw)
    tensors = raw["tensors"]
    if not isinstance(tensors, dict):
        raise BadData("cpu bytecode: tensors must be a map")
    arrays = {check_name(name, "tensor name"): _tensor(name, spec)
              for name, spec in tensors.items()}
    clash = set(arrays) & set(module.entry_points)
    if clash:
        raise BadData(f"cpu bytecode: tensor {sorted(clash)[0]!r} has an entry point's name")
    return Module(module.programs, module.entry_points, arrays, module.scratch, module.stage,
                  module.choices)


def tensor_layout(name: str, dtype_name: Any, shape: Any) -> tuple[np.dtype[Any], int]:
    """The dtype and byte size of tensor ``name`` described as ``dtype_name``, ``shape``
    (``BadData`` unless a known dtype and a list of at most ``_MAX_RANK`` dims)."""
    where = f"cpu bytecode: tensor {name!r}"
    dtype = _DTYPES.get(dtype_name) if isinstance(dtype_name, str) else None
    if dtype is None:
        raise BadData(f"{where}: dtype {dtype_name!r:.40} is not one of {sorted(_DTYPES)}")
    if not isinstance(shape, list) or len(shape) > _MAX_RANK or not all(
            type(d) is int and 0 <= d < 1 << 31 for d in shape):
        raise BadData(f"{where}: shape must be a list of at most {_MAX_RANK} dims >= 0")
    return dtype, math.prod(shape) * dtype.itemsize


def _tensor(name: str, spec: Any) -> Array:
    where = f"cpu bytecode: tensor {name!r}"
    if not isinstance(spec, list) or len(spec) != 3:
        raise BadData(f"{where}: expected [dtype, shape, data]")
    dtype_name, shape, data = spec
    dtype, size = tensor_layout(name, dtype_name, shape)
    if not isinstance(data, bytes) or len(data) != size:
        raise BadData(f"{where}: expected {size} bytes of data for {dtype_name}{shape}, got "
                      f"{len(data) if isinstance(data, bytes) else type(data).__name__}")
    arr = np.frombuffer(data, dtype=dtype).reshape(shape)
    if not arr.flags.aligned:
        arr = arr.copy()
    arr.flags.writeable = False
    return arr
