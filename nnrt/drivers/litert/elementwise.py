"""Writing the element-wise operations, and the chains of them written as one builtin.

Arithmetic (with its fused activation), MAXIMUM / MINIMUM, POW, the comparisons (EQUAL,
NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL), SELECT, the activations, SQRT and CAST map
one to one onto TFLite builtins with NNAPI's (numpy's) broadcasting; a POW by a constant 2 is a
MUL ``x * x`` (XNNPACK has no POW kernel).
Each computes in whatever layout its inputs have: in NHWC when one input is held in NHWC (an
NCHW region) and the others are too or are constants (permuted once here), so a region does not
leave NHWC for them. TENSOR_FLOAT16 is computed in float32, but a CAST to or from it goes
through a FLOAT16 tensor (TFLite's CAST rounds as numpy does, to nearest even, overflowing to
inf) and the comparisons compare float16 values (:meth:`.Writer.as_float16`). MAXIMUM /
MINIMUM write their constant input first (see :mod:`.support`: a NaN in the other input then
propagates as NNAPI specifies). GELU (at its ERF), HARD_SWISH (at its ``x + 3``) and SOFTMAX
(at its EXP) replace the chains :mod:`.patterns` finds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from ai_edge_litert import schema_py_generated as fb

from nnrt.drivers.litert.patterns import Chain
from nnrt.drivers.litert.writer import TENSOR_TYPES, Writer
from nnrt.errors import OpFailed
from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import OperationContext

__all__ = ["BUILTINS", "COMPARISONS", "WRITERS"]

Op = OperationType
T = OperandType
B = fb.BuiltinOperator
Options = Callable[[OperationContext], tuple[int, Any]]


def _activation(ctx: OperationContext, slot: int) -> int:
    return int(ctx.scalar(slot)) if ctx.n_inputs > slot and not ctx.is_omitted(slot) else 0


def _fused(options: type, kind: int) -> Options:
    """Options with NNAPI's fused activation (input 2)."""
    def make(ctx: OperationContext) -> tuple[int, Any]:
        made = options()
        made.fusedActivationFunction = _activation(ctx, 2)
        return kind, made
    return make


def _plain(options: type | None, kind: int = fb.BuiltinOptions.NONE) -> Options:
    def make(ctx: OperationContext) -> tuple[int, Any]:
        return kind, None if options is None else options()
    return make


def _cast(ctx: OperationContext) -> tuple[int, Any]:
    options = fb.CastOptionsT()
    options.inDataType = TENSOR_TYPES[ctx.input_type(0)][0]
    options.outDataType = TENSOR_TYPES[ctx.output_type(0)][0]
    return fb.BuiltinOptions.CastOptions, options


@dataclass(frozen=True)
class _Form:
    """The builtin an element-wise operation is written as, its options, its data inputs."""

    builtin: int
    options: Options
    slots: tuple[int, ...] = (0,)


_FORMS: dict[OperationType, _Form] = {
    Op.ADD: _Form(B.ADD, _fused(fb.AddOptionsT, fb.BuiltinOptions.AddOptions), (0, 1)),
    Op.SUB: _Form(B.SUB, _fused(fb.SubOptionsT, fb.BuiltinOptions.SubOptions), (0, 1)),
    Op.MUL: _Form(B.MUL, _fused(fb.MulOptionsT, fb.BuiltinOptions.MulOptions), (0, 1)),
    Op.DIV: _Form(B.DIV, _fused(fb.DivOptionsT, fb.BuiltinOptions.DivOptions), (0, 1)),
    Op.MAXIMUM: _Form(B.MAXIMUM, _plain(fb.MaximumMinimumOptionsT,
                                        fb.BuiltinOptions.MaximumMinimumOptions), (0, 1)),
    Op.MINIMUM: _Form(B.MINIMUM, _plain(fb.MaximumMinimumOptionsT,
                                        fb.BuiltinOptions.MaximumMinimumOptions), (0, 1)),
    Op.POW: _Form(B.POW, _plain(fb.PowOptionsT, fb.BuiltinOptions.PowOptions), (0, 1)),
    Op.EQUAL: _Form(B.EQUAL, _plain(fb.EqualOptionsT, fb.BuiltinOptions.EqualOptions), (0, 1)),
    Op.NOT_EQUAL: _Form(B.NOT_EQUAL, _plain(fb.NotEqualOptionsT,
                                            fb.BuiltinOptions.NotEqualOptions), (0, 1)),
    Op.LESS: _Form(B.LESS, _plain(fb.LessOptionsT, fb.BuiltinOptions.LessOptions), (0, 1)),
    Op.LESS_EQUAL: _Form(B.LESS_EQUAL, _plain(fb.LessEqualOptionsT,
                                              fb.BuiltinOptions.LessEqualOptions), (0, 1)),
    Op.GREATER: _Form(B.GREATER, _plain(fb.GreaterOptionsT, fb.BuiltinOptions.GreaterOptions),
                      (0, 1)),
    Op.GREATER_EQUAL: _Form(B.GREATER_EQUAL, _plain(fb.GreaterEqualOptionsT,
                                                    fb.BuiltinOptions.GreaterEqualOptions),
                            (0, 1)),
    Op.SELECT: _Form(B.SELECT, _plain(fb.SelectOptionsT, fb.BuiltinOptions.SelectOptions),
                     (0, 1, 2)),
    Op.RELU: _Form(B.RELU, _plain(None)), Op.RELU1: _Form(B.RELU_N1_TO_1, _plain(None)),
    Op.RELU6: _Form(B.RELU6, _plain(None)), Op.LOGISTIC: _Form(B.LOGISTIC, _plain(None)),
    Op.TANH: _Form(B.TANH, _plain(None)), Op.SQRT: _Form(B.SQRT, _plain(None)),
    Op.PRELU: _Form(B.PRELU, _plain(None), (0, 1)),
    Op.HARD_SWISH: _Form(B.HARD_SWISH, _plain(None)),
    Op.CAST: _Form(B.CAST, _cast),
    Op.QUANTIZE: _Form(B.QUANTIZE, _plain(fb.QuantizeOptionsT, fb.BuiltinOptions.QuantizeOptions)),
    Op.DEQUANTIZE: _Form(B.DEQUANTIZE, _plain(fb.DequantizeOptionsT,
                                              fb.BuiltinOptions.DequantizeOptions)),
}


#: The comparisons, all written alike (their float16 inputs rounded to float16).
COMPARISONS = frozenset({Op.EQUAL, Op.NOT_EQUAL, Op.LESS, Op.LESS_EQUAL, Op.GREATER,
                         Op.GREATER_EQUAL})


#: POW by a constant 2, written as ``x * x``: TFLite's POW has no XNNPACK kernel, so each one
#: ran in TFLite's own kernel and split the XNNPACK delegate's partition in two (PP-OCR's
#: recogniser, its layer norms written operation by operation, had six partitions). The product
#: is the square rounded once, as a correctly rounded power gives it.
_SQUARE = _Form(B.MUL, lambda ctx: (fb.BuiltinOptions.MulOptions, fb.MulOptionsT()), (0, 0))


def _is_square(writer: Writer, ctx: OperationContext) -> bool:
    """Whether POW ``ctx`` raises its base to a constant 2 (adding no dimension)."""
    if ctx.operation.type != Op.POW:
        return False
    exponent = ctx.constant(1)
    dims = writer.model.inferred_dims
    return (exponent is not None and bool(np.all(np.asarray(exponent) == 2))
            and dims[ctx.operation.outputs[0]] == dims[ctx.operation.inputs[0]])


def _slots(ctx: OperationContext, form: _Form) -> tuple[int, ...]:
    """The data inputs in builtin order: MAXIMUM / MINIMUM take a NaN-free constant first."""
    if ctx.operation.type not in (Op.MAXIMUM, Op.MINIMUM):
        return form.slots
    value = ctx.constant(1)
    return (1, 0) if value is not None and not np.isnan(value).any() else (0, 1)


def write_elementwise(writer: Writer, ctx: OperationContext) -> None:
    """One element-wise builtin, in NHWC where its inputs are (its fused activation set)."""
    chain = writer.hard_swishes.get(ctx.index)
    if chain is not None:
        _write_chain(writer, chain, B.HARD_SWISH)
        return
    op = ctx.operation
    if op.type == Op.CAST and _constant_widening(writer, ctx):
        return
    form = _SQUARE if _is_square(writer, ctx) else _FORMS[op.type]
    options_type, options = form.options(ctx)
    output = writer.result(ctx.index, options)
    data = [op.inputs[slot] for slot in _slots(ctx, form)]
    nhwc = writer.in_nhwc(data, output)
    inputs = [writer.nhwc_tensor(k) if nhwc else writer.tensor(k) for k in data]
    if op.type in COMPARISONS:  # compares the float16 values NNAPI's tensors hold
        inputs = [writer.as_float16(k, tensor) for k, tensor in zip(data, inputs, strict=True)]
    elif op.type == Op.CAST and T.TENSOR_FLOAT16 in (ctx.input_type(0), ctx.output_type(0)):
        inputs = [writer.cast(inputs[0], fb.TensorType.FLOAT16)]  # float16's rounding, range
        options.inDataType = fb.TensorType.FLOAT16
    writer.operator(form.builtin, inputs, [writer.output(output, nhwc)], options_type, options)


def _constant_widening(writer: Writer, ctx: OperationContext) -> bool:
    """A CAST of a TENSOR_FLOAT16 constant to TENSOR_FLOAT32 (the float16-weights pattern of
    TFLite files) written as the float32 constant itself: exact, and XNNPACK then packs the
    weights it feeds once, where a CAST at execution would make them dynamic (re-packed every
    run). Not for a partition output or an operand held in NHWC order."""
    op = ctx.operation
    if (ctx.input_type(0), ctx.output_type(0)) != (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32):
        return False
    value = writer.model.constant_value(op.inputs[0])
    output = op.outputs[0]
    if value is None or output in writer.model.outputs or output in writer.nhwc:
        return False
    writer.bind_constant(output, np.asarray(value, np.float32))
    return True


def write_erf(writer: Writer, ctx: OperationContext) -> None:
    """The GELU whose ERF this is, as one builtin (``approximate = false``)."""
    gelu = writer.gelus.get(ctx.index)
    if gelu is None:  # the partition step takes ERF only inside a GELU
        raise OpFailed(f"{ctx.where()}: ERF outside a GELU pattern")
    options = fb.GeluOptionsT()
    options.approximate = False
    _write_chain(writer, gelu, B.GELU, fb.BuiltinOptions.GeluOptions, options)


def write_exp(writer: Writer, ctx: OperationContext) -> None:
    """The softmax whose EXP this is, as one SOFTMAX over the last axis (``beta = 1``)."""
    softmax = writer.softmaxes.get(ctx.index)
    if softmax is None:  # the partition step takes EXP only inside a softmax
        raise OpFailed(f"{ctx.where()}: EXP outside a softmax pattern")
    options = fb.SoftmaxOptionsT()
    options.beta = 1.0
    writer.operator(B.SOFTMAX, [writer.tensor(softmax.input)],
                    [writer.tensor(softmax.output)], fb.BuiltinOptions.SoftmaxOptions, options)


def _write_chain(writer: Writer, chain: Chain, builtin: int,
                 options_type: int = fb.BuiltinOptions.NONE, options: Any = None) -> None:
    nhwc = writer.in_nhwc([chain.input], chain.output)
    source = writer.nhwc_tensor(chain.input) if nhwc else writer.tensor(chain.input)
    writer.operator(builtin, [source], [writer.output(chain.output, nhwc)], options_type,
                    options)


WRITERS: dict[OperationType, Callable[[Writer, OperationContext], None]] = {
    **dict.fromkeys(_FORMS, write_elementwise),
    Op.NNRT_ERF: write_erf, Op.EXP: write_exp,
}
#: Every builtin these writers write.
BUILTINS = frozenset({*(form.builtin for form in _FORMS.values()), B.HARD_SWISH, B.GELU,
                      B.SOFTMAX})
