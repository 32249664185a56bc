"""Lowering of element-wise arithmetic, activations, SOFTMAX, shape ops, MEAN, CONCATENATION.

Their kernels are in :mod:`nnrt.drivers.cpu.kernels.basic`.

ADD / SUB / MUL / DIV carry their fused activation (the activation fusion pass may set it) and,
like the unary activations, are marked element-wise so the in-place fusion pass may run them
over a dying operand. RESHAPE, SQUEEZE and EXPAND_DIMS are views of their input (a copy when
the result is a model output).
"""

from __future__ import annotations

import numpy as np

from nnrt.drivers.cpu.lowering.base import Lowerer, Lowering
from nnrt.model.types import OperationType
from nnrt.ops._framework.context import OperationContext
from nnrt.ops.softmax import optional_axis

__all__ = ["BASIC_LOWERINGS"]

Op = OperationType


def _binary(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    out = lw.result(op.outputs[0])
    lw.emit(ctx.op_type.name.lower(), out, [lw.ref(op.inputs[0]), lw.ref(op.inputs[1]),
                                            int(ctx.value(2))], ctx.index, act_slot=2,
            elementwise=True)


def _unary(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    out = lw.result(op.outputs[0])
    lw.emit(ctx.op_type.name.lower(), out, [lw.ref(op.inputs[0])], ctx.index, elementwise=True)


def _softmax(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    axis = optional_axis(ctx, 2, len(lw.shape(op.inputs[0])))
    out = lw.result(op.outputs[0])
    lw.emit("softmax", out, [lw.ref(op.inputs[0]), float(ctx.value(1)), axis], ctx.index)


def _reshape(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    shape = lw.shape(op.outputs[0])
    lw.view("view", op.outputs[0], [lw.ref(op.inputs[0]), shape], ctx.index, shape)


def _transpose(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    rank = len(lw.shape(op.inputs[0]))
    perm = (tuple(range(rank - 1, -1, -1)) if ctx.is_omitted(1)
            else tuple(int(p) for p in np.asarray(ctx.value(1)).reshape(-1)))
    out = lw.result(op.outputs[0])
    lw.emit("transpose", out, [lw.ref(op.inputs[0]), perm], ctx.index)


def _mean(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    rank = len(lw.shape(op.inputs[0]))
    axes = tuple(sorted({int(a) % rank for a in np.asarray(ctx.value(1)).reshape(-1)}))
    out = lw.result(op.outputs[0])
    lw.emit("mean", out, [lw.ref(op.inputs[0]), axes], ctx.index)


def _concatenation(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    parts = tuple(lw.ref(k) for k in op.inputs[:-1])
    out = lw.result(op.outputs[0])
    lw.emit("concat", out, [parts, int(ctx.value(len(op.inputs) - 1))], ctx.index)


BASIC_LOWERINGS: dict[OperationType, Lowering] = {
    **{t: _binary for t in (Op.ADD, Op.SUB, Op.MUL, Op.DIV)},
    **{t: _unary for t in (Op.RELU, Op.RELU1, Op.RELU6, Op.LOGISTIC, Op.TANH, Op.SQRT,
                           Op.RSQRT)},
    Op.SOFTMAX: _softmax,
    Op.RESHAPE: _reshape,
    Op.SQUEEZE: _reshape,
    Op.EXPAND_DIMS: _reshape,
    Op.TRANSPOSE: _transpose,
    Op.MEAN: _mean,
    Op.CONCATENATION: _concatenation,
}

