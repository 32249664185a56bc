"""Splitting a bytecode module for NNAPI's two cache kinds (model, data), and joining it back.

The **code** (model cache, security sensitive) is the module's msgpack map with each tensor's
bytes replaced by its descriptor, plus the size of the constants blob::

    {"format": 2, "programs": {...}, "entry_points": [...], "scratch": {...},
     "tensors": {name: [dtype, shape]}, "constants": total bytes, ("stage", "choices")}

The **constants** (data cache) are the tensors' bytes, in the order the descriptors list them,
each starting at a multiple of :data:`ALIGN` bytes, the gaps zero. :func:`join_module` treats
both blobs as hostile (they come from files): the code must be a well-formed module map, the
blob exactly as long as the descriptors say, the padding zero — anything else is a
``CacheError`` naming the flaw, never a module of another structure.
"""

from __future__ import annotations

from typing import Any

import msgpack
import numpy as np

from nnrt.drivers.cpu.module import (
    Module,
    check_fields,
    check_name,
    decode_module,
    pack_fields,
    tensor_layout,
)
from nnrt.drivers.cpu.program import pack_default, unpack_ext
from nnrt.errors import BadData, CacheError

__all__ = ["ALIGN", "join_module", "split_module"]

#: Alignment of each tensor in the constants blob, in bytes.
ALIGN = 64
_WHERE = "cpu cache"
Array = np.ndarray[Any, Any]


def _aligned(offset: int) -> int:
    return -(-offset // ALIGN) * ALIGN


def split_module(module: bytes) -> tuple[bytes, bytes]:
    """``(code, constants)`` of a module (``BadData`` if ``module`` is not a valid module)."""
    decoded = decode_module(module)
    descriptors: dict[str, list[Any]] = {}
    parts: list[bytes] = []
    offset = 0
    for name, array in decoded.tensors.items():
        start = _aligned(offset)
        if start > offset:
            parts.append(bytes(start - offset))
        data = array.tobytes()
        parts.append(data)
        offset = start + len(data)
        descriptors[name] = [array.dtype.name, list(array.shape)]
    fields = pack_fields(decoded.programs, decoded.entry_points, descriptors, decoded.scratch,
                         decoded.stage, decoded.choices)
    fields["constants"] = offset
    code: bytes = msgpack.packb(fields, use_bin_type=True, default=pack_default)
    return code, b"".join(parts)


def join_module(code: bytes, constants: bytes) -> Module:
    """The module :func:`split_module` split, decoded and checked like
    :func:`~nnrt.drivers.cpu.module.decode_module` does (``CacheError`` if the blobs do not
    fit). Its tensors are read-only views of ``constants``: nothing is copied or re-encoded."""
    try:
        raw = msgpack.unpackb(code, raw=False, strict_map_key=True, use_list=True,
                              ext_hook=unpack_ext)
    except Exception as exc:
        raise CacheError(f"{_WHERE}: the model cache is not a msgpack map ({exc})") from None
    if not isinstance(raw, dict) or "constants" not in raw or "tensors" not in raw:
        raise CacheError(f"{_WHERE}: the model cache is not a split cpu module")
    declared = raw.pop("constants")
    descriptors = raw["tensors"]
    try:
        fields = check_fields(raw)
        if not isinstance(descriptors, dict):
            raise BadData("cpu bytecode: tensors must be a map")
        tensors = _slices(descriptors, constants, declared)
        clash = set(tensors) & set(fields.entry_points)
        if clash:
            raise BadData(f"cpu bytecode: tensor {sorted(clash)[0]!r} has an entry point's name")
    except BadData as exc:
        raise CacheError(f"{_WHERE}: {exc}") from None
    return Module(fields.programs, fields.entry_points, tensors, fields.scratch, fields.stage,
                  fields.choices)


def _slices(descriptors: dict[Any, Any], constants: bytes, declared: Any
            ) -> dict[str, Array]:
    """Each tensor as a read-only view of ``constants`` (``BadData`` if the blob does not
    match the descriptors exactly)."""
    if not isinstance(constants, bytes):
        raise BadData(f"the data cache must be bytes, got {type(constants).__name__}")
    if type(declared) is not int or declared != len(constants):
        raise BadData(f"the data cache holds {len(constants)} bytes; the model cache says "
                      f"{declared!r:.40}")
    view = memoryview(constants)
    tensors: dict[str, Array] = {}
    offset = 0
    for name, spec in descriptors.items():
        check_name(name, "tensor name")
        if not isinstance(spec, list) or len(spec) != 2:
            raise BadData(f"cpu bytecode: tensor {name!r}: expected a [dtype, shape] descriptor")
        dtype, size = tensor_layout(name, spec[0], spec[1])
        start = _aligned(offset)
        if start + size > len(constants):
            raise BadData(f"tensor {name!r} ({spec[0]}{spec[1]}) needs bytes {start} to "
                          f"{start + size}; the data cache holds {len(constants)}")
        if view[offset:start] != bytes(start - offset):
            raise BadData(f"the padding before tensor {name!r} is not zero")
        array = np.frombuffer(constants, dtype, size // dtype.itemsize if dtype.itemsize else 0,
                              start).reshape(spec[1])
        if not array.flags.aligned:
            array = array.copy()
        array.flags.writeable = False
        tensors[name] = array
        offset = start + size
    if offset != len(constants):
        raise BadData(f"the tensors end at byte {offset}; the data cache holds "
                      f"{len(constants)} bytes")
    return tensors
