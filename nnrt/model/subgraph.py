"""Outlining: a set of a model's operations made into a model of its own.

A partition of a model becomes a step of an execution plan, or the input of a plugin's compile
step (LiteRT outlines partitions the same way). :func:`outline` copies the operations, in the
parent's run order, with every operand they touch: constants keep their values (the same array,
or the same pool slice for CONSTANT_REFERENCE), operands produced outside the set become the
sub-model's inputs and operands the rest of the model (or the caller) reads become its outputs.
Boundary operands take the parent's inferred dims, so a partition of a static model is static.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from nnrt.errors import BadData, BadState
from nnrt.model.model import Model
from nnrt.model.types import OperandLifetime

__all__ = ["Outlined", "outline"]


@dataclass(frozen=True)
class Outlined:
    """A sub-model and how its operands map onto the parent's.

    ``inputs[k]`` / ``outputs[k]`` are the parent operand indices behind the sub-model's
    input / output ``k``; ``operations`` the parent operation indices, in run order;
    ``operands[k]`` the parent operand behind the sub-model's operand ``k``.
    """

    model: Model
    operations: tuple[int, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    operands: tuple[int, ...] = ()


def outline(parent: Model, operations: Iterable[int]) -> Outlined:
    """The finished sub-model made of ``operations`` (indices into ``parent``'s operations)."""
    if not parent.finished:
        raise BadState("outline: the model is not finished")
    chosen = set(operations)
    count = len(parent.operations)
    bad = sorted(i for i in chosen if not (isinstance(i, int) and 0 <= i < count))
    if bad or not chosen:
        raise BadData(f"outline: operation indices must be a non-empty set from 0 to "
                      f"{count - 1}, got {sorted(chosen)[:8] if not bad else bad[:8]}")
    order = tuple(i for i in parent.run_order if i in chosen)
    produced = {k for i in order for k in parent.operations[i].outputs}
    read_outside = set(parent.outputs)
    for i, op in enumerate(parent.operations):
        if i not in chosen:
            read_outside.update(op.inputs)
    operands = parent.operands
    inferred = parent.inferred_dims
    sub = Model()
    mapping: dict[int, int] = {}
    inputs: list[int] = []

    def operand(k: int) -> int:
        if k in mapping:
            return mapping[k]
        source = operands[k]
        dims = inferred[k] if inferred[k] else source.dims
        index = sub.add_operand(source.type, dims, source.scale, source.zero_point,
                                name=source.name)
        if source.channel_quant is not None:
            sub.set_operand_symm_per_channel_quant_params(
                index, source.channel_quant.channel_dim, source.channel_quant.scales)
        lifetime = source.lifetime
        if lifetime == OperandLifetime.NO_VALUE:
            sub.set_operand_value(index, None)
        elif lifetime == OperandLifetime.SUBGRAPH and source.subgraph is not None:
            sub.set_operand_value_from_model(index, source.subgraph)
        elif source.location is not None:
            loc = source.location
            sub.set_operand_value_from_memory(index, loc.memory, loc.offset, loc.length)
        elif source.value is not None:
            sub.set_operand_value(index, source.value)
        elif k not in produced:
            inputs.append(k)
        mapping[k] = index
        return index

    for i in order:
        op = parent.operations[i]
        ins = [operand(k) for k in op.inputs]
        outs = [operand(k) for k in op.outputs]
        sub.add_operation(op.type, ins, outs)
    outputs = tuple(k for i in order for k in parent.operations[i].outputs if k in read_outside)
    sub.identify_inputs_and_outputs([mapping[k] for k in inputs], [mapping[k] for k in outputs])
    sub.relax_computation_float32_to_float16(parent.relaxed)
    parents = tuple(sorted(mapping, key=mapping.__getitem__))
    return Outlined(sub.finish(), order, tuple(inputs), outputs, parents)
