"""``Writer``: the tensors, buffers and operators of one partition's TFLite subgraph, and the
layout each tensor is held in.

A tensor per operand, created on first use (constants carry their bytes in the model's
buffers), of the TFLite type of the operand's (:data:`TENSOR_TYPES`; TENSOR_FLOAT16 is held in
float32, its constants converted here; quantised tensors carry their scales and zero points,
and a partition with a uint8 convolution on a per-channel filter holds its uint8 tensors as
int8, :mod:`.quantized`). TFLite computes in NHWC; NNAPI operations with the
NCHW layout flag (and ONNX-imported models) are NCHW. The writer keeps, per rank-4 operand of
an NCHW region, the tensor holding it in NHWC order
(:meth:`Writer.nhwc_tensor`, :meth:`Writer.nhwc_output`) besides the tensor in NNAPI's order
(:meth:`Writer.tensor`): one TRANSPOSE converts between them, once, where a tensor enters or
leaves a region; constants are permuted here instead.

The writer also holds what the rewrites decided for the partition (:mod:`.patterns`,
:mod:`.folding`): chains written as one builtin, folded scales and shifts, fused activations,
and the operations they absorb.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ai_edge_litert import schema_py_generated as fb

from nnrt.drivers.litert.folding import (
    BiasFold,
    Fold,
    Fused,
    fold_affine,
    fold_bias,
    fuse_activations,
)
from nnrt.drivers.litert.onehot import OneHot, one_hot_patterns
from nnrt.drivers.litert.patterns import (
    Chain,
    gelu_patterns,
    hard_swish_patterns,
    softmax_patterns,
)
from nnrt.drivers.litert.quantized import (
    QUANT8,
    as_signed,
    operand_parameters,
    signed_partition,
)
from nnrt.model.model import Model
from nnrt.model.types import OperandType

__all__ = ["TENSOR_TYPES", "TO_NCHW", "TO_NHWC", "Writer"]

Array = np.ndarray[Any, Any]
T = OperandType
#: NCHW -> NHWC and back, as TRANSPOSE permutations (``nhwc[i] = nchw[TO_NHWC[i]]``).
TO_NHWC = (0, 2, 3, 1)
TO_NCHW = (0, 3, 1, 2)
#: NNAPI tensor type -> the TFLite tensor type and the numpy type of its bytes. TENSOR_FLOAT16
#: is computed in float32 (NNAPI allows float16 precision or better): its constants are
#: converted here, once, exactly; the dispatch converts its inputs and outputs as it copies them.
#: The quantised types carry their scales and zero points (:mod:`.quantized`).
TENSOR_TYPES: dict[OperandType, tuple[int, type[np.generic]]] = {
    T.TENSOR_FLOAT32: (fb.TensorType.FLOAT32, np.float32),
    T.TENSOR_FLOAT16: (fb.TensorType.FLOAT32, np.float32),
    T.TENSOR_INT32: (fb.TensorType.INT32, np.int32),
    T.TENSOR_BOOL8: (fb.TensorType.BOOL, np.bool_),
    **QUANT8,
}
_BY_DTYPE = {np.dtype(dtype): kind for kind, dtype in TENSOR_TYPES.values()}


class Writer:
    """Collects the tensors, buffers and operators of one subgraph."""

    def __init__(self, model: Model) -> None:
        self.model = model
        #: Whether the partition's TENSOR_QUANT8_ASYMM tensors are INT8, moved by -128
        #: (:func:`~nnrt.drivers.litert.quantized.signed_partition`).
        self.signed = signed_partition(model)
        self.tensors: list[Any] = []
        self.buffers: list[Any] = [fb.BufferT()]  # buffer 0: the empty sentinel
        self.codes: dict[int, int] = {}
        self.operators: list[Any] = []
        self._tensor_of: dict[int, int] = {}
        #: Operands computed in the model but written as constants: their values.
        self._bound: dict[int, Array] = {}
        #: Tensors computed from TENSOR_FLOAT16 operands -> their copies rounded to float16.
        self._float16: dict[int, int] = {}
        #: Operands held in NHWC order (rank-4 tensors of an NCHW region): their tensors.
        self.nhwc: dict[int, int] = {}
        #: Chains written as one builtin at one of their operations: GELU at its ERF,
        #: HARD_SWISH at its ``x + 3``, SOFTMAX at its EXP.
        self.gelus: dict[int, Chain] = gelu_patterns(model)
        self.hard_swishes: dict[int, Chain] = hard_swish_patterns(model)
        self.softmaxes: dict[int, Chain] = softmax_patterns(model)
        #: One-hot matrix products written as a GATHER, at their FULLY_CONNECTED.
        self.one_hots: dict[int, OneHot] = one_hot_patterns(model)
        chains: list[tuple[int, Chain | OneHot]] = [
            *self.gelus.items(), *self.hard_swishes.items(), *self.softmaxes.items(),
            *self.one_hots.items()]
        in_chains = frozenset(i for key, chain in chains for i in (key, *chain.absorbed))
        #: Convolutions with the per-channel MULs / ADDs after them folded in.
        self.folds: dict[int, Fold] = fold_affine(model, in_chains)
        #: FULLY_CONNECTEDs with the bias ADD after them folded in.
        self.bias_folds: dict[int, BiasFold] = fold_bias(model, in_chains)
        #: Operations taking the activation operation after them as their fused activation.
        self.fused: dict[int, Fused] = fuse_activations(
            model, {**self.folds, **self.bias_folds}, in_chains)
        #: Operands written into the tensor of another (a RESHAPE's output, once the ADD
        #: after it is folded away, is the ADD's output).
        self._alias = dict(fold.alias for fold in self.bias_folds.values() if fold.alias)
        #: The operations those rewrites replace (not written).
        self.absorbed = frozenset([*(i for fold in self.folds.values() for i in fold.absorbed),
                                   *(i for fold in self.bias_folds.values()
                                     for i in fold.absorbed),
                                   *(f.absorbed for f in self.fused.values()),
                                   *(i for _, chain in chains for i in chain.absorbed)])

    def result(self, index: int, options: Any) -> int:
        """The operand operation ``index`` writes once folded, its fused activation set on
        ``options`` (when the operation has one)."""
        fold: Fold | BiasFold | None = self.folds.get(index) or self.bias_folds.get(index)
        fused = self.fused.get(index)
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
        index = self._alias.get(index, index)
        found = self._tensor_of.get(index)
        if found is not None:
            return found
        dims = self.model.inferred_dims[index]
        kind, _, quantization = self.form(index)
        if index in self.nhwc:
            found = self._tensor_of[index] = self._add(f"operand_{index}", dims, kind, None,
                                                       quantization)
            self._transpose(self.nhwc[index], found, TO_NCHW)
            return found
        found = self._tensor_of[index] = self._add(f"operand_{index}", dims, kind,
                                                   self.value(index), quantization)
        return found

    def form(self, index: int) -> tuple[int, type[np.generic], Any]:
        """Operand ``index``'s tensor as written: its TFLite type, the numpy type of its bytes
        and its quantisation parameters (:data:`TENSOR_TYPES`; a TENSOR_QUANT8_ASYMM operand
        of a :attr:`signed` partition is INT8)."""
        operand = self.model.operands[index]
        kind, dtype = TENSOR_TYPES[operand.type]
        if self.signed and operand.type == T.TENSOR_QUANT8_ASYMM:
            kind, dtype = fb.TensorType.INT8, np.int8
        return kind, dtype, operand_parameters(operand, self.signed)

    def value(self, index: int) -> Array | None:
        """The bytes of constant operand ``index`` as written (:meth:`form`), or None."""
        value = self.model.constant_value(index)
        if value is None:
            return None
        if self.signed and self.model.operands[index].type == T.TENSOR_QUANT8_ASYMM:
            return np.ascontiguousarray(as_signed(value))
        return np.ascontiguousarray(value, self.form(index)[1])

    def in_nhwc(self, inputs: list[int], output: int) -> bool:
        """Whether an element-wise operation reading ``inputs`` computes ``output`` in NHWC:
        the output is rank 4, each input is in NHWC already or a constant, and one is in NHWC."""
        if len(self.model.inferred_dims[output]) != 4:
            return False
        return any(k in self.nhwc for k in inputs) and all(
            k in self.nhwc or self.model.constant_value(k) is not None for k in inputs)

    def nhwc_tensor(self, index: int) -> int:
        """The tensor of operand ``index`` (NCHW, or a constant of rank <= 4 broadcast as one)
        in NHWC order: permuted here for a constant, transposed once otherwise."""
        found = self.nhwc.get(index)
        if found is not None:
            return found
        dims = self.model.inferred_dims[index]
        kind, _, quantization = self.form(index)
        value = self.value(index)
        if value is not None:
            full = value.reshape((1,) * (4 - len(dims)) + tuple(dims))
            found = self.constant(f"operand_{index}_nhwc", full.transpose(TO_NHWC),
                                  quantization)
        else:
            found = self._add(f"operand_{index}_nhwc", tuple(dims[i] for i in TO_NHWC), kind,
                              None, quantization)
            self._transpose(self.tensor(index), found, TO_NHWC)
        self.nhwc[index] = found
        return found

    def nhwc_output(self, index: int) -> int:
        """A new tensor for output operand ``index`` (rank 4, NCHW) computed in NHWC."""
        dims = self.model.inferred_dims[index]
        kind, _, quantization = self.form(index)
        found = self.nhwc[index] = self._add(
            f"operand_{index}_nhwc", tuple(dims[i] for i in TO_NHWC), kind, None, quantization)
        return found

    def output(self, index: int, nhwc: bool) -> int:
        """The tensor an operation computes output operand ``index`` into: in NHWC (an NCHW
        region) or in its NNAPI layout."""
        return self.nhwc_output(index) if nhwc else self.tensor(index)

    def state(self, name: str, dims: tuple[int, ...]) -> int:
        """A new float32 variable tensor: a recurrent operation's state, updated in place."""
        found = self._add(name, dims, fb.TensorType.FLOAT32, None)
        self.tensors[found].isVariable = True
        return found

    def add_tensor(self, name: str, dims: tuple[int, ...],
                   kind: int = fb.TensorType.FLOAT32, quantization: Any = None) -> int:
        """A new tensor computed in the partition (no operand of its own)."""
        return self._add(name, dims, kind, None, quantization)

    def like(self, name: str, tensor: int, dims: tuple[int, ...]) -> int:
        """A new tensor of ``tensor``'s type and quantisation with ``dims``."""
        source = self.tensors[tensor]
        return self._add(name, dims, source.type, None, source.quantization)

    def constant(self, name: str, value: Array, quantization: Any = None) -> int:
        """A new constant tensor (int32 shapes and the like) holding ``value``."""
        return self._add(name, value.shape, _BY_DTYPE[value.dtype], np.ascontiguousarray(value),
                         quantization)

    def bind_constant(self, index: int, value: Array) -> None:
        """Operand ``index`` (computed in the model) written as a constant holding ``value``,
        already converted to its form (:meth:`form`)."""
        kind, dtype, quantization = self.form(index)
        value = self._bound[index] = np.ascontiguousarray(value, dtype)
        self._tensor_of[index] = self._add(f"operand_{index}", self.model.inferred_dims[index],
                                           kind, value, quantization)

    def constant_of(self, index: int) -> Array | None:
        """The value of operand ``index`` if it is a constant of the model or was written as
        one (:meth:`bind_constant`), in its written form; None otherwise."""
        found = self._bound.get(index)
        return found if found is not None else self.value(index)

    def cast(self, source: int, kind: int) -> int:
        """A new tensor of TFLite type ``kind`` holding tensor ``source`` converted by a CAST."""
        target = self._add(f"cast_{len(self.tensors)}",
                           tuple(int(d) for d in self.tensors[source].shape), kind, None)
        options = fb.CastOptionsT()
        options.inDataType = self.tensors[source].type
        options.outDataType = kind
        self.operator(fb.BuiltinOperator.CAST, [source], [target],
                      fb.BuiltinOptions.CastOptions, options)
        return target

    def as_float16(self, index: int, tensor: int) -> int:
        """``tensor`` (of TENSOR_FLOAT16 operand ``index``) holding float16 values only: itself
        for a partition input or a constant, else (a value computed in float32) rounded by a
        CAST to FLOAT16 and back, once per tensor; for the operations whose result a value
        float16 cannot hold would change beyond float16's rounding (comparisons, CAST)."""
        if (self.model.operands[index].type != T.TENSOR_FLOAT16 or index in self.model.inputs
                or self.model.constant_value(index) is not None):
            return tensor
        found = self._float16.get(tensor)
        if found is None:
            found = self._float16[tensor] = self.cast(
                self.cast(tensor, fb.TensorType.FLOAT16), fb.TensorType.FLOAT32)
        return found

    def operator(self, builtin: int, inputs: list[int], outputs: list[int],
                 options_type: int = 0, options: Any = None) -> None:
        """Append an operator running ``builtin`` (-1 in ``inputs``: an omitted input)."""
        code = self.codes.setdefault(builtin, len(self.codes))
        operator = fb.OperatorT()
        operator.opcodeIndex = code
        operator.inputs = np.asarray(inputs, np.int32)
        operator.outputs = np.asarray(outputs, np.int32)
        operator.builtinOptionsType = options_type
        operator.builtinOptions = options
        self.operators.append(operator)

    def _transpose(self, source: int, target: int, perm: tuple[int, ...]) -> None:
        order = self.constant(f"perm_{len(self.tensors)}", np.asarray(perm, np.int32))
        self.operator(fb.BuiltinOperator.TRANSPOSE, [source, order], [target],
                      fb.BuiltinOptions.TransposeOptions, fb.TransposeOptionsT())

    def _add(self, name: str, dims: tuple[int, ...], kind: int, data: Array | None,
             quantization: Any = None) -> int:
        tensor = fb.TensorT()
        tensor.name = name.encode()
        tensor.shape = np.asarray(dims, np.int32)
        tensor.type = kind
        tensor.buffer = 0
        tensor.quantization = quantization
        if data is not None:
            buffer = fb.BufferT()
            buffer.data = np.frombuffer(data.tobytes(), np.uint8)
            tensor.buffer = len(self.buffers)
            self.buffers.append(buffer)
        self.tensors.append(tensor)
        return len(self.tensors) - 1
