"""The lowering table, :data:`LOWERINGS`, and :func:`lower`, which builds a partition's graph.

Lowering turns each operation of a partition into kernel calls in the compiler graph.
:data:`LOWERINGS`, the table of every operation type the cpu compiler lowers, is assembled here
from the family modules, which build on :mod:`nnrt.drivers.cpu.lowering.base` (the
:class:`Lowerer`) and never import this package module:

* :mod:`~nnrt.drivers.cpu.lowering.basic`: element-wise arithmetic, activations, SOFTMAX, shape
  operations, MEAN, CONCATENATION;
* :mod:`~nnrt.drivers.cpu.lowering.nn`: matrix, convolution and pooling operations (weights
  pre-packed);
* :mod:`~nnrt.drivers.cpu.lowering.ext`: nnrt's extension operations (ERF, LAYER_NORMALIZATION);
* :mod:`~nnrt.drivers.cpu.lowering.math`: element-wise math, reductions, LOG_SOFTMAX,
  INSTANCE_NORMALIZATION;
* :mod:`~nnrt.drivers.cpu.lowering.data`: data movement (slices, GATHER, padding, TILE);
* :mod:`~nnrt.drivers.cpu.lowering.lstm`: UNIDIRECTIONAL_SEQUENCE_LSTM;
* :mod:`~nnrt.drivers.cpu.lowering.typed`: int32 / bool results (comparisons, logic, SELECT,
  CAST, ARGMAX, ARGMIN);
* :mod:`~nnrt.drivers.cpu.lowering.quant`: quantised CONV_2D, DEPTHWISE_CONV_2D,
  FULLY_CONNECTED, ADD, SUB, MUL, pooling and tabulated functions of one quantised input
  (:data:`QUANT_LOWERINGS`, chosen when input 0 is quantised; quantised data movement uses the
  float lowerings).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from nnrt.drivers.cpu.graph import Graph
from nnrt.drivers.cpu.lowering.base import Lowerer, Lowering, static_context
from nnrt.drivers.cpu.lowering.basic import BASIC_LOWERINGS
from nnrt.drivers.cpu.lowering.data import DATA_LOWERINGS
from nnrt.drivers.cpu.lowering.ext import EXT_LOWERINGS
from nnrt.drivers.cpu.lowering.lstm import LSTM_LOWERINGS
from nnrt.drivers.cpu.lowering.math import MATH_LOWERINGS
from nnrt.drivers.cpu.lowering.nn import NN_LOWERINGS
from nnrt.drivers.cpu.lowering.quant import QUANT_LOWERINGS
from nnrt.drivers.cpu.lowering.typed import TYPED_LOWERINGS
from nnrt.errors import OpFailed
from nnrt.model.model import Model
from nnrt.model.types import OperandType, OperationType

__all__ = ["LOWERINGS", "QUANT_INPUT_TYPES", "QUANT_LOWERINGS", "Lowerer", "Lowering", "lower",
           "static_context"]

Array = np.ndarray[Any, Any]

#: Every operation type the cpu compiler lowers, and its lowering.
LOWERINGS: dict[OperationType, Lowering] = {
    **BASIC_LOWERINGS, **NN_LOWERINGS, **EXT_LOWERINGS, **MATH_LOWERINGS, **DATA_LOWERINGS,
    **LSTM_LOWERINGS, **TYPED_LOWERINGS,
}


#: Quantised input types the cpu compiler takes (QUANT_LOWERINGS and data movement).
QUANT_INPUT_TYPES = frozenset({OperandType.TENSOR_QUANT8_ASYMM,
                               OperandType.TENSOR_QUANT8_ASYMM_SIGNED})


def lower(model: Model, folded: Mapping[int, Array], skip: tuple[int, ...]) -> Graph:
    """The graph of ``model``'s operations, except the folded ones (``skip``)."""
    lw = Lowerer(model, folded)
    skipped = set(skip)
    for index in model.run_order:
        if index in skipped:
            continue
        op = model.operations[index]
        quantised = model.operands[op.inputs[0]].type in QUANT_INPUT_TYPES
        lowering = (QUANT_LOWERINGS if quantised else LOWERINGS).get(op.type)
        if quantised and lowering is None:  # data movement: the float lowering moves integers
            lowering = LOWERINGS.get(op.type)
        if lowering is None:
            raise OpFailed(f"operation {index} ({op.type.name}): not accelerated by cpu")
        lowering(lw, static_context(model, index))
    return lw.finish()
