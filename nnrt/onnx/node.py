"""Converters: one function per ONNX operator, and the context each one sees.

A converter reads its node through a :class:`NodeContext` and returns the node's output values::

    @converter("Relu")
    def relu(n: NodeContext) -> list[Value]:
        return [n.graph.op(Op.RELU, n.input(0))]

Every attribute a converter does not read is checked against its default: an attribute set to
anything else makes the node unsupported (a converter cannot silently ignore semantics it does
not implement). A converter raises :class:`~nnrt.onnx.errors.NodeUnsupported` (via
:meth:`NodeContext.fail`) for inputs or attributes it cannot import exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import numpy as np

from nnrt.onnx.errors import NeedsConstant, NodeUnsupported
from nnrt.onnx.graph import Graph, Value
from nnrt.onnx.qparams import QParams
from nnrt.onnx.weights import tensor_array

__all__ = ["CONVERTERS", "FOLDS", "LAZY_INPUTS", "NEWEST_DEFINITION", "Converter", "Fold",
           "NodeContext", "converter", "fold", "node_attributes"]

Array = np.ndarray[Any, Any]


class NodeContext:
    """One ONNX node being converted: its inputs, attributes, opset and the graph."""

    def __init__(self, graph: Graph, node: Any, inputs: Sequence[Value | None],
                 attributes: dict[str, Any], opset: int) -> None:
        self.graph = graph
        self.node = node
        self.op_type: str = node.op_type
        self.name: str = node.name
        self.inputs = list(inputs)
        self.opset = opset
        self._attributes = attributes
        self.read: set[str] = set()

    # -- inputs -------------------------------------------------------------------------------

    @property
    def n_inputs(self) -> int:
        """How many inputs the node has (trailing omitted ones included)."""
        return len(self.inputs)

    def has_input(self, i: int) -> bool:
        """Whether optional input ``i`` is present."""
        return i < len(self.inputs) and self.inputs[i] is not None

    def input(self, i: int) -> Value:
        """Input ``i`` (required)."""
        value = self.inputs[i] if i < len(self.inputs) else None
        if value is None:
            self.fail(f"input {i} is required")
        return value

    def const_input(self, i: int, what: str) -> Array:
        """The value of input ``i``, which must be known at import time."""
        value = self.input(i)
        if value.const is None:
            raise NeedsConstant(f"input {i} ({what}) must be known at import time (a constant, "
                                "or computed from shapes: pass input_shapes= to nnrt.onnx.load "
                                "for dynamic inputs)")
        return value.const

    def static_shape(self, value: Value, what: str = "input") -> tuple[int, ...]:
        """``value``'s shape, which must be fully known."""
        if not value.static:
            self.fail(f"{what} {value.name!r} has unknown dims {list(value.shape)}; pass "
                      "input_shapes= to nnrt.onnx.load")
        return value.shape

    # -- attributes ---------------------------------------------------------------------------

    def attr(self, name: str, default: Any = None) -> Any:
        """Attribute ``name`` (its Python value), or ``default`` when absent."""
        self.read.add(name)
        return self._attributes.get(name, default)

    def has_attr(self, name: str) -> bool:
        """Whether the node sets attribute ``name``."""
        return name in self._attributes

    def unread_attributes(self) -> list[str]:
        """Attributes set on the node that the converter never read."""
        return [k for k in self._attributes if k not in self.read]

    # -- errors -------------------------------------------------------------------------------

    def fail(self, reason: str) -> NoReturn:
        """Report this node unsupported, with ``reason``."""
        raise NodeUnsupported(reason)


Converter = Callable[[NodeContext], Sequence[Value]]

#: A fold: a node between DequantizeLinear inputs and QuantizeLinear consumers of the given
#: parameters, as quantised NNAPI operations (its quantised results), or None when it does not
#: fold (see :mod:`nnrt.onnx.folding`).
Fold = Callable[[NodeContext, QParams], Sequence[Value] | None]

#: ONNX operator type (default domain) -> converter.
CONVERTERS: dict[str, Converter] = {}

#: ONNX operator type -> its fold into quantised NNAPI operations.
FOLDS: dict[str, Fold] = {}

#: Operator types whose converters see lazily dequantised inputs as they are (every other
#: converter gets them computed, :meth:`Graph.materialized`).
LAZY_INPUTS: set[str] = set()

#: ONNX operator type -> the newest opset whose definition of it the converter implements, for
#: converters that implement a definition newer than opset 21 (the importer's baseline).
NEWEST_DEFINITION: dict[str, int] = {}


def converter(*op_types: str, newest: int | None = None,
              lazy: bool = False) -> Callable[[Converter], Converter]:
    """Register the decorated function as the converter of ``op_types``; ``newest`` is the
    newest opset whose definition it implements, when that is past opset 21; ``lazy``: it
    takes lazily dequantised inputs as they are (it reads their quantised values)."""

    def decorate(fn: Converter) -> Converter:
        for op_type in op_types:
            if op_type in CONVERTERS:
                raise RuntimeError(f"ONNX operator {op_type} has two converters")
            CONVERTERS[op_type] = fn
            if newest is not None:
                NEWEST_DEFINITION[op_type] = newest
            if lazy:
                LAZY_INPUTS.add(op_type)
        return fn

    return decorate


def fold(*op_types: str) -> Callable[[Fold], Fold]:
    """Register the decorated function as the fold of ``op_types`` (see :data:`FOLDS`)."""

    def decorate(fn: Fold) -> Fold:
        for op_type in op_types:
            if op_type in FOLDS:
                raise RuntimeError(f"ONNX operator {op_type} has two folds")
            FOLDS[op_type] = fn
        return fn

    return decorate


def node_attributes(node: Any) -> dict[str, Any]:
    """A node's attributes as Python values (tensors as arrays, strings decoded)."""
    from onnx import helper  # noqa: PLC0415 - the onnx extra

    result: dict[str, Any] = {}
    for attribute in node.attribute:
        if attribute.ref_attr_name:
            raise NodeUnsupported(f"attribute {attribute.name} refers to a function attribute")
        value = helper.get_attribute_value(attribute)
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        elif isinstance(value, list) and value and isinstance(value[0], bytes):
            value = [v.decode("utf-8", "replace") for v in value]
        elif attribute.type == attribute.TENSOR:
            try:
                value = tensor_array(value, f"attribute {attribute.name}")
            except ValueError as exc:
                raise NodeUnsupported(str(exc)) from None
        result[attribute.name] = value
    return result
