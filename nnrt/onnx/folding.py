"""Quantised groups: ``DequantizeLinear -> float operator -> QuantizeLinear`` as NNAPI's
quantised operations.

onnxruntime's QDQ format (``quantize_static(..., quant_format=QuantFormat.QDQ)``) writes a
quantised model as its float graph with every activation passed through a QuantizeLinear /
DequantizeLinear pair and every weight stored quantised behind a DequantizeLinear: the float
operator between them stands for the quantised one. A node folds into quantised NNAPI
operations when

- its operator has a fold (:data:`~nnrt.onnx.node.FOLDS`, :mod:`nnrt.onnx.ops.qdq`);
- every consumer of each of its outputs is a QuantizeLinear, all with the same (per-tensor,
  uint8 or int8) parameters, and no output is a graph output (its float value is wanted);
- some input is a DequantizeLinear of a quantised value computed at execution, and the fold
  accepts the node (types, zero points, attributes: each fold says what it takes).

The node's outputs are then the DequantizeLinear of the quantised results, left lazy: the
QuantizeLinear consumers, whose parameters are the results', return the quantised results
themselves (``QuantizeLinear(DequantizeLinear(q)) == q``). Any other node converts as in a
float model: its lazily dequantised inputs become NNAPI DEQUANTIZE operations and the
QuantizeLinear after it an NNAPI QUANTIZE. A fold that gives up part-way leaves nothing behind
(:meth:`Graph.rollback`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

import numpy as np

from nnrt.onnx.errors import NeedsConstant, NodeUnsupported
from nnrt.onnx.graph import Graph, Value
from nnrt.onnx.node import FOLDS, NodeContext, node_attributes
from nnrt.onnx.qparams import QParams

__all__ = ["FoldPlan", "fold_group", "quantize_dtype", "quantized_inputs", "read_qparams",
           "widened_scale"]

_DEFAULT_DOMAINS = ("", "ai.onnx")
_QUANT_DTYPES = (np.dtype(np.uint8), np.dtype(np.int8))
#: TensorProto codes of QuantizeLinear's ``output_dtype`` (opset 21) nnrt can hold.
_OUTPUT_DTYPES = {2: np.dtype(np.uint8), 3: np.dtype(np.int8)}


def read_qparams(scale: Value | None, zero_point: Value | None, dtype: np.dtype[Any] | None,
                 attributes: dict[str, Any], rank: int | None) -> QParams:
    """The parameters a QuantizeLinear / DequantizeLinear node gives with its ``scale`` and
    ``zero_point`` inputs and its ``axis`` / ``block_size`` attributes, for values of ``dtype``
    (None: the zero point's, uint8 without one) and ``rank`` (None: unknown).

    Raises ``NodeUnsupported`` for parameters not known at import time, blocked quantisation,
    non-float32 scales and zero points of another type than the values'.
    """
    scales = None if scale is None else scale.const
    if scales is None:
        raise NeedsConstant("the scale must be known at import time (NNAPI's quantisation "
                            "parameters are part of the model)")
    zp = None if zero_point is None else zero_point.const
    if zero_point is not None and zp is None:
        raise NeedsConstant("the zero point must be known at import time (NNAPI's "
                            "quantisation parameters are part of the model)")
    if int(attributes.get("block_size", 0)):
        raise NodeUnsupported("blocked quantisation (block_size) has no NNAPI equivalent")
    if scales.dtype != np.float32:
        raise NodeUnsupported(f"{scales.dtype} scales are not supported (only float32)")
    kind = dtype if dtype is not None else (zp.dtype if zp is not None else np.dtype(np.uint8))
    if zp is None:
        zp = np.zeros(scales.shape, kind)
    if zp.dtype != kind:
        raise NodeUnsupported(f"the zero point is {zp.dtype}, the values {kind}")
    if scales.size == 1 and zp.size == 1:
        return QParams(np.dtype(kind), scales.reshape(()), zp.reshape(()))
    if zp.shape != scales.shape or scales.ndim > 1:
        raise NodeUnsupported(f"scale {list(scales.shape)} and zero point "
                              f"{list(zp.shape)} must be scalars or equal 1-D vectors")
    axis = int(attributes.get("axis", 1))
    if rank is not None:
        if not -rank <= axis < rank:
            raise NodeUnsupported(f"axis {axis} is out of range for rank {rank}")
        axis %= rank
    elif axis < 0:
        raise NodeUnsupported(f"a negative axis {axis} needs the input's rank")
    return QParams(np.dtype(kind), scales, zp, axis)


def widened_scale(scale: Value | None) -> Value | None:
    """A known float16 scale of a QLinear operator (QLinearMatMul takes them from opset 21) as
    float32, which holds it exactly: the quantised operand has the same real scale. Any other
    scale as it is."""
    if scale is None or scale.const is None or scale.dtype != np.float16:
        return scale
    return Value(scale.name, np.dtype(np.float32), scale.shape,
                 const=scale.const.astype(np.float32))


def quantize_dtype(zero_point: Value | None, attributes: dict[str, Any]) -> np.dtype[Any]:
    """The element type of a QuantizeLinear's output (its zero point's, else
    ``output_dtype``'s, else uint8)."""
    if zero_point is not None:
        return zero_point.dtype
    code = int(attributes.get("output_dtype", 0))
    if code == 0:
        return np.dtype(np.uint8)
    if code not in _OUTPUT_DTYPES:
        raise NodeUnsupported(f"output_dtype {code} is not supported (uint8 and int8 are)")
    return _OUTPUT_DTYPES[code]


class FoldPlan:
    """Who consumes what in one graph's node list, to tell which nodes may fold."""

    def __init__(self, graph: Graph, nodes: Sequence[Any], outputs: Collection[str],
                 uses: Callable[[Any], Iterable[str]]) -> None:
        self.graph = graph
        self.outputs = set(outputs)
        self.consumers: dict[str, list[Any]] = defaultdict(list)
        for node in nodes:
            for name in dict.fromkeys(uses(node)):
                if name:
                    self.consumers[name].append(node)

    def output_params(self, node: Any) -> QParams | None:
        """The parameters every consumer of ``node``'s outputs quantises them with, or None
        when they are not all QuantizeLinear nodes of one (known, per-tensor, 8-bit)
        quantisation or some output is a graph output."""
        found: QParams | None = None
        for name in node.output:
            if not name:
                continue
            users = self.consumers.get(name, [])
            if not users or name in self.outputs:
                return None
            for user in users:
                params = self._quantize_params(user, name)
                if params is None or (found is not None and not found.same(params)):
                    return None
                found = params
        if found is None or found.per_axis or found.dtype not in _QUANT_DTYPES:
            return None
        return found

    def _quantize_params(self, node: Any, name: str) -> QParams | None:
        if node.op_type != "QuantizeLinear" or node.domain not in _DEFAULT_DOMAINS or (
                list(node.input[:1]) != [name] or name in node.input[1:]):
            return None
        values = [self.graph.values.get(i) if i else None for i in node.input]
        values += [None] * (3 - len(values))
        try:
            attributes = node_attributes(node)
            dtype = quantize_dtype(values[2], attributes)
            return read_qparams(values[1], values[2], dtype, attributes, None)
        except NodeUnsupported:
            return None


#: Operators reading a quantised tensor with its parameters: input index -> (scale, zero
#: point) input indices.
_QUANTISED_READS = {"DequantizeLinear": {0: (1, 2)}, "QLinearConv": {0: (1, 2), 3: (4, 5)},
                    "QLinearMatMul": {0: (1, 2), 3: (4, 5)}}


def quantized_inputs(graph: Graph, nodes: Sequence[Any], names: Collection[str],
                     uses: Callable[[Any], Iterable[str]]) -> dict[str, QParams]:
    """The 8-bit graph inputs among ``names`` that only DequantizeLinear / QLinear nodes read,
    all with the same per-tensor parameters: those parameters, by input name (such an input
    becomes an NNAPI quantised operand). ``uses(node)``: every name a node reads, its
    subgraphs' included."""
    found: dict[str, QParams | None] = {}
    for node in nodes:
        reads = _QUANTISED_READS.get(node.op_type, {}) if node.domain in _DEFAULT_DOMAINS \
            else {}
        direct = {name: k for k, name in enumerate(node.input)}
        for name in uses(node):
            if name not in names:
                continue
            k = direct.get(name, -1)
            params = _read_params(graph, node, reads[k]) if k in reads else None
            previous = found.get(name, params)
            if params is None or previous is None or not previous.same(params):
                found[name] = None
            else:
                found[name] = params
    return {name: params for name, params in found.items() if params is not None}


def _read_params(graph: Graph, node: Any, where: tuple[int, int]) -> QParams | None:
    scale, zero_point = (graph.values.get(node.input[i]) if i < len(node.input) else None
                         for i in where)
    if node.op_type != "DequantizeLinear":
        scale = widened_scale(scale)
    try:
        params = read_qparams(scale, zero_point, None, {}, None)
    except NodeUnsupported:
        return None
    return None if params.per_axis or params.dtype not in _QUANT_DTYPES else params


def fold_group(graph: Graph, node: Any, opset: int, plan: FoldPlan) -> bool:
    """Convert ``node`` as a quantised group if it is one (see the module docstring); False
    when it must be converted as a float operator."""
    fold = FOLDS.get(node.op_type) if node.domain in _DEFAULT_DOMAINS else None
    if fold is None:
        return False
    out = plan.output_params(node)
    if out is None:
        return False
    inputs = [graph.lookup(name, lazy=True) if name else None for name in node.input]
    if not any(v is not None and v.dequantizes is not None and v.dequantizes.tensor is not None
               for v in inputs):
        return False  # nothing quantised is computed here: a float operator on weights
    mark = graph.checkpoint()
    results: Sequence[Value] | None = None
    try:
        ctx = NodeContext(graph, node, inputs, node_attributes(node), opset)
        results = fold(ctx, out)
        if ctx.unread_attributes():
            results = None
    except NodeUnsupported:
        results = None
    names = list(node.output)
    if results is None or len(results) < len([n for n in names if n]) or any(
            r.tensor is None or not out.same(r.quant) for r in results):
        graph.rollback(mark)
        return False
    for name, q in zip(names, results, strict=False):
        if name:
            graph.define(Value(name, np.dtype(np.float32), q.shape, dequantizes=q))
    return True
