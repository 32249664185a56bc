"""Errors of the ONNX importer: every unsupported node reported at once."""

from __future__ import annotations

from dataclasses import dataclass

from nnrt.errors import Unsupported

__all__ = ["NeedsConstant", "NodeUnsupported", "SubgraphUnsupported", "UnsupportedNode",
           "UnsupportedOnnxModel"]


@dataclass(frozen=True)
class UnsupportedNode:
    """One ONNX node nnrt cannot import, and why.

    ``needs_constant`` is set when the only trouble is an input that must be known at import
    time (a shape, axes, pads...) but is a graph input: binding that input to a value fixes it.
    """

    op_type: str
    name: str
    reason: str
    needs_constant: bool = False

    def __str__(self) -> str:
        return f"{self.op_type} node {self.name!r}: {self.reason}"


class NodeUnsupported(Exception):
    """Raised by a converter: this node (or this use of it) cannot be imported exactly."""


class NeedsConstant(NodeUnsupported):
    """Raised by a converter: an input must be known at import time and is not."""


class SubgraphUnsupported(NodeUnsupported):
    """Raised by the converter of a node with subgraphs (``If``) when nodes inside them cannot
    be imported; :attr:`nodes` lists each of them, to be reported in its place."""

    def __init__(self, nodes: list[UnsupportedNode]) -> None:
        self.nodes = list(nodes)
        super().__init__(f"{len(self.nodes)} node(s) of its subgraphs cannot be imported")


class UnsupportedOnnxModel(Unsupported):
    """The ONNX model holds nodes nnrt cannot import; :attr:`nodes` lists every one of them."""

    def __init__(self, nodes: list[UnsupportedNode]) -> None:
        self.nodes = list(nodes)
        lines = "\n".join(f"  - {n}" for n in self.nodes)
        super().__init__(f"the ONNX model has {len(self.nodes)} unsupported node(s):\n{lines}")
