"""``nnrt.onnx.load``: an ONNX model in, an ``nnrt.Model`` out.

The importer reads the model (a path, bytes or a ``ModelProto``), puts the initializers in
shared-memory pools (:mod:`nnrt.onnx.weights`), declares the graph inputs with their ONNX names
(``input_shapes=`` fixes dynamic dims), converts the nodes in order through the converters of
:mod:`nnrt.onnx.ops` and names the outputs after the graph's. Every node it cannot import exactly
is collected — unknown operator, unsupported attribute, unknown shape — and reported together in
one :class:`~nnrt.onnx.errors.UnsupportedOnnxModel`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from nnrt.errors import BadData
from nnrt.model.builder import Tensor
from nnrt.model.model import Model, refine_dims
from nnrt.onnx.dtypes import onnx_dtype
from nnrt.onnx.errors import (
    NeedsConstant,
    NodeUnsupported,
    SubgraphUnsupported,
    UnsupportedNode,
    UnsupportedOnnxModel,
)
from nnrt.onnx.folding import FoldPlan, fold_group, quantized_inputs
from nnrt.onnx.graph import Graph, Value
from nnrt.onnx.node import (
    CONVERTERS,
    LAZY_INPUTS,
    NEWEST_DEFINITION,
    NodeContext,
    node_attributes,
)
from nnrt.onnx.qparams import QParams
from nnrt.onnx.weights import WeightPools

__all__ = ["MAX_OPSET", "MIN_OPSET", "convert_nodes", "graph_inputs", "load", "node_attributes",
           "subgraph_inputs"]

#: The default-domain opsets whose operator definitions the converters implement. A model
#: declaring a newer opset (up to the installed onnx's newest) is imported when each of its
#: operators is still defined as at opset 21 (later opsets mostly add types) or as its
#: converter says it implements; an older one (from 1) when each operator is defined as at
#: opset 7. Any other node is reported unsupported.
MIN_OPSET, MAX_OPSET = 7, 21
_DEFAULT_DOMAINS = ("", "ai.onnx")
_INT64 = 7  # TensorProto.INT64


def load(source: str | os.PathLike[str] | bytes | Any, *,
         input_shapes: Mapping[str, Sequence[int]] | None = None,
         progress: Callable[[int, int], None] | None = None) -> Model:
    """Import an ONNX model: a file path, the serialized bytes, or an ``onnx.ModelProto``.

    ``input_shapes`` maps graph input names to full shapes, fixing dims the model leaves
    dynamic (shape sub-graphs then fold away). ``progress(done, total)`` is called as the
    graph's nodes are converted (``nnrt`` commands draw a progress line with it). Raises
    ``UnsupportedOnnxModel`` listing every node that cannot be imported exactly, ``BadData``
    for a malformed model.
    """
    proto, base_dir = _read(source)
    declared = _default_opset(proto)
    pools = WeightPools(base_dir)
    try:
        return _import(proto, declared, pools, input_shapes or {}, progress)
    except BaseException:
        pools.close()
        raise


def _import(proto: Any, declared: int, pools: WeightPools,
            input_shapes: Mapping[str, Sequence[int]],
            progress: Callable[[int, int], None] | None) -> Model:
    opset = min(max(declared, MIN_OPSET), MAX_OPSET)
    graph = Graph(opset)
    try:
        initializers = pools.arrays(proto.graph.initializer)
    except ValueError as exc:
        raise BadData(str(exc)) from None
    for name, array in initializers.items():
        graph.define(Value(name, array.dtype, tuple(array.shape), const=array))
    quantized = quantized_inputs(graph, proto.graph.node, {i.name for i in proto.graph.input},
                                 lambda node: (*node.input, *subgraph_inputs(node)))
    _declare_inputs(graph, proto.graph.input, set(initializers), input_shapes, quantized)
    dims = {name: v.shape for name, v in graph.values.items() if v.tensor is not None}
    graph.infer_shapes = lambda: _inferred_shapes(proto, dims)
    unsupported = _unknown_operators(proto.graph.node, declared)
    if not unsupported:
        convert_nodes(graph, proto.graph.node, opset, unsupported, progress,
                      outputs=[o.name for o in proto.graph.output])
    if unsupported:
        raise UnsupportedOnnxModel(unsupported)
    outputs = [(o.name, graph.lookup(o.name)) for o in proto.graph.output]
    wide = [o.name for o in proto.graph.output if o.type.tensor_type.elem_type == _INT64]
    named = {o.name: [d.dim_param or None for d in o.type.tensor_type.shape.dim]
             for o in proto.graph.output}
    return graph.finish(outputs, wide, named)


def convert_nodes(graph: Graph, nodes: Sequence[Any], opset: int,
                  unsupported: list[UnsupportedNode],
                  progress: Callable[[int, int], None] | None = None, *,
                  outputs: Collection[str]) -> None:
    """Convert ``nodes`` in order into ``graph``, appending each failure to ``unsupported``
    (and telling ``progress`` how many are done). ``outputs`` are the values the graph
    returns (they keep their exact float values: no quantised group folds them away).

    A node whose input (or a value its subgraphs use) comes from a failed node is skipped
    without a report of its own; a node whose subgraphs hold failed nodes reports those.
    """
    plan = FoldPlan(graph, nodes, outputs, lambda node: (*node.input, *subgraph_inputs(node)))
    poisoned: set[str] = set()
    for done, node in enumerate(nodes):
        if progress is not None:
            progress(done, len(nodes))
        if any(name in poisoned for name in (*node.input, *subgraph_inputs(node))):
            poisoned.update(node.output)
            continue
        try:
            if not fold_group(graph, node, opset, plan):
                _convert(graph, node, opset)
        except SubgraphUnsupported as exc:
            unsupported.extend(exc.nodes)
            poisoned.update(node.output)
        except NodeUnsupported as exc:
            unsupported.append(UnsupportedNode(node.op_type, node.name, str(exc),
                                               needs_constant=isinstance(exc, NeedsConstant)))
            poisoned.update(node.output)
    if progress is not None:
        progress(len(nodes), len(nodes))


def _convert(graph: Graph, node: Any, opset: int) -> None:
    lazy = node.op_type in LAZY_INPUTS
    inputs = [graph.lookup(name, lazy=lazy) if name else None for name in node.input]
    ctx = NodeContext(graph, node, inputs, node_attributes(node), opset)
    outputs = list(CONVERTERS[node.op_type](ctx))
    unread = ctx.unread_attributes()
    if unread:
        raise NodeUnsupported(f"attribute(s) {', '.join(sorted(unread))} not supported")
    names = [n for n in node.output]
    if len(outputs) < len([n for n in names if n]):
        raise NodeUnsupported(f"{len(names)} outputs requested, nnrt computes {len(outputs)}")
    for name, value in zip(names, outputs, strict=False):
        if value.tensor is not None and not value.tensor.shape:  # unknown rank (no rank 0)
            shape = _merged(value.shape, graph.onnx_shape(name))
            if shape is None:
                raise NodeUnsupported(
                    f"the shape of output {name!r} cannot be inferred (some input dims are "
                    "unknown); pass input_shapes= to nnrt.onnx.load")
            if shape:  # the operand gets the rank and dims ONNX's inference tells
                refine_dims(graph.builder.model, value.tensor.index, shape)
            value = Value(value.name, value.dtype, shape, hint=value.hint,
                          tensor=Tensor(value.tensor.index, value.tensor.type, shape))
        if name:
            graph.define(value.renamed(name))


def _merged(ours: tuple[int, ...], onnx: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """The dims a converter computed (``()``: it could not tell) completed by ONNX's inferred
    ones (0 = unknown in either)."""
    if not ours or onnx is None or len(onnx) != len(ours):
        return ours or onnx
    return tuple(a or b for a, b in zip(ours, onnx, strict=True))


def subgraph_inputs(node: Any) -> list[str]:
    """The outer-scope names that the subgraphs of ``node`` use, in order of first use."""
    names: list[str] = []
    for attribute in node.attribute:
        for g in ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs):
            names += [name for name in graph_inputs(g) if name not in names]
    return names


def graph_inputs(graph: Any) -> list[str]:
    """The names ``graph`` (a subgraph) uses but does not define: the values of its enclosing
    scopes it captures, in order of first use."""
    defined = {t.name for t in graph.initializer} | {i.name for i in graph.input}
    used: list[str] = []
    for node in graph.node:
        for name in (*node.input, *subgraph_inputs(node)):
            if name and name not in defined and name not in used:
                used.append(name)
        defined.update(node.output)
    used += [o.name for o in graph.output if o.name not in defined and o.name not in used]
    return used


def _unknown_operators(nodes: Iterable[Any], opset: int) -> list[UnsupportedNode]:
    """Every node (in subgraphs too) whose operator nnrt has no converter for, or whose
    definition at ``opset`` (above :data:`MAX_OPSET`) differs from its opset-21 one."""
    missing = []
    for node in nodes:
        if node.domain not in _DEFAULT_DOMAINS:
            missing.append(UnsupportedNode(node.op_type, node.name,
                                           f"operator domain {node.domain!r} is not supported"))
        elif node.op_type not in CONVERTERS:
            missing.append(UnsupportedNode(node.op_type, node.name,
                                           "no converter for this operator"))
        elif opset < MIN_OPSET and _since(node.op_type, opset) != _since(node.op_type,
                                                                         MIN_OPSET):
            missing.append(UnsupportedNode(
                node.op_type, node.name, f"{node.op_type} at opset {opset} differs from its "
                f"opset-{MIN_OPSET} definition, the oldest nnrt implements"))
        elif opset > MAX_OPSET:
            since = _redefined_after(node.op_type, opset)
            if since is not None:
                missing.append(UnsupportedNode(
                    node.op_type, node.name, f"{node.op_type} was redefined at opset {since}; "
                    f"nnrt implements its definitions up to opset {MAX_OPSET}"))
        for attribute in node.attribute:
            if attribute.g.node:
                missing += _unknown_operators(attribute.g.node, opset)
            for g in attribute.graphs:
                missing += _unknown_operators(g.node, opset)
    return missing


def _since(op_type: str, opset: int) -> int:
    """The opset that introduced the definition of ``op_type`` in force at ``opset``."""
    from onnx import defs  # noqa: PLC0415 - the onnx extra

    try:
        return int(defs.get_schema(op_type, opset).since_version)
    except defs.SchemaError:
        return -1


def _redefined_after(op_type: str, opset: int) -> int | None:
    """The first opset after :data:`MAX_OPSET` (up to ``opset``) that changed ``op_type``
    beyond adding element types, or None when its definition is still opset 21's.

    A revision only adds types when attributes, inputs and outputs are unchanged and every type
    constraint allows a superset of what it allowed before (opset 22's bfloat16 and 23 to 25's
    small-float additions); anything else counts as a redefinition.
    """
    from onnx import defs  # noqa: PLC0415 - the onnx extra

    try:
        schema = defs.get_schema(op_type, opset)
    except defs.SchemaError:
        return opset
    changed: int | None = None
    implemented = max(MAX_OPSET, NEWEST_DEFINITION.get(op_type, MAX_OPSET))
    while schema.since_version > MAX_OPSET:
        try:
            previous = defs.get_schema(op_type, schema.since_version - 1)
        except defs.SchemaError:
            return int(schema.since_version)  # a new operator
        if schema.since_version > implemented and not _adds_types_only(previous, schema):
            changed = int(schema.since_version)
        schema = previous
    return changed


def _adds_types_only(before: Any, after: Any) -> bool:
    def signature(s: Any) -> Any:
        attributes = sorted((a.name, int(a.type), a.required,
                             a.default_value.SerializeToString()) for a in s.attributes.values())
        return (attributes, [(f.name, int(f.option), f.type_str) for f in s.inputs],
                [(f.name, int(f.option), f.type_str) for f in s.outputs])

    if signature(before) != signature(after):
        return False
    old = {t.type_param_str: set(t.allowed_type_strs) for t in before.type_constraints}
    new = {t.type_param_str: set(t.allowed_type_strs) for t in after.type_constraints}
    return old.keys() == new.keys() and all(new[k] >= old[k] for k in old)


def _declare_inputs(graph: Graph, inputs: Iterable[Any], initialized: set[str],
                    shapes: Mapping[str, Sequence[int]],
                    quantized: Mapping[str, QParams]) -> None:
    names = set()
    for value_info in inputs:
        name = value_info.name
        if name in initialized:
            continue  # an initializer listed as an input (IR < 4): a constant
        names.add(name)
        where = f"graph input {name!r}"
        tensor_type = value_info.type.tensor_type
        if not value_info.type.HasField("tensor_type"):
            raise UnsupportedOnnxModel([UnsupportedNode("(input)", name,
                                                        "only tensor inputs are supported")])
        try:
            dtype = onnx_dtype(tensor_type.elem_type, where)
        except ValueError as exc:
            raise UnsupportedOnnxModel([UnsupportedNode("(input)", name, str(exc))]) from None
        declared = [_declared_dim(d) for d in tensor_type.shape.dim]
        if name in shapes:
            given = [int(d) for d in shapes[name]]
            if len(given) != len(declared) or any(
                    d and g != d for d, g in zip(declared, given, strict=True)):
                raise BadData(f"input_shapes[{name!r}] = {given} does not fit the model's "
                              f"declared shape {declared}")
            if any(g < 0 for g in given):
                raise BadData(f"input_shapes[{name!r}] = {given}: dims must be positive (0: "
                              "left unknown)")
            given = [g or d for g, d in zip(given, declared, strict=True)]
            declared = given
        named = [d.dim_param or None if not dim else None
                 for d, dim in zip(tensor_type.shape.dim, declared, strict=True)]
        try:
            params = quantized.get(name)
            graph.add_input(name, dtype, declared, named,
                            params if params is not None and params.dtype == dtype else None)
        except ValueError as exc:
            raise UnsupportedOnnxModel([UnsupportedNode("(input)", name, str(exc))]) from None
    extra = set(shapes) - names
    if extra:
        raise BadData(f"input_shapes names {sorted(extra)}, which are not graph inputs "
                      f"(inputs: {sorted(names)})")


def _declared_dim(dim: Any) -> int:
    """One declared ONNX dim as an NNAPI dim: a positive ``dim_value`` is fixed; a
    ``dim_param``, a missing value, and the ``-1`` and ``0`` some exporters (paddle2onnx) write
    for "any size" are unknown (0)."""
    return max(int(dim.dim_value), 0) if dim.HasField("dim_value") else 0


def _inferred_shapes(proto: Any, inputs: Mapping[str, tuple[int, ...]]
                     ) -> dict[str, tuple[int, ...]]:
    """ONNX's own shape inference over the main graph, at the declared input shapes: the rank
    (and the dims it can tell; 0 = unknown) of every value. NNAPI's shape inference leaves a
    result's rank unknown when a dim is unknown; the importer needs the rank."""
    from onnx import shape_inference  # noqa: PLC0415 - the onnx extra

    fixed = type(proto)()
    fixed.CopyFrom(proto)
    for value_info in fixed.graph.input:
        known = inputs.get(value_info.name)
        if known is None or not value_info.type.HasField("tensor_type"):
            continue
        dims = value_info.type.tensor_type.shape.dim
        for i, (d, size) in enumerate(zip(dims, known, strict=False)):
            if size > 0:
                d.dim_value = size
            elif not d.HasField("dim_param"):  # -1 / 0 / missing: unknown, not fixed
                d.dim_param = f"nnrt_unknown_{value_info.name}_{i}"
    try:
        inferred = shape_inference.infer_shapes(fixed, strict_mode=False)
    except Exception:  # inference is a hint; the converters check everything
        return {}
    shapes = {}
    for value_info in (*inferred.graph.value_info, *inferred.graph.output):
        tensor_type = value_info.type.tensor_type
        if value_info.type.HasField("tensor_type") and tensor_type.HasField("shape"):
            shapes[value_info.name] = tuple(_declared_dim(d) for d in tensor_type.shape.dim)
    return shapes


def _default_opset(proto: Any) -> int:
    for entry in proto.opset_import:
        if entry.domain in _DEFAULT_DOMAINS:
            version = int(entry.version)
            if not 1 <= version <= _newest_opset():
                raise UnsupportedOnnxModel([UnsupportedNode(
                    "(model)", "", f"default-domain opset {version} is outside the supported "
                    f"range 1..{_newest_opset()}")])
            return version
    raise BadData("the ONNX model imports no default-domain opset")


def _newest_opset() -> int:
    """The newest default-domain opset the installed onnx package defines."""
    from onnx import defs  # noqa: PLC0415 - the onnx extra

    return int(defs.onnx_opset_version())


def _read(source: Any) -> tuple[Any, Path | None]:
    try:
        import onnx  # noqa: PLC0415 - the onnx extra
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("nnrt.onnx needs the onnx package: pip install 'nnrt[onnx]'") from None
    if isinstance(source, onnx.ModelProto):
        return source, None
    if isinstance(source, bytes | bytearray | memoryview):
        try:
            return onnx.load_model_from_string(bytes(source)), None
        except Exception as exc:  # protobuf raises its own DecodeError
            raise BadData(f"not a valid ONNX model: {exc}") from None
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        try:
            proto = onnx.load(str(path), load_external_data=False)
        except FileNotFoundError:
            raise
        except Exception as exc:
            raise BadData(f"{path}: not a valid ONNX model: {exc}") from None
        return proto, path.resolve().parent
    raise BadData(f"nnrt.onnx.load: expected a path, bytes or an onnx.ModelProto, got "
                  f"{type(source).__name__}")
