"""Control flow: TFLite WHILE / IF → NNAPI WHILE / IF, their subgraphs → referenced models.

* IF (``IfOptions``: ``then_subgraph_index``, ``else_subgraph_index``): input 0 the condition,
  the rest passed to the chosen subgraph, whose outputs are the operator's — NNAPI IF exactly
  (a TFLite scalar is held with shape ``[1]``, the condition NNAPI takes).
* WHILE (``WhileOptions``: ``cond_subgraph_index``, ``body_subgraph_index``): ``N`` inputs, the
  body maps ``N`` values to ``N``, the condition maps them to a bool; the outputs are the final
  values — NNAPI WHILE with ``m = N`` input-output operands (no state-only or input-only ones).
* CALL_ONCE runs its subgraph once, to initialise resource variables; NNAPI has no variables,
  so an empty initialiser converts to nothing and any other is unsupported.

Each subgraph is imported as a model of its own by :func:`~nnrt.tflite.importer.subgraph_model`;
the operators it cannot import are reported under the operator that refers to it.
"""

from __future__ import annotations

from ai_edge_litert import schema_py_generated as fb

from nnrt.model.builder import Tensor
from nnrt.model.model import Model
from nnrt.model.types import OperandType
from nnrt.model.types import OperationType as Op
from nnrt.tflite.context import OpContext, converter
from nnrt.tflite.errors import OperatorUnsupported

__all__: list[str] = []

B = fb.BuiltinOperator


def _subgraph(ctx: OpContext, field: str) -> Model:
    from nnrt.tflite.importer import subgraph_model  # noqa: PLC0415 - the importer imports ops

    index = int(ctx.option(field, -1))
    sub = ctx.subgraph
    if not 0 <= index < len(sub.model.subgraphs or []):
        raise OperatorUnsupported(f"{field} {index} names no subgraph")
    model, unsupported = subgraph_model(sub.model, sub.memory, index)
    if model is None:
        raise OperatorUnsupported(f"{field} {index}: " + "; ".join(map(str, unsupported)))
    return model


def _reference(ctx: OpContext, model: Model) -> Tensor:
    """A SUBGRAPH operand of the enclosing model referring to ``model``."""
    outer = ctx.builder.model
    index = outer.add_operand(OperandType.SUBGRAPH)
    outer.set_operand_value_from_model(index, model)
    return Tensor(index, OperandType.SUBGRAPH, ())


@converter(B.IF)
def if_(ctx: OpContext) -> None:
    """IF: NNAPI IF over the then / else subgraphs' models."""
    cond = ctx.input(0)
    if ctx.spec(0).type != OperandType.TENSOR_BOOL8:
        raise OperatorUnsupported(f"the condition has type {ctx.spec(0).type.name}, expected "
                                  "bool")
    then, other = _subgraph(ctx, "thenSubgraphIndex"), _subgraph(ctx, "elseSubgraphIndex")
    args = [ctx.input(k) for k in range(1, len(ctx.inputs))]
    ctx.emit(Op.IF, cond, _reference(ctx, then), _reference(ctx, other), *args,
             outputs=range(len(ctx.outputs)))


@converter(B.WHILE)
def while_(ctx: OpContext) -> None:
    """WHILE: NNAPI WHILE, every value input-output."""
    if len(ctx.inputs) != len(ctx.outputs):
        raise OperatorUnsupported(f"{len(ctx.inputs)} inputs and {len(ctx.outputs)} outputs; "
                                  "WHILE carries each input to its output")
    cond = _subgraph(ctx, "condSubgraphIndex")
    body = _subgraph(ctx, "bodySubgraphIndex")
    args = [ctx.input(k) for k in range(len(ctx.inputs))]
    ctx.emit(Op.WHILE, _reference(ctx, cond), _reference(ctx, body), *args,
             outputs=range(len(ctx.outputs)))


@converter(B.CALL_ONCE)
def call_once(ctx: OpContext) -> None:
    """CALL_ONCE: nothing for an empty initialiser, else unsupported (no NNAPI variables)."""
    index = int(ctx.option("initSubgraphIndex", -1))
    graphs = ctx.subgraph.model.subgraphs or []
    if 0 <= index < len(graphs) and not (graphs[index].operators or []):
        return
    raise OperatorUnsupported(f"its subgraph {index} initialises resource variables, which "
                              "NNAPI has no equivalent of")

