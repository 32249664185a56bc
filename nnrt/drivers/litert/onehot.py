"""The one-hot matrix product the litert compiler writes as a GATHER of a precomputed table.

An embedding exported as a one-hot matrix product (magika's first layer:
``EXPAND_DIMS(bytes) -> EQUAL arange(N) -> SELECT(1.0, 0.0) -> RESHAPE -> FULLY_CONNECTED``)
multiplies a [rows, N] matrix of zeros with one 1 per row by the weights: each output row is
``W[:, i] + bias`` for the row's index ``i``, or ``bias`` alone for an index outside 0..N-1
(an all-zero row). That is a GATHER of rows of a table computed at compile time: ``bias``,
then ``W.T + bias`` (rounded once, as the product is: ``1 * w + 0 * ... + bias``), then
``bias`` again, the fused activation applied to it; the indices clamped to [-1, N] and moved
by one (TFLite's GATHER refuses indices out of range). Exact only when the EQUAL compares int32
indices with a constant holding 0..N-1 along the last axis, the SELECT picks a constant of
ones where they are equal and of zeros elsewhere, and the weights and bias are finite (an inf
weight times 0 is NaN in the product, not in a GATHER). Reshapes before the EQUAL and
between the SELECT and the product change nothing (C order: the product takes the SELECT's
rows of N in turn).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnrt.drivers.litert.patterns import constant_scalar, operand_readers
from nnrt.model.model import Model
from nnrt.model.types import OperandType, OperationType

__all__ = ["OneHot", "one_hot_patterns"]

Op = OperationType
Array = np.ndarray[Any, Any]


@dataclass(frozen=True)
class OneHot:
    """A one-hot matrix product written as a GATHER: ``output = table[clamp(indices, -1, N)
    + 1]`` (``output`` [rows, units], ``table`` [N + 2, units])."""

    #: The int32 operand holding one index per output row (any shape, C order).
    indices: int
    #: float32 [N + 2, units]: bias, the weight columns plus bias, bias; activation applied.
    table: Array
    output: int
    #: The other operations of the pattern (not written).
    absorbed: tuple[int, ...]


#: Reshaping operations (C order kept: rows of the last dim stay rows).
_RESHAPES = (Op.RESHAPE, Op.SQUEEZE, Op.EXPAND_DIMS)
#: Fused activation codes -> the clamp they apply (NONE, RELU, RELU1, RELU6).
_CLAMPS = {0: (None, None), 1: (0.0, None), 2: (-1.0, 1.0), 3: (0.0, 6.0)}


def one_hot_patterns(model: Model) -> dict[int, OneHot]:
    """Per FULLY_CONNECTED index: the one-hot product it ends (only exact matches)."""
    readers, _ = operand_readers(model)
    producer = {k: index for index, op in enumerate(model.operations) for k in op.outputs}
    found: dict[int, OneHot] = {}
    for index, op in enumerate(model.operations):
        if op.type == Op.FULLY_CONNECTED:
            match = _match_one_hot(model, index, readers, producer)
            if match is not None:
                found[index] = match
    return found


def _single_producer(model: Model, operand: int, readers: Counter[int],
                     producer: dict[int, int], kind: OperationType | tuple[OperationType, ...]
                     ) -> int | None:
    """The operation of type ``kind`` computing ``operand``, when it is read only once."""
    index = producer.get(operand)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if index is None or readers[operand] != 1 or model.operations[index].type not in kinds:
        return None
    return index


def _match_one_hot(model: Model, fc: int, readers: Counter[int],
                   producer: dict[int, int]) -> OneHot | None:
    ops, dims = model.operations, model.inferred_dims
    x, weights, bias, code = ops[fc].inputs[:4]
    w, b, activation = model.constant_value(weights), model.constant_value(bias), constant_scalar(
        model, code)
    if w is None or b is None or activation not in _CLAMPS or w.dtype.kind != "f" or not (
            np.isfinite(w).all() and np.isfinite(b).all()):
        return None
    units, size = dims[weights]
    absorbed = []
    current = x
    while (step := _single_producer(model, current, readers, producer, _RESHAPES)) is not None:
        absorbed.append(step)  # C order kept: the product still takes rows of N in turn
        current = ops[step].inputs[0]
    select = _single_producer(model, current, readers, producer, Op.SELECT)
    if select is None or dims[current][-1] != size:
        return None
    condition, ones, zeros = ops[select].inputs[:3]
    equal = _single_producer(model, condition, readers, producer, Op.EQUAL)
    if equal is None or not _all(model, ones, 1.0) or not _all(model, zeros, 0.0):
        return None
    indices = _compared_with_arange(model, equal, size)
    rows = math.prod(dims[condition][:-1])
    if indices is None or dims[ops[fc].outputs[0]] != (rows, units) or math.prod(
            dims[indices]) != rows:
        return None
    absorbed += [select, equal]
    while (step := _single_producer(model, indices, readers, producer, _RESHAPES)) is not None:
        absorbed.append(step)
        indices = ops[step].inputs[0]
    return OneHot(indices, _one_hot_table(w, b, int(activation)), ops[fc].outputs[0],
                  tuple(absorbed))


def _all(model: Model, operand: int, value: float) -> bool:
    """Whether ``operand`` is a constant with every element equal to ``value``."""
    found = model.constant_value(operand)
    return found is not None and bool(np.all(np.asarray(found) == value))


def _compared_with_arange(model: Model, equal: int, size: int) -> int | None:
    """The int32 operand (last dim 1) EQUAL ``equal`` compares with a constant holding
    0..size-1 along its last axis (None: it compares anything else)."""
    dims = model.inferred_dims
    a, b = model.operations[equal].inputs[:2]
    for indices, other in ((a, b), (b, a)):
        value = model.constant_value(other)
        if value is None or model.operands[indices].type != OperandType.TENSOR_INT32:
            continue
        array = np.asarray(value)
        if (dims[indices][-1] == 1 and array.shape[-1:] == (size,) and array.size == size
                and np.array_equal(array.reshape(-1), np.arange(size))):
            return indices
    return None


def _one_hot_table(weights: Any, bias: Any, activation: int) -> Array:
    """[bias; W.T + bias; bias] in float32 (each sum rounded once, as in the product), clamped
    by the fused activation."""
    w = np.asarray(weights, np.float32)
    b = np.asarray(bias, np.float32).reshape(1, -1)
    with np.errstate(over="ignore"):  # an overflow is inf, as in the product
        table = np.concatenate([b, w.T + b, b])
    low, high = _CLAMPS[activation]
    if low is not None or high is not None:
        table = np.clip(table, low, high)
    return np.ascontiguousarray(table, np.float32)
