"""Writing a partition as a TFLite flatbuffer: the litert plugin's bytecode.

One partition (an outlined, finished NNAPI model whose operations :mod:`.support` selected)
becomes one TFLite model with one subgraph: a tensor per float32 operand (constants carry their
bytes in the model's buffers), one operator per NNAPI operation, the NNAPI scalars as the
builtin's options. The schema is LiteRT's own (``ai_edge_litert.schema_py_generated``), written
with ``flatbuffers``; the file identifier is ``TFL3``.

TFLite computes in NHWC; NNAPI operations with the NCHW layout flag (and ONNX-imported models)
are NCHW. An NCHW convolution or pooling reads its input in NHWC and leaves its output there;
element-wise operations and MEAN whose inputs are already in NHWC (or are constants, permuted
once here) stay in NHWC too. So a whole NCHW region runs in NHWC, with one TRANSPOSE where a
tensor enters it and one where a tensor leaves it for an operation that needs the NNAPI layout
(or is a partition output) — not a transpose pair around every operation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as fb

from nnrt.drivers.litert.folding import Fold, Fused, fold_affine, fuse_activations
from nnrt.drivers.litert.patterns import Gelu, gelu_patterns
from nnrt.drivers.litert.support import (
    Window,
    conv_window,
    mean_axes,
    pool_window,
)
from nnrt.errors import OpFailed
from nnrt.model.model import Model
from nnrt.model.operation import Operation
from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import OperationContext, static_context

__all__ = ["BUILTINS", "FILE_IDENTIFIER", "WRITTEN", "write_partition"]

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
    Op.CONCATENATION: fb.BuiltinOperator.CONCATENATION, Op.MEAN: fb.BuiltinOperator.MEAN,
    Op.TRANSPOSE: fb.BuiltinOperator.TRANSPOSE, Op.BATCH_MATMUL: fb.BuiltinOperator.BATCH_MATMUL,
    # written as MEAN, SQUARED_DIFFERENCE, MEAN, ADD, RSQRT, SUB, MUL, MUL, ADD
    Op.NNRT_LAYER_NORMALIZATION: fb.BuiltinOperator.MEAN,
    Op.NNRT_ERF: fb.BuiltinOperator.GELU,  # only inside a GELU pattern (:mod:`.patterns`)
}
#: Every builtin the compiler writes: the operations' and the layout changes' TRANSPOSE.
WRITTEN = frozenset({*BUILTINS.values(), fb.BuiltinOperator.TRANSPOSE, fb.BuiltinOperator.PAD,
                     fb.BuiltinOperator.PADV2, fb.BuiltinOperator.RSQRT,
                     fb.BuiltinOperator.SQUARED_DIFFERENCE})
#: NCHW -> NHWC and back, as TRANSPOSE permutations (``nhwc[i] = nchw[_TO_NHWC[i]]``).
_TO_NHWC = (0, 2, 3, 1)
_TO_NCHW = (0, 3, 1, 2)
#: Operations computed in whatever layout their inputs have (all of them rank 4).
_ELEMENTWISE = frozenset({Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.RELU, Op.RELU1, Op.RELU6,
                          Op.LOGISTIC, Op.TANH})
#: Data inputs (NNAPI input slots) each operation passes to its builtin, in order; the other
#: inputs are parameters that become options. RESHAPE's new shape and CONCATENATION's inputs
#: are handled by the writer.
_DATA_SLOTS: dict[OperationType, tuple[int, ...]] = {
    Op.ADD: (0, 1), Op.SUB: (0, 1), Op.MUL: (0, 1), Op.DIV: (0, 1),
    Op.RELU: (0,), Op.RELU1: (0,), Op.RELU6: (0,), Op.LOGISTIC: (0,), Op.TANH: (0,),
    Op.FULLY_CONNECTED: (0, 1, 2), Op.CONV_2D: (0, 1, 2), Op.DEPTHWISE_CONV_2D: (0, 1, 2),
    Op.AVERAGE_POOL_2D: (0,), Op.MAX_POOL_2D: (0,), Op.SOFTMAX: (0,), Op.RESHAPE: (0,),
    Op.TRANSPOSE: (0,), Op.BATCH_MATMUL: (0, 1),
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
        #: Operands held in NHWC order (rank-4 tensors of an NCHW region): their tensors.
        self.nhwc: dict[int, int] = {}
        #: Convolutions with the per-channel MUL / ADD after them folded in.
        #: GELUs written as one builtin at their ERF.
        self.gelus: dict[int, Gelu] = gelu_patterns(model)
        in_gelus = frozenset([*self.gelus, *(i for g in self.gelus.values() for i in g.absorbed)])
        self.folds: dict[int, Fold] = {
            i: fold for i, fold in fold_affine(model).items()
            if not in_gelus.intersection(fold.absorbed)}
        #: Operations taking the activation operation after them as their fused activation.
        self.fused: dict[int, Fused] = fuse_activations(model, self.folds, in_gelus)
        #: The MUL / ADD / activation operations those folds replace.
        self.absorbed = frozenset([*(i for fold in self.folds.values() for i in fold.absorbed),
                                   *(f.absorbed for f in self.fused.values()),
                                   *(i for g in self.gelus.values() for i in g.absorbed)])

    def result(self, index: int, options: Any) -> int:
        """The operand operation ``index`` writes once folded, its fused activation set on
        ``options`` (when the operation has one)."""
        fold, fused = self.folds.get(index), self.fused.get(index)
        output = self.model.operations[index].outputs[0] if fold is None else fold.output
        if fold is not None:
            options.fusedActivationFunction = fold.activation
        if fused is not None:
            options.fusedActivationFunction = fused.activation
            output = fused.output
        return output

    def tensor(self, index: int) -> int:
        """The tensor of operand ``index`` in its NNAPI layout (created on first use, with its
        bytes if constant; transposed back once if an NCHW region computed it in NHWC)."""
        found = self._tensor_of.get(index)
        if found is not None:
            return found
        dims = self.model.inferred_dims[index]
        if index in self.nhwc:
            found = self._tensor_of[index] = self._add(f"operand_{index}", dims,
                                                       fb.TensorType.FLOAT32, None)
            self._transpose(self.nhwc[index], found, _TO_NCHW)
            return found
        value = self.model.constant_value(index)
        data = None if value is None else np.ascontiguousarray(value, np.float32)
        found = self._tensor_of[index] = self._add(f"operand_{index}", dims, fb.TensorType.FLOAT32,
                                                   data)
        return found

    def nhwc_tensor(self, index: int) -> int:
        """The tensor of operand ``index`` (NCHW, or a constant of rank <= 4 broadcast as one)
        in NHWC order: permuted here for a constant, transposed once otherwise."""
        found = self.nhwc.get(index)
        if found is not None:
            return found
        dims = self.model.inferred_dims[index]
        value = self.model.constant_value(index)
        if value is not None:
            full = np.asarray(value, np.float32).reshape((1,) * (4 - len(dims)) + tuple(dims))
            found = self.constant(f"operand_{index}_nhwc", full.transpose(_TO_NHWC))
        else:
            found = self._add(f"operand_{index}_nhwc", tuple(dims[i] for i in _TO_NHWC),
                              fb.TensorType.FLOAT32, None)
            self._transpose(self.tensor(index), found, _TO_NHWC)
        self.nhwc[index] = found
        return found

    def nhwc_output(self, index: int) -> int:
        """A new tensor for output operand ``index`` (rank 4, NCHW) computed in NHWC."""
        dims = self.model.inferred_dims[index]
        found = self.nhwc[index] = self._add(f"operand_{index}_nhwc",
                                             tuple(dims[i] for i in _TO_NHWC),
                                             fb.TensorType.FLOAT32, None)
        return found

    def add_tensor(self, name: str, dims: tuple[int, ...]) -> int:
        """A new float32 tensor computed in the partition (no operand of its own)."""
        return self._add(name, dims, fb.TensorType.FLOAT32, None)

    def _transpose(self, source: int, target: int, perm: tuple[int, ...]) -> None:
        order = self.constant(f"perm_{len(self.tensors)}", np.asarray(perm, np.int32))
        self.operator(fb.BuiltinOperator.TRANSPOSE, [source, order], [target],
                      fb.BuiltinOptions.TransposeOptions, fb.TransposeOptionsT())

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


def _batch_matmul(ctx: OperationContext) -> tuple[int, Any]:
    options = fb.BatchMatMulOptionsT()
    options.adjX, options.adjY = (bool(ctx.scalar(slot)) if ctx.n_inputs > slot
                                  and not ctx.is_omitted(slot) else False for slot in (2, 3))
    return fb.BuiltinOptions.BatchMatMulOptions, options


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
    Op.SOFTMAX: _softmax, Op.BATCH_MATMUL: _batch_matmul,
    **dict.fromkeys((Op.RELU, Op.RELU1, Op.RELU6, Op.LOGISTIC, Op.TANH), _no_options),
}


def _in_nhwc(writer: _Writer, index: int, op: Operation) -> bool:
    """Whether element-wise operation ``op`` (``index``) computes in NHWC: its output is rank
    4 and each data input is in NHWC already or a constant, and at least one is in NHWC."""
    model = writer.model
    if len(model.inferred_dims[op.outputs[0]]) != 4:
        return False
    data = [op.inputs[slot] for slot in _DATA_SLOTS[op.type]]
    return any(k in writer.nhwc for k in data) and all(
        k in writer.nhwc or model.constant_value(k) is not None for k in data)


def _write_window(writer: _Writer, builtin: int, ctx: OperationContext, op: Operation,
                  window: Window | str) -> None:
    """A convolution or pooling; an NCHW one reads and writes NHWC tensors."""
    options_type, options = _OPTIONS[op.type](ctx)
    slots = _DATA_SLOTS[op.type]
    resolved = _window(ctx, window)
    dims = writer.model.inferred_dims[op.inputs[0]]
    fold = writer.folds.get(ctx.index)
    output = writer.result(ctx.index, options)
    if resolved.nchw:
        source = writer.nhwc_tensor(op.inputs[0])
        dims = tuple(dims[i] for i in _TO_NHWC)
        outputs = [writer.nhwc_output(output)]
    else:
        source = writer.tensor(op.inputs[0])
        outputs = [writer.tensor(output)]
    if resolved.pads is not None:
        source = _pad(writer, ctx.index, source, dims, resolved.pads,
                      -np.inf if op.type == Op.MAX_POOL_2D else 0.0)
    if fold is None:
        inputs = [source, *(writer.tensor(op.inputs[slot]) for slot in slots[1:])]
    else:
        inputs = [source, writer.constant(f"filter_{ctx.index}", fold.filter),
                  writer.constant(f"bias_{ctx.index}", fold.bias)]
    writer.operator(builtin, inputs, outputs, options_type, options)


def _pad(writer: _Writer, index: int, source: int, dims: tuple[int, ...],
         pads: tuple[int, int, int, int], fill: float) -> int:
    """``source`` (NHWC ``dims``) padded by (top, bottom, left, right) elements of ``fill``."""
    top, bottom, left, right = pads
    padded = (dims[0], dims[1] + top + bottom, dims[2] + left + right, dims[3])
    target = writer.add_tensor(f"padded_{index}", padded)
    amounts = writer.constant(f"pads_{index}", np.asarray(
        [[0, 0], [top, bottom], [left, right], [0, 0]], np.int32))
    if fill == 0.0:
        writer.operator(fb.BuiltinOperator.PAD, [source, amounts], [target],
                        fb.BuiltinOptions.PadOptions, fb.PadOptionsT())
    else:
        value = writer.constant(f"fill_{index}", np.asarray([fill], np.float32))
        writer.operator(fb.BuiltinOperator.PADV2, [source, amounts, value], [target],
                        fb.BuiltinOptions.PadV2Options, fb.PadV2OptionsT())
    return target


def _write_mean(writer: _Writer, index: int, ctx: OperationContext, op: Operation) -> None:
    axes, keep = mean_axes(ctx)
    source = op.inputs[0]
    options = fb.ReducerOptionsT()
    options.keepDims = keep
    if source in writer.nhwc:
        moved = sorted(_TO_NHWC.index(a) for a in axes)
        kept_nchw = [a for a in range(4) if a not in axes]
        kept_nhwc = [_TO_NHWC[p] for p in range(4) if p not in moved]
        if keep or kept_nchw == kept_nhwc:
            order = writer.constant(f"axes_{index}", np.asarray(moved, np.int32))
            output = (writer.nhwc_output(op.outputs[0]) if keep
                      else writer.tensor(op.outputs[0]))
            writer.operator(fb.BuiltinOperator.MEAN, [writer.nhwc[source], order], [output],
                            fb.BuiltinOptions.ReducerOptions, options)
            return
    order = writer.constant(f"axes_{index}", np.asarray(axes, np.int32))
    writer.operator(fb.BuiltinOperator.MEAN, [writer.tensor(source), order],
                    [writer.tensor(op.outputs[0])], fb.BuiltinOptions.ReducerOptions, options)


def _write_layer_norm(writer: _Writer, index: int, ctx: OperationContext, op: Operation
                      ) -> None:
    """``(x - mean) * rsqrt(var + eps) * scale + bias`` over the axes ``[axis, rank)``."""
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


def _write_operation(writer: _Writer, index: int, op: Operation) -> None:
    ctx = static_context(writer.model, index)
    builtin = BUILTINS[op.type]
    if op.type in (Op.CONV_2D, Op.DEPTHWISE_CONV_2D):
        _write_window(writer, builtin, ctx, op, conv_window(ctx))
        return
    if op.type in (Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D):
        _write_window(writer, builtin, ctx, op, pool_window(ctx))
        return
    if op.type == Op.MEAN:
        _write_mean(writer, index, ctx, op)
        return
    if op.type == Op.NNRT_ERF:
        gelu = writer.gelus.get(index)
        if gelu is None:  # the partition step takes ERF only inside a GELU
            raise OpFailed(f"{ctx.where()}: ERF outside a GELU pattern")
        options = fb.GeluOptionsT()
        options.approximate = False
        writer.operator(fb.BuiltinOperator.GELU, [writer.tensor(gelu.input)],
                        [writer.tensor(gelu.output)], fb.BuiltinOptions.GeluOptions, options)
        return
    if op.type == Op.NNRT_LAYER_NORMALIZATION:
        _write_layer_norm(writer, index, ctx, op)
        return
    if op.type == Op.TRANSPOSE:
        rank = len(writer.model.inferred_dims[op.inputs[0]])
        given = ctx.constant(1) if ctx.n_inputs > 1 and not ctx.is_omitted(1) else None
        perm = (np.asarray(given, np.int32).reshape(-1) if given is not None
                else np.arange(rank - 1, -1, -1, dtype=np.int32))
        order = writer.constant(f"perm_{index}", perm)
        writer.operator(builtin, [writer.tensor(op.inputs[0]), order],
                        [writer.tensor(op.outputs[0])], fb.BuiltinOptions.TransposeOptions,
                        fb.TransposeOptionsT())
        return
    if op.type == Op.CONCATENATION:
        inputs = [writer.tensor(k) for k in op.inputs[:-1]]
        options = fb.ConcatenationOptionsT()
        rank = len(writer.model.inferred_dims[op.outputs[0]])
        options.axis = int(ctx.scalar(len(op.inputs) - 1)) % rank
        writer.operator(builtin, inputs, [writer.tensor(op.outputs[0])],
                        fb.BuiltinOptions.ConcatenationOptions, options)
        return
    if op.type in _ELEMENTWISE and _in_nhwc(writer, index, op):
        inputs = [writer.nhwc_tensor(op.inputs[slot]) for slot in _DATA_SLOTS[op.type]]
        options_type, options = _OPTIONS[op.type](ctx)
        output = writer.result(index, options)
        writer.operator(builtin, inputs, [writer.nhwc_output(output)], options_type, options)
        return
    inputs = [writer.tensor(op.inputs[slot]) for slot in _DATA_SLOTS[op.type]]
    if op.type != Op.RESHAPE:
        options_type, options = _OPTIONS[op.type](ctx)
        writer.operator(builtin, inputs, [writer.tensor(writer.result(index, options))],
                        options_type, options)
        return
    dims = writer.model.inferred_dims[op.outputs[0]]  # RESHAPE: the shape resolved here
    inputs.append(writer.constant(f"shape_{index}", np.asarray(dims, np.int32)))
    reshape = fb.ReshapeOptionsT()
    reshape.newShape = np.asarray(dims, np.int32)
    writer.operator(builtin, inputs, [writer.tensor(op.outputs[0])],
                    fb.BuiltinOptions.ReshapeOptions, reshape)


def write_partition(model: Model) -> bytes:
    """The TFLite flatbuffer computing ``model`` (every operation selected by the plugin)."""
    writer = _Writer(model)
    for index in model.inputs:
        if model.operands[index].type != OperandType.TENSOR_FLOAT32:
            raise OpFailed(f"input operand {index}: {model.operands[index].type.name} is not "
                           "supported by the litert compiler")
        writer.tensor(index)
    for index in model.run_order:
        if index not in writer.absorbed:
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
