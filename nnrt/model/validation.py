"""Structural validation of a model: operands, lifetimes and graph topology (NNAPI's rules).

Operation-specific rules live with each operation in ``nnrt.ops``.
"""

from __future__ import annotations

import math
from collections import deque
from typing import TYPE_CHECKING

from nnrt.errors import BadData
from nnrt.model.operand import Operand, is_scalar
from nnrt.model.operation import operation_name
from nnrt.model.types import OperandLifetime, OperandType

if TYPE_CHECKING:
    from nnrt.model.model import Model

__all__ = ["check_graph", "check_operand", "check_operand_type"]

_ZERO_POINT_RANGES: dict[OperandType, tuple[int, int]] = {
    OperandType.TENSOR_QUANT8_ASYMM: (0, 255),
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127),
    OperandType.TENSOR_QUANT16_ASYMM: (0, 65535),
    OperandType.TENSOR_QUANT8_SYMM: (0, 0),
    OperandType.TENSOR_QUANT16_SYMM: (0, 0),
}
_MAX_RANK = 16


def check_operand_type(code: OperandType | int, where: str) -> OperandType:
    """Turn an operand type code into ``OperandType`` or raise ``BadData``."""
    if isinstance(code, bool):
        raise BadData(f"{where}: operand type must be an OperandType, got {code!r}")
    try:
        return OperandType(int(code))
    except (TypeError, ValueError):
        raise BadData(f"{where}: unknown operand type {code!r}") from None


def check_operand(operand: Operand, where: str) -> None:
    """Check an operand's dims and quantisation parameters against its type."""
    t = operand.type
    if is_scalar(t) or t == OperandType.SUBGRAPH:
        if operand.dims:
            raise BadData(f"{where}: scalar {t.name} must have no dims, got {operand.dims}")
    else:
        if len(operand.dims) > _MAX_RANK:
            raise BadData(f"{where}: rank {len(operand.dims)} exceeds the maximum {_MAX_RANK}")
        for axis, d in enumerate(operand.dims):
            if d < 0:
                raise BadData(f"{where}: dimension {axis} is negative ({d})")
    _check_quant(operand, where)


def _check_quant(operand: Operand, where: str) -> None:
    t, scale, zp = operand.type, operand.scale, operand.zero_point
    if not math.isfinite(scale) or scale < 0:
        raise BadData(f"{where}: scale must be finite and non-negative, got {scale}")
    if t in _ZERO_POINT_RANGES:
        lo, hi = _ZERO_POINT_RANGES[t]
        if scale <= 0:
            raise BadData(f"{where}: {t.name} needs a positive scale, got {scale}")
        if not lo <= zp <= hi:
            raise BadData(f"{where}: {t.name} zero point must be in [{lo}, {hi}], got {zp}")
    elif t == OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        if scale != 0 or zp != 0:
            raise BadData(f"{where}: per-channel operands take scales from "
                          "set_operand_symm_per_channel_quant_params; scale and zero point must "
                          "be 0")
        _check_channel_quant(operand, where)
    elif t == OperandType.TENSOR_INT32:
        if zp != 0:
            raise BadData(f"{where}: TENSOR_INT32 zero point must be 0, got {zp}")
    elif scale != 0 or zp != 0:
        raise BadData(f"{where}: {t.name} takes no quantisation (scale {scale}, zero point {zp})")


def _check_channel_quant(operand: Operand, where: str) -> None:
    quant = operand.channel_quant
    if quant is None:
        return
    rank = len(operand.dims)
    if not 0 <= quant.channel_dim < max(rank, 1):
        raise BadData(f"{where}: channel_dim {quant.channel_dim} is out of range for rank {rank}")
    if rank and operand.dims[quant.channel_dim] not in (0, len(quant.scales)):
        raise BadData(f"{where}: {len(quant.scales)} scales for channel dimension of size "
                      f"{operand.dims[quant.channel_dim]}")
    for s in quant.scales:
        if not (math.isfinite(s) and s > 0):
            raise BadData(f"{where}: per-channel scales must be finite and positive, got {s}")


def check_graph(model: Model) -> tuple[int, ...]:
    """Check operands, lifetimes and topology; return the operations in a valid run order."""
    operands = model.operands
    for index, operand in enumerate(operands):
        where = f"operand {index} ({operand.describe()})"
        check_operand(operand, where)
        if (operand.type == OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL
                and operand.channel_quant is None):
            raise BadData(f"{where}: per-channel quantisation parameters were never set")
        if operand.type == OperandType.SUBGRAPH and operand.lifetime not in (
                OperandLifetime.SUBGRAPH, OperandLifetime.SUBGRAPH_INPUT):
            raise BadData(f"{where}: SUBGRAPH operand has no model "
                          "(set_operand_value_from_model)")
    if not model.outputs:
        raise BadData("model has no outputs")
    writers = _writers(model)
    for position, index in enumerate(model.outputs):
        if index not in writers:
            raise BadData(f"model output {position} (operand {index}) is never written by an "
                          "operation")
    for op_index, op in enumerate(model.operations):
        for slot, index in enumerate(op.inputs):
            operand = operands[index]
            if (operand.lifetime == OperandLifetime.TEMPORARY_VARIABLE
                    and index not in writers):
                raise BadData(f"operation {op_index} ({operation_name(op.type)}), input "
                              f"{slot}: operand {index} is never written (no operation "
                              "produces it and it is neither a model input nor a constant)")
    return _run_order(model)


def _writers(model: Model) -> dict[int, int]:
    operands = model.operands
    writers: dict[int, int] = {}
    for op_index, op in enumerate(model.operations):
        where = f"operation {op_index} ({operation_name(op.type)})"
        if len(set(op.outputs)) != len(op.outputs):
            raise BadData(f"{where}: the same operand appears twice among its outputs")
        for slot, index in enumerate(op.outputs):
            lifetime = operands[index].lifetime
            if lifetime not in (OperandLifetime.TEMPORARY_VARIABLE,
                                OperandLifetime.SUBGRAPH_OUTPUT):
                raise BadData(f"{where}, output {slot}: operand {index} is a "
                              f"{lifetime.name.lower().replace('_', ' ')} and cannot be written")
            if index in writers:
                raise BadData(f"{where}, output {slot}: operand {index} is already written by "
                              f"operation {writers[index]}")
            writers[index] = op_index
    return writers


def _run_order(model: Model) -> tuple[int, ...]:
    """Kahn's algorithm over operations; raises BadData naming the operations in a cycle."""
    operations = model.operations
    producer: dict[int, int] = {}
    for op_index, op in enumerate(operations):
        for index in op.outputs:
            producer[index] = op_index
    consumers: list[list[int]] = [[] for _ in operations]
    pending = [0] * len(operations)
    for op_index, op in enumerate(operations):
        deps = {producer[i] for i in op.inputs if i in producer}
        pending[op_index] = len(deps)
        for dep in deps:
            consumers[dep].append(op_index)
    ready = deque(i for i, n in enumerate(pending) if n == 0)
    order: list[int] = []
    while ready:
        op_index = ready.popleft()
        order.append(op_index)
        for consumer in consumers[op_index]:
            pending[consumer] -= 1
            if pending[consumer] == 0:
                ready.append(consumer)
    if len(order) != len(operations):
        stuck = sorted(set(range(len(operations))) - set(order))
        names = ", ".join(f"{i} ({operation_name(operations[i].type)})" for i in stuck)
        raise BadData(f"the graph has a cycle: operations {names} depend on each other")
    return tuple(order)
