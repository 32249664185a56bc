"""Constant folding: operations whose inputs are all known are evaluated at compile time.

Each foldable operation is run on the reference kernels (``nnrt.reference.run`` on a one-
operation model holding its input values as constants), so a folded value is exactly what the
reference would compute. An operation whose evaluation fails is left for execution time, where
it fails (or not) as the model says.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import nnrt.reference
from nnrt.errors import NnrtError
from nnrt.model.model import Model
from nnrt.model.operand import is_scalar

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
        results = _evaluate(model, index, values)
        if results is None:
            continue
        for k, result in zip(op.outputs, results, strict=True):
            arr = np.ascontiguousarray(result)
            arr.flags.writeable = False
            values[k] = arr
        folded.append(index)
    return values, tuple(folded)


def _evaluate(model: Model, index: int, values: dict[int, Array]) -> list[Array] | None:
    """Operation ``index`` run alone on the reference kernels, or None if that fails."""
    op = model.operations[index]
    operands = model.operands
    inferred = model.inferred_dims
    single = Model()
    inputs = []
    for k in op.inputs:
        source = operands[k]
        value = values[k] if k in values else model.constant_value(k)
        dims = () if is_scalar(source.type) or value is None else value.shape
        i = single.add_operand(source.type, dims, source.scale, source.zero_point)
        single.set_operand_value(i, value)
        inputs.append(i)
    outputs = [single.add_operand(operands[k].type, inferred[k], operands[k].scale,
                                  operands[k].zero_point) for k in op.outputs]
    try:
        single.add_operation(op.type, inputs, outputs)
        single.identify_inputs_and_outputs([], outputs)
        single.relax_computation_float32_to_float16(model.relaxed)
        single.finish()
        return list(nnrt.reference.run(single, []))
    except NnrtError:
        return None
