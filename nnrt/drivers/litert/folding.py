"""Folding at compile time: a per-channel scale and shift into the convolution before them, and
a standalone RELU / RELU1 / RELU6 into the operation before it as its fused activation.

ONNX-imported CNNs carry batch normalisation as ``CONV_2D -> MUL(scale) -> ADD(shift)`` with
per-channel constants (and a transposed convolution's bias as an ``ADD`` before them);
onnxruntime folds them into the convolution, and so does this pass: any run of such MULs and
ADDs after a CONV_2D, DEPTHWISE_CONV_2D or TRANSPOSE_CONV_2D is one affine map per channel, so
the filter's output channels are multiplied by the scale, the bias becomes ``bias * scale +
shift``, and the last operation's fused activation moves onto the convolution. Only exact
patterns fold: constant filter, bias, scales and shifts, a convolution without activation, each
intermediate read by the next operation only (and not a partition output), constants that vary
along the channel axis alone. The result differs from the unfolded chain by float rounding
only.

A bias ``ADD`` after a FULLY_CONNECTED (ONNX's ``MatMul`` then ``Add``, which the importer
writes as ``RESHAPE -> FULLY_CONNECTED -> RESHAPE -> ADD``) folds into the FULLY_CONNECTED's
bias the same way (:func:`fold_bias`): a constant that varies along the last axis alone, added
to every row, is a bias, and XNNPACK adds the bias in the product's kernel instead of in a
separate pass over the output (on PP-OCR's recogniser, a 20x18710 ADD of 0.14 ms). A RESHAPE
between them is kept when it keeps the last axis (the columns the bias is per): it then writes
the ADD's output (:attr:`BiasFold.alias`). The result differs from the unfolded pair by float
rounding only (the bias is added first instead of last).

An activation operation whose input is read by it alone (and is not a partition output) and
comes from an operation with a fused-activation parameter left at NONE becomes that parameter:
exact, since both apply the same clamp to the same values.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnrt.drivers.litert.geometry import conv_window, transpose_conv_window
from nnrt.drivers.litert.patterns import operand_readers
from nnrt.model.model import Model
from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.context import static_context
from nnrt.ops.quant import QUANT_RANGES

__all__ = ["BiasFold", "Fold", "Fused", "fold_affine", "fold_bias", "fuse_activations",
           "rectified"]

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
class BiasFold:
    """A FULLY_CONNECTED with the bias ADD after it folded in."""

    bias: Array
    #: The operand the FULLY_CONNECTED writes: the ADD's output, or its own when a RESHAPE
    #: follows it.
    output: int
    activation: int
    #: The ADD (not written).
    absorbed: tuple[int, ...]
    #: The RESHAPE's output and the ADD's output, which the RESHAPE then writes (one tensor).
    alias: tuple[int, int] | None = None


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
_FLOATS = frozenset({OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16})
#: The convolutions a scale and shift fold into, and the output-channel axis of their filters
#: (OHWI, or 1HWO for depthwise).
_FILTER_AXIS = {Op.CONV_2D: 0, Op.DEPTHWISE_CONV_2D: 3, Op.TRANSPOSE_CONV_2D: 0}
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


def fold_affine(model: Model, excluded: frozenset[int] = frozenset()) -> dict[int, Fold]:
    """Per convolution index: what folding the MULs / ADDs after it gives (only those that
    fold; ``excluded`` operations are never folded: another pattern writes them)."""
    readers, reader_of = operand_readers(model)
    folds: dict[int, Fold] = {}
    for index, op in enumerate(model.operations):
        if op.type not in _FILTER_AXIS or index in excluded:
            continue
        fold = _fold(model, index, readers, reader_of, excluded)
        if fold is not None:
            folds[index] = fold
    return folds


def _conv_form(model: Model, index: int) -> tuple[bool, int] | None:
    """Whether convolution ``index`` is NCHW, and its fused activation (None: litert has no
    form for it)."""
    ctx = static_context(model, index)
    found = (transpose_conv_window(ctx) if model.operations[index].type == Op.TRANSPOSE_CONV_2D
             else conv_window(ctx))
    return None if isinstance(found, str) else (found.nchw, found.activation)


def _fold(model: Model, index: int, readers: Counter[int], reader_of: dict[int, int],
          excluded: frozenset[int]) -> Fold | None:
    op = model.operations[index]
    form = _conv_form(model, index)
    filt, bias = model.constant_value(op.inputs[1]), model.constant_value(op.inputs[2])
    if (form is None or form[1] or filt is None or bias is None
            or model.operands[op.outputs[0]].type not in _FLOATS):
        return None  # a quantised convolution's output is requantised: no float scale folds
    nchw = form[0]
    channels = model.inferred_dims[op.outputs[0]][1 if nchw else 3]
    scale = np.ones(channels, np.float32)
    shift = np.zeros(channels, np.float32)
    current, activation, absorbed = op.outputs[0], 0, []
    while not activation and readers[current] == 1 and current in reader_of:
        following = reader_of[current]
        step = model.operations[following]
        if following in excluded or step.type not in (Op.MUL, Op.ADD) or len(step.inputs) != 3:
            break
        other = step.inputs[1] if step.inputs[0] == current else step.inputs[0]
        vector = _channel_vector(model, other, channels, nchw)
        code = model.constant_value(step.inputs[2])
        if vector is None or code is None:
            break
        if step.type == Op.MUL:
            scale, shift = scale * vector, shift * vector
        else:
            shift = shift + vector
        current, activation = step.outputs[0], int(code)
        absorbed.append(following)
    if not absorbed:
        return None
    shape = [1, 1, 1, 1]
    shape[_FILTER_AXIS[op.type]] = channels
    return Fold(filter=np.asarray(filt, np.float32) * scale.reshape(shape),
                bias=np.asarray(bias, np.float32) * scale + shift,
                output=current, activation=activation, absorbed=tuple(absorbed))


def fold_bias(model: Model, excluded: frozenset[int] = frozenset()) -> dict[int, BiasFold]:
    """Per FULLY_CONNECTED index: the bias ADD after it (through a RESHAPE keeping the last
    axis) folded into its constant bias (``excluded`` operations are never folded)."""
    readers, reader_of = operand_readers(model)
    folds: dict[int, BiasFold] = {}
    for index, op in enumerate(model.operations):
        if op.type == Op.FULLY_CONNECTED and index not in excluded:
            fold = _fold_bias(model, index, readers, reader_of, excluded)
            if fold is not None:
                folds[index] = fold
    return folds


def _fold_bias(model: Model, index: int, readers: Counter[int], reader_of: dict[int, int],
               excluded: frozenset[int]) -> BiasFold | None:
    op = model.operations[index]
    bias = model.constant_value(op.inputs[2])
    if bias is None or _activation(model, index) != 0:
        return None
    columns = int(np.asarray(bias).size)

    def single_reader(operand: int) -> int | None:
        following = reader_of.get(operand)
        ok = readers[operand] == 1 and following is not None and following not in excluded
        return following if ok else None

    current, reshaped = op.outputs[0], None
    following = single_reader(current)
    if following is not None and model.operations[following].type == Op.RESHAPE:
        reshaped = model.operations[following].outputs[0]
        dims = model.inferred_dims[reshaped]
        if not dims or dims[-1] != columns:
            return None
        current, following = reshaped, single_reader(reshaped)
    if following is None or model.operations[following].type != Op.ADD:
        return None
    add = model.operations[following]
    other = add.inputs[1] if add.inputs[0] == current else add.inputs[0]
    vector = _row_vector(model, other, columns, len(model.inferred_dims[current]))
    code = model.constant_value(add.inputs[2]) if len(add.inputs) > 2 else 0
    if (vector is None or code is None or other == current
            or model.inferred_dims[add.outputs[0]] != model.inferred_dims[current]):
        return None
    total = np.asarray(bias, np.float32) + vector
    if reshaped is None:
        return BiasFold(total, add.outputs[0], int(code), (following,))
    return BiasFold(total, op.outputs[0], int(code), (following,), (reshaped, add.outputs[0]))


def _row_vector(model: Model, operand: int, columns: int, rank: int) -> Array | None:
    """The constant ``operand`` as one value per column of a rank-``rank`` tensor, if it
    varies along the last axis alone and adds no dimension."""
    value = model.constant_value(operand)
    if value is None:
        return None
    array = np.asarray(value)
    if (array.dtype != np.float32 and array.dtype != np.float16) or array.ndim > rank:
        return None
    if any(d != 1 for d in array.shape[:-1]) or (array.ndim and array.shape[-1] not in (
            1, columns)):
        return None
    return np.broadcast_to(array.reshape(-1), (columns,)).astype(np.float32)


def fuse_activations(model: Model, folds: Mapping[int, Fold | BiasFold],
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
    if op.type in _FILTER_AXIS:
        form = _conv_form(model, index)
        return None if form is None else form[1]
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


def rectified(model: Model, operand: int) -> bool:
    """Whether ``operand`` holds no value below zero (a quantised tensor: its zero point): it
    is the output of a RELU or RELU6 (the operation, or an operation's fused activation), or a
    quantised tensor whose zero point is its type's minimum (as onnxruntime quantises a
    ``Relu``'s output, leaving the ``Relu`` out)."""
    found = model.operands[operand]
    if found.type in QUANT_RANGES and found.zero_point == QUANT_RANGES[found.type][0]:
        return True
    for index, op in enumerate(model.operations):
        if operand in op.outputs:
            return op.type in (Op.RELU, Op.RELU6) or _activation(model, index) in (1, 3)
    return False
