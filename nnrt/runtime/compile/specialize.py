"""A model with unknown input dims, specialized to one concrete input shape.

NNAPI lets a model leave input dims unknown (0) and resolves shapes at execution; drivers that
compile ahead (``cpu``, ``litert``) need every shape known. :func:`specialize` makes the static
model of one input shape: the inputs' dims pinned, static shape inference run through the
graph, and the shape computations that then depend only on known values folded into constants
(``com.nnrt.SHAPE`` of a tensor whose dims are now known, and operations on constants with
small results — the ``Shape -> Gather -> Concat -> Reshape`` chains of imported models), repeated
until nothing more folds. Every temporary whose dims became known is declared with them.

Folded values are computed by the reference kernels (one operation at a time), so they are what
the reference would compute at execution. Weights are shared, never copied: constants keep
their values or memory locations, and ``locations`` moves in-process values to where the
runtime packed them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from nnrt.errors import BadData
from nnrt.model.model import Model, assemble
from nnrt.model.operand import MemoryLocation, Operand, is_scalar
from nnrt.model.types import OperandLifetime, OperandType, OperationType
from nnrt.reference.single import evaluate_operation

__all__ = ["open_inputs", "specialize"]

Array = np.ndarray[Any, Any]

#: Types whose values are shapes, indices, counts and flags: what folding computes.
_SHAPE_TYPES = frozenset({OperandType.TENSOR_INT32, OperandType.TENSOR_BOOL8,
                          OperandType.INT32, OperandType.UINT32, OperandType.BOOL})
#: The largest value folded (elements): shape computations are small; a big one stays a
#: computation rather than a constant in every variant.
_MAX_FOLDED = 1 << 16
#: The largest value of another type folded: shape arithmetic done in floats (an exporter's
#: ``Cast -> Mul -> Cast`` on dims) folds; computations on real data stay computations.
_MAX_FOLDED_OTHER = 64
#: Rounds of infer-then-fold (each round can reveal dims that let later shape chains fold).
_MAX_ROUNDS = 64
_SHAPE_OP = OperationType.NNRT_SHAPE


def open_inputs(model: Model) -> list[int]:
    """Positions of the inputs of ``model`` whose dims (or rank) are not all known."""
    return [position for position, index in enumerate(model.inputs)
            if not model.operands[index].fully_specified]


def specialize(model: Model, shapes: Sequence[tuple[int, ...]],
               locations: Mapping[int, MemoryLocation] | None = None) -> Model:
    """``model`` (finished) with its inputs' shapes fixed to ``shapes`` (one per input, in
    order), shape inference run and shape computations folded; a finished model.

    ``locations`` gives, by operand index, where a constant set from an in-process value
    lives in shared memory now (the runtime's packed constants): the specialized model refers
    to it there instead of carrying the value. ``BadData`` names the input shapes and the
    operation when they are impossible for the model.
    """
    operands = [replace(o, dim_names=None) if o.dim_names else o for o in model.operands]
    for index, shape in zip(model.inputs, shapes, strict=True):
        operands[index] = replace(operands[index], dims=tuple(int(d) for d in shape))
    for index, location in (locations or {}).items():
        operands[index] = replace(operands[index], value=None, location=location)
    operations = list(model.operations)
    given = ", ".join(_describe(model, position, shape) for position, shape in enumerate(shapes))
    for _ in range(_MAX_ROUNDS):
        current = _finished(model, operands, operations, given)
        values, folded = _fold(current)
        if not folded:
            break
        for k, value in values.items():
            lifetime = (OperandLifetime.CONSTANT_COPY if value.nbytes <= 128
                        else OperandLifetime.CONSTANT_REFERENCE)
            operands[k] = replace(operands[k], dims=tuple(value.shape), lifetime=lifetime,
                                  value=value, location=None)
        operations = [op for i, op in enumerate(operations) if i not in folded]
    inferred = current.inferred_dims
    declared = [_declared(operand, inferred[k]) for k, operand in enumerate(operands)]
    if declared == operands:
        return current
    return _finished(model, declared, operations, given)


def _finished(model: Model, operands: list[Operand], operations: list[Any], given: str) -> Model:
    try:
        return assemble(operands, operations, model.inputs, model.outputs, model.relaxed)
    except BadData as exc:
        raise BadData(f"input shapes {given}: {exc}") from None


def _describe(model: Model, position: int, shape: tuple[int, ...]) -> str:
    name = model.operands[model.inputs[position]].name
    return f"{name if name else position}={list(shape)}"


def _declared(operand: Operand, inferred: tuple[int, ...]) -> Operand:
    """``operand`` declaring its inferred dims when they are all known (temporaries and
    outputs: constants and inputs are declared already)."""
    if operand.lifetime not in (OperandLifetime.TEMPORARY_VARIABLE,
                                OperandLifetime.SUBGRAPH_OUTPUT):
        return operand
    if is_scalar(operand.type) or not inferred or not all(d > 0 for d in inferred):
        return operand
    return operand if operand.dims == inferred else replace(operand, dims=tuple(inferred))


def _fold(model: Model) -> tuple[dict[int, Array], set[int]]:
    """The operations of ``model`` computable now (their inputs constant or folded, their
    outputs small shape-typed values, none a model output) and their values."""
    values: dict[int, Array] = {}
    folded: set[int] = set()
    operands, inferred = model.operands, model.inferred_dims
    outputs = set(model.outputs)
    for index in model.run_order:
        op = model.operations[index]
        if any(k in outputs for k in op.outputs) or not all(
                _foldable_output(operands[k], inferred[k]) for k in op.outputs):
            continue
        if op.type == _SHAPE_OP:
            dims = inferred[op.inputs[0]]
            if not dims or not all(d > 0 for d in dims):
                continue
            shape = np.array(dims, np.int32)
            shape.flags.writeable = False
            results: list[Array] | None = [shape]
        elif all(operands[k].is_omitted or operands[k].is_constant or k in values
                 for k in op.inputs):
            results = evaluate_operation(model, index, values)
        else:
            continue
        if results is None:
            continue
        values.update(zip(op.outputs, results, strict=True))
        folded.add(index)
    return values, folded


def _foldable_output(operand: Operand, inferred: tuple[int, ...]) -> bool:
    if is_scalar(operand.type):
        return True
    if not inferred or not all(d > 0 for d in inferred):
        return False
    limit = _MAX_FOLDED if operand.type in _SHAPE_TYPES else _MAX_FOLDED_OTHER
    return math.prod(inferred) <= limit
