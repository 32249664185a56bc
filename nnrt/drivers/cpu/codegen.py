"""Code generation: a compiler graph and its memory plan as one straight-line Python function.

::

    def partition_0(inputs, outputs, scratch):
        x0 = inputs[0]
        y0 = outputs[0]
        t3 = slot(scratch, 0, (1, 512))
        fc(t3, x0, c0, c1, 1)
        ...
        softmax(y0, t9, 1.0, 1)
        return None

The function only binds names and calls kernels of the fixed table (the dispatch verifies
exactly that before running it); arrays known at compile time are module tensors named ``c<n>``.
Names and tensor numbering follow the graph's order, so the same graph always gives the same
source.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from nnrt.drivers.cpu.graph import Graph, Ref
from nnrt.drivers.cpu.memplan import MemoryPlan, output_roots
from nnrt.errors import OpFailed

__all__ = ["generate"]

Array = np.ndarray[Any, Any]


class _Names:
    """Python names of the graph's values and the tensors they need."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.tensors: dict[str, Array] = {}
        self._consts: dict[int, str] = {}
        self._outputs = output_roots(graph)
        self._views = {n.out for n in graph.nodes if n.view}

    def of(self, value: int) -> str:
        graph = self.graph
        if value in self._views:
            return f"v{value}"
        root = graph.root(value)
        v = graph.values[root]
        if v.input is not None:
            return f"x{v.input}"
        if root in self._outputs:
            return f"y{self._outputs[root]}"
        if v.const is not None:
            return self.tensor(root, v.const)
        return f"t{root}"

    def tensor(self, key: int, array: Array) -> str:
        name = self._consts.get(key)
        if name is None:
            name = f"c{len(self.tensors)}"
            self._consts[key] = name
            self.tensors[name] = np.ascontiguousarray(array)
        return name

    def arg(self, arg: Any) -> str:
        if isinstance(arg, Ref):
            return self.of(arg.value)
        if isinstance(arg, tuple):
            items = [self.arg(a) for a in arg]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        if arg is None or isinstance(arg, bool | np.bool_):
            return repr(None if arg is None else bool(arg))
        if isinstance(arg, int | np.integer):
            return repr(int(arg))
        if isinstance(arg, float | np.floating):
            if math.isfinite(arg):
                return repr(float(arg))
            key = -1 - len(self.tensors)  # a fresh key: non-finite literals become tensors
            return self.tensor(key, np.asarray(arg, np.float32))
        raise OpFailed(f"cpu codegen: cannot emit argument {arg!r:.60}")


def generate(graph: Graph, plan: MemoryPlan, entry: str) -> tuple[str, dict[str, Array]]:
    """The source of function ``entry`` running ``graph``, and the tensors it reads."""
    names = _Names(graph)
    lines = [f"def {entry}(inputs, outputs, scratch):"]
    for value in graph.inputs:
        position = graph.values[value].input
        lines.append(f"    x{position} = inputs[{position}]")
    for position in sorted(set(output_roots(graph).values())):
        lines.append(f"    y{position} = outputs[{position}]")
    for root, v in enumerate(graph.values):
        if v.stored_in is not None:
            shape = names.arg(tuple(v.shape))
            lines.append(f"    t{root} = view(y{v.stored_in}, {shape})")
    by_start: dict[int, list[int]] = {}
    for buffer in plan.buffers:
        by_start.setdefault(buffer.start, []).append(buffer.root)
    offsets = {b.root: b.offset for b in plan.buffers}
    for position, node in enumerate(graph.nodes):
        for root in by_start.get(position, ()):
            shape = names.arg(tuple(graph.values[root].shape))
            dtype = graph.values[root].dtype
            if dtype == "float32":
                lines.append(f"    t{root} = slot(scratch, {offsets[root]}, {shape})")
            else:
                lines.append(f"    t{root} = typed_slot(scratch, {offsets[root]}, {shape}, "
                             f"{dtype!r})")
        args = ", ".join(names.arg(a) for a in node.args)
        if node.view:
            lines.append(f"    {names.of(node.out)} = {node.kernel}({args})")
        else:
            lines.append(f"    {node.kernel}({names.of(node.out)}, {args})")
    lines.append("    return None")
    return "\n".join(lines) + "\n", names.tensors
