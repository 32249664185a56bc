"""What the service keeps of a compiled model's inputs and outputs: their element sizes and
inferred dims, from which a device memory's bytes for a role follow (``Session._role_bytes``)."""

from __future__ import annotations

from collections.abc import Sequence

from nnrt.model.model import Model
from nnrt.model.operand import dtype_of

__all__ = ["Shapes", "io_shapes"]

#: Per input and per output of a model: (bytes per element, inferred dims).
Shapes = tuple[tuple[tuple[int, tuple[int, ...]], ...], tuple[tuple[int, tuple[int, ...]], ...]]


def io_shapes(model: Model) -> Shapes:
    """Per input and per output of ``model``: (bytes per element, inferred dims)."""
    inferred = model.inferred_dims

    def table(indices: Sequence[int]) -> tuple[tuple[int, tuple[int, ...]], ...]:
        rows = []
        for index in indices:
            try:
                itemsize = dtype_of(model.operands[index].type).itemsize
            except ValueError:
                itemsize = 0
            rows.append((itemsize, tuple(inferred[index])))
        return tuple(rows)

    return table(model.inputs), table(model.outputs)
