"""Which operations the cpu plugin selects, and why it rejects the others.

An operation is selected when the compiler has a lowering for its type, its data tensors are
TENSOR_FLOAT32 of static shape, every parameter (scalars, axes, shapes, permutations, flags) is
a constant, and its variant is implemented (no dilation). The reason for a rejection names the
first rule the operation breaks: "operation type GATHER not accelerated", "TENSOR_FLOAT16 not
supported", "input 3 (stride_width) is not a constant", "dilated CONV_2D not supported".
"""

from __future__ import annotations

from nnrt.drivers.cpu.lowering import LOWERINGS, static_context
from nnrt.drivers.cpu.lowering_ext import EXT_LOWERINGS
from nnrt.drivers.cpu.lowering_nn import NN_LOWERINGS, conv_geometry
from nnrt.errors import NnrtError
from nnrt.model.model import Model
from nnrt.model.operation import operation_name
from nnrt.model.types import OperandType, OperationType
from nnrt.ops.context import Unknown

__all__ = ["ACCELERATED", "unsupported_reason"]

T = OperandType
Op = OperationType

#: Operation types the compiler can lower.
ACCELERATED = frozenset(LOWERINGS) | frozenset(NN_LOWERINGS) | frozenset(EXT_LOWERINGS)
_PARAMETER_TYPES = (T.INT32, T.UINT32, T.FLOAT32, T.BOOL, T.TENSOR_INT32)


def unsupported_reason(model: Model, index: int) -> str | None:
    """Why the cpu plugin does not select operation ``index`` of ``model`` (None: it does)."""
    op = model.operations[index]
    if op.type not in ACCELERATED:
        return f"operation type {operation_name(op.type)} not accelerated"
    operands = model.operands
    inferred = model.inferred_dims
    ctx = static_context(model, index)
    data = operands[op.inputs[0]].type
    if data != T.TENSOR_FLOAT32:
        return f"{data.name} not supported"
    for slot, k in enumerate(op.inputs):
        operand = operands[k]
        if operand.is_omitted:
            continue
        name = ctx.where(input=slot).split(", ", 1)[1]
        if operand.type == T.TENSOR_FLOAT32:
            dims = inferred[k]
            if not dims or not all(d > 0 for d in dims):
                return f"{name} has no static shape"
        elif operand.type in _PARAMETER_TYPES:
            if not operand.is_constant:
                return f"{name} is not a constant (parameters must be)"
        else:
            return f"{name}: {operand.type.name} not supported"
    for k in op.outputs:
        if operands[k].type != T.TENSOR_FLOAT32:
            return f"output operand {k}: {operands[k].type.name} not supported"
    return _variant_reason(model, index)


def _variant_reason(model: Model, index: int) -> str | None:
    op = model.operations[index]
    if op.type not in (Op.CONV_2D, Op.DEPTHWISE_CONV_2D):
        return None
    ctx = static_context(model, index)
    try:
        geo, _ = conv_geometry(ctx, None if op.type == Op.CONV_2D else "depth_multiplier")
    except (NnrtError, Unknown) as exc:
        return f"cannot resolve the {op.type.name} geometry: {exc}"
    if (geo.dilation_h, geo.dilation_w) != (1, 1):
        return f"dilated {op.type.name} not supported"
    return None
