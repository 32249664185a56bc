"""Writing a partition as a TFLite flatbuffer: the litert plugin's bytecode.

One partition (an outlined, finished NNAPI model whose operations :mod:`.support` selected)
becomes one TFLite model with one subgraph: a tensor per float32 operand (constants carry their
bytes in the model's buffers), one operator per NNAPI operation, the NNAPI scalars as the
builtin's options. The schema is LiteRT's own (``ai_edge_litert.schema_py_generated``), written
with ``flatbuffers``; the file identifier is ``TFL3``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as fb

from nnrt.drivers.litert.support import Window, conv_window, pool_window, static_context
from nnrt.errors import OpFailed
from nnrt.model.model import Model
from nnrt.model.operation import Operation
from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import OperationContext

__all__ = ["BUILTINS", "FILE_IDENTIFIER", "write_partition"]

Op = OperationType
FILE_IDENTIFIER = b"TFL3"
#: NNAPI operation type -> the TFLite builtin it is written as.
BUILTINS: dict[OperationType, int] = {
    Op.ADD: fb.BuiltinOperator.ADD, Op.SUB: fb.BuiltinOperator.SUB,
    Op.MUL: fb.BuiltinOperator.MUL, Op.DIV: fb.BuiltinOperator.DIV,
    Op.RELU: fb.BuiltinOperator.RELU, Op.RELU1: fb.BuiltinOperator.RELU_N1_TO_1,
    Op.RELU6: fb.BuiltinOperator.RELU6, Op.LOGISTIC: fb.BuiltinOperator.LOGISTIC,
    Op.TANH: fb.BuiltinOperator.TANH, Op.FULLY_CONNECTED: fb.BuiltinOperator.FULLY_CONNECTED,
    Op.CONV_2D: fb.BuiltinOperator.CONV_2D,
    Op.DEPTHWISE_CONV_2D: fb.BuiltinOperator.DEPTHWISE_CONV_2D,
    Op.AVERAGE_POOL_2D: fb.BuiltinOperator.AVERAGE_POOL_2D,
    Op.MAX_POOL_2D: fb.BuiltinOperator.MAX_POOL_2D, Op.SOFTMAX: fb.BuiltinOperator.SOFTMAX,
    Op.RESHAPE: fb.BuiltinOperator.RESHAPE,
    Op.CONCATENATION: fb.BuiltinOperator.CONCATENATION,
}
#: Data inputs (NNAPI input slots) each operation passes to its builtin, in order; the other
#: inputs are parameters that become options. RESHAPE's new shape and CONCATENATION's inputs
#: are handled by the writer.
_DATA_SLOTS: dict[OperationType, tuple[int, ...]] = {
    Op.ADD: (0, 1), Op.SUB: (0, 1), Op.MUL: (0, 1), Op.DIV: (0, 1),
    Op.RELU: (0,), Op.RELU1: (0,), Op.RELU6: (0,), Op.LOGISTIC: (0,), Op.TANH: (0,),
    Op.FULLY_CONNECTED: (0, 1, 2), Op.CONV_2D: (0, 1, 2), Op.DEPTHWISE_CONV_2D: (0, 1, 2),
    Op.AVERAGE_POOL_2D: (0,), Op.MAX_POOL_2D: (0,), Op.SOFTMAX: (0,), Op.RESHAPE: (0,),
}
_PADDING = {"SAME": fb.Padding.SAME, "VALID": fb.Padding.VALID}


class _Writer:
    """Collects the tensors, buffers and operators of one subgraph."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.tensors: list[Any] = []
        self.buffers: list[Any] = [fb.BufferT()]  # buffer 0: the empty sentinel
        self.codes: dict[int, int] = {}
        self.operators: list[Any] = []
        self._tensor_of: dict[int, int] = {}

    def tensor(self, index: int) -> int:
        """The tensor of operand ``index`` (created on first use, with its bytes if constant)."""
        found = self._tensor_of.get(index)
        if found is not None:
            return found
        dims = self.model.inferred_dims[index]
        value = self.model.constant_value(index)
        data = None if value is None else np.ascontiguousarray(value, np.float32)
        found = self._tensor_of[index] = self._add(f"operand_{index}", dims, fb.TensorType.FLOAT32,
                                                   data)
        return found

    def constant(self, name: str, value: np.ndarray[Any, Any]) -> int:
        """A new constant tensor (int32 shapes and the like) holding ``value``."""
        kind = fb.TensorType.INT32 if value.dtype == np.int32 else fb.TensorType.FLOAT32
        return self._add(name, value.shape, kind, np.ascontiguousarray(value))

    def _add(self, name: str, dims: tuple[int, ...], kind: int,
             data: np.ndarray[Any, Any] | None) -> int:
        tensor = fb.TensorT()
        tensor.name = name.encode()
        tensor.shape = np.asarray(dims, np.int32)
        tensor.type = kind
        tensor.buffer = 0
        if data is not None:
            buffer = fb.BufferT()
            buffer.data = np.frombuffer(data.tobytes(), np.uint8)
            tensor.buffer = len(self.buffers)
            self.buffers.append(buffer)
        self.tensors.append(tensor)
        return len(self.tensors) - 1

    def operator(self, builtin: int, inputs: list[int], outputs: list[int],
                 options_type: int = 0, options: Any = None) -> None:
        code = self.codes.setdefault(builtin, len(self.codes))
        operator = fb.OperatorT()
        operator.opcodeIndex = code
        operator.inputs = np.asarray(inputs, np.int32)
        operator.outputs = np.asarray(outputs, np.int32)
        operator.builtinOptionsType = options_type
        operator.builtinOptions = options
        self.operators.append(operator)


def _activation(ctx: OperationContext, slot: int) -> int:
    return int(ctx.scalar(slot)) if ctx.n_inputs > slot and not ctx.is_omitted(slot) else 0


def _binary(options: type, kind: int) -> Callable[[OperationContext], tuple[int, Any]]:
    def make(ctx: OperationContext) -> tuple[int, Any]:
        made = options()
        made.fusedActivationFunction = _activation(ctx, 2)
        return kind, made
    return make


def _fully_connected(ctx: OperationContext) -> tuple[int, Any]:
    options = fb.FullyConnectedOptionsT()
    options.fusedActivationFunction = _activation(ctx, 3)
    options.keepNumDims = False
    return fb.BuiltinOptions.FullyConnectedOptions, options


def _window(ctx: OperationContext, window: Window | str) -> Window:
    if isinstance(window, str):  # the partition step refused it: never selected
        raise OpFailed(f"{ctx.where()}: {window}")
    return window


def _conv(ctx: OperationContext) -> tuple[int, Any]:
    window = _window(ctx, conv_window(ctx))
    depthwise = ctx.operation.type == Op.DEPTHWISE_CONV_2D
    options = fb.DepthwiseConv2DOptionsT() if depthwise else fb.Conv2DOptionsT()
    options.padding = _PADDING[window.padding]
    options.strideH, options.strideW = window.stride_h, window.stride_w
    options.dilationHFactor, options.dilationWFactor = window.dilation_h, window.dilation_w
    options.fusedActivationFunction = window.activation
    if depthwise:
        options.depthMultiplier = window.multiplier
        return fb.BuiltinOptions.DepthwiseConv2DOptions, options
    return fb.BuiltinOptions.Conv2DOptions, options


def _pool(ctx: OperationContext) -> tuple[int, Any]:
    window = _window(ctx, pool_window(ctx))
    options = fb.Pool2DOptionsT()
    options.padding = _PADDING[window.padding]
    options.strideH, options.strideW = window.stride_h, window.stride_w
    options.filterHeight, options.filterWidth = window.filter_h, window.filter_w
    options.fusedActivationFunction = window.activation
    return fb.BuiltinOptions.Pool2DOptions, options


def _softmax(ctx: OperationContext) -> tuple[int, Any]:
    options = fb.SoftmaxOptionsT()
    options.beta = float(ctx.scalar(1))
    return fb.BuiltinOptions.SoftmaxOptions, options


def _no_options(ctx: OperationContext) -> tuple[int, Any]:
    return fb.BuiltinOptions.NONE, None


_OPTIONS: dict[OperationType, Callable[[OperationContext], tuple[int, Any]]] = {
    Op.ADD: _binary(fb.AddOptionsT, fb.BuiltinOptions.AddOptions),
    Op.SUB: _binary(fb.SubOptionsT, fb.BuiltinOptions.SubOptions),
    Op.MUL: _binary(fb.MulOptionsT, fb.BuiltinOptions.MulOptions),
    Op.DIV: _binary(fb.DivOptionsT, fb.BuiltinOptions.DivOptions),
    Op.FULLY_CONNECTED: _fully_connected,
    Op.CONV_2D: _conv, Op.DEPTHWISE_CONV_2D: _conv,
    Op.AVERAGE_POOL_2D: _pool, Op.MAX_POOL_2D: _pool,
    Op.SOFTMAX: _softmax,
    **dict.fromkeys((Op.RELU, Op.RELU1, Op.RELU6, Op.LOGISTIC, Op.TANH), _no_options),
}


def _write_operation(writer: _Writer, index: int, op: Operation) -> None:
    ctx = static_context(writer.model, index)
    outputs = [writer.tensor(k) for k in op.outputs]
    builtin = BUILTINS[op.type]
    if op.type == Op.CONCATENATION:
        inputs = [writer.tensor(k) for k in op.inputs[:-1]]
        options = fb.ConcatenationOptionsT()
        rank = len(writer.model.inferred_dims[op.outputs[0]])
        options.axis = int(ctx.scalar(len(op.inputs) - 1)) % rank
        writer.operator(builtin, inputs, outputs, fb.BuiltinOptions.ConcatenationOptions,
                        options)
        return
    inputs = [writer.tensor(op.inputs[slot]) for slot in _DATA_SLOTS[op.type]]
    if op.type == Op.RESHAPE:
        dims = writer.model.inferred_dims[op.outputs[0]]
        inputs.append(writer.constant(f"shape_{index}", np.asarray(dims, np.int32)))
        options = fb.ReshapeOptionsT()
        options.newShape = np.asarray(dims, np.int32)
        writer.operator(builtin, inputs, outputs, fb.BuiltinOptions.ReshapeOptions, options)
        return
    options_type, options = _OPTIONS[op.type](ctx)
    writer.operator(builtin, inputs, outputs, options_type, options)


def write_partition(model: Model) -> bytes:
    """The TFLite flatbuffer computing ``model`` (every operation selected by the plugin)."""
    writer = _Writer(model)
    for index in model.inputs:
        if model.operands[index].type != OperandType.TENSOR_FLOAT32:
            raise OpFailed(f"input operand {index}: {model.operands[index].type.name} is not "
                           "supported by the litert compiler")
        writer.tensor(index)
    for index in model.run_order:
        _write_operation(writer, index, model.operations[index])
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
