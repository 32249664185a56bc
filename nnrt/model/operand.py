"""Operands: their types' storage, and the record a model keeps for each one."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from nnrt.model.types import OperandLifetime, OperandType

if TYPE_CHECKING:
    from nnrt.model.model import Model

__all__ = [
    "FLOAT_TENSOR_TYPES",
    "QUANT_TYPES",
    "SCALAR_TYPES",
    "ChannelQuant",
    "ConstantMemory",
    "MemoryLocation",
    "Operand",
    "dtype_of",
    "is_scalar",
    "is_tensor",
]

_DTYPES: dict[OperandType, np.dtype[Any]] = {
    OperandType.FLOAT32: np.dtype(np.float32),
    OperandType.INT32: np.dtype(np.int32),
    OperandType.UINT32: np.dtype(np.uint32),
    OperandType.TENSOR_FLOAT32: np.dtype(np.float32),
    OperandType.TENSOR_INT32: np.dtype(np.int32),
    OperandType.TENSOR_QUANT8_ASYMM: np.dtype(np.uint8),
    OperandType.BOOL: np.dtype(np.bool_),
    OperandType.TENSOR_QUANT16_SYMM: np.dtype(np.int16),
    OperandType.TENSOR_FLOAT16: np.dtype(np.float16),
    OperandType.TENSOR_BOOL8: np.dtype(np.bool_),
    OperandType.FLOAT16: np.dtype(np.float16),
    OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL: np.dtype(np.int8),
    OperandType.TENSOR_QUANT16_ASYMM: np.dtype(np.uint16),
    OperandType.TENSOR_QUANT8_SYMM: np.dtype(np.int8),
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED: np.dtype(np.int8),
}

SCALAR_TYPES = frozenset(
    {OperandType.FLOAT32, OperandType.INT32, OperandType.UINT32, OperandType.BOOL,
     OperandType.FLOAT16}
)
FLOAT_TENSOR_TYPES = frozenset({OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16})
QUANT_TYPES = frozenset(
    {OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT16_SYMM,
     OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL, OperandType.TENSOR_QUANT16_ASYMM,
     OperandType.TENSOR_QUANT8_SYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED}
)


def dtype_of(operand_type: OperandType) -> np.dtype[Any]:
    """The numpy dtype that stores one element of ``operand_type`` (``SUBGRAPH`` has none)."""
    try:
        return _DTYPES[operand_type]
    except KeyError:
        raise ValueError(f"operand type {operand_type.name} has no element dtype") from None


def is_scalar(operand_type: OperandType) -> bool:
    """Whether ``operand_type`` is a scalar type (FLOAT32, INT32, UINT32, BOOL, FLOAT16)."""
    return operand_type in SCALAR_TYPES


def is_tensor(operand_type: OperandType) -> bool:
    """Whether ``operand_type`` is a tensor type."""
    return operand_type not in SCALAR_TYPES and operand_type != OperandType.SUBGRAPH


@runtime_checkable
class ConstantMemory(Protocol):
    """What a memory pool offers the model for CONSTANT_REFERENCE operands.

    ``nnrt.Memory`` implements it; any object with a size and a read-only byte view does.
    """

    @property
    def size(self) -> int:
        """The pool's size in bytes."""
        ...

    def view(self, offset: int, length: int) -> memoryview:
        """A memoryview of ``length`` bytes at ``offset``."""
        ...


@dataclass(frozen=True)
class MemoryLocation:
    """Where a CONSTANT_REFERENCE operand's bytes live in a user pool."""

    memory: ConstantMemory
    offset: int
    length: int


@dataclass(frozen=True)
class ChannelQuant:
    """Per-channel symmetric quantisation parameters (TENSOR_QUANT8_SYMM_PER_CHANNEL)."""

    channel_dim: int
    scales: tuple[float, ...]


@dataclass(frozen=True)
class Operand:
    """One operand of a model (immutable): its type, shape, quantisation, lifetime and value.

    ``dims`` uses 0 for an unknown dimension; a tensor with ``dims == ()`` has unknown rank.
    ``value`` holds the data of CONSTANT_COPY / CONSTANT_REFERENCE operands set from numpy;
    ``location`` the pool slice of those set from memory; ``subgraph`` the model of a SUBGRAPH one.
    ``io_dtype`` ("int64", on a TENSOR_INT32 model input or output) is the dtype callers use
    for it: int64 data held as int32 inside (range-checked in, widened out). ``dim_names``
    names the unknown dims of a model input or output (an ONNX ``dim_param`` such as
    ``"batch"``; None for a dim without a name), for callers to read.
    """

    type: OperandType
    dims: tuple[int, ...] = ()
    scale: float = 0.0
    zero_point: int = 0
    lifetime: OperandLifetime = OperandLifetime.TEMPORARY_VARIABLE
    name: str | None = None
    value: np.ndarray[Any, Any] | None = None
    location: MemoryLocation | None = None
    channel_quant: ChannelQuant | None = None
    subgraph: Model | None = field(default=None, repr=False)
    io_dtype: str | None = None
    dim_names: tuple[str | None, ...] | None = None

    @property
    def rank_known(self) -> bool:
        """Whether the rank is known (scalars always; tensors when dims were given)."""
        return is_scalar(self.type) or len(self.dims) > 0

    @property
    def fully_specified(self) -> bool:
        """Whether every dimension is known."""
        return is_scalar(self.type) or (len(self.dims) > 0 and all(d > 0 for d in self.dims))

    @property
    def is_constant(self) -> bool:
        """Whether the value is fixed in the model (CONSTANT_COPY or CONSTANT_REFERENCE)."""
        return self.lifetime in (OperandLifetime.CONSTANT_COPY,
                                 OperandLifetime.CONSTANT_REFERENCE)

    @property
    def is_omitted(self) -> bool:
        """Whether this is an omitted optional input (NO_VALUE)."""
        return self.lifetime == OperandLifetime.NO_VALUE

    def byte_size(self) -> int:
        """Bytes needed to hold the value; requires fully specified dims for tensors."""
        if self.type == OperandType.SUBGRAPH:
            return 0
        return dtype_of(self.type).itemsize * math.prod(self.dims)

    def describe(self) -> str:
        """A short human-readable type string, e.g. ``TENSOR_FLOAT32[1, 2, 2, 3]``."""
        if is_scalar(self.type) or self.type == OperandType.SUBGRAPH:
            return self.type.name
        dims = ", ".join(str(d) if d else "?" for d in self.dims) if self.dims else "?..."
        return f"{self.type.name}[{dims}]"


#: The caller-side dtypes an operand may declare (``io_dtype``), by the operand type holding
#: them: NNAPI has no 64-bit integers, so int64 model inputs and outputs travel as int32.
IO_DTYPES = {"int64": OperandType.TENSOR_INT32}


def caller_dtype(operand: Operand) -> np.dtype[Any]:
    """The dtype callers give and get for ``operand``: its ``io_dtype``, else its type's."""
    return np.dtype(operand.io_dtype) if operand.io_dtype else dtype_of(operand.type)
