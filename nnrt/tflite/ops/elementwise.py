"""Element-wise builtins: arithmetic with fused activations, activations, unary math,
MAXIMUM / MINIMUM, the type conversions (CAST, QUANTIZE, DEQUANTIZE) and DENSIFY."""

from __future__ import annotations

import numpy as np
from ai_edge_litert import schema_py_generated as fb

from nnrt.model.types import OperandType, OperationType
from nnrt.tflite.context import OpContext, converter
from nnrt.tflite.errors import OperatorUnsupported

__all__: list[str] = []

B = fb.BuiltinOperator
Op = OperationType
T = OperandType
_BINARY = {B.ADD: Op.ADD, B.SUB: Op.SUB, B.MUL: Op.MUL, B.DIV: Op.DIV}
_UNARY = {B.LOGISTIC: Op.LOGISTIC, B.TANH: Op.TANH, B.RELU: Op.RELU, B.RELU6: Op.RELU6,
          B.RELU_N1_TO_1: Op.RELU1, B.HARD_SWISH: Op.HARD_SWISH, B.EXP: Op.EXP, B.SQRT: Op.SQRT,
          B.RSQRT: Op.RSQRT, B.MAXIMUM: Op.MAXIMUM, B.MINIMUM: Op.MINIMUM, B.PRELU: Op.PRELU,
          B.ABS: Op.ABS, B.NEG: Op.NEG, B.LOG: Op.LOG, B.SIN: Op.SIN, B.FLOOR: Op.FLOOR,
          B.LOGICAL_NOT: Op.LOGICAL_NOT, B.LESS: Op.LESS, B.GREATER: Op.GREATER,
          B.EQUAL: Op.EQUAL, B.NOT_EQUAL: Op.NOT_EQUAL, B.LESS_EQUAL: Op.LESS_EQUAL,
          B.GREATER_EQUAL: Op.GREATER_EQUAL, B.POW: Op.POW, B.SELECT_V2: Op.SELECT,
          B.SELECT: Op.SELECT, B.LOGICAL_AND: Op.LOGICAL_AND, B.LOGICAL_OR: Op.LOGICAL_OR}


@converter(*_BINARY)
def convert_binary(ctx: OpContext) -> None:
    """ADD, SUB, MUL, DIV with their fused activation."""
    code = ctx.code
    ctx.emit(_BINARY[code], ctx.input(0), ctx.input(1), ctx.activation())


@converter(*_UNARY)
def convert_direct(ctx: OpContext) -> None:
    """Builtins whose inputs are the NNAPI operation's, in order."""
    ctx.emit(_UNARY[ctx.code], *(ctx.input(k) for k in range(len(ctx.inputs))))


@converter(B.LEAKY_RELU)
def convert_leaky_relu(ctx: OpContext) -> None:
    """LEAKY_RELU as NNAPI PRELU with a one-element alpha."""
    spec = ctx.spec(0)
    alpha = float(ctx.option("alpha"))
    if spec.type not in (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16):
        raise OperatorUnsupported(f"quantised LEAKY_RELU ({spec.type.name})")
    dtype = np.float16 if spec.type == T.TENSOR_FLOAT16 else np.float32
    ctx.emit(Op.PRELU, ctx.input(0), ctx.builder.constant(np.asarray([alpha], dtype)))


@converter(B.CAST)
def convert_cast(ctx: OpContext) -> None:
    """CAST between float32, float16, int32 (int64 held as int32) and bool."""
    ctx.emit(Op.CAST, ctx.input(0))


@converter(B.DENSIFY)
def convert_densify(ctx: OpContext) -> None:
    """DENSIFY of a sparse constant: the constant, densified at import
    (:mod:`nnrt.tflite.sparse`)."""
    t = ctx.inputs[0]
    if ctx.subgraph.tensors[t].sparsity is None or ctx.subgraph.constant_value(t) is None:
        raise OperatorUnsupported(f"input 0 ({ctx.subgraph.where(t)}) is not a sparse "
                                  "constant")
    ctx.define(0, ctx.input(0))


@converter(B.DEQUANTIZE)
def convert_dequantize(ctx: OpContext) -> None:
    """DEQUANTIZE: of a quantised tensor NNAPI's DEQUANTIZE; of a float16 one (the
    fp16-weights pattern: the constant stays float16) a CAST to float32."""
    kind = ctx.spec(0).type
    ctx.emit(Op.CAST if kind == T.TENSOR_FLOAT16 else Op.DEQUANTIZE, ctx.input(0))


@converter(B.QUANTIZE)
def convert_quantize(ctx: OpContext) -> None:
    """QUANTIZE of a float tensor (re-quantising a quantised one is not converted)."""
    if ctx.spec(0).type not in (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16):
        raise OperatorUnsupported("re-quantising a quantised tensor (NNAPI QUANTIZE reads "
                                  "floats)")
    ctx.emit(Op.QUANTIZE, ctx.input(0))
