"""What a model's inputs and outputs look like to a caller: name, shape, dtype.

``model.input_info`` / ``model.output_info`` and ``compiled.inputs`` / ``compiled.outputs``
give one :class:`TensorInfo` per input or output, in order — the counterpart of onnxruntime's
``session.get_inputs()`` — so that callers need not read operand indices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from nnrt.model.operand import caller_dtype, is_scalar
from nnrt.model.types import OperandType

if TYPE_CHECKING:
    from nnrt.model.model import Model

__all__ = ["TensorInfo", "tensor_infos"]


@dataclass(frozen=True)
class TensorInfo:
    """One model input or output.

    ``shape`` is None for a tensor of unknown rank and ``()`` for a scalar; a dim the model
    leaves open (an ONNX dynamic dim not fixed at import) is its name (``"batch"``, an ONNX
    ``dim_param``) or None when it has none. ``position`` is the place
    in the model's inputs (or outputs); ``operand`` the operand index behind it.
    """

    name: str | None
    shape: tuple[int | str | None, ...] | None
    dtype: np.dtype[Any]
    type: OperandType
    position: int
    operand: int

    def __str__(self) -> str:
        """``x: float32[batch, ?, 512]`` (``#0`` when unnamed; a named open dim shows its
        name, an unnamed one ``?``)."""
        if self.shape is None:
            dims = "[...]"
        else:
            dims = "[" + ", ".join("?" if d is None else str(d) for d in self.shape) + "]"
        return f"{self.name or f'#{self.position}'}: {self.dtype}{dims if self.shape else ''}"


def tensor_infos(model: Model, indices: Sequence[int]) -> tuple[TensorInfo, ...]:
    """The :class:`TensorInfo` of operands ``indices`` of ``model``, in order (with the dims
    static inference found, once the model is finished)."""
    found = []
    for position, index in enumerate(indices):
        operand = model.operands[index]
        dims = model.inferred_dims[index] if model.finished else operand.dims
        shape: tuple[int | str | None, ...] | None
        names = operand.dim_names or (None,) * len(dims)
        if is_scalar(operand.type):
            shape = ()
        elif not dims:
            shape = None
        else:
            shape = tuple(d if d > 0 else (names[k] if k < len(names) else None)
                          for k, d in enumerate(dims))
        found.append(TensorInfo(operand.name, shape, caller_dtype(operand), operand.type,
                                position, index))
    return tuple(found)
