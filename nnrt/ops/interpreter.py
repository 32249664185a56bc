"""The reference interpreter: runs a finished model in-process on the numpy kernels."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from nnrt.errors import BadData, BadState, NnrtError, OpFailed
from nnrt.model.operand import dtype_of
from nnrt.model.values import coerce_value, dims_compatible
from nnrt.ops.context import ExecutionContext
from nnrt.ops.registry import lookup
from nnrt.ops.support import check_supported

if TYPE_CHECKING:
    from nnrt.model.model import Model

__all__ = ["Inputs", "bind_inputs", "execute_operation", "run"]

Inputs = Sequence[Any] | Mapping[int | str, Any]


def run(model: Model, inputs: Inputs) -> list[np.ndarray[Any, Any]]:
    """Run ``model`` on ``inputs`` and return its outputs, in model output order.

    ``inputs`` is a list in model input order, or a dict keyed by input position or name.
    Raises ``BadState`` for an unfinished model, ``Unsupported`` listing every operation the
    reference kernels do not implement, ``BadData`` for bad inputs, ``OpFailed`` if a kernel fails.
    """
    if not model.finished:
        raise BadState("nnrt.reference.run: the model is not finished (call model.finish())")
    check_supported(model)
    values = bind_inputs(model, inputs)
    with np.errstate(all="ignore"):  # NNAPI semantics: inf / NaN results, never warnings
        for op_index in model.run_order:
            execute_operation(model, op_index, values)
    return [values[index] for index in model.outputs]


def bind_inputs(model: Model, inputs: Inputs) -> dict[int, np.ndarray[Any, Any]]:
    """Check ``inputs`` against the model's input operands; return operand index → array."""
    count = len(model.inputs)
    if isinstance(inputs, Mapping):
        by_position: dict[int, Any] = {}
        for key, value in inputs.items():
            position = model.find_input(key) if isinstance(key, str) else int(key)
            if not 0 <= position < count:
                raise BadData(f"input {key!r} is out of range (the model has {count} inputs)")
            by_position[position] = value
        missing = [p for p in range(count) if p not in by_position]
        if missing:
            raise BadData(f"inputs {missing} are missing (the model has {count} inputs)")
        ordered = [by_position[p] for p in range(count)]
    else:
        ordered = list(inputs)
        if len(ordered) != count:
            raise BadData(f"expected {count} inputs, got {len(ordered)}")
    values: dict[int, np.ndarray[Any, Any]] = {}
    for position, (index, value) in enumerate(zip(model.inputs, ordered, strict=True)):
        operand = model.operands[index]
        where = f"input {position} (operand {index}, {operand.describe()})"
        if value is None:
            raise BadData(f"{where}: no value given")
        arr = coerce_value(operand, value, where)
        if not dims_compatible(operand.dims, arr.shape):
            raise BadData(f"{where}: shape {arr.shape} does not match the declared dims")
        values[index] = arr
    return values


def execute_operation(model: Model, op_index: int, values: dict[int, np.ndarray[Any, Any]]
                      ) -> None:
    """Run operation ``op_index``, reading inputs from and writing outputs into ``values``.

    Call it under ``np.errstate(all="ignore")``: float overflow and invalid results are NNAPI
    semantics (inf, NaN), not errors.
    """
    op = model.operations[op_index]
    definition = lookup(op.type)
    if definition is None:
        raise OpFailed(f"operation {op_index} ({op.type.name}): no reference kernel")

    def value_of(index: int) -> np.ndarray[Any, Any] | None:
        if index in values:
            return values[index]
        return model.constant_value(index)

    ctx = ExecutionContext(model.operands, op, op_index, definition, value_of,
                           relaxed=model.relaxed)
    try:
        shapes = [tuple(int(d) for d in s) for s in definition.prepare(ctx)]
        ctx.output_shapes = shapes
        results = list(definition.execute(ctx))
    except NnrtError:
        raise
    except Exception as exc:
        raise OpFailed(f"{ctx.where()}: kernel failed: {exc!r}") from exc
    if len(results) != len(op.outputs):
        raise OpFailed(f"{ctx.where()}: kernel returned {len(results)} outputs, "
                       f"expected {len(op.outputs)}")
    for slot, (index, result) in enumerate(zip(op.outputs, results, strict=True)):
        operand = model.operands[index]
        arr = np.asarray(result)
        dtype = dtype_of(operand.type)
        if arr.dtype != dtype:
            arr = arr.astype(dtype)
        if slot < len(shapes) and arr.shape != shapes[slot]:
            raise OpFailed(f"{ctx.where(output=slot)}: kernel produced shape {arr.shape}, "
                           f"prepare computed {shapes[slot]}")
        if not dims_compatible(operand.dims, arr.shape):
            ctx.fail(f"computed shape {arr.shape} does not match the declared dims "
                     f"{operand.dims}", output=slot)
        values[index] = arr
