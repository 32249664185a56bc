"""The compiler's intermediate form: values and kernel calls in run order.

A :class:`Value` is one array the partition computes with: a model input, a constant (folded or
pre-packed, known at compile time), a kernel result, or a scratch temporary of one call. A
:class:`Node` is one kernel call: ``kernel(out, *args)`` writing value ``out``, or, for a view
node, ``out = kernel(*args)`` returning a view of its first argument. Arguments are
:class:`Ref` (a value), Python literals, or tuples of those.

Storage: a value with ``alias`` shares the storage of that value (a view, or a node fused to
compute in place); :meth:`Graph.root` follows aliases to the value that owns the storage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Graph", "Node", "Ref", "Value"]

Array = np.ndarray[Any, Any]


@dataclass(frozen=True)
class Ref:
    """An argument naming value ``value`` of the graph."""

    value: int


@dataclass
class Value:
    """One array of the partition: its shape and where it comes from."""

    shape: tuple[int, ...]
    #: Compile-time contents (folded constants, pre-packed weights), C-contiguous, of
    #: ``dtype``.
    const: Array | None = None
    #: Model input position, if this is a model input.
    input: int | None = None
    #: Model output position, if this value is a model output.
    output: int | None = None
    #: The value whose storage this one shares (view or in-place), if any.
    alias: int | None = None
    #: Whether this is a scratch temporary of a single kernel call.
    temp: bool = False
    #: Model output position whose array (viewed with ``shape``) stores this value, if any.
    stored_in: int | None = None
    #: Element type: "float32", or "int32" / "bool" for the operations that take those
    #: (arena slots of those types are views of the float32 arena's bytes).
    dtype: str = "float32"


@dataclass
class Node:
    """One kernel call."""

    kernel: str
    #: The value written (or, for a view node, returned).
    out: int
    args: list[Any]
    #: The model operation indices this call implements (several once fused).
    ops: tuple[int, ...]
    #: Whether the kernel returns a view of its first argument instead of writing ``out``.
    view: bool = False
    #: Index in ``args`` of the fused activation code, for kernels that take one.
    act_slot: int | None = None
    #: Whether the kernel is element-wise (may compute in place over an operand).
    elementwise: bool = False
    #: Scratch temporaries of this call (values with ``temp``), already among ``args``.
    temps: tuple[int, ...] = ()


@dataclass
class Graph:
    """Values and nodes of one partition, plus the value of each model output."""

    values: list[Value] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)

    def add(self, value: Value) -> int:
        """Add ``value``; returns its id."""
        self.values.append(value)
        return len(self.values) - 1

    def root(self, value: int) -> int:
        """The value owning ``value``'s storage."""
        seen = 0
        while (alias := self.values[value].alias) is not None:
            value = alias
            seen += 1
            if seen > len(self.values):
                raise RuntimeError("alias cycle in the compiler graph")
        return value

    def reads(self, node: Node) -> list[int]:
        """The values ``node`` reads, once per occurrence among its arguments."""
        found: list[int] = []

        def walk(arg: Any) -> None:
            if isinstance(arg, Ref):
                found.append(arg.value)
            elif isinstance(arg, tuple):
                for item in arg:
                    walk(item)

        for arg in node.args:
            walk(arg)
        return found

    def use_counts(self) -> dict[int, int]:
        """How many times each value is read by a node (model outputs count once more)."""
        counts: dict[int, int] = {}
        for node in self.nodes:
            for v in self.reads(node):
                counts[v] = counts.get(v, 0) + 1
        for v in self.outputs:
            counts[v] = counts.get(v, 0) + 1
        return counts

    def producer(self) -> dict[int, int]:
        """Node position producing each value written by a node."""
        return {node.out: position for position, node in enumerate(self.nodes)}
