"""The operation record and the phrasing of error locations."""

from __future__ import annotations

from dataclasses import dataclass

from nnrt.model.types import OperationType

__all__ = ["Operation", "operation_name"]


@dataclass(frozen=True)
class Operation:
    """One operation: its type and the indices of its input and output operands."""

    type: OperationType
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


def operation_name(op_type: int) -> str:
    """The NNAPI name of an operation code, or ``"<code>"`` for a code nnrt does not know."""
    try:
        return OperationType(op_type).name
    except ValueError:
        return f"<{op_type}>"
