"""Constants by reference: where a model's large constants live when it is sent to a worker.

A CONSTANT_REFERENCE operand set from an :class:`~nnrt.memory.Memory` travels as a reference to
that memory (weights in an ``mmap_fd`` file are served straight from the file's pages). Large
values set in-process (``set_operand_value`` of more than 128 bytes) are packed once into one
sealed ``memfd`` per compiled model and referenced there. Parameter-like operands (shapes, axes,
scalars) always travel by value — the wire format decides that (see :mod:`nnrt.model.wire`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from nnrt.errors import ResourceExhausted
from nnrt.memory import Memory
from nnrt.memory.kinds import os_failure
from nnrt.model.model import Model
from nnrt.model.types import OperandLifetime

__all__ = ["PlacedConstants", "place_constants"]

_ALIGN = 64
#: Operand types that may travel by reference (data, not shapes or parameters).
_DATA_TYPES = ("TENSOR_FLOAT", "TENSOR_QUANT")
Place = Callable[[int], tuple[int, int, int] | None]


class PlacedConstants:
    """The references of a model's constants and the memories they need."""

    def __init__(self, refs: dict[int, tuple[int, int, int]], memories: list[Memory],
                 packed: Memory | None) -> None:
        self.refs = refs
        #: Memories the worker must map before preparing (user memories and ``packed``).
        self.memories = memories
        #: The memory the runtime packed in-process values into (owned by the compiled model).
        self.packed = packed

    def place(self, index: int) -> tuple[int, int, int] | None:
        """``model_to_wire``'s callback: the (pool, offset, length) of operand ``index``."""
        return self.refs.get(index)


def place_constants(model: Model) -> PlacedConstants:
    """Decide where every CONSTANT_REFERENCE operand of ``model``'s main graph travels."""
    refs: dict[int, tuple[int, int, int]] = {}
    memories: dict[int, Memory] = {}
    values: list[tuple[int, np.ndarray[Any, Any]]] = []
    for index, operand in enumerate(model.operands):
        by_reference = operand.type.name.startswith(_DATA_TYPES)
        if operand.lifetime != OperandLifetime.CONSTANT_REFERENCE or not by_reference:
            continue
        location = operand.location
        if location is not None and isinstance(location.memory, Memory):
            memory = location.memory
            memories[memory.id] = memory
            refs[index] = (memory.id, location.offset, location.length)
        elif operand.value is not None:
            values.append((index, operand.value))
    packed = None
    if values:
        offsets = []
        total = 0
        for _, value in values:
            offsets.append(total)
            total += -(-value.nbytes // _ALIGN) * _ALIGN
        packed = Memory.create(max(total, 1), name="nnrt-constants")
        try:
            for (index, value), offset in zip(values, offsets, strict=True):
                little = np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<"))
                _write(packed, offset, little.reshape(-1).view(np.uint8))
                refs[index] = (packed.id, offset, value.nbytes)
        except BaseException:
            packed.close()
            raise
        memories[packed.id] = packed
    return PlacedConstants(refs, list(memories.values()), packed)


def _write(memory: Memory, offset: int, data: np.ndarray[Any, Any]) -> None:
    """Copy the bytes ``data`` to ``offset`` of the memfd ``memory`` through its fd: the kernel
    fills the shared pages (64 MiB in 27 ms), where storing through the mapping first faults
    each page in (57 ms)."""
    view = data.data
    while view.nbytes:
        try:
            written = os.pwrite(memory.fileno(), view, offset)
        except OSError as exc:
            raise os_failure(exc, f"packing {data.nbytes} constant bytes") from exc
        if written <= 0:
            raise ResourceExhausted(f"packing {data.nbytes} constant bytes: no progress")
        view, offset = view[written:], offset + written
