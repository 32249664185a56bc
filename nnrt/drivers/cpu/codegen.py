"""Code generation: a compiler graph and its memory plan as one straight-line program.

The program (:mod:`nnrt.drivers.cpu.program`) is data: frame values bound to the inputs, the
outputs, the module's tensors and scratch slots, then kernel calls. Its listing, for tests and
tools, reads like the Python it stands for::

    def partition_0(inputs, outputs, scratch):
        x0 = inputs[0]
        y0 = outputs[0]
        t3 = slot(scratch, 0, (1, 512))
        fc(t3, x0, c0, c1, 1)
        ...
        softmax(y0, t9, 1.0, 1)
        return None

Arrays known at compile time are module tensors named ``c<n>``. Names, value numbers and
tensor numbering follow the graph's order, so the same graph always gives the same program.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnrt.drivers.cpu.graph import Graph, Ref
from nnrt.drivers.cpu.memplan import MemoryPlan, output_roots
from nnrt.drivers.cpu.program import ValueRef
from nnrt.errors import OpFailed

__all__ = ["Generated", "generate"]

Array = np.ndarray[Any, Any]


class _Names:
    """Python names of the graph's values, their frame values, and the tensors they need."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.tensors: dict[str, Array] = {}
        self.values: dict[str, int] = {}
        self.bound: list[list[Any]] = []  # [value, tensor name]
        self._consts: dict[int, str] = {}
        self._outputs = output_roots(graph)
        self._views = {n.out for n in graph.nodes if n.view}

    def define(self, name: str) -> ValueRef:
        """The frame value of ``name`` (a new one the first time)."""
        value = self.values.setdefault(name, len(self.values))
        return ValueRef(value)

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
            self.bound.append([self.define(name).index, name])
        return name

    def arg(self, arg: Any) -> tuple[str, Any]:
        """``arg`` as listing text and as a program argument."""
        if isinstance(arg, Ref):
            name = self.of(arg.value)
            return name, self.define(name)
        if isinstance(arg, tuple):
            items = [self.arg(a) for a in arg]
            text = "(" + ", ".join(t for t, _ in items) + ("," if len(items) == 1 else "") + ")"
            return text, [a for _, a in items]
        if arg is None or isinstance(arg, bool | np.bool_):
            value = None if arg is None else bool(arg)
            return repr(value), value
        if isinstance(arg, int | np.integer):
            return repr(int(arg)), int(arg)
        if isinstance(arg, float | np.floating):
            if math.isfinite(arg):
                return repr(float(arg)), float(arg)
            key = -1 - len(self.tensors)  # a fresh key: non-finite literals become tensors
            name = self.tensor(key, np.asarray(arg, np.float32))
            return name, self.define(name)
        if isinstance(arg, str):
            return repr(arg), arg
        raise OpFailed(f"cpu codegen: cannot emit argument {arg!r:.60}")


@dataclass(frozen=True)
class Generated:
    """What :func:`generate` made: the program map, its listing and the tensors it reads."""

    program: dict[str, Any]
    listing: str
    tensors: dict[str, Array]


def generate(graph: Graph, plan: MemoryPlan, entry: str) -> Generated:
    """The program of entry point ``entry`` running ``graph`` with memory ``plan``."""
    names = _Names(graph)
    lines = [f"def {entry}(inputs, outputs, scratch):"]
    inputs, outputs, slots, steps = [], [], [], []
    for value in graph.inputs:
        position = graph.values[value].input
        lines.append(f"    x{position} = inputs[{position}]")
        inputs.append([position, names.define(f"x{position}").index])
    for position in sorted(set(output_roots(graph).values())):
        lines.append(f"    y{position} = outputs[{position}]")
        outputs.append([position, names.define(f"y{position}").index])
    for root, v in enumerate(graph.values):
        if v.stored_in is not None:
            text, shape = names.arg(tuple(v.shape))
            lines.append(f"    t{root} = view(y{v.stored_in}, {text})")
            steps.append(["view", names.define(f"t{root}").index,
                          [names.define(f"y{v.stored_in}"), shape]])
    by_start: dict[int, list[int]] = {}
    for buffer in plan.buffers:
        by_start.setdefault(buffer.start, []).append(buffer.root)
    offsets = {b.root: b.offset for b in plan.buffers}
    for position, node in enumerate(graph.nodes):
        for root in by_start.get(position, ()):
            text, shape = names.arg(tuple(graph.values[root].shape))
            dtype = graph.values[root].dtype
            if dtype == "float32":
                lines.append(f"    t{root} = slot(scratch, {offsets[root]}, {text})")
            else:
                lines.append(f"    t{root} = typed_slot(scratch, {offsets[root]}, {text}, "
                             f"{dtype!r})")
            slots.append([names.define(f"t{root}").index, offsets[root], shape, dtype])
        args = [names.arg(a) for a in node.args]
        text = ", ".join(t for t, _ in args)
        out = names.of(node.out)
        if node.view:
            lines.append(f"    {out} = {node.kernel}({text})")
            steps.append([node.kernel, names.define(out).index, [a for _, a in args]])
        else:
            lines.append(f"    {node.kernel}({out}, {text})")
            steps.append([node.kernel, -1, [names.define(out), *(a for _, a in args)]])
    lines.append("    return None")
    program = {"frame": len(names.values), "inputs": inputs, "outputs": outputs,
               "tensors": names.bound, "slots": slots, "steps": steps}
    return Generated(program, "\n".join(lines) + "\n", names.tensors)
