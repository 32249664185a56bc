"""Which operations of a model the reference kernels implement, and why not the others."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from nnrt.errors import Unsupported
from nnrt.model.operation import operation_name
from nnrt.ops._framework.context import OperationContext
from nnrt.ops._framework.registry import lookup

if TYPE_CHECKING:
    from nnrt.model.model import Model

__all__ = ["check_supported", "unsupported_reason"]


def unsupported_reason(model: Model, op_index: int) -> str | None:
    """Why operation ``op_index`` of ``model`` cannot run on the reference kernels, or None."""
    op = model.operations[op_index]
    definition = lookup(op.type)
    if definition is None:
        return f"{operation_name(op.type)} has no reference kernel yet"
    ctx = OperationContext(model.operands, op, op_index, definition, relaxed=model.relaxed,
                           constant=model.constant_value)
    slot = definition.type_input
    if slot < ctx.n_inputs and not ctx.is_omitted(slot):
        t = ctx.input_type(slot)
        if t not in definition.kernel_types:
            implemented = ", ".join(sorted(x.name for x in definition.kernel_types)) or "none"
            return (f"the {t.name} variant of {operation_name(op.type)} is not implemented yet "
                    f"(implemented: {implemented})")
    if definition.supports is not None:
        return definition.supports(ctx)
    return None


_CHECKED: weakref.WeakSet[Model] = weakref.WeakSet()


def check_supported(model: Model) -> None:
    """Raise ``Unsupported`` listing every operation the reference kernels cannot run.

    A finished model that passed once is remembered (it is immutable).
    """
    if model in _CHECKED:
        return
    problems = []
    for op_index in range(len(model.operations)):
        reason = unsupported_reason(model, op_index)
        if reason is not None:
            op = model.operations[op_index]
            problems.append(f"operation {op_index} ({operation_name(op.type)}): {reason}")
    if problems:
        raise Unsupported("unsupported operations: " + "; ".join(problems))
    if model.finished:
        _CHECKED.add(model)
