"""Lowering of nnrt's extension operations com.nnrt.ERF and com.nnrt.LAYER_NORMALIZATION.

Transformer models spend time in them (ERF in GELU); their kernels are in
:mod:`nnrt.drivers.cpu.kernels.ext`.

ERF is element-wise (it may compute in place over a dying operand) and takes a scratch
temporary for its two polynomial pieces; LAYER_NORMALIZATION takes the normalised axis and
epsilon as literals, scale and bias as values (an omitted bias is ``None``), and a scratch
temporary for the squared deviations.
"""

from __future__ import annotations

from nnrt.drivers.cpu.kernels.ext import ERF_SCRATCH
from nnrt.drivers.cpu.lowering.base import Lowerer, Lowering
from nnrt.model.types import OperationType
from nnrt.ops._framework.context import OperationContext
from nnrt.ops.layer_norm import LayerNormalization as LN

__all__ = ["EXT_LOWERINGS"]

Op = OperationType


def _erf(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    scratch = lw.temp((ERF_SCRATCH, *lw.shape(op.inputs[0])))
    out = lw.result(op.outputs[0])
    lw.emit("erf", out, [lw.ref(op.inputs[0]), scratch], ctx.index, elementwise=True)


def _layer_norm(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    shape = lw.shape(op.inputs[0])
    axis = int(ctx.value(LN.AXIS)) % len(shape)
    bias = None if ctx.is_omitted(LN.BIAS) else lw.ref(op.inputs[LN.BIAS])
    squares = lw.temp(shape)
    out = lw.result(op.outputs[0])
    lw.emit("layer_norm", out, [lw.ref(op.inputs[LN.INPUT]), lw.ref(op.inputs[LN.SCALE]), bias,
                                axis, float(ctx.value(LN.EPSILON)), squares], ctx.index)


EXT_LOWERINGS: dict[OperationType, Lowering] = {
    Op.NNRT_ERF: _erf,
    Op.NNRT_LAYER_NORMALIZATION: _layer_norm,
}
