"""Which operations the cpu plugin selects, and why it rejects the others.

An operation is selected when the compiler has a lowering for its type, its data tensors are
TENSOR_FLOAT32 of static shape (TENSOR_INT32 / TENSOR_BOOL8 too for the operations of
``_TYPED``: integer arithmetic, comparisons, logic, SELECT, CAST, data movement; GATHER's
indices may be TENSOR_INT32 computed at execution), every parameter (scalars, axes, shapes,
permutations, flags) is a constant, its outputs have static non-empty shapes, and its variant
is implemented (no dilation). The reason for a rejection names the first rule the operation
breaks: "operation type TOPK_V2 not accelerated", "TENSOR_FLOAT16 not supported", "input 3
(stride_width) is not a constant", "dilated CONV_2D not supported".
"""

from __future__ import annotations

from nnrt.drivers.cpu.lowering import (
    LOWERINGS,
    QUANT_INPUT_TYPES,
    QUANT_LOWERINGS,
    static_context,
)
from nnrt.drivers.cpu.lowering.nn import conv_geometry
from nnrt.drivers.cpu.lowering.quant import TABULATED
from nnrt.errors import NnrtError
from nnrt.model.model import Model
from nnrt.model.operation import operation_name
from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import Unknown
from nnrt.ops._framework.registry import lookup
from nnrt.ops.binary import quant8_multipliers
from nnrt.ops.quant import QUANT_RANGES

__all__ = ["ACCELERATED", "unsupported_reason"]

T = OperandType
Op = OperationType

#: Operation types the compiler can lower.
ACCELERATED = frozenset(LOWERINGS)
_PARAMETER_TYPES = (T.INT32, T.UINT32, T.FLOAT32, T.BOOL, T.TENSOR_INT32)
#: (operation, input slot, type) of int32 data the kernels read at execution (static shape
#: required, not a constant): GATHER's indices, range-checked by the kernel.
_RUNTIME_INT32 = frozenset({(Op.GATHER, 2, T.TENSOR_INT32)})

_FLOAT = frozenset({T.TENSOR_FLOAT32})
_FLOAT_INT = _FLOAT | {T.TENSOR_INT32}
_ANY = _FLOAT_INT | {T.TENSOR_BOOL8}
#: Operations whose data tensors may be int32 or bool as well: their data input slots and the
#: types accepted there (and for their outputs). Every other operation computes in float32:
#: its input 0 and outputs must be TENSOR_FLOAT32.
_TYPED: dict[OperationType, tuple[tuple[int, ...], frozenset[OperandType]]] = {
    **dict.fromkeys((Op.ADD, Op.SUB, Op.MUL, Op.MAXIMUM, Op.MINIMUM), ((0, 1), _FLOAT_INT)),
    **dict.fromkeys((Op.ABS, Op.NEG, Op.EXPAND_DIMS, Op.GATHER, Op.SLICE, Op.TILE, Op.SPLIT,
                     Op.REVERSE, Op.MIRROR_PAD, Op.ARGMAX, Op.ARGMIN), ((0,), _FLOAT_INT)),
    **dict.fromkeys((Op.EQUAL, Op.NOT_EQUAL, Op.GREATER, Op.GREATER_EQUAL, Op.LESS,
                     Op.LESS_EQUAL, Op.LOGICAL_AND, Op.LOGICAL_OR), ((0, 1), _ANY)),
    Op.LOGICAL_NOT: ((0,), _ANY),
    Op.SELECT: ((0, 1, 2), _ANY),
    Op.CAST: ((0,), _ANY),
}


def unsupported_reason(model: Model, index: int) -> str | None:
    """Why the cpu plugin does not select operation ``index`` of ``model`` (None: it does)."""
    op = model.operations[index]
    if op.inputs and model.operands[op.inputs[0]].type in QUANT_INPUT_TYPES:
        return _quant_reason(model, index)
    if op.type not in ACCELERATED:
        return f"operation type {operation_name(op.type)} not accelerated"
    operands = model.operands
    inferred = model.inferred_dims
    ctx = static_context(model, index)
    data_slots, types = _TYPED.get(op.type, ((0,), _FLOAT))
    data = operands[op.inputs[0]].type
    if data not in types:
        return f"{data.name} not supported"
    for slot, k in enumerate(op.inputs):
        operand = operands[k]
        if operand.is_omitted:
            continue
        name = ctx.where(input=slot).split(", ", 1)[1]
        if (operand.type == T.TENSOR_FLOAT32 or (slot in data_slots and operand.type in types)
                or (op.type, slot, operand.type) in _RUNTIME_INT32):
            dims = inferred[k]
            if not dims or not all(d > 0 for d in dims):
                return f"{name} has no static shape"
        elif operand.type in _PARAMETER_TYPES:
            if not operand.is_constant:
                return f"{name} is not a constant (parameters must be)"
        else:
            return f"{name}: {operand.type.name} not supported"
    for k in op.outputs:
        if operands[k].type not in types:
            return f"output operand {k}: {operands[k].type.name} not supported"
        if not inferred[k] or not all(d > 0 for d in inferred[k]):
            return f"output operand {k} has no static shape (or is empty)"
    return _variant_reason(model, index)


#: Quantised data movement: the float lowering moves the integers; every quantised operand
#: must share one type, scale and zero point (no requantisation).
_QUANT_MOVES = frozenset({Op.RESHAPE, Op.SQUEEZE, Op.EXPAND_DIMS, Op.TRANSPOSE,
                          Op.CONCATENATION, Op.SLICE, Op.STRIDED_SLICE, Op.GATHER, Op.TILE,
                          Op.SPLIT, Op.REVERSE, Op.MIRROR_PAD, Op.DEPTH_TO_SPACE,
                          Op.SPACE_TO_DEPTH, Op.CHANNEL_SHUFFLE, Op.REDUCE_MAX, Op.REDUCE_MIN})
#: Quantised operations with a lowering of their own, and where their weights sit.
_QUANT_WEIGHTS = {Op.CONV_2D: (1, 2), Op.DEPTHWISE_CONV_2D: (1, 2), Op.FULLY_CONNECTED: (1, 2)}


def _quant_reason(model: Model, index: int) -> str | None:
    """Why the cpu plugin does not take quantised operation ``index`` (None: it does)."""
    op = model.operations[index]
    operands, inferred = model.operands, model.inferred_dims
    ctx = static_context(model, index)
    x = operands[op.inputs[0]]
    if op.type not in QUANT_LOWERINGS and (op.type not in _QUANT_MOVES
                                           or op.type not in LOWERINGS):
        return f"{operation_name(op.type)} of {x.type.name} not accelerated"
    weights = _QUANT_WEIGHTS.get(op.type, ())
    for slot, k in enumerate(op.inputs):
        operand = operands[k]
        if operand.is_omitted:
            continue
        name = ctx.where(input=slot).split(", ", 1)[1]
        if slot in weights:
            if not operand.is_constant:
                return f"{name} is not a constant (quantised weights must be)"
        elif operand.type in QUANT_INPUT_TYPES or (op.type, slot, operand.type) in _RUNTIME_INT32:
            dims = inferred[k]
            if not dims or not all(d > 0 for d in dims):
                return f"{name} has no static shape"
        elif operand.type in _PARAMETER_TYPES:
            if not operand.is_constant:
                return f"{name} is not a constant (parameters must be)"
        else:
            return f"{name}: {operand.type.name} not supported"
    for k in op.outputs:
        if not inferred[k] or not all(d > 0 for d in inferred[k]):
            return f"output operand {k} has no static shape (or is empty)"
    if op.type in _QUANT_MOVES:
        quantised = [operands[k] for k in (*op.inputs, *op.outputs)
                     if operands[k].type in QUANT_INPUT_TYPES]
        if len({(o.type, o.scale, o.zero_point) for o in quantised}) != 1:
            return "quantised operands of different quantisation (requantisation not accelerated)"
        return None
    if op.type in TABULATED:  # the table is the reference kernel's results
        definition = lookup(op.type)
        if definition is None or x.type not in definition.kernel_types:
            return f"no reference kernel to tabulate {x.type.name} {operation_name(op.type)}"
    if op.type == Op.DEQUANTIZE:
        y = operands[op.outputs[0]]
        return None if y.type == T.TENSOR_FLOAT32 else f"output: {y.type.name} not supported"
    if any(operands[k].type != x.type for k in op.outputs):
        return "output type differs from input 0's"
    if op.type == Op.PAD_V2:
        low, high = QUANT_RANGES[x.type]
        if not low <= int(ctx.value(2)) <= high:  # the reference reports it
            return "pad value out of the quantised type's range"
    if op.type == Op.SOFTMAX and not x.scale * float(ctx.value(1)) > 2.0**-26:
        return "beta * input scale too small for NNAPI's quantised kernel"
    if op.type in (Op.ADD, Op.SUB, Op.MUL):
        try:  # the reference kernel reports the scales NNAPI's kernel cannot rescale
            quant8_multipliers(op.type, x.scale, operands[op.inputs[1]].scale,
                               operands[op.outputs[0]].scale)
        except ValueError as exc:
            return str(exc)
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
