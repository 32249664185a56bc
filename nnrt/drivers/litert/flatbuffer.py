"""Writing a partition as a TFLite flatbuffer: the litert plugin's bytecode.

One partition (an outlined, finished NNAPI model whose operations :mod:`.support` selected)
becomes one TFLite model with one subgraph: a tensor per operand (constants carry their bytes in
the model's buffers), one operator per NNAPI operation — or a few, or none where a rewrite
absorbed it — the NNAPI scalars as the builtin's options. The schema is LiteRT's own
(``ai_edge_litert.schema_py_generated``), written with ``flatbuffers``; the file identifier is
``TFL3``.

TFLite computes in NHWC; NNAPI operations with the NCHW layout flag (and ONNX-imported models)
are NCHW. An NCHW convolution, pooling, transposed convolution or resize reads its input in
NHWC and leaves its output there; element-wise operations, reductions and CONCATENATION whose
inputs are already in NHWC (or are constants, permuted once here) stay in NHWC too. So a whole
NCHW region runs in NHWC, with one TRANSPOSE where a tensor enters it and one where a tensor
leaves it for an operation that needs the NNAPI layout (or is a partition output) — not a
transpose pair around every operation (:mod:`.writer`).

The writers are grouped by what they write: :mod:`.elementwise`, :mod:`.tensors`,
:mod:`.windows`, :mod:`.matmul`, :mod:`.reductions`, :mod:`.recurrent`.
"""

from __future__ import annotations

from collections.abc import Callable

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as fb

from nnrt.drivers.litert import elementwise, matmul, recurrent, reductions, tensors, windows
from nnrt.drivers.litert.writer import TENSOR_TYPES, Writer
from nnrt.errors import OpFailed
from nnrt.model.model import Model
from nnrt.model.operation import operation_name
from nnrt.model.types import OperationType
from nnrt.ops._framework.context import OperationContext, static_context
from nnrt.tflite.schema import FILE_IDENTIFIER

__all__ = ["FILE_IDENTIFIER", "WRITERS", "WRITTEN", "write_partition"]

_FAMILIES = (elementwise, tensors, windows, matmul, reductions, recurrent)
#: NNAPI operation type -> the function writing it.
WRITERS: dict[OperationType, Callable[[Writer, OperationContext], None]] = {
    kind: write for family in _FAMILIES for kind, write in family.WRITERS.items()}
#: Every builtin the compiler writes (the operations', the layout changes' TRANSPOSE, the
#: rewrites'): the only ones the dispatch lets LiteRT run.
WRITTEN = frozenset({fb.BuiltinOperator.TRANSPOSE,
                     *(builtin for family in _FAMILIES for builtin in family.BUILTINS)})


def write_partition(model: Model) -> bytes:
    """The TFLite flatbuffer computing ``model`` (every operation selected by the plugin)."""
    writer = Writer(model)
    for index in model.inputs:
        if model.operands[index].type not in TENSOR_TYPES:
            raise OpFailed(f"input operand {index}: {model.operands[index].type.name} is not "
                           "supported by the litert compiler")
        writer.tensor(index)
    for index in model.run_order:
        if index not in writer.absorbed:
            _write_operation(writer, index)
    subgraph = fb.SubGraphT()
    subgraph.tensors = writer.tensors
    subgraph.operators = writer.operators
    subgraph.inputs = np.asarray([writer.tensor(k) for k in model.inputs], np.int32)
    subgraph.outputs = np.asarray([writer.tensor(k) for k in model.outputs], np.int32)
    subgraph.name = b"main"
    tflite = fb.ModelT()
    tflite.version = 3
    tflite.description = b"nnrt litert partition"
    tflite.subgraphs = [subgraph]
    tflite.buffers = writer.buffers
    codes = []
    for builtin in sorted(writer.codes, key=writer.codes.__getitem__):
        code = fb.OperatorCodeT()
        code.builtinCode = builtin
        code.deprecatedBuiltinCode = min(builtin, 127)
        code.version = 1
        codes.append(code)
    tflite.operatorCodes = codes
    builder = flatbuffers.Builder(1024)
    builder.Finish(tflite.Pack(builder), file_identifier=FILE_IDENTIFIER)
    return bytes(builder.Output())


def _write_operation(writer: Writer, index: int) -> None:
    ctx = static_context(writer.model, index)
    write = WRITERS.get(ctx.operation.type)
    if write is None:  # the partition step selects only what has a writer
        raise OpFailed(f"{ctx.where()}: the litert compiler has no writer for "
                       f"{operation_name(ctx.operation.type)}")
    write(writer, ctx)
