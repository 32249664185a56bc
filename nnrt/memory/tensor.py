"""``TensorRef``: a typed, shaped range of a :class:`~nnrt.memory.Memory` (a tensor by reference).

The reference is what travels to a worker instead of the tensor's bytes: ``[dtype, shape, pool,
offset, length]``. It is checked when built, so a reference that exists fits its memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnrt.errors import BadData, BadState
from nnrt.memory.memory import Memory, find_memory
from nnrt.memory.ranges import as_count, as_dtype, as_shape, check_range

__all__ = ["TENSOR_DTYPES", "TensorRef"]

Array = np.ndarray[Any, Any]

#: The element types a tensor reference may have (native byte order).
TENSOR_DTYPES = frozenset(np.dtype(name) for name in (
    "float32", "float16", "int32", "uint32", "uint8", "int8", "int16", "uint16", "bool"))


@dataclass(frozen=True, slots=True, init=False)
class TensorRef:
    """``shape`` x ``dtype`` at byte ``offset`` of a live ``memory`` (immutable, checked).

    ``BadData`` when ``memory`` is not a Memory, the dtype is not a tensor type, a dimension or
    the offset is not an int >= 0, the offset is not aligned to the itemsize, or the range does
    not fit; ``BadState`` when ``memory`` is closed.
    """

    memory: Memory
    offset: int
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    nbytes: int

    def __init__(self, memory: Memory, offset: int, shape: int | Sequence[int],
                 dtype: Any) -> None:
        if not isinstance(memory, Memory):
            raise BadData(f"TensorRef: memory must be an nnrt.Memory, got "
                          f"{type(memory).__name__}")
        if memory.closed:
            raise BadState(f"TensorRef: {memory!r} is closed")
        kind = as_dtype(dtype, "TensorRef: dtype")
        if kind not in TENSOR_DTYPES:
            allowed = ", ".join(sorted(str(d) for d in TENSOR_DTYPES))
            raise BadData(f"TensorRef: dtype {kind} is not a tensor dtype (one of {allowed}, "
                          "native byte order)")
        dims = as_shape(shape, "TensorRef: shape")
        start = as_count(offset, "TensorRef: offset")
        nbytes = check_range(f"TensorRef on memory {memory.id} ({memory.size} bytes)",
                             memory.size, start, dims, kind)
        object.__setattr__(self, "memory", memory)
        object.__setattr__(self, "offset", start)
        object.__setattr__(self, "shape", dims)
        object.__setattr__(self, "dtype", kind)
        object.__setattr__(self, "nbytes", nbytes)

    @classmethod
    def of(cls, array: Array) -> TensorRef:
        """The reference to ``array``, a C-contiguous view of a live Memory (``BadData`` if not).

        Views from :meth:`Memory.ndarray` and contiguous slices or reshapes of them qualify.
        """
        if not isinstance(array, np.ndarray):
            raise BadData(f"TensorRef.of: expected a numpy array, got {type(array).__name__}")
        if not array.flags.c_contiguous:
            raise BadData(f"TensorRef.of: the array is not C-contiguous (shape {array.shape}, "
                          f"strides {array.strides})")
        found = find_memory(array)
        if found is None:
            raise BadData(f"TensorRef.of: the array ({array.dtype} {array.shape}) is not a view "
                          "of a live nnrt.Memory")
        memory, offset = found
        return cls(memory, offset, array.shape, array.dtype)

    @property
    def length(self) -> int:
        """The byte count (same as ``nbytes``; the wire protocol's name for it)."""
        return self.nbytes

    def ndarray(self) -> Array:
        """The referenced bytes as a numpy view (read-only if the memory is)."""
        return self.memory.ndarray(self.dtype, self.shape, self.offset)

    def __repr__(self) -> str:
        return (f"TensorRef(memory={self.memory.id}, offset={self.offset}, shape={self.shape}, "
                f"dtype={self.dtype})")
