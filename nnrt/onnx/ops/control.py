"""If: the chosen branch inlined when the condition is known, else NNAPI IF.

A known condition (often computed from shapes) selects its branch at import: the branch's
nodes are converted into the enclosing graph and no IF is added. Otherwise each branch becomes
a model of its own whose inputs are the runtime values of the enclosing scopes the branches use
(their free variables; known ones are copied in as constants), and NNAPI IF runs one of them on
those values. Both branches give the same number of outputs of the same types; their shapes may
differ (the dims they disagree on are unknown). Nodes inside a branch that cannot be imported
are reported, under their own names, with the rest of the model's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.errors import NnrtError
from nnrt.model.builder import Tensor
from nnrt.model.model import Model
from nnrt.model.types import OperandType
from nnrt.model.types import OperationType as Op
from nnrt.onnx.dtypes import operand_type_for
from nnrt.onnx.errors import SubgraphUnsupported, UnsupportedNode
from nnrt.onnx.graph import Graph, Value
from nnrt.onnx.importer import convert_nodes, graph_inputs
from nnrt.onnx.node import NodeContext, converter
from nnrt.onnx.weights import tensor_array

_BRANCHES = ("then_branch", "else_branch")


@converter("If")
def if_(n: NodeContext) -> list[Value]:
    """If: the known condition's branch inlined, or NNAPI IF over two branch models."""
    cond = n.input(0)
    branches = {name: n.attr(name) for name in _BRANCHES}
    if any(b is None for b in branches.values()):
        n.fail("then_branch and else_branch are required")
    if cond.const is not None:
        if cond.const.size != 1:
            n.fail(f"the condition must hold one element, got shape {list(cond.shape)}")
        chosen = "then_branch" if bool(cond.const.reshape(-1)[0]) else "else_branch"
        return _inline(n, branches[chosen], chosen)
    if cond.dtype != np.bool_:
        n.fail(f"the condition has type {cond.dtype}, expected bool")
    if cond.shape not in ((), (1,)):
        n.fail(f"the condition must be a scalar or have shape [1], got {list(cond.shape)}")
    names: list[str] = []
    for branch in branches.values():
        names += [name for name in graph_inputs(branch) if name not in names]
    captured = {name: n.graph.lookup(name) for name in names}
    runtime = [name for name, value in captured.items() if value.const is None]
    models, outputs, failed = {}, {}, []
    for name, branch in branches.items():
        try:
            models[name], outputs[name] = _branch_model(n, branch, name, captured, runtime)
        except SubgraphUnsupported as exc:
            failed += exc.nodes
    if failed:
        raise SubgraphUnsupported(failed)
    shapes = _output_shapes(n, outputs["then_branch"], outputs["else_branch"])
    return _if_operation(n, cond, models, [captured[name] for name in runtime],
                         (outputs["then_branch"], shapes))


def _where(n: NodeContext, branch: str) -> str:
    return f"in {branch} of If node {n.name!r}"


def _define_initializers(n: NodeContext, graph: Graph, branch: Any, where: str) -> None:
    for t in branch.initializer:
        try:
            array = tensor_array(t, f"initializer {t.name!r} {where}")
        except ValueError as exc:
            n.fail(str(exc))
        graph.define(Value(t.name, array.dtype, tuple(array.shape), const=array))


def _convert_branch(n: NodeContext, graph: Graph, branch: Any, name: str) -> list[Value]:
    """Convert ``branch``'s nodes into ``graph``; its output values."""
    where = _where(n, name)
    _define_initializers(n, graph, branch, where)
    unsupported: list[UnsupportedNode] = []
    convert_nodes(graph, branch.node, n.opset, unsupported,
                  outputs=[o.name for o in branch.output])
    if unsupported:
        raise SubgraphUnsupported([UnsupportedNode(u.op_type, u.name, f"{u.reason} ({where})")
                                   for u in unsupported])
    return [graph.lookup(o.name) for o in branch.output]


def _inline(n: NodeContext, branch: Any, name: str) -> list[Value]:
    """The branch a known condition chose, converted into the enclosing graph."""
    return _convert_branch(n, n.graph, branch, name)


def _branch_model(n: NodeContext, branch: Any, name: str, captured: dict[str, Value],
                  runtime: list[str]) -> tuple[Model, list[Value]]:
    """``branch`` as a finished model taking the ``runtime`` captured values as inputs."""
    inner = Graph(n.opset)
    for value_name, value in captured.items():
        if value.const is not None:
            inner.define(value.renamed(value_name))
    for value_name in runtime:
        value = captured[value_name]
        inner.add_input(value_name, value.dtype, value.shape)
    outputs = _convert_branch(n, inner, branch, name)
    try:
        model = inner.finish([(o.name, v) for o, v in zip(branch.output, outputs, strict=True)])
    except NnrtError as exc:
        n.fail(f"{name}: {exc}")
    return model, outputs


def _held(value: Value) -> OperandType:
    return operand_type_for(value.dtype)


def _output_shapes(n: NodeContext, then: list[Value], other: list[Value]
                   ) -> list[tuple[int, ...]]:
    """The ONNX shape of each output: the dims both branches agree on (0 elsewhere)."""
    if len(then) != len(other):
        n.fail(f"then_branch gives {len(then)} outputs, else_branch {len(other)}")
    shapes = []
    for k, (a, b) in enumerate(zip(then, other, strict=True)):
        if _held(a) != _held(b):
            n.fail(f"output {k} has type {a.dtype} in then_branch and {b.dtype} in else_branch")
        if a.rank != b.rank:
            n.fail(f"output {k} has rank {a.rank} in then_branch and {b.rank} in else_branch; "
                   "nnrt needs the rank to be known")
        shapes.append(tuple(x if x == y else 0 for x, y in zip(a.shape, b.shape, strict=True)))
    return shapes


def _if_operation(n: NodeContext, cond: Value, models: dict[str, Model], inputs: list[Value],
                  outputs: tuple[list[Value], list[tuple[int, ...]]]) -> list[Value]:
    """One NNAPI IF running the branch models on ``inputs``."""
    g = n.graph
    model = g.builder.model
    references = []
    for name in _BRANCHES:
        index = model.add_operand(OperandType.SUBGRAPH)
        model.set_operand_value_from_model(index, models[name])
        references.append(Tensor(index, OperandType.SUBGRAPH, ()))
    like, shapes = outputs
    try:
        tensors = g.builder.operation(Op.IF, g.tensor(cond), *references,
                                      *(g.tensor(v) for v in inputs), outputs=len(like),
                                      output_types=[_held(v) for v in like])
    except NnrtError as exc:
        n.fail(f"IF: {exc}")
    return [Value("", v.dtype, shape, tensor=t)
            for v, shape, t in zip(like, shapes, tensors, strict=True)]
