"""Writing the matrix products: FULLY_CONNECTED and BATCH_MATMUL.

FULLY_CONNECTED flattens its input to ``[batch, input_size]`` as NNAPI does (``keepNumDims``
false) and takes its fused activation, or the activation operation folded after it, and the
bias ADD after it folded into its bias (:func:`.folding.fold_bias`);
BATCH_MATMUL takes ``adj_x`` / ``adj_y`` as TFLite's ``adjX`` / ``adjY``. A FULLY_CONNECTED
ending a one-hot product (:func:`.onehot.one_hot_patterns`) is a GATHER of its table's rows
instead: the indices flattened, clamped to [-1, N] and moved by one (int32 MAXIMUM, MINIMUM,
ADD), so that an index outside 0..N-1 takes a row holding the bias alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from ai_edge_litert import schema_py_generated as fb

from nnrt.drivers.litert.onehot import OneHot
from nnrt.drivers.litert.quantized import QUANT8, quantized_weights
from nnrt.drivers.litert.writer import Writer
from nnrt.model.types import OperationType
from nnrt.ops._framework.context import OperationContext

__all__ = ["BUILTINS", "WRITERS"]

Op = OperationType
B = fb.BuiltinOperator


def write_fully_connected(writer: Writer, ctx: OperationContext) -> None:
    """FULLY_CONNECTED (input, weights, bias) with its fused activation."""
    one_hot = writer.one_hots.get(ctx.index)
    if one_hot is not None:
        _write_one_hot(writer, ctx.index, one_hot)
        return
    op = ctx.operation
    options = fb.FullyConnectedOptionsT()
    options.fusedActivationFunction = int(ctx.scalar(3))
    options.keepNumDims = False
    output = writer.result(ctx.index, options)
    inputs = [writer.tensor(op.inputs[0])]
    if ctx.input_type(0) in QUANT8:
        inputs += quantized_weights(writer, ctx)
    else:
        inputs += [writer.tensor(k) for k in op.inputs[1:3]]
    fold = writer.bias_folds.get(ctx.index)
    if fold is not None:  # the bias ADD after it, folded in
        inputs[2] = writer.constant(f"bias_{ctx.index}", fold.bias)
    writer.operator(fb.BuiltinOperator.FULLY_CONNECTED, inputs, [writer.tensor(output)],
                    fb.BuiltinOptions.FullyConnectedOptions, options)


def _write_one_hot(writer: Writer, index: int, one_hot: OneHot) -> None:
    """GATHER of ``one_hot.table`` rows at ``clamp(indices, -1, N) + 1``."""
    dims = tuple(writer.model.inferred_dims[one_hot.indices])
    count = math.prod(dims)
    current = writer.tensor(one_hot.indices)
    if dims != (count,):
        flat = writer.add_tensor(f"one_hot_flat_{index}", (count,), fb.TensorType.INT32)
        options = fb.ReshapeOptionsT()
        options.newShape = np.asarray([count], np.int32)
        writer.operator(B.RESHAPE, [current, writer.constant(
            f"one_hot_shape_{index}", options.newShape)], [flat],
            fb.BuiltinOptions.ReshapeOptions, options)
        current = flat
    size = one_hot.table.shape[0] - 2
    for builtin, value in ((B.MAXIMUM, -1), (B.MINIMUM, size), (B.ADD, 1)):
        bound = writer.constant(f"one_hot_{builtin}_{index}", np.asarray([value], np.int32))
        result = writer.add_tensor(f"one_hot_{builtin}_out_{index}", (count,),
                                   fb.TensorType.INT32)
        if builtin == B.ADD:
            writer.operator(B.ADD, [current, bound], [result], fb.BuiltinOptions.AddOptions,
                            fb.AddOptionsT())
        else:
            writer.operator(builtin, [current, bound], [result],
                            fb.BuiltinOptions.MaximumMinimumOptions, fb.MaximumMinimumOptionsT())
        current = result
    options = fb.GatherOptionsT()
    options.axis = 0
    options.batchDims = 0
    writer.operator(B.GATHER, [writer.constant(f"one_hot_table_{index}", one_hot.table),
                               current], [writer.tensor(one_hot.output)],
                    fb.BuiltinOptions.GatherOptions, options)


def write_batch_matmul(writer: Writer, ctx: OperationContext) -> None:
    """BATCH_MATMUL with its adjoint flags (false when omitted)."""
    op = ctx.operation
    options = fb.BatchMatMulOptionsT()
    options.adjX, options.adjY = (bool(ctx.scalar(slot)) if not ctx.is_omitted(slot) else False
                                  for slot in (2, 3))
    writer.operator(fb.BuiltinOperator.BATCH_MATMUL, [writer.tensor(k) for k in op.inputs[:2]],
                    [writer.tensor(op.outputs[0])], fb.BuiltinOptions.BatchMatMulOptions,
                    options)


WRITERS: dict[OperationType, Callable[[Writer, OperationContext], None]] = {
    Op.FULLY_CONNECTED: write_fully_connected, Op.BATCH_MATMUL: write_batch_matmul,
}
#: Every builtin these writers write.
BUILTINS = frozenset({B.FULLY_CONNECTED, B.BATCH_MATMUL, B.RESHAPE, B.MAXIMUM, B.MINIMUM, B.ADD,
                      B.GATHER})
