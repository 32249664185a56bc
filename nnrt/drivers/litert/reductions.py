"""Writing reductions (MEAN, REDUCE_SUM, REDUCE_MAX), SOFTMAX and the layer normalisation built
from reductions.

A reduction of an NHWC-held tensor (an NCHW region) reduces the permuted axes: it keeps the
output in NHWC when it keeps dims, and writes the NNAPI layout directly when the dims it keeps
are in the same order either way (a global pooling to [N, C]). com.nnrt.LAYER_NORMALIZATION
becomes ``MEAN, SQUARED_DIFFERENCE, MEAN, ADD, RSQRT, SUB, MUL, MUL, ADD`` over the axes
``[axis, rank)``, in float32 (the reference computes in float64; within the kit's tolerance).
SOFTMAX is TFLite's (the last axis only, :mod:`.support`), with its beta.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from ai_edge_litert import schema_py_generated as fb

from nnrt.drivers.litert.geometry import reduction_axes
from nnrt.drivers.litert.writer import TO_NHWC, Writer
from nnrt.model.types import OperationType
from nnrt.ops._framework.context import OperationContext

__all__ = ["BUILTINS", "WRITERS"]

Op = OperationType
_BUILTINS = {Op.MEAN: fb.BuiltinOperator.MEAN, Op.REDUCE_SUM: fb.BuiltinOperator.SUM,
             Op.REDUCE_MAX: fb.BuiltinOperator.REDUCE_MAX}


def write_reduction(writer: Writer, ctx: OperationContext) -> None:
    """MEAN, SUM or REDUCE_MAX over the resolved axes, in NHWC where the input is held so."""
    op, index = ctx.operation, ctx.index
    builtin = _BUILTINS[op.type]
    axes, keep = reduction_axes(ctx)
    source = op.inputs[0]
    options = fb.ReducerOptionsT()
    options.keepDims = keep
    if source in writer.nhwc:
        moved = sorted(TO_NHWC.index(a) for a in axes)
        kept_nchw = [a for a in range(4) if a not in axes]
        kept_nhwc = [TO_NHWC[p] for p in range(4) if p not in moved]
        if keep or kept_nchw == kept_nhwc:
            order = writer.constant(f"axes_{index}", np.asarray(moved, np.int32))
            writer.operator(builtin, [writer.nhwc[source], order],
                            [writer.output(op.outputs[0], keep)],
                            fb.BuiltinOptions.ReducerOptions, options)
            return
    order = writer.constant(f"axes_{index}", np.asarray(axes, np.int32))
    writer.operator(builtin, [writer.tensor(source), order], [writer.tensor(op.outputs[0])],
                    fb.BuiltinOptions.ReducerOptions, options)


def write_softmax(writer: Writer, ctx: OperationContext) -> None:
    """SOFTMAX over the last axis with NNAPI's beta."""
    op = ctx.operation
    options = fb.SoftmaxOptionsT()
    options.beta = float(ctx.scalar(1))
    writer.operator(fb.BuiltinOperator.SOFTMAX, [writer.tensor(op.inputs[0])],
                    [writer.tensor(op.outputs[0])], fb.BuiltinOptions.SoftmaxOptions, options)


def write_layer_norm(writer: Writer, ctx: OperationContext) -> None:
    """``(x - mean) * rsqrt(var + eps) * scale + bias`` over the axes ``[axis, rank)``."""
    op, index = ctx.operation, ctx.index
    dims = writer.model.inferred_dims[op.inputs[0]]
    rank = len(dims)
    axes = list(range(int(ctx.scalar(3)) % rank, rank))
    reduced = tuple(1 if i in axes else d for i, d in enumerate(dims))
    x = writer.tensor(op.inputs[0])
    order = writer.constant(f"axes_{index}", np.asarray(axes, np.int32))
    keep = fb.ReducerOptionsT()
    keep.keepDims = True

    def temp(name: str, shape: tuple[int, ...]) -> int:
        return writer.add_tensor(f"{name}_{index}", shape)

    def binary(builtin: int, kind: int, options: Any, a: int, b: int, out: int) -> int:
        if options is not None:
            options.fusedActivationFunction = 0
        writer.operator(builtin, [a, b], [out], kind, options)
        return out

    mean = temp("mean", reduced)
    writer.operator(fb.BuiltinOperator.MEAN, [x, order], [mean],
                    fb.BuiltinOptions.ReducerOptions, keep)
    squares = binary(fb.BuiltinOperator.SQUARED_DIFFERENCE,
                     fb.BuiltinOptions.SquaredDifferenceOptions, fb.SquaredDifferenceOptionsT(),
                     x, mean, temp("squares", dims))
    variance = temp("variance", reduced)
    writer.operator(fb.BuiltinOperator.MEAN, [squares, order], [variance],
                    fb.BuiltinOptions.ReducerOptions, keep)
    epsilon = writer.constant(f"epsilon_{index}", np.asarray([ctx.scalar(4)], np.float32))
    shifted = binary(fb.BuiltinOperator.ADD, fb.BuiltinOptions.AddOptions, fb.AddOptionsT(),
                     variance, epsilon, temp("shifted", reduced))
    inverse = temp("inverse", reduced)
    writer.operator(fb.BuiltinOperator.RSQRT, [shifted], [inverse])
    centred = binary(fb.BuiltinOperator.SUB, fb.BuiltinOptions.SubOptions, fb.SubOptionsT(),
                     x, mean, temp("centred", dims))
    normal = binary(fb.BuiltinOperator.MUL, fb.BuiltinOptions.MulOptions, fb.MulOptionsT(),
                    centred, inverse, temp("normal", dims))
    has_bias = ctx.n_inputs > 2 and not ctx.is_omitted(2)
    output = writer.tensor(op.outputs[0])
    scaled = binary(fb.BuiltinOperator.MUL, fb.BuiltinOptions.MulOptions, fb.MulOptionsT(),
                    normal, writer.tensor(op.inputs[1]),
                    temp("scaled", dims) if has_bias else output)
    if has_bias:
        binary(fb.BuiltinOperator.ADD, fb.BuiltinOptions.AddOptions, fb.AddOptionsT(), scaled,
               writer.tensor(op.inputs[2]), output)


WRITERS: dict[OperationType, Callable[[Writer, OperationContext], None]] = {
    **dict.fromkeys(_BUILTINS, write_reduction),
    Op.NNRT_LAYER_NORMALIZATION: write_layer_norm, Op.SOFTMAX: write_softmax,
}
#: Every builtin these writers write.
BUILTINS = frozenset({*_BUILTINS.values(), fb.BuiltinOperator.SOFTMAX,
                      fb.BuiltinOperator.SQUARED_DIFFERENCE, fb.BuiltinOperator.RSQRT,
                      fb.BuiltinOperator.ADD, fb.BuiltinOperator.SUB, fb.BuiltinOperator.MUL})
