"""Shared memory: memories shared with driver workers, tensor references, sub-allocation.

Only re-exports; see :mod:`nnrt.memory.memory`, :mod:`nnrt.memory.tensor` and
:mod:`nnrt.memory.allocator`.
"""

from nnrt.memory.allocator import ArenaAllocator as ArenaAllocator
from nnrt.memory.memory import Memory as Memory
from nnrt.memory.memory import find_memory as find_memory
from nnrt.memory.tensor import TENSOR_DTYPES as TENSOR_DTYPES
from nnrt.memory.tensor import TensorRef as TensorRef

__all__ = ["TENSOR_DTYPES", "ArenaAllocator", "Memory", "TensorRef", "find_memory"]
