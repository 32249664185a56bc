"""Lowering of element-wise math, reductions, LOG_SOFTMAX and INSTANCE_NORMALIZATION.

Parameterised activations (HARD_SWISH, ELU, PRELU) included; their kernels are in
:mod:`nnrt.drivers.cpu.kernels.math`.

Element-wise calls are marked so the in-place fusion pass may run them over a dying operand.
POW by a constant exponent of exactly 2 becomes ``square``. Reduction axes are read and
normalised with the reference kernels' rules (``[-rank, rank)``, duplicates allowed).
"""

from __future__ import annotations

import numpy as np

from nnrt.drivers.cpu.lowering.base import Lowerer, Lowering
from nnrt.model.types import OperationType
from nnrt.ops._framework.context import OperationContext
from nnrt.ops.normalization import InstanceNormalization as IN
from nnrt.ops.softmax import optional_axis

__all__ = ["MATH_LOWERINGS"]

Op = OperationType

#: Unary operations and their kernels.
_UNARY = {Op.EXP: "exp", Op.LOG: "log", Op.NEG: "negative", Op.ABS: "absolute",
          Op.FLOOR: "floor", Op.SIN: "sin"}
#: Binary operations (no fused activation) and their kernels.
_BINARY = {Op.MAXIMUM: "maximum", Op.MINIMUM: "minimum", Op.POW: "power", Op.PRELU: "prelu"}
_REDUCTIONS = {Op.REDUCE_SUM: "reduce_sum", Op.REDUCE_PROD: "reduce_prod",
               Op.REDUCE_MAX: "reduce_max", Op.REDUCE_MIN: "reduce_min"}


def _unary(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    out = lw.result(op.outputs[0])
    lw.emit(_UNARY[ctx.op_type], out, [lw.ref(op.inputs[0])], ctx.index, elementwise=True)


def _binary(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    a, b = op.inputs[0], op.inputs[1]
    kernel = _BINARY[ctx.op_type]
    exponent = lw.const_of(b) if ctx.op_type == Op.POW else None
    if (exponent is not None and np.all(np.asarray(exponent) == 2.0)
            and lw.shape(a) == lw.shape(op.outputs[0])):
        out = lw.result(op.outputs[0])
        lw.emit("square", out, [lw.ref(a)], ctx.index, elementwise=True)
        return
    out = lw.result(op.outputs[0])
    lw.emit(kernel, out, [lw.ref(a), lw.ref(b)], ctx.index, elementwise=True)


def _hard_swish(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    tmp = lw.temp(lw.shape(op.inputs[0]))
    out = lw.result(op.outputs[0])
    lw.emit("hard_swish", out, [lw.ref(op.inputs[0]), tmp], ctx.index, elementwise=True)


def _elu(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    tmp = lw.temp(lw.shape(op.inputs[0]))
    out = lw.result(op.outputs[0])
    lw.emit("elu", out, [lw.ref(op.inputs[0]), float(ctx.value(1)), tmp], ctx.index,
            elementwise=True)


def _reduction(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    rank = len(lw.shape(op.inputs[0]))
    axes = tuple(sorted({int(a) % rank for a in np.asarray(ctx.value(1)).reshape(-1)}))
    out = lw.result(op.outputs[0])
    lw.emit(_REDUCTIONS[ctx.op_type], out, [lw.ref(op.inputs[0]), axes], ctx.index)


def _log_softmax(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    shape = lw.shape(op.inputs[0])
    axis = optional_axis(ctx, 2, len(shape))
    tmp = lw.temp(shape)
    out = lw.result(op.outputs[0])
    lw.emit("log_softmax", out, [lw.ref(op.inputs[0]), float(ctx.value(1)), axis, tmp],
            ctx.index)


def _instance_norm(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    tmp = lw.temp(lw.shape(op.inputs[IN.INPUT]))
    out = lw.result(op.outputs[0])
    lw.emit("instance_norm", out, [lw.ref(op.inputs[IN.INPUT]), float(ctx.value(IN.GAMMA)),
                                   float(ctx.value(IN.BETA)), float(ctx.value(IN.EPSILON)),
                                   bool(ctx.value(IN.LAYOUT)), tmp], ctx.index)


MATH_LOWERINGS: dict[OperationType, Lowering] = {
    **dict.fromkeys(_UNARY, _unary),
    **dict.fromkeys(_BINARY, _binary),
    **dict.fromkeys(_REDUCTIONS, _reduction),
    Op.HARD_SWISH: _hard_swish,
    Op.ELU: _elu,
    Op.LOG_SOFTMAX: _log_softmax,
    Op.INSTANCE_NORMALIZATION: _instance_norm,
}
