"""The operation record and the phrasing of error locations."""

from __future__ import annotations

from dataclasses import dataclass

from nnrt.model.types import EXTENSION_PREFIX_SHIFT, NNRT_EXTENSION, OperationType

__all__ = ["Operation", "operation_name"]


@dataclass(frozen=True)
class Operation:
    """One operation: its type and the indices of its input and output operands."""

    type: OperationType
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


def operation_name(op_type: int) -> str:
    """The name of an operation code: NNAPI's (``ADD``), an extension's qualified name
    (``com.nnrt.ERF``), or ``"<code>"`` for a code nnrt does not know."""
    try:
        op = OperationType(op_type)
    except ValueError:
        return f"<{op_type}>"
    if not op.is_extension:
        return op.name
    extension, prefix = NNRT_EXTENSION
    if int(op) >> EXTENSION_PREFIX_SHIFT != prefix:  # pragma: no cover - one extension today
        return op.name
    return f"{extension}.{op.name.removeprefix('NNRT_')}"
