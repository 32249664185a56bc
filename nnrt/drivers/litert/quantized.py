"""Quantised tensors in TFLite's terms: their quantisation parameters, and the filters and
biases of quantised convolutions and products.

NNAPI's quantised types map onto TFLite's one to one: TENSOR_QUANT8_ASYMM is UINT8,
TENSOR_QUANT8_ASYMM_SIGNED and TENSOR_QUANT8_SYMM_PER_CHANNEL are INT8, each with
``QuantizationParameters`` holding NNAPI's scale and zero point (a per-channel filter: one
scale per output channel, zero points 0, ``quantized_dimension`` its channel axis, which
NNAPI's filter layouts share with TFLite's: OHWI for CONV_2D, 1HWO for DEPTHWISE_CONV_2D). An
int32 bias gets the scale TFLite checks and XNNPACK reads, ``input scale * filter scale`` per
output channel (NNAPI leaves a per-channel bias's scale 0).

TFLite's uint8 convolutions take one filter scale: where a TENSOR_QUANT8_ASYMM input meets a
per-channel filter, the whole partition is written in int8, every uint8 tensor's values and
zero point moved by -128 (:func:`signed_partition`: exact), or, where a uint8 filter forbids
that, the convolution alone converts its input and output by a QUANTIZE each way
(:func:`unsigned_per_channel`).

TFLite's int8 kernels take symmetric filters only (zero point 0: they never read a filter's
zero point); a TENSOR_QUANT8_ASYMM_SIGNED filter whose zero point is not 0 is written as the
filter minus its zero point, when every value of that fits int8's symmetric range [-127, 127]
(the products are the same integers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from ai_edge_litert import schema_py_generated as fb

from nnrt.errors import OpFailed
from nnrt.model.model import Model
from nnrt.model.operand import Operand
from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import OperationContext

if TYPE_CHECKING:
    from nnrt.drivers.litert.writer import Writer

__all__ = ["QUANT8", "as_signed", "converted", "operand_parameters", "parameters",
           "product_scales", "quantized_weights", "signed_partition", "signed_twin",
           "symmetric_filter", "unsigned_per_channel", "written_zero_point"]

T = OperandType
Array = np.ndarray[Any, Any]
#: The quantised tensor types written: NNAPI type -> TFLite type, numpy type.
QUANT8: dict[OperandType, tuple[int, type[np.generic]]] = {
    T.TENSOR_QUANT8_ASYMM: (fb.TensorType.UINT8, np.uint8),
    T.TENSOR_QUANT8_ASYMM_SIGNED: (fb.TensorType.INT8, np.int8),
    T.TENSOR_QUANT8_SYMM_PER_CHANNEL: (fb.TensorType.INT8, np.int8),
}


def parameters(scales: Any, zero_points: Any, axis: int = 0) -> Any:
    """A ``QuantizationParametersT`` of ``scales`` and ``zero_points`` (one each: per tensor;
    one per channel along ``axis``)."""
    found = fb.QuantizationParametersT()
    found.scale = np.asarray(scales, np.float32).reshape(-1)
    found.zeroPoint = np.asarray(zero_points, np.int64).reshape(-1)
    found.quantizedDimension = int(axis)
    return found


def operand_parameters(operand: Operand, signed: bool = False) -> Any | None:
    """The quantisation parameters of ``operand``'s tensor: per channel, per tensor (a
    quantised type, or an int32 with a scale: a bias), or None. In a ``signed`` partition a
    TENSOR_QUANT8_ASYMM tensor is INT8, its zero point moved by -128 (:func:`signed_partition`)."""
    if operand.channel_quant is not None:
        scales = operand.channel_quant.scales
        return parameters(scales, np.zeros(len(scales)), operand.channel_quant.channel_dim)
    if operand.type in QUANT8 or (operand.type == T.TENSOR_INT32 and operand.scale > 0):
        return parameters([operand.scale], [written_zero_point(operand, signed)])
    return None


def written_zero_point(operand: Operand, signed: bool) -> int:
    """``operand``'s zero point as written: moved by -128 for a TENSOR_QUANT8_ASYMM tensor
    of a ``signed`` partition."""
    return operand.zero_point - (128 if signed and operand.type == T.TENSOR_QUANT8_ASYMM else 0)


def as_signed(value: Any) -> Array:
    """uint8 ``value`` as int8 moved by -128 (``q ^ 0x80``: the same real numbers with the zero
    point moved too)."""
    moved: Array = (np.asarray(value, np.uint8) ^ np.uint8(0x80)).view(np.int8)
    return moved


def signed_partition(model: Model) -> bool:
    """Whether the partition's TENSOR_QUANT8_ASYMM tensors are written as INT8, values and
    zero points moved by -128 (exact: every quantised operation reads ``q - zero point``):
    when a TENSOR_QUANT8_ASYMM convolution takes a per-channel filter, which TFLite's uint8
    kernels cannot, and every uint8 filter, so moved, is one TFLite's int8 kernels take (a
    constant whose values minus its zero point fit [-127, 127]). onnxruntime quantises a model
    with uint8 activations and per-channel int8 weights so; computed in int8 throughout, it
    needs no conversion but at the partition's edges (:mod:`.dispatch`), and XNNPACK takes
    all of it. Otherwise such a convolution converts its input and output (:func:`converted`)."""
    operands = model.operands
    needed = False
    for op in model.operations:
        if len(op.inputs) < 2 or operands[op.inputs[0]].type != T.TENSOR_QUANT8_ASYMM:
            continue
        weights = operands[op.inputs[1]]
        if op.type in _PRODUCTS and weights.channel_quant is not None:
            needed = True
        elif op.type in _PRODUCTS and weights.type == T.TENSOR_QUANT8_ASYMM:
            value = model.constant_value(op.inputs[1])
            if value is None or symmetric_filter(weights, value) is None:
                return False
    return needed


_ASYMMETRIC = frozenset({T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED})
_PRODUCTS = frozenset({OperationType.CONV_2D, OperationType.DEPTHWISE_CONV_2D,
                       OperationType.FULLY_CONNECTED, OperationType.TRANSPOSE_CONV_2D})


def product_scales(source: Operand, weights: Operand) -> Array:
    """The scales of a product's int32 accumulators: ``input scale * weight scale`` per output
    channel (one for a per-tensor filter), in double as TFLite's check computes them."""
    if weights.channel_quant is not None:
        scales = np.asarray(weights.channel_quant.scales, np.float64)
    else:
        scales = np.asarray([weights.scale], np.float64)
    found: Array = np.float64(np.float32(source.scale)) * scales.astype(np.float32)
    return found


def symmetric_filter(operand: Operand, value: Array) -> Array | None:
    """An int8 filter with a zero point other than 0 as ``value - zero_point`` (the same
    integers in every product), or None where a value would leave [-127, 127]."""
    shifted = np.asarray(value, np.int32) - operand.zero_point
    if shifted.min(initial=0) < -127 or shifted.max(initial=0) > 127:
        return None
    return shifted.astype(np.int8)


def quantized_weights(writer: Writer, ctx: OperationContext) -> list[int]:
    """The filter and bias tensors of a quantised CONV_2D, DEPTHWISE_CONV_2D,
    TRANSPOSE_CONV_2D or FULLY_CONNECTED (inputs 1 and 2): an int8 filter made symmetric where
    its zero point is not 0, the int32 bias with the accumulators' scales TFLite reads."""
    op, model = ctx.operation, writer.model
    source, weights = model.operands[op.inputs[0]], model.operands[op.inputs[1]]
    filt = writer.tensor(op.inputs[1])
    moved = writer.tensors[filt].type == fb.TensorType.INT8 and weights.type in _ASYMMETRIC
    if moved and written_zero_point(weights, writer.signed) != 0:
        value = model.constant_value(op.inputs[1])
        shifted = None if value is None else symmetric_filter(weights, value)
        if shifted is None:  # the partition step refused it: never selected
            raise OpFailed(f"{ctx.where(input=1)}: an int8 filter TFLite cannot take")
        filt = writer.constant(f"filter_{ctx.index}", shifted, parameters([weights.scale], [0]))
    bias = writer.tensor(op.inputs[2])
    scales = product_scales(source, weights)
    writer.tensors[bias].quantization = parameters(scales, np.zeros(scales.size))
    return [filt, bias]


def unsigned_per_channel(writer: Writer, ctx: OperationContext) -> bool:
    """Whether convolution ``ctx`` takes a TENSOR_QUANT8_ASYMM input with a per-channel filter
    in a partition that is not :func:`signed_partition`: TFLite's uint8 kernels take one filter
    scale, so it is computed in int8, converted each way."""
    return (not writer.signed and ctx.input_type(0) == T.TENSOR_QUANT8_ASYMM
            and writer.model.operands[ctx.operation.inputs[1]].channel_quant is not None)


def signed_twin(writer: Writer, tensor: int) -> int:
    """A new INT8 tensor for the values of UINT8 ``tensor`` moved down by 128, its zero point
    too: the same real numbers."""
    source = writer.tensors[tensor]
    params = source.quantization
    return writer.add_tensor(f"signed_{tensor}", tuple(int(d) for d in source.shape),
                             fb.TensorType.INT8,
                             parameters(params.scale, np.asarray(params.zeroPoint) - 128))


def converted(writer: Writer, source: int, target: int) -> int:
    """``target``, written by a QUANTIZE from ``source`` of the other 8-bit type and the same
    scale (TFLite's requantization by a multiplier of 1: exact, the values moved by 128)."""
    writer.operator(fb.BuiltinOperator.QUANTIZE, [source], [target],
                    fb.BuiltinOptions.QuantizeOptions, fb.QuantizeOptionsT())
    return target
