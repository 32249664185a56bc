"""Lowering of the operations with bool / int32 results or a type change (comparisons, CAST...).

They are the comparisons, LOGICAL_*, SELECT, CAST, ARGMAX and ARGMIN; their kernels are in
:mod:`nnrt.drivers.cpu.kernels.typed`.

Their int32 / bool values live in the arena like float32 ones (see ``Value.dtype``). A SELECT
branch that is a constant tensor of a single repeated value becomes a number instead of a
module tensor of the full shape; SELECT between the numbers 1 and 0 (a one-hot encoding) is a
CAST of the condition.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.drivers.cpu.graph import Ref
from nnrt.drivers.cpu.lowering.base import Lowerer, Lowering
from nnrt.model.types import OperationType
from nnrt.ops._framework.context import OperationContext

__all__ = ["TYPED_LOWERINGS"]

Op = OperationType

_BINARY = {Op.EQUAL: "equal", Op.NOT_EQUAL: "not_equal", Op.GREATER: "greater",
           Op.GREATER_EQUAL: "greater_equal", Op.LESS: "less", Op.LESS_EQUAL: "less_equal",
           Op.LOGICAL_AND: "logical_and", Op.LOGICAL_OR: "logical_or"}


def _binary(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    out = lw.result(op.outputs[0])
    lw.emit(_BINARY[ctx.op_type], out, [lw.ref(op.inputs[0]), lw.ref(op.inputs[1])],
            ctx.index, elementwise=True)


def _logical_not(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    out = lw.result(op.outputs[0])
    lw.emit("logical_not", out, [lw.ref(op.inputs[0])], ctx.index, elementwise=True)


def _branch(lw: Lowerer, operand: int) -> Ref | float | int:
    """SELECT's value ``operand``: a number if it is a constant of one repeated value."""
    known = lw.const_of(operand)
    if known is not None:
        flat = np.asarray(known).reshape(-1)
        if flat.size and np.all(flat == flat[0]):
            first: Any = flat[0].item()
            return int(first) if lw.dtype(operand) == "int32" else float(first)
    return lw.ref(operand)


def _select(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    when_true, when_false = _branch(lw, op.inputs[1]), _branch(lw, op.inputs[2])
    out = lw.result(op.outputs[0])
    condition = lw.ref(op.inputs[0])
    if (not isinstance(when_true, Ref) and not isinstance(when_false, Ref)
            and (when_true, when_false) == (1, 0)):
        lw.emit("cast", out, [condition], ctx.index)  # true -> 1, false -> 0
        return
    lw.emit("select", out, [condition, when_true, when_false], ctx.index)


def _cast(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    out = lw.result(op.outputs[0])
    lw.emit("cast", out, [lw.ref(op.inputs[0])], ctx.index, elementwise=True)


def _arg(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    axis = int(ctx.value(1)) % len(lw.shape(op.inputs[0]))
    out = lw.result(op.outputs[0])
    lw.emit(ctx.op_type.name.lower(), out, [lw.ref(op.inputs[0]), axis], ctx.index)


TYPED_LOWERINGS: dict[OperationType, Lowering] = {
    **dict.fromkeys(_BINARY, _binary),
    Op.LOGICAL_NOT: _logical_not,
    Op.SELECT: _select,
    Op.CAST: _cast,
    Op.ARGMAX: _arg,
    Op.ARGMIN: _arg,
}
