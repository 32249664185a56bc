"""Operation patterns the litert compiler writes as one TFLite builtin (the one-hot product,
written as a GATHER, is in :mod:`.onehot`).

A pattern is a chain of operations computing one unary function of one tensor, each
intermediate read by the next operation only (and not a partition output), without fused
activations; constants are matched in either
operand order where the operation commutes.

GELU: the ONNX importer writes ``Gelu`` (and a decomposed GELU) as
``x / sqrt(2) -> com.nnrt.ERF -> + 1 -> * x -> * 0.5``. TFLite has no ERF builtin, but it has
GELU (``approximate = false``), which computes exactly ``0.5 * x * (1 + erf(x / sqrt(2)))``:
the five operations become one. A match needs the constants √2 (or 1/√2 for a MUL), 1 and 0.5.

HARD_SWISH: the ONNX importer writes ``HardSwish`` as ``x + 3 -> MAXIMUM 0 -> MINIMUM 6 -> * x
-> / 6`` (a ``Clip`` between the ``Add`` and the ``Mul``, as MobileNetV3 and PP-OCR export it).
TFLite's HARD_SWISH computes ``x * relu6(x + 3) / 6``: the same function, rounded once less
(XNNPACK's kernel is within 5e-7 of float64 on [-8, 8], the chain in float32 within 1e-6).

SOFTMAX: a softmax over the last axis exported operation by operation, ``exp(x - max(x)) /
sum(exp(x - max(x)))`` (as magika's classifier has it: REDUCE_MAX, a MAXIMUM with -inf,
RESHAPEs to the row shape, SUB, EXP, REDUCE_SUM, DIV), is TFLite's SOFTMAX (``beta = 1``),
which subtracts the row maximum the same way. The chain is matched from its EXP: the EXP's
output read by the REDUCE_SUM and the DIV only, every other intermediate by the next operation
only, the maximum and the sum over the last axis only and reshaped (if at all) to ``[..., 1]``.
LiteRT's EXP alone is not taken (:mod:`.support`), its softmax is.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnrt.model.model import Model
from nnrt.model.types import OperandType, OperationType

__all__ = ["Chain", "constant_scalar", "gelu_patterns", "hard_swish_patterns",
           "operand_readers", "softmax_patterns"]

Op = OperationType
Array = np.ndarray[Any, Any]
_RTOL = 1e-6
_FLOATS = (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16)


@dataclass(frozen=True)
class Chain:
    """A chain of operations written as one unary builtin at one of them:
    ``output = f(input)``."""

    input: int
    output: int
    #: The other operations of the pattern (not written).
    absorbed: tuple[int, ...]


def constant_scalar(model: Model, operand: int) -> float | None:
    """The value of ``operand`` when it is a constant of one element (None otherwise)."""
    value = model.constant_value(operand)
    if value is None or np.asarray(value).size != 1:
        return None
    return float(np.asarray(value).reshape(-1)[0])


def _other(model: Model, index: int, known: int) -> int | None:
    """The operand of binary operation ``index`` that is not ``known`` (None: both are)."""
    a, b = model.operations[index].inputs[:2]
    if a == known and b != known:
        return b
    if b == known and a != known:
        return a
    return None


def operand_readers(model: Model) -> tuple[Counter[int], dict[int, int]]:
    """How many operations (and partition outputs) read each operand, and one reader of each:
    a rewrite may absorb an intermediate only when its one reader is the next operation."""
    readers: Counter[int] = Counter(k for op in model.operations for k in op.inputs)
    readers.update(model.outputs)
    reader_of = {k: index for index, op in enumerate(model.operations) for k in op.inputs}
    return readers, reader_of


def gelu_patterns(model: Model) -> dict[int, Chain]:
    """Per ERF operation index: the GELU it is the heart of (only complete matches)."""
    readers, reader_of = operand_readers(model)
    producer = {k: index for index, op in enumerate(model.operations) for k in op.outputs}
    found: dict[int, Chain] = {}
    for index, op in enumerate(model.operations):
        if op.type == Op.NNRT_ERF:
            match = _match(model, index, readers, producer, reader_of)
            if match is not None:
                found[index] = match
    return found


def _no_activation(model: Model, index: int) -> bool:
    inputs = model.operations[index].inputs
    return len(inputs) < 3 or constant_scalar(model, inputs[2]) == 0


def _match(model: Model, erf: int, readers: Counter[int], producer: dict[int, int],
           reader_of: dict[int, int]) -> Chain | None:
    scaled = model.operations[erf].inputs[0]
    first = producer.get(scaled)
    if first is None or readers[scaled] != 1 or not _no_activation(model, first):
        return None
    head = model.operations[first]
    if head.type not in (Op.DIV, Op.MUL):
        return None
    x, given = head.inputs[0], head.inputs[1]
    if head.type == Op.MUL and constant_scalar(model, x) is not None:
        x, given = given, x  # the factor first: MUL commutes
    factor = constant_scalar(model, given)
    want = math.sqrt(2.0) if head.type == Op.DIV else 1 / math.sqrt(2.0)
    if factor is None or not math.isclose(factor, want, rel_tol=_RTOL):
        return None
    chain = [first]
    current = model.operations[erf].outputs[0]
    steps = ((Op.ADD, 1.0), (Op.MUL, None), (Op.MUL, 0.5))
    for kind, constant in steps:
        if readers[current] != 1 or current not in reader_of:
            return None
        step = reader_of[current]
        if model.operations[step].type != kind or not _no_activation(model, step):
            return None
        other = _other(model, step, current)
        if other is None:
            return None
        if constant is None:
            if other != x:
                return None
        else:
            value = constant_scalar(model, other)
            if value is None or not math.isclose(value, constant, rel_tol=_RTOL):
                return None
        chain.append(step)
        current = model.operations[step].outputs[0]
    return Chain(x, current, tuple(chain))


def hard_swish_patterns(model: Model) -> dict[int, Chain]:
    """Per ``x + 3`` ADD operation index: the HARD_SWISH it starts (only complete matches)."""
    readers, reader_of = operand_readers(model)
    found: dict[int, Chain] = {}
    for index, op in enumerate(model.operations):
        if op.type == Op.ADD and _no_activation(model, index):
            match = _match_hard_swish(model, index, readers, reader_of)
            if match is not None:
                found[index] = match
    return found


def _match_hard_swish(model: Model, first: int, readers: Counter[int],
                      reader_of: dict[int, int]) -> Chain | None:
    a, b = model.operations[first].inputs[:2]
    x = b if constant_scalar(model, a) is not None else a
    three = _other(model, first, x)
    if model.operands[x].type not in _FLOATS or three is None or constant_scalar(
            model, three) != 3.0:
        return None
    chain = [first]
    current = model.operations[first].outputs[0]
    steps = ((Op.MAXIMUM, 0.0), (Op.MINIMUM, 6.0), (Op.MUL, None), (Op.DIV, 6.0))
    for kind, constant in steps:
        if readers[current] != 1 or current not in reader_of:
            return None
        step = reader_of[current]
        op = model.operations[step]
        if op.type != kind or (kind in (Op.MUL, Op.DIV) and not _no_activation(model, step)):
            return None
        other = _other(model, step, current)
        if other is None or (kind == Op.DIV and op.inputs[0] != current):
            return None
        matches = other == x if constant is None else constant_scalar(model, other) == constant
        if not matches:
            return None
        chain.append(step)
        current = op.outputs[0]
    if model.inferred_dims[current] != model.inferred_dims[x]:
        return None  # the constants broadcast x to another shape
    return Chain(x, current, tuple(chain[1:]))


def softmax_patterns(model: Model) -> dict[int, Chain]:
    """Per EXP operation index: the softmax over the last axis it is the heart of."""
    readers, _ = operand_readers(model)
    producer = {k: index for index, op in enumerate(model.operations) for k in op.outputs}
    found: dict[int, Chain] = {}
    for index, op in enumerate(model.operations):
        if op.type == Op.EXP:
            match = _match_softmax(model, index, readers, producer)
            if match is not None:
                found[index] = match
    return found


def _last_axis_only(model: Model, index: int, rank: int) -> bool:
    """Whether reduction ``index`` reduces the last of ``rank`` axes and no other."""
    axes = model.constant_value(model.operations[index].inputs[1])
    return axes is not None and {int(a) % rank for a in np.asarray(axes).reshape(-1)} == {
        rank - 1}


def _match_softmax(model: Model, exp: int, readers: Counter[int],
                   producer: dict[int, int]) -> Chain | None:
    ops, dims = model.operations, model.inferred_dims
    shifted = ops[exp].inputs[0]
    sub = producer.get(shifted)
    if sub is None or readers[shifted] != 1 or ops[sub].type != Op.SUB or not _no_activation(
            model, sub):
        return None
    x, row_max = ops[sub].inputs[:2]
    rank = len(dims[x])
    row = (*dims[x][:-1], 1)
    if dims[row_max] != row or dims[shifted] != dims[x]:
        return None
    found_max = _row_reduction(model, row_max, Op.REDUCE_MAX, readers, producer, x)
    exps = ops[exp].outputs[0]
    users = [i for i, op in enumerate(ops) for k in op.inputs if k == exps]
    if found_max is None or readers[exps] != 2 or len(users) != 2:
        return None
    div = next((i for i in users if ops[i].type == Op.DIV), None)
    if div is None or ops[div].inputs[0] != exps or not _no_activation(model, div):
        return None
    total = ops[div].inputs[1]
    found_sum = _row_reduction(model, total, Op.REDUCE_SUM, readers, producer, exps)
    if found_sum is None or dims[total] != row or set(users) != {div, found_sum[-1]}:
        return None
    if not all(_last_axis_only(model, steps[-1], rank) for steps in (found_max, found_sum)):
        return None
    return Chain(x, ops[div].outputs[0], (sub, *found_max, *found_sum, div))


def _row_reduction(model: Model, operand: int, kind: OperationType, readers: Counter[int],
                   producer: dict[int, int], source: int) -> list[int] | None:
    """The operations computing ``operand`` from ``kind`` reducing ``source``, through
    RESHAPEs and MAXIMUMs with -inf (which change nothing), the reduction last."""
    steps = []
    current = operand
    while readers[current] == 1 and current in producer:
        step = producer[current]
        op = model.operations[step]
        steps.append(step)
        if op.type == kind:
            return steps if op.inputs[0] == source else None
        if op.type == Op.RESHAPE:
            current = op.inputs[0]
        elif op.type == Op.MAXIMUM and constant_scalar(model, op.inputs[0]) == -math.inf:
            current = op.inputs[1]
        elif op.type == Op.MAXIMUM and constant_scalar(model, op.inputs[1]) == -math.inf:
            current = op.inputs[0]
        else:
            return None
    return None
