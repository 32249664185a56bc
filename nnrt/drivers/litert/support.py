"""Which operations the litert plugin selects, and why it rejects the others.

An operation is selected when a TFLite builtin computes exactly what NNAPI specifies for it:
its tensors are of static shape and rank 1 to 6 (every selected builtin was run by LiteRT at
ranks 5 and 6 against the reference: the element-wise, data-moving, reduction, SOFTMAX and
BATCH_MATMUL ones; the windowed ones are rank 4 by NNAPI's rules; PAD and PAD_V2 rank 5 at
most, TFLite's limit), of a type TFLite has for that builtin (TENSOR_FLOAT32 and
TENSOR_FLOAT16 everywhere; TENSOR_INT32 for the arithmetic, MAXIMUM / MINIMUM, comparisons,
SELECT, CAST, FILL and the data-moving operations; TENSOR_BOOL8 for EQUAL, NOT_EQUAL and
SELECT; the quantised types below), every parameter is a constant (STRIDED_SLICE's begin, end
and strides and FILL's dims included), and the parameters have a TFLite equivalent:

* TENSOR_FLOAT16 is computed in float32, which NNAPI allows (float16 operations may be
  computed at float16 precision or better): constants converted once at compile time, inputs
  and outputs converted at the partition's edges (:mod:`.dispatch`), the values in between
  unrounded — except where an operation's result would show more than a float16 holds: a CAST
  to or from TENSOR_FLOAT16 and a comparison of float16 tensors read their input rounded to
  float16 (TFLite's CAST through a FLOAT16 tensor, exact: :mod:`.elementwise`). Relaxed
  models (float32 that may be computed in float16) are computed in float32. An operation
  mixing float16 and float32 tensors (NNAPI's validation refuses it; CAST converts) is not
  taken;

* windows: explicit padding that is not TFLite's SAME or VALID becomes a PAD before a VALID
  window (zeros for convolutions, -inf for MAX_POOL_2D); AVERAGE_POOL_2D, which averages over
  real elements only, needs SAME or VALID; TRANSPOSE_CONV_2D needs the padding TFLite derives
  from the output size (:mod:`.geometry`);
* SOFTMAX only on the last axis; reductions not over every dim without ``keep_dims`` (NNAPI
  gives shape [1], TFLite a scalar);
* MAXIMUM / MINIMUM of floats with a constant input free of NaN: TFLite's kernels return
  their second input when the comparison fails, so the constant is written first and a NaN in
  the other input propagates, as NNAPI specifies (two tensors could drop a NaN);
* no LESS, LESS_EQUAL, GREATER or GREATER_EQUAL of TENSOR_BOOL8 (TFLite's kernels have no
  BOOL inputs);
* no integer DIV (NNAPI floors, TFLite truncates) and no CAST from float to int (TFLite's is
  undefined out of range and for NaN, nnrt saturates);
* com.nnrt.ERF only inside a GELU, EXP only inside a softmax over the last axis
  (:mod:`.patterns`, each written as one builtin): TFLite has no ERF, and LiteRT's EXP kernel
  maps NaN to 0, overflows early and is not accurate to NNAPI's float32 tolerance;
* PRELU whose alpha broadcasts to the input's shape only (TFLite's PRELU output keeps the
  input's shape; NNAPI's may grow to alpha's); RESIZE_BILINEAR to the output size resolved at
  compile time (TFLite's kernel is NNAPI's reference, align_corners and half_pixel_centers
  alike);
* UNIDIRECTIONAL_SEQUENCE_LSTM with a tanh, relu or relu6 activation (TFLite's kernel treats
  "none" and sigmoid otherwise).

Quantised operations (TENSOR_QUANT8_ASYMM as TFLite's UINT8, TENSOR_QUANT8_ASYMM_SIGNED as
INT8, TENSOR_QUANT8_SYMM_PER_CHANNEL filters, int32 biases with their scales): CONV_2D,
DEPTHWISE_CONV_2D, TRANSPOSE_CONV_2D, FULLY_CONNECTED, BATCH_MATMUL (int8), ADD, SUB, MUL,
AVERAGE_POOL_2D, MAX_POOL_2D, RELU, RELU1, RELU6, LOGISTIC, TANH, SOFTMAX, MEAN, REDUCE_MAX,
QUANTIZE, DEQUANTIZE, MAXIMUM, MINIMUM and the data-moving operations (RESHAPE, SQUEEZE,
EXPAND_DIMS, TRANSPOSE, CONCATENATION, SLICE, STRIDED_SLICE, GATHER, PAD, PAD_V2, MIRROR_PAD,
TILE, RESIZE_NEAREST_NEIGHBOR), where TFLite's int8 / uint8 kernels compute NNAPI's arithmetic
within NNAPI's one step; the rules and the refusals are in :mod:`.quantized_rules`, the tensors
in :mod:`.quantized`.

NCHW operations (the layout flag) are taken too: the compiler computes whole NCHW regions in
NHWC (:mod:`.flatbuffer`). The reason for a rejection names the first rule the operation
breaks.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from nnrt.drivers.litert.geometry import (
    conv_window,
    pool_window,
    reduction_axes,
    transpose_conv_window,
)
from nnrt.drivers.litert.patterns import gelu_patterns, softmax_patterns
from nnrt.drivers.litert.quantized_rules import (
    QUANTIZED_OPS,
    QUANTIZED_TYPES,
    SLOT_TYPES,
    quantized_reason,
)
from nnrt.errors import NnrtError
from nnrt.model.model import Model
from nnrt.model.operand import QUANT_TYPES
from nnrt.model.operation import operation_name
from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import OperationContext, Unknown, static_context

__all__ = ["SELECTED", "unsupported_reason"]

T = OperandType
Op = OperationType

#: The operation types the compiler writes as TFLite builtins.
SELECTED = frozenset({
    Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.RELU, Op.RELU1, Op.RELU6, Op.LOGISTIC, Op.TANH,
    Op.FULLY_CONNECTED, Op.CONV_2D, Op.DEPTHWISE_CONV_2D, Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D,
    Op.SOFTMAX, Op.RESHAPE, Op.CONCATENATION, Op.MEAN, Op.TRANSPOSE, Op.BATCH_MATMUL,
    Op.NNRT_LAYER_NORMALIZATION, Op.NNRT_ERF, Op.MAXIMUM, Op.MINIMUM,
    Op.RESIZE_NEAREST_NEIGHBOR, Op.TRANSPOSE_CONV_2D, Op.REDUCE_SUM, Op.REDUCE_MAX, Op.SQRT,
    Op.EXP, Op.EXPAND_DIMS, Op.SQUEEZE, Op.EQUAL, Op.SELECT, Op.SLICE, Op.POW, Op.GATHER,
    Op.MIRROR_PAD, Op.CAST, Op.UNIDIRECTIONAL_SEQUENCE_LSTM, Op.NOT_EQUAL, Op.LESS,
    Op.LESS_EQUAL, Op.GREATER, Op.GREATER_EQUAL, Op.STRIDED_SLICE, Op.FILL, Op.TILE,
    Op.QUANTIZE, Op.DEQUANTIZE, Op.PAD, Op.PAD_V2, Op.PRELU, Op.RESIZE_BILINEAR,
    Op.DEPTH_TO_SPACE, Op.SPACE_TO_DEPTH, Op.HARD_SWISH,
})
#: Float tensors: TENSOR_FLOAT16 is computed in float32 (NNAPI allows float16 precision or
#: better), converted at the partition's edges (:mod:`.dispatch`).
_FLOAT = frozenset({T.TENSOR_FLOAT32, T.TENSOR_FLOAT16})
_NUMBERS = _FLOAT | {T.TENSOR_INT32}
_WITH_BOOL = _NUMBERS | {T.TENSOR_BOOL8}
_COMPARISONS = (Op.EQUAL, Op.NOT_EQUAL, Op.LESS, Op.LESS_EQUAL, Op.GREATER, Op.GREATER_EQUAL)
#: The comparisons TFLite has no BOOL kernel for (NNAPI orders false < true).
_ORDERINGS = frozenset({Op.LESS, Op.LESS_EQUAL, Op.GREATER, Op.GREATER_EQUAL})
#: The tensor types of the operations taking more than float tensors (inputs and outputs).
_TENSOR_TYPES: dict[OperationType, frozenset[OperandType]] = {
    **dict.fromkeys((Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.MAXIMUM, Op.MINIMUM, Op.RESHAPE,
                     Op.SQUEEZE, Op.EXPAND_DIMS, Op.TRANSPOSE, Op.CONCATENATION, Op.SLICE,
                     Op.GATHER, Op.MIRROR_PAD, Op.CAST, Op.FILL, Op.TILE), _NUMBERS),
    **dict.fromkeys(_COMPARISONS, _WITH_BOOL), Op.SELECT: _WITH_BOOL,
}
#: (operation, input slot) of TENSOR_INT32 parameters (constants): shapes, axes, paddings.
_INT32_PARAMETERS = frozenset({
    (Op.RESHAPE, 1), (Op.MEAN, 1), (Op.REDUCE_SUM, 1), (Op.REDUCE_MAX, 1), (Op.TRANSPOSE, 1),
    (Op.SQUEEZE, 1), (Op.SLICE, 1), (Op.SLICE, 2), (Op.MIRROR_PAD, 1),
    (Op.TRANSPOSE_CONV_2D, 3), (Op.STRIDED_SLICE, 1), (Op.STRIDED_SLICE, 2),
    (Op.STRIDED_SLICE, 3), (Op.FILL, 0), (Op.TILE, 1), (Op.PAD, 1), (Op.PAD_V2, 1),
})
#: Scalar parameters, always constants.
_SCALAR_TYPES = (T.INT32, T.FLOAT32, T.FLOAT16, T.BOOL)
#: The highest tensor rank written (nnrt's ``com.nnrt.rank6`` limit; the bytecode check in
#: :mod:`.dispatch` holds the same bound).
_MAX_RANK = 6
_MAX_PAD_RANK = 5
#: UNIDIRECTIONAL_SEQUENCE_LSTM activations TFLite's kernel applies as NNAPI does.
_LSTM_ACTIVATIONS = {1: "relu", 3: "relu6", 4: "tanh"}


def unsupported_reason(model: Model, index: int) -> str | None:
    """Why the litert plugin does not select operation ``index`` of ``model`` (None: it does)."""
    op = model.operations[index]
    if op.type not in SELECTED:
        return f"operation type {operation_name(op.type)} has no TFLite builtin here"
    operands = model.operands
    ctx = static_context(model, index)
    quantized = any(operands[k].type in QUANT_TYPES for k in (*op.inputs, *op.outputs))
    if quantized and op.type not in QUANTIZED_OPS:
        return f"quantised {operation_name(op.type)} has no TFLite int8 / uint8 form here"
    types = _TENSOR_TYPES.get(op.type, _FLOAT) | (QUANTIZED_TYPES if quantized else frozenset())
    for slot, k in enumerate(op.inputs):
        operand = operands[k]
        if operand.is_omitted:
            continue
        name = ctx.where(input=slot).split(", ", 1)[1]
        if operand.type in _SCALAR_TYPES or (op.type, slot) in _INT32_PARAMETERS:
            if not operand.is_constant:
                return f"{name} is not a constant (parameters must be)"
        elif operand.type not in types and not (
                quantized and operand.type in SLOT_TYPES.get((op.type, slot), ())):
            return f"{name}: {operand.type.name} not supported"
        elif not _static(model.inferred_dims[k]):
            return f"{name} has no static shape of rank 1 to {_MAX_RANK}"
    for k in op.outputs:
        if operands[k].type not in types:
            return f"output operand {k}: {operands[k].type.name} not supported"
        if not _static(model.inferred_dims[k]):
            return f"output operand {k} has no static shape of rank 1 to {_MAX_RANK}"
    mixed = _mixed_floats(model, index)
    if mixed is not None:
        return mixed
    try:
        found = quantized_reason(model, ctx) if quantized else None
        rule = _RULES.get(op.type)
        return found if found is not None or rule is None else rule(model, ctx)
    except (NnrtError, Unknown) as exc:
        return f"cannot resolve the {operation_name(op.type)} parameters: {exc}"


def _static(dims: tuple[int, ...] | None) -> bool:
    return bool(dims) and all(d > 0 for d in dims or ()) and len(dims or ()) <= _MAX_RANK


def _mixed_floats(model: Model, index: int) -> str | None:
    """Why an operation mixing TENSOR_FLOAT16 and TENSOR_FLOAT32 tensors is not taken: NNAPI
    gives every float tensor of an operation one type (omitted ones aside; validation checks
    it), CAST converts. Computed in float32, a mix would hide where float16 rounding belongs."""
    op = model.operations[index]
    if op.type == Op.CAST:
        return None
    operands = model.operands
    kinds = {operands[k].type for k in (*op.inputs, *op.outputs)
             if not operands[k].is_omitted} & _FLOAT
    if len(kinds) > 1:
        return "mixes TENSOR_FLOAT16 and TENSOR_FLOAT32 tensors (NNAPI gives them one type)"
    return None


def _window(model: Model, ctx: OperationContext) -> str | None:
    kind = ctx.operation.type
    found: object
    if kind == Op.TRANSPOSE_CONV_2D:
        found = transpose_conv_window(ctx)
    elif kind in (Op.CONV_2D, Op.DEPTHWISE_CONV_2D):
        found = conv_window(ctx)
    else:
        found = pool_window(ctx)
    return found if isinstance(found, str) else None


def _softmax(model: Model, ctx: OperationContext) -> str | None:
    if ctx.n_inputs > 2 and not ctx.is_omitted(2):
        axis = int(ctx.scalar(2))
        rank = len(ctx.shape(0))
        if axis not in (-1, rank - 1):
            return f"softmax on axis {axis} (TFLite's SOFTMAX takes the last axis only)"
    return None


def _erf(model: Model, ctx: OperationContext) -> str | None:
    if ctx.index in gelu_patterns(model):
        return None
    return "ERF has no TFLite builtin (taken only inside GELU: x * 0.5 * (1 + erf(x / sqrt(2))))"


def _exp(model: Model, ctx: OperationContext) -> str | None:
    if ctx.index in softmax_patterns(model):
        return None
    return ("EXP alone (LiteRT's XNNPACK kernel maps NaN to 0, overflows from 88.7 and is off "
            "by up to 1e-6; taken only inside a softmax: exp(x - max(x)) / sum(...))")


def _reduction(model: Model, ctx: OperationContext) -> str | None:
    axes, keep = reduction_axes(ctx)
    if not keep and len(axes) == len(ctx.shape(0)):
        return (f"{operation_name(ctx.operation.type)} over every dim without keep_dims "
                "(NNAPI gives shape [1], TFLite a scalar)")
    return None


def _max_min(model: Model, ctx: OperationContext) -> str | None:
    if ctx.input_type(0) not in _FLOAT:
        return None  # integers have no NaN
    for slot in (0, 1):
        value = ctx.constant(slot)
        if value is not None and not np.isnan(value).any():
            return None
    return (f"{operation_name(ctx.operation.type)} needs a constant input without NaN "
            "(TFLite's kernel returns its second input where the first is NaN, NNAPI "
            "propagates NaN: the constant is written first)")


def _div(model: Model, ctx: OperationContext) -> str | None:
    if ctx.input_type(0) == T.TENSOR_INT32:
        return "integer DIV (NNAPI rounds toward -infinity, TFLite's DIV toward zero)"
    return None


def _cast(model: Model, ctx: OperationContext) -> str | None:
    source, target = ctx.input_type(0), ctx.output_type(0)
    if source in _FLOAT and target == T.TENSOR_INT32:
        return ("CAST from float to int (TFLite's is undefined beyond the int32 range and for "
                "NaN, nnrt saturates and maps NaN to 0)")
    return None


def _ordering(model: Model, ctx: OperationContext) -> str | None:
    if ctx.input_type(0) == T.TENSOR_BOOL8:
        return (f"{operation_name(ctx.operation.type)} of TENSOR_BOOL8 (TFLite's kernel has no "
                "BOOL inputs; NNAPI orders false < true)")
    return None


def _lstm(model: Model, ctx: OperationContext) -> str | None:
    code = int(ctx.scalar(20))
    if code not in _LSTM_ACTIVATIONS:
        return (f"UNIDIRECTIONAL_SEQUENCE_LSTM activation {code} (TFLite's kernel applies "
                f"{', '.join(_LSTM_ACTIVATIONS.values())} as NNAPI does, not the others)")
    return None


def _pow(model: Model, ctx: OperationContext) -> str | None:
    """POW is taken without broadcasting (or as ``x * x`` for a constant exponent 2, see
    :mod:`.elementwise`): TFLite's broadcasting POW saturates at +-FLT_MAX where NNAPI (and
    the same-shape kernel) gives +-inf — ``x ** [3.0]`` of 1e20 is 3.4e38, not inf."""
    dims = model.inferred_dims
    base, exponent = (dims[k] for k in ctx.operation.inputs[:2])
    value = ctx.constant(1)
    if value is not None and bool(np.all(np.asarray(value) == 2)) and (
            dims[ctx.operation.outputs[0]] == base):
        return None
    if base != exponent:
        return ("POW with a broadcast exponent (TFLite's broadcasting POW saturates at "
                "+-FLT_MAX where NNAPI gives +-inf; a constant exponent 2 is taken as x * x)")
    return None


def _pad(model: Model, ctx: OperationContext) -> str | None:
    rank = len(ctx.shape(0))
    if rank > _MAX_PAD_RANK:
        return (f"{operation_name(ctx.operation.type)} of rank {rank} (TFLite's PAD kernels "
                f"take rank {_MAX_PAD_RANK} at most)")
    return None


def _prelu(model: Model, ctx: OperationContext) -> str | None:
    dims = model.inferred_dims
    if dims[ctx.operation.outputs[0]] != dims[ctx.operation.inputs[0]]:
        return ("PRELU whose alpha broadcasts the input (TFLite's PRELU keeps the input's "
                "shape; alpha may only broadcast to it)")
    return None


_RULES: dict[OperationType, Callable[[Model, OperationContext], str | None]] = {
    Op.PAD: _pad, Op.PAD_V2: _pad,
    **dict.fromkeys((Op.CONV_2D, Op.DEPTHWISE_CONV_2D, Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D,
                     Op.TRANSPOSE_CONV_2D), _window),
    Op.SOFTMAX: _softmax, Op.NNRT_ERF: _erf, Op.EXP: _exp,
    **dict.fromkeys((Op.MEAN, Op.REDUCE_SUM, Op.REDUCE_MAX), _reduction),
    Op.MAXIMUM: _max_min, Op.MINIMUM: _max_min, Op.DIV: _div, Op.CAST: _cast,
    Op.UNIDIRECTIONAL_SEQUENCE_LSTM: _lstm, Op.POW: _pow, Op.PRELU: _prelu,
    **dict.fromkeys(_ORDERINGS, _ordering),
}
