"""Writing the matrix products: FULLY_CONNECTED and BATCH_MATMUL.

FULLY_CONNECTED flattens its input to ``[batch, input_size]`` as NNAPI does (``keepNumDims``
false) and takes its fused activation, or the activation operation folded after it;
BATCH_MATMUL takes ``adj_x`` / ``adj_y`` as TFLite's ``adjX`` / ``adjY``.
"""

from __future__ import annotations

from collections.abc import Callable

from ai_edge_litert import schema_py_generated as fb

from nnrt.drivers.litert.writer import Writer
from nnrt.model.types import OperationType
from nnrt.ops._framework.context import OperationContext

__all__ = ["BUILTINS", "WRITERS"]

Op = OperationType


def write_fully_connected(writer: Writer, ctx: OperationContext) -> None:
    """FULLY_CONNECTED (input, weights, bias) with its fused activation."""
    op = ctx.operation
    options = fb.FullyConnectedOptionsT()
    options.fusedActivationFunction = int(ctx.scalar(3))
    options.keepNumDims = False
    output = writer.result(ctx.index, options)
    writer.operator(fb.BuiltinOperator.FULLY_CONNECTED,
                    [writer.tensor(k) for k in op.inputs[:3]], [writer.tensor(output)],
                    fb.BuiltinOptions.FullyConnectedOptions, options)


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
BUILTINS = frozenset({fb.BuiltinOperator.FULLY_CONNECTED, fb.BuiltinOperator.BATCH_MATMUL})
