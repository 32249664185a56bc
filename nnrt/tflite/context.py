"""What a converter sees of one TFLite operator: its inputs as operands or constants, its
options, and :meth:`OpContext.emit` adding the NNAPI operation that computes its outputs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from ai_edge_litert import schema_py_generated as fb

from nnrt.memory import Memory
from nnrt.model.builder import Arg, ModelBuilder, Omitted, Tensor
from nnrt.model.model import rename_operand
from nnrt.model.types import OperandType, OperationType
from nnrt.tflite.errors import OperatorUnsupported
from nnrt.tflite.sparse import densify
from nnrt.tflite.tensors import OperandSpec, buffer_array, constant, operand_spec

__all__ = ["CONVERTERS", "CUSTOM_CONVERTERS", "Array", "OpContext", "Subgraph", "converter",
           "custom_converter"]

Array = np.ndarray[Any, Any]
_A = fb.ActivationFunctionType
#: TFLite fused activations NNAPI fuses too (FuseCode).
_FUSED = {_A.NONE: 0, _A.RELU: 1, _A.RELU_N1_TO_1: 2, _A.RELU6: 3}


class Subgraph:
    """One TFLite subgraph being imported: the builder and the operand of each tensor."""

    def __init__(self, model: Any, graph: Any, memory: Memory, index: int = 0) -> None:
        self.builder = ModelBuilder()
        #: The whole TFLite model (the subgraphs WHILE / IF / CALL_ONCE name).
        self.model = model
        self.index = index
        self._dense: dict[int, Array] = {}
        self.graph = graph
        self.tensors: list[Any] = graph.tensors or []
        self.buffers: list[Any] = model.buffers or []
        self.memory = memory
        self.values: dict[int, Tensor] = {}

    def where(self, t: int) -> str:
        """How messages name tensor ``t``."""
        name = self.tensors[t].name
        return f"tensor {t} ({name.decode(errors='replace')!r})" if name else f"tensor {t}"

    def spec(self, t: int) -> OperandSpec:
        """The operand tensor ``t`` becomes."""
        return operand_spec(self.tensors[t], self.where(t))

    def constant_value(self, t: int) -> Array | None:
        """The value of tensor ``t`` if it is a constant (has buffer data), else None; a
        sparse constant densified (once)."""
        tensor = self.tensors[t]
        value = buffer_array(tensor, self.buffers[tensor.buffer], self.memory)
        if value is None or tensor.sparsity is None:
            return value
        dense = self._dense.get(t)
        if dense is None:
            shape = tuple(int(d) for d in tensor.shape) if tensor.shape is not None else ()
            dense = densify(value, shape, tensor.sparsity,
                            f"tflite: subgraphs[{self.index}].tensors[{t}].sparsity")
            self._dense[t] = dense
        return dense

    def operand(self, t: int) -> Tensor:
        """The operand holding tensor ``t`` (a constant one is created on first use)."""
        found = self.values.get(t)
        if found is not None:
            return found
        value = self.constant_value(t)
        if value is None:
            raise OperatorUnsupported(f"{self.where(t)} is read before it is computed")
        tensor = constant(self.builder, value, self.spec(t), self.where(t))
        self.values[t] = tensor
        return tensor


class OpContext:
    """One operator being converted."""

    def __init__(self, subgraph: Subgraph, op: Any, index: int, code: int) -> None:
        self.subgraph = subgraph
        #: The builtin operator code.
        self.code = code
        self.op = op
        self.index = index
        self.options = op.builtinOptions
        self.inputs: list[int] = [int(i) for i in (op.inputs if op.inputs is not None else [])]
        self.outputs: list[int] = [int(i) for i in (op.outputs if op.outputs is not None
                                                    else [])]

    @property
    def builder(self) -> ModelBuilder:
        """The model builder."""
        return self.subgraph.builder

    def option(self, name: str, default: Any = 0) -> Any:
        """A builtin option's value (its default when the operator has no options table)."""
        return getattr(self.options, name, default) if self.options is not None else default

    def has_input(self, k: int) -> bool:
        """Whether input ``k`` is given (not absent, not -1)."""
        return k < len(self.inputs) and self.inputs[k] >= 0

    def input(self, k: int) -> Tensor:
        """Input ``k`` as an operand."""
        if not self.has_input(k):
            raise OperatorUnsupported(f"input {k} is missing")
        return self.subgraph.operand(self.inputs[k])

    def spec(self, k: int) -> OperandSpec:
        """The operand spec of input ``k``."""
        return self.subgraph.spec(self.inputs[k])

    def const(self, k: int, what: str) -> Array:
        """Input ``k``'s constant value (``OperatorUnsupported`` if it is computed)."""
        value = self.subgraph.constant_value(self.inputs[k]) if self.has_input(k) else None
        if value is None:
            raise OperatorUnsupported(f"input {k} ({what}) must be a constant")
        return np.asarray(value)

    def ints(self, k: int, what: str) -> list[int]:
        """Input ``k``'s constant integers, flattened."""
        return [int(v) for v in self.const(k, what).reshape(-1)]

    def out_spec(self, k: int = 0) -> OperandSpec:
        """The operand spec of output ``k``."""
        return self.subgraph.spec(self.outputs[k])

    def activation(self) -> int:
        """The fused activation as an NNAPI FuseCode."""
        code = int(self.option("fusedActivationFunction"))
        if code not in _FUSED:
            raise OperatorUnsupported(f"fused activation {code} has no NNAPI FuseCode")
        return _FUSED[code]

    def emit(self, op_type: OperationType, *args: Arg, outputs: Sequence[int] = (0,),
             types: Sequence[OperandSpec] | None = None) -> list[Tensor]:
        """Add ``op_type`` computing the operator's ``outputs`` (their TFLite types unless
        ``types``); records and names them."""
        specs = list(types) if types is not None else [self.out_spec(k) for k in outputs]
        tensors = self.builder.operation(op_type, *args, outputs=len(specs),
                                         output_types=[s.output_type for s in specs])
        for k, tensor in zip(outputs, tensors, strict=False):
            self.define(k, tensor)
        return tensors

    def define(self, k: int, tensor: Tensor) -> None:
        """Output ``k`` is ``tensor`` (named after the TFLite tensor)."""
        t = self.outputs[k]
        name = self.subgraph.tensors[t].name
        if name:
            rename_operand(self.builder.model, tensor.index, name.decode(errors="replace"))
        self.subgraph.values[t] = tensor

    def scratch(self, op_type: OperationType, *args: Arg) -> Tensor:
        """An intermediate result of output 0's type (before a reshape or an activation)."""
        spec = self.out_spec(0)
        return self.builder.operation(op_type, *args, output_types=[spec.output_type])[0]

    @staticmethod
    def omitted(kind: OperandType) -> Omitted:
        """An omitted optional input of ``kind``."""
        return Omitted(kind)


Converter = Callable[[OpContext], None]
#: TFLite builtin operator code -> its converter.
CONVERTERS: dict[int, Converter] = {}


#: Custom operator code -> its converter (the custom ops NNAPI operations compute).
CUSTOM_CONVERTERS: dict[str, Converter] = {}


def custom_converter(name: str) -> Callable[[Converter], Converter]:
    """Register the decorated function as the converter of the custom operator ``name``."""
    def register(fn: Converter) -> Converter:
        CUSTOM_CONVERTERS[name] = fn
        return fn
    return register


def converter(*codes: int) -> Callable[[Converter], Converter]:
    """Register the decorated function as the converter of the builtins ``codes``."""
    def register(fn: Converter) -> Converter:
        for code in codes:
            CONVERTERS[code] = fn
        return fn
    return register
