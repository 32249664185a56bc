"""Operation patterns the litert compiler writes as one TFLite builtin.

GELU: the ONNX importer writes ``Gelu`` (and a decomposed GELU) as
``x / sqrt(2) -> com.nnrt.ERF -> + 1 -> * x -> * 0.5``. TFLite has no ERF builtin, but it has
GELU (``approximate = false``), which computes exactly ``0.5 * x * (1 + erf(x / sqrt(2)))``:
the five operations become one. A match needs every intermediate read by the next operation
only (and not a partition output), no fused activations, and the constants √2 (or 1/√2 for a
MUL), 1 and 0.5, in either operand order.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from nnrt.model.model import Model
from nnrt.model.types import OperationType

__all__ = ["Gelu", "gelu_patterns", "operand_readers"]

Op = OperationType
_RTOL = 1e-6


@dataclass(frozen=True)
class Gelu:
    """A GELU written as one builtin at its ERF: ``output = gelu(input)``."""

    input: int
    output: int
    #: The other operations of the pattern (not written).
    absorbed: tuple[int, ...]


def _scalar(model: Model, operand: int) -> float | None:
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


def gelu_patterns(model: Model) -> dict[int, Gelu]:
    """Per ERF operation index: the GELU it is the heart of (only complete matches)."""
    readers, reader_of = operand_readers(model)
    producer = {k: index for index, op in enumerate(model.operations) for k in op.outputs}
    found: dict[int, Gelu] = {}
    for index, op in enumerate(model.operations):
        if op.type == Op.NNRT_ERF:
            match = _match(model, index, readers, producer, reader_of)
            if match is not None:
                found[index] = match
    return found


def _no_activation(model: Model, index: int) -> bool:
    inputs = model.operations[index].inputs
    return len(inputs) < 3 or _scalar(model, inputs[2]) == 0


def _match(model: Model, erf: int, readers: Counter[int], producer: dict[int, int],
           reader_of: dict[int, int]) -> Gelu | None:
    scaled = model.operations[erf].inputs[0]
    first = producer.get(scaled)
    if first is None or readers[scaled] != 1 or not _no_activation(model, first):
        return None
    head = model.operations[first]
    if head.type not in (Op.DIV, Op.MUL):
        return None
    x, given = head.inputs[0], head.inputs[1]
    if head.type == Op.MUL and _scalar(model, x) is not None:
        x, given = given, x  # the factor first: MUL commutes
    factor = _scalar(model, given)
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
            value = _scalar(model, other)
            if value is None or not math.isclose(value, constant, rel_tol=_RTOL):
                return None
        chain.append(step)
        current = model.operations[step].outputs[0]
    return Gelu(x, current, tuple(chain))
