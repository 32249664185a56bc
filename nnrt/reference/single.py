"""One operation of a model run alone on the reference kernels: what constant folding computes.

The compiling drivers fold operations whose inputs are known at compile time, and the runtime
folds shape computations when it specializes a model to concrete input shapes; both evaluate
an operation with :func:`evaluate_operation`, so a folded value is exactly what the reference
would compute at execution.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from nnrt.errors import NnrtError
from nnrt.model.model import Model
from nnrt.model.operand import is_scalar
from nnrt.reference.interpreter import run

__all__ = ["evaluate_operation"]

Array = np.ndarray[Any, Any]


def evaluate_operation(model: Model, index: int, values: Mapping[int, Array], *,
                       output_dims: Sequence[tuple[int, ...]] | None = None
                       ) -> list[Array] | None:
    """The outputs of operation ``index`` of ``model`` (finished), run alone on the reference
    kernels with its inputs from ``values`` (by operand index) or the model's constants, as
    read-only C-contiguous arrays (constants to be); None if that fails (the operation then
    runs, and reports, at execution). ``output_dims`` declares the outputs' dims (default: the
    model's inferred dims), for inputs of other shapes than the model's."""
    op = model.operations[index]
    operands, inferred = model.operands, model.inferred_dims
    single = Model()
    inputs = []
    for k in op.inputs:
        source = operands[k]
        value = values[k] if k in values else model.constant_value(k)
        dims = () if is_scalar(source.type) or value is None else value.shape
        i = single.add_operand(source.type, dims, source.scale, source.zero_point)
        single.set_operand_value(i, value)
        inputs.append(i)
    dims = output_dims if output_dims is not None else [inferred[k] for k in op.outputs]
    outputs = [single.add_operand(operands[k].type, d, operands[k].scale,
                                  operands[k].zero_point)
               for k, d in zip(op.outputs, dims, strict=True)]
    try:
        single.add_operation(op.type, inputs, outputs)
        single.identify_inputs_and_outputs([], outputs)
        single.relax_computation_float32_to_float16(model.relaxed)
        single.finish()
        results = run(single, [])
    except NnrtError:
        return None
    return [_frozen(result) for result in results]


def _frozen(array: Array) -> Array:
    frozen = np.ascontiguousarray(array)
    frozen.flags.writeable = False
    return frozen
