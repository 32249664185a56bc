"""Folding at compile time: a per-channel scale and shift into the convolution before them, and
a standalone RELU / RELU1 / RELU6 into the operation before it as its fused activation.

ONNX-imported CNNs carry batch normalisation as ``CONV_2D -> MUL(scale) -> ADD(shift)`` with
per-channel constants; onnxruntime folds them into the convolution, and so does this pass: the
filter's output channels are multiplied by the scale, the bias becomes ``bias * scale + shift``,
and the last operation's fused activation moves onto the convolution. Only exact patterns fold:
constant filter, bias, scale and shift, a convolution without activation, each intermediate read
by the next operation only (and not a partition output), constants that vary along the channel
axis alone. The result differs from the unfolded chain by float rounding only.

An activation operation whose input is read by it alone (and is not a partition output) and
comes from an operation with a fused-activation parameter left at NONE becomes that parameter:
exact, since both apply the same clamp to the same values.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnrt.drivers.litert.patterns import operand_readers
from nnrt.drivers.litert.support import conv_window
from nnrt.model.model import Model
from nnrt.model.types import OperationType
from nnrt.ops._framework.context import static_context

__all__ = ["Fold", "Fused", "fold_affine", "fuse_activations"]

Op = OperationType
Array = np.ndarray[Any, Any]


@dataclass(frozen=True)
class Fold:
    """A convolution with the scale and shift after it folded in."""

    filter: Array
    bias: Array
    #: The operand the folded convolution writes (the last folded operation's output).
    output: int
    activation: int
    #: The MUL / ADD operations it replaces (not written).
    absorbed: tuple[int, ...]


@dataclass(frozen=True)
class Fused:
    """An operation whose output is clamped by the activation operation after it."""

    activation: int
    #: The activation operation's output: what the operation now writes.
    output: int
    #: The activation operation (not written).
    absorbed: int


#: Activation operations and their fused-activation codes.
_ACTIVATIONS = {Op.RELU: 1, Op.RELU1: 2, Op.RELU6: 3}
#: Operations with a fused-activation input, and its slot (pools: by input count).
_ACTIVATION_SLOT = {Op.ADD: 2, Op.SUB: 2, Op.MUL: 2, Op.DIV: 2, Op.FULLY_CONNECTED: 3}


def _channel_vector(model: Model, operand: int, channels: int, nchw: bool) -> Array | None:
    """The constant ``operand`` as one value per channel, if that is all it varies along."""
    value = model.constant_value(operand)
    if value is None:
        return None
    array = np.asarray(value, np.float32)
    if array.ndim > 4:
        return None
    full = array.reshape((1,) * (4 - array.ndim) + array.shape)
    axis = 1 if nchw else 3
    if any(d != 1 for i, d in enumerate(full.shape) if i != axis) or full.shape[axis] not in (
            1, channels):
        return None
    return np.broadcast_to(full.reshape(-1), (channels,)).astype(np.float32)


def fold_affine(model: Model) -> dict[int, Fold]:
    """Per convolution index: what folding the MUL / ADD after it gives (only those that fold)."""
    readers, reader_of = operand_readers(model)
    folds: dict[int, Fold] = {}
    for index, op in enumerate(model.operations):
        if op.type not in (Op.CONV_2D, Op.DEPTHWISE_CONV_2D):
            continue
        fold = _fold(model, index, readers, reader_of)
        if fold is not None:
            folds[index] = fold
    return folds


def _fold(model: Model, index: int, readers: Counter[int],
          reader_of: dict[int, int]) -> Fold | None:
    op = model.operations[index]
    window = conv_window(static_context(model, index))
    filt, bias = model.constant_value(op.inputs[1]), model.constant_value(op.inputs[2])
    if isinstance(window, str) or window.activation or filt is None or bias is None:
        return None
    channels = model.inferred_dims[op.outputs[0]][1 if window.nchw else 3]
    scale = np.ones(channels, np.float32)
    shift = np.zeros(channels, np.float32)
    current, activation, absorbed = op.outputs[0], 0, []
    for kind in (Op.MUL, Op.ADD):
        if activation or readers[current] != 1 or current not in reader_of:
            break
        following = reader_of[current]
        step = model.operations[following]
        if step.type != kind or len(step.inputs) != 3:
            break
        other = step.inputs[1] if step.inputs[0] == current else step.inputs[0]
        vector = _channel_vector(model, other, channels, window.nchw)
        code = model.constant_value(step.inputs[2])
        if vector is None or code is None:
            break
        if kind == Op.MUL:
            scale, shift = scale * vector, shift * vector
        else:
            shift = shift + vector
        current, activation = step.outputs[0], int(code)
        absorbed.append(following)
    if not absorbed:
        return None
    weights = np.asarray(filt, np.float32)
    axis = 0 if op.type == Op.CONV_2D else 3  # output channels: OHWI, or 1HWO for depthwise
    shape = [1, 1, 1, 1]
    shape[axis] = channels
    return Fold(filter=weights * scale.reshape(shape),
                bias=np.asarray(bias, np.float32) * scale + shift,
                output=current, activation=activation, absorbed=tuple(absorbed))


def fuse_activations(model: Model, folds: dict[int, Fold],
                     excluded: frozenset[int] = frozenset()) -> dict[int, Fused]:
    """Per operation index: the activation operation after it that becomes its fused one
    (``excluded`` operations take part in no fusion: another pattern writes them)."""
    readers, reader_of = operand_readers(model)
    absorbed = {i for fold in folds.values() for i in fold.absorbed} | excluded
    fused: dict[int, Fused] = {}
    for index, op in enumerate(model.operations):
        if index in absorbed:
            continue
        fold = folds.get(index)
        output = op.outputs[0] if fold is None else fold.output
        current = fold.activation if fold is not None else _activation(model, index)
        if current != 0 or readers[output] != 1 or output not in reader_of:
            continue
        after = reader_of[output]
        code = _ACTIVATIONS.get(model.operations[after].type)
        if code is not None and after not in absorbed:
            fused[index] = Fused(code, model.operations[after].outputs[0], after)
    return fused


def _activation(model: Model, index: int) -> int | None:
    """The fused activation of operation ``index`` (None: it has no such parameter)."""
    op = model.operations[index]
    if op.type in (Op.CONV_2D, Op.DEPTHWISE_CONV_2D):
        window = conv_window(static_context(model, index))
        return None if isinstance(window, str) else window.activation
    if op.type in (Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D):
        slot = 9 if len(op.inputs) in (10, 11) else 6  # explicit or implicit padding
    elif op.type in _ACTIVATION_SLOT:
        slot = _ACTIVATION_SLOT[op.type]
    else:
        return None
    if slot >= len(op.inputs):
        return 0
    value = model.constant_value(op.inputs[slot])
    return None if value is None else int(value)
