"""Which quantised operations the litert plugin takes: where TFLite's int8 / uint8 kernels compute
what NNAPI specifies (within NNAPI's one step), and why it refuses the others.

NNAPI's quantised arithmetic is TFLite's (NNAPI was designed as TFLite's backend: the same
quantised multipliers, rounding and activation ranges), so most quantised operations map one to
one (:data:`QUANTIZED_OPS`, TENSOR_QUANT8_ASYMM and TENSOR_QUANT8_ASYMM_SIGNED). Each was run
on LiteRT, on XNNPACK and on TFLite's builtin kernels, against the reference interpreter: the
same integers, or one step off where TFLite rounds otherwise (XNNPACK requantizes products in
float; the 8-bit LOGISTIC is a table of float results; MEAN rounds where NNAPI truncates;
QUANTIZE rounds halfway points to even). What is left are the places where a TFLite kernel
takes less than NNAPI allows, each refused with its reason:

* int8 filters must be symmetric (TFLite's int8 convolutions and products never read a filter's
  zero point): a TENSOR_QUANT8_ASYMM_SIGNED filter with another zero point is taken when it is
  a constant whose values minus the zero point fit [-127, 127] (:mod:`.quantized` writes that);
* TFLite's uint8 convolutions take one filter scale: a TENSOR_QUANT8_ASYMM input with a
  TENSOR_QUANT8_SYMM_PER_CHANNEL filter is computed in int8 (:mod:`.quantized`);
* TFLite's builtin MUL holds the rescaled product plus the zero point in 16 bits: a MUL whose
  product could pass that is refused (:func:`_mul`);
* data-moving operations copy bytes: their output must keep the input's scale and zero point
  (NNAPI requires it of most; a CONCATENATION of inputs with other scales is refused: TFLite's
  int8 kernel does not rescale, and a uint8 region with per-channel filters is computed in
  int8);
* MAXIMUM / MINIMUM compare the stored integers: every tensor must share one quantisation;
* a DEQUANTIZE of a constant (XNNPACK takes it for weights to unpack, and fails).

Other quantised operations (the comparisons, SELECT, ARGMAX, L2_NORMALIZATION, HARD_SWISH,
PRELU, RESIZE_BILINEAR, the QUANT16 and QUANT8_SYMM types, ...) are not written: "quantised X has
no TFLite int8 / uint8 form here". The rule for an operation names the first rule it breaks.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from nnrt.drivers.litert.quantized import QUANT8, symmetric_filter
from nnrt.model.model import Model
from nnrt.model.operand import Operand
from nnrt.model.operation import operation_name
from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import OperationContext
from nnrt.ops.quant import QUANT_RANGES

__all__ = ["QUANTIZED_OPS", "QUANTIZED_TYPES", "SLOT_TYPES", "quantized_reason"]

T = OperandType
Op = OperationType
_Q8 = frozenset(QUANT8) - {T.TENSOR_QUANT8_SYMM_PER_CHANNEL}
#: The operations taken with TENSOR_QUANT8_ASYMM / TENSOR_QUANT8_ASYMM_SIGNED tensors.
QUANTIZED_OPS = frozenset({
    Op.ADD, Op.SUB, Op.MUL, Op.CONV_2D, Op.DEPTHWISE_CONV_2D, Op.FULLY_CONNECTED,
    Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D, Op.RELU, Op.RELU1, Op.RELU6, Op.LOGISTIC, Op.TANH,
    Op.SOFTMAX, Op.RESHAPE, Op.SQUEEZE, Op.EXPAND_DIMS, Op.TRANSPOSE, Op.CONCATENATION,
    Op.MEAN, Op.QUANTIZE, Op.DEQUANTIZE, Op.RESIZE_NEAREST_NEIGHBOR, Op.MAXIMUM, Op.MINIMUM,
    Op.SLICE, Op.STRIDED_SLICE, Op.GATHER, Op.PAD, Op.PAD_V2, Op.MIRROR_PAD, Op.TILE,
    Op.TRANSPOSE_CONV_2D, Op.REDUCE_MAX, Op.BATCH_MATMUL,
})
#: The quantised tensor types each of those takes (every slot that is not a parameter).
QUANTIZED_TYPES = _Q8
#: Other tensor types taken at one input slot of a quantised operation: per-channel filters,
#: int32 biases.
SLOT_TYPES: dict[tuple[OperationType, int], frozenset[OperandType]] = {
    (Op.CONV_2D, 1): frozenset({T.TENSOR_QUANT8_SYMM_PER_CHANNEL}),
    (Op.DEPTHWISE_CONV_2D, 1): frozenset({T.TENSOR_QUANT8_SYMM_PER_CHANNEL}),
    (Op.CONV_2D, 2): frozenset({T.TENSOR_INT32}),
    (Op.DEPTHWISE_CONV_2D, 2): frozenset({T.TENSOR_INT32}),
    (Op.FULLY_CONNECTED, 2): frozenset({T.TENSOR_INT32}),
    (Op.TRANSPOSE_CONV_2D, 1): frozenset({T.TENSOR_QUANT8_SYMM_PER_CHANNEL}),
    (Op.TRANSPOSE_CONV_2D, 2): frozenset({T.TENSOR_INT32}),
}
#: The channel axis of a per-channel filter, as TFLite's layout has it (NNAPI's is the same).
_CHANNEL_AXIS = {Op.CONV_2D: 0, Op.DEPTHWISE_CONV_2D: 3, Op.TRANSPOSE_CONV_2D: 0}
_INT16_MAX = 32767
#: Operations whose output TFLite copies from the input's bytes (or compares them).
_SAME_QUANT = frozenset({Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D, Op.RELU, Op.RELU1, Op.RELU6,
                         Op.RESHAPE, Op.SQUEEZE, Op.EXPAND_DIMS, Op.TRANSPOSE,
                         Op.RESIZE_NEAREST_NEIGHBOR, Op.SLICE, Op.STRIDED_SLICE, Op.GATHER,
                         Op.MEAN, Op.PAD, Op.PAD_V2, Op.MIRROR_PAD, Op.TILE,
                         Op.REDUCE_MAX})


def _quant(operand: Operand) -> tuple[OperandType, float, int]:
    return operand.type, operand.scale, operand.zero_point


def quantized_reason(model: Model, ctx: OperationContext) -> str | None:
    """Why quantised operation ``ctx`` is not taken (None: it is)."""
    kind = ctx.operation.type
    name = operation_name(kind)
    if kind not in QUANTIZED_OPS:
        return f"quantised {name} has no TFLite int8 / uint8 form here"
    if kind in _SAME_QUANT and _quant(ctx.output_operand(0)) != _quant(ctx.operand(0)):
        return (f"quantised {name} with an output scale or zero point other than the input's "
                "(TFLite's kernel keeps the input's)")
    rule = _RULES.get(kind)
    return None if rule is None else rule(model, ctx)


def _weights(model: Model, ctx: OperationContext) -> str | None:
    kind = ctx.operation.type
    name = operation_name(kind)
    weights = ctx.operand(1)
    if weights.channel_quant is not None:
        axis = weights.channel_quant.channel_dim
        if axis != _CHANNEL_AXIS[kind]:
            return f"{name} with a per-channel filter along axis {axis}"
        return None
    if weights.type == T.TENSOR_QUANT8_ASYMM_SIGNED and weights.zero_point != 0:
        value = ctx.constant(1)
        if value is None or symmetric_filter(weights, value) is None:
            return (f"{name} with an int8 filter of zero point {weights.zero_point} (TFLite's "
                    "int8 kernels take symmetric filters; a constant one is shifted when its "
                    "values minus the zero point fit [-127, 127])")
    return None


def _concatenation(model: Model, ctx: OperationContext) -> str | None:
    out = _quant(ctx.output_operand(0))
    if any(_quant(ctx.operand(i)) != out for i in range(ctx.n_inputs - 1)):
        return ("quantised CONCATENATION of inputs with scales or zero points other than the "
                "output's (TFLite's int8 kernel does not rescale, and a uint8 region may be "
                "computed in int8)")
    return None


def _same_everywhere(model: Model, ctx: OperationContext) -> str | None:
    out = _quant(ctx.output_operand(0))
    if any(_quant(ctx.operand(i)) != out for i in (0, 1)):
        return (f"quantised {operation_name(ctx.operation.type)} of tensors with different "
                "scales or zero points (TFLite's kernel compares the stored integers)")
    return None


def _mul(model: Model, ctx: OperationContext) -> str | None:
    """MUL is taken where TFLite's builtin kernel cannot wrap: it holds the rescaled product
    plus the output zero point in 16 bits (saturating the product, wrapping the sum), so a
    product of more than ``32767 - |zero point|`` output steps came out as the opposite end of
    the range (a uint8 product of 32568 steps with zero point 200 gave 0, not 255; XNNPACK's
    kernel is right, but a node XNNPACK declines runs on the builtin one)."""
    out = ctx.output_operand(0)
    steps = float(np.float32(ctx.operand(0).scale)) * float(np.float32(ctx.operand(1).scale)) / (
        float(np.float32(out.scale)))
    for slot in (0, 1):
        steps *= _largest_offset(ctx, slot)
    if steps + abs(out.zero_point) + 1 > _INT16_MAX:
        return (f"quantised MUL whose product reaches {steps:.0f} output steps (TFLite's "
                "builtin kernel holds the product plus the zero point in 16 bits: beyond "
                f"{_INT16_MAX - abs(out.zero_point) - 1} it wraps around)")
    return None


def _largest_offset(ctx: OperationContext, slot: int) -> int:
    """The largest ``|q - zero point|`` input ``slot`` holds: of its values if constant, of
    its type's range otherwise."""
    operand = ctx.operand(slot)
    value = ctx.constant(slot)
    low, high = QUANT_RANGES[operand.type]
    if value is not None and np.size(value):
        low, high = int(np.min(value)), int(np.max(value))
    return max(abs(low - operand.zero_point), abs(high - operand.zero_point))


def _dequantize(model: Model, ctx: OperationContext) -> str | None:
    if ctx.is_constant(0):
        return ("DEQUANTIZE of a constant (XNNPACK's delegate takes it for weights to unpack "
                "and fails to set up a partition computing nothing else)")
    return None


_RULES: dict[OperationType, Callable[[Model, OperationContext], str | None]] = {
    Op.DEQUANTIZE: _dequantize, Op.MUL: _mul,
    Op.CONV_2D: _weights, Op.DEPTHWISE_CONV_2D: _weights, Op.FULLY_CONNECTED: _weights,
    Op.TRANSPOSE_CONV_2D: _weights,
    Op.CONCATENATION: _concatenation, Op.MAXIMUM: _same_everywhere,
    Op.MINIMUM: _same_everywhere,
}
