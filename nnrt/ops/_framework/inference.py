"""Per-operation validation and static shape inference at ``Model.finish()``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from nnrt.errors import NnrtError, OpFailed
from nnrt.model.values import dims_compatible
from nnrt.ops._framework.context import OperationContext, Unknown
from nnrt.ops._framework.registry import OperationDef, lookup

if TYPE_CHECKING:
    from nnrt.model.model import Model

__all__ = ["check_operations", "infer_output_shapes"]


def check_operations(model: Model, run_order: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """Run every operation's ``validate``, then infer shapes where inputs are known statically.

    Returns per operand the declared dims refined by inference. Raises ``BadData`` when a rule
    is broken or an inferred output shape contradicts the declared one.
    """
    dims = [operand.dims for operand in model.operands]
    for op_index in run_order:
        op = model.operations[op_index]
        definition = lookup(op.type)
        if definition is None:
            continue  # no kernel here: only structural checks apply (a driver may support it)
        ctx = OperationContext(model.operands, op, op_index, definition, relaxed=model.relaxed,
                               dims=dims.__getitem__, constant=model.constant_value)
        _guarded(ctx, "validate", definition.validate)
        shapes = infer_output_shapes(ctx, definition)
        if shapes is None:
            continue
        for slot, shape in enumerate(shapes):
            index = op.outputs[slot]
            if not dims_compatible(model.operands[index].dims, shape):
                ctx.fail(f"declared dims {_show(model.operands[index].dims)} contradict the "
                         f"shape {_show(shape)} computed from the inputs", output=slot)
            dims[index] = shape
    return tuple(dims)


def infer_output_shapes(ctx: OperationContext, definition: OperationDef
                        ) -> list[tuple[int, ...]] | None:
    """Output shapes from ``prepare`` if statically known, else None."""
    shapes = _guarded(ctx, "prepare", definition.prepare)
    if shapes is None:
        return None
    result = [tuple(int(d) for d in s) for s in shapes]
    if len(result) != ctx.n_outputs:
        ctx.fail(f"expected {len(result)} outputs, got {ctx.n_outputs}")
    return result


T = TypeVar("T")


def _guarded(ctx: OperationContext, phase: str,
             step: Callable[[OperationContext], T]) -> T | None:
    """Run one phase; ``Unknown`` means "decide at execution", other non-nnrt errors are bugs."""
    try:
        return step(ctx)
    except Unknown:
        return None
    except NnrtError:
        raise
    except Exception as exc:  # a bug in an op definition: report it where it happened
        raise OpFailed(f"{ctx.where()}: internal error in {phase}: {exc!r}") from exc


def _show(dims: tuple[int, ...]) -> str:
    if not dims:
        return "(unknown rank)"
    return "(" + ", ".join(str(d) if d else "?" for d in dims) + ")"

