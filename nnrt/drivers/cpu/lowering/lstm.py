"""Lowering of UNIDIRECTIONAL_SEQUENCE_LSTM (kernel in :mod:`nnrt.drivers.cpu.kernels.lstm`).

The gates' weights are packed side by side in the kernel's order (input unless CIFG, forget,
output, cell): constant weights at compile time, weights computed at execution by a
``pack_gates`` call. The projection ``[output_size, units]`` is stored transposed. Every
variant of the operation is lowered: CIFG, peepholes, projection with or without bias, clipping,
layer normalisation, time- or batch-major.

The final states (outputs 1 and 2, when present) are secondary results of the one ``lstm``
call: they are created as scratch temporaries of that call (``Value.temp``), so the memory plan
gives them a slot from the call to their last reader, or the caller's output array when they
are model outputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnrt.drivers.cpu.graph import Ref
from nnrt.drivers.cpu.lowering.base import Lowerer, Lowering
from nnrt.model.types import OperationType
from nnrt.ops import sequence_lstm as L
from nnrt.ops._framework.context import OperationContext

__all__ = ["LSTM_LOWERINGS"]

Array = np.ndarray[Any, Any]


def _gate_slots(cifg: bool, first: int) -> tuple[int, ...]:
    """The slots of one family of gate inputs (``first`` = its input-gate slot), in the
    kernel's order: input (unless CIFG), forget, output, cell."""
    input_, forget, cell, output = first, first + 1, first + 2, first + 3
    return (forget, output, cell) if cifg else (input_, forget, output, cell)


def _packed(lw: Lowerer, ctx: OperationContext, slots: tuple[int, ...]) -> Ref:
    """Gate inputs ``slots`` packed side by side (matrices transposed)."""
    operands = [ctx.operation.inputs[s] for s in slots]
    known = [lw.const_of(k) for k in operands]
    if all(v is not None for v in known):
        blocks = [np.asarray(v, np.float32) for v in known if v is not None]
        return lw.constant(np.concatenate([b.T if b.ndim == 2 else b for b in blocks], axis=-1))
    shape = lw.shape(operands[0])
    packed = (*shape[1:], shape[0] * len(slots))
    ref = lw.intermediate(packed)
    lw.emit("pack_gates", ref.value, [tuple(lw.ref(k) for k in operands)], ctx.index)
    return ref


def _optional(lw: Lowerer, ctx: OperationContext, slot: int) -> Ref | None:
    return None if ctx.is_omitted(slot) else lw.ref(ctx.operation.inputs[slot])


def _projection(lw: Lowerer, ctx: OperationContext) -> Ref | None:
    if ctx.is_omitted(L.PROJECTION_WEIGHTS):
        return None
    operand = ctx.operation.inputs[L.PROJECTION_WEIGHTS]
    weights = lw.const_of(operand)
    if weights is not None:
        return lw.constant(np.asarray(weights, np.float32).T)
    rows, units = lw.shape(operand)
    ref = lw.intermediate((units, rows))
    lw.emit("pack_fc", ref.value, [lw.ref(operand)], ctx.index)
    return ref


def _state_result(lw: Lowerer, operand: int) -> Ref:
    """A final state written by the ``lstm`` call besides its sequence output."""
    value = lw.result(operand)
    lw.graph.values[value].temp = True
    return Ref(value)


def _lstm(lw: Lowerer, ctx: OperationContext) -> None:
    op = ctx.operation
    cifg = ctx.is_omitted(L.INPUT_TO_INPUT)
    gates = 3 if cifg else 4
    wx = _packed(lw, ctx, _gate_slots(cifg, L.INPUT_TO_INPUT))
    wh = _packed(lw, ctx, _gate_slots(cifg, L.RECURRENT_TO_INPUT))
    bias = _packed(lw, ctx, _gate_slots(cifg, L.INPUT_BIAS))
    norm = (_packed(lw, ctx, _gate_slots(cifg, L.INPUT_NORM))
            if ctx.n_inputs > L.FORGET_NORM and not ctx.is_omitted(L.FORGET_NORM) else None)
    peephole = None if ctx.is_omitted(L.CELL_TO_FORGET) else (
        _optional(lw, ctx, L.CELL_TO_INPUT), _optional(lw, ctx, L.CELL_TO_FORGET),
        _optional(lw, ctx, L.CELL_TO_OUTPUT))
    projection = _projection(lw, ctx)
    x_shape = lw.shape(op.inputs[L.INPUT])
    batch, units = lw.shape(op.inputs[L.CELL_STATE_IN])
    output_size = lw.shape(op.inputs[L.OUTPUT_STATE_IN])[1]
    time_major = bool(ctx.value(L.TIME_MAJOR))
    scratch = (lw.temp((*x_shape[:2], gates * units)), lw.temp((batch, gates * units)),
               lw.temp((batch, units)), lw.temp((batch, units)), lw.temp((batch, output_size)))
    params = (int(ctx.value(L.ACTIVATION)), float(ctx.value(L.CELL_CLIP)),
              float(ctx.value(L.PROJECTION_CLIP)), time_major, cifg)
    out = lw.result(op.outputs[0])
    states = ([_state_result(lw, k) for k in op.outputs[1:3]] if len(op.outputs) == 3
              else [None, None])
    lw.emit("lstm", out, [lw.ref(op.inputs[L.INPUT]), wx, wh, bias, peephole, norm, projection,
                          _optional(lw, ctx, L.PROJECTION_BIAS),
                          lw.ref(op.inputs[L.OUTPUT_STATE_IN]),
                          lw.ref(op.inputs[L.CELL_STATE_IN]), *states, *scratch, params],
            ctx.index)


LSTM_LOWERINGS: dict[OperationType, Lowering] = {
    OperationType.UNIDIRECTIONAL_SEQUENCE_LSTM: _lstm,
}
