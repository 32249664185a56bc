"""Lowering base shared by the families: :class:`Lowerer`, ``Lowering``, ``static_context``.

:class:`Lowerer` maps the partition's operands onto graph values (model inputs, constants and
folded values, kernel results) and emits nodes; a ``Lowering`` turns one operation into kernel
calls through it. Scalar parameters are read through a static
:class:`~nnrt.ops._framework.context.OperationContext` (the partition step only selects
operations whose parameters are constants), with the reference kernels' own helpers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from nnrt.drivers.cpu.graph import Graph, Node, Ref, Value
from nnrt.errors import OpFailed
from nnrt.model.model import Model
from nnrt.model.types import OperandType
from nnrt.ops._framework.context import OperationContext, static_context

__all__ = ["Lowerer", "Lowering", "static_context"]

Array = np.ndarray[Any, Any]
#: Element types of the non-float32 tensors some operations take (see ``support.py``).
_DTYPES = {OperandType.TENSOR_INT32: "int32", OperandType.TENSOR_BOOL8: "bool",
           OperandType.TENSOR_QUANT8_ASYMM: "uint8", OperandType.TENSOR_QUANT8_ASYMM_SIGNED: "int8"}


class Lowerer:
    """Builds the graph of one partition, operation by operation."""

    def __init__(self, model: Model, folded: Mapping[int, Array]) -> None:
        self.model = model
        self.graph = Graph()
        self._folded = folded
        self._values: dict[int, int] = {}
        self._output_of = {k: j for j, k in enumerate(model.outputs)}
        for position, k in enumerate(model.inputs):
            self._values[k] = self.graph.add(Value(model.inferred_dims[k], input=position,
                                                   dtype=self.dtype(k)))
            self.graph.inputs.append(self._values[k])

    # -- values ------------------------------------------------------------------------------

    def const_of(self, operand: int) -> Array | None:
        """The compile-time value of ``operand`` (model constant or folded), if any."""
        if operand in self._folded:
            return self._folded[operand]
        if self.model.operands[operand].is_constant:
            return self.model.constant_value(operand)
        return None

    def constant(self, array: Array, dtype: str = "float32") -> Ref:
        """A new constant value holding ``array`` as C-contiguous ``dtype`` (float32)."""
        arr = np.ascontiguousarray(array, dtype=np.dtype(dtype))
        return Ref(self.graph.add(Value(tuple(arr.shape), const=arr, dtype=dtype)))

    def dtype(self, operand: int) -> str:
        """The element type of ``operand``'s values: float32, int32, bool, uint8 or int8."""
        return _DTYPES.get(self.model.operands[operand].type, "float32")

    def ref(self, operand: int) -> Ref:
        """The value of ``operand``: produced earlier, a model input, or a constant."""
        if operand in self._values:
            return Ref(self._values[operand])
        value = self.const_of(operand)
        if value is None:
            raise OpFailed(f"operand {operand} is read before it is computed")
        ref = self.constant(value, self.dtype(operand))
        self._values[operand] = ref.value
        return ref

    def shape(self, operand: int) -> tuple[int, ...]:
        """The static shape of ``operand``."""
        return tuple(self.model.inferred_dims[operand])

    def result(self, operand: int) -> int:
        """A new value for operation output ``operand`` (a model output if it is one)."""
        value = self.graph.add(Value(self.shape(operand), output=self._output_of.get(operand),
                                     dtype=self.dtype(operand)))
        self._values[operand] = value
        return value

    def intermediate(self, shape: tuple[int, ...]) -> Ref:
        """A new value computed at execution time that no operand names (packed weights)."""
        return Ref(self.graph.add(Value(tuple(shape))))

    def temp(self, shape: tuple[int, ...]) -> Ref:
        """A scratch temporary for one kernel call."""
        return Ref(self.graph.add(Value(tuple(shape), temp=True)))

    # -- nodes -------------------------------------------------------------------------------

    def emit(self, kernel: str, out: int, args: list[Any], op: int, *,
             act_slot: int | None = None, elementwise: bool = False) -> None:
        """Append the call ``kernel(out, *args)``."""
        temps = tuple(a.value for a in args if isinstance(a, Ref) and self.graph.values[
            a.value].temp)
        self.graph.nodes.append(Node(kernel, out, args, (op,), act_slot=act_slot,
                                     elementwise=elementwise, temps=temps))

    def view(self, kernel: str, operand: int | None, args: list[Any], op: int,
             shape: tuple[int, ...]) -> Ref:
        """Append ``out = kernel(*args)`` returning a view of ``args[0]``.

        With ``operand`` (an operation output) the view becomes its value, unless it is a
        model output: then the data is copied into the output.
        """
        source = args[0]
        if operand is not None and operand in self._output_of:
            out = self.result(operand)
            self.emit("copy", out, [source], op)
            return Ref(out)
        alias = source.value if isinstance(source, Ref) else None
        dtype = self.graph.values[source.value].dtype if isinstance(source, Ref) else "float32"
        value = self.graph.add(Value(shape, alias=alias, dtype=dtype))
        if operand is not None:
            self._values[operand] = value
        self.graph.nodes.append(Node(kernel, value, args, (op,), view=True))
        return Ref(value)

    def finish(self) -> Graph:
        """The graph, with every model output computed into its output array."""
        graph = self.graph
        for j, k in enumerate(self.model.outputs):
            value = self._values.get(k)
            if value is None or graph.values[value].output != j:
                source = self.ref(k)
                out = graph.add(Value(self.shape(k), output=j, dtype=self.dtype(k)))
                graph.nodes.append(Node("copy", out, [source], ()))
                value = out
            graph.outputs.append(value)
        return graph


Lowering = Callable[[Lowerer, OperationContext], None]
