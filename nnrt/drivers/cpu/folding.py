"""Constant folding: operations whose inputs are all known are evaluated at compile time.

Each foldable operation is run on the reference kernels
(:func:`nnrt.reference.single.evaluate_operation`: a one-operation model holding its input
values as constants), so a folded value is exactly what the
reference would compute. An operation whose evaluation fails is left for execution time, where
it fails (or not) as the model says.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.model.model import Model
from nnrt.reference.single import evaluate_operation

__all__ = ["fold_constants"]

Array = np.ndarray[Any, Any]


def fold_constants(model: Model) -> tuple[dict[int, Array], tuple[int, ...]]:
    """Values of the operands computable at compile time, and the operations folded.

    Returns ``(values, folded)``: operand index -> C-contiguous read-only array for every
    operand produced by a folded operation, and the folded operation indices in run order.
    """
    values: dict[int, Array] = {}
    folded: list[int] = []
    operands = model.operands
    for index in model.run_order:
        op = model.operations[index]
        known = True
        for k in op.inputs:
            o = operands[k]
            if not (o.is_omitted or o.is_constant or k in values):
                known = False
                break
        if not known:
            continue
        results = evaluate_operation(model, index, values)
        if results is None:
            continue
        values.update(zip(op.outputs, results, strict=True))
        folded.append(index)
    return values, tuple(folded)
