"""Builds the one-operation models of the malformed-model tests (``tests/unit/ops``).

A plain module, not a test file: pytest's default ``prepend`` import mode puts this directory on
``sys.path``, so the test files import it as ``from single_op import build``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import nnrt
from nnrt import OperandType as T

# An input operand: (type, dims, value[, scale[, zero point]]); an output operand:
# (type, dims[, scale[, zero point]]) — the arguments of ``Model.add_operand``.
Spec = tuple[Any, ...]

OMIT = object()  # the value of an omitted optional input (NO_VALUE)
IN = object()  # a model-input marker for callers that use ``None`` for omitted inputs


def build(op: nnrt.OperationType, inputs: Sequence[Spec], outputs: Sequence[Spec], *,
          model_input: Any = None,
          channel_quant: tuple[int, Sequence[float]] | None = None) -> nnrt.Model:
    """A one-operation model, not finished.

    An input whose value ``is model_input`` (default ``None``; pass ``model_input=IN`` to make
    ``None`` mean omitted) becomes a model input; ``OMIT`` (or ``None``) gives an omitted
    optional input; any other value becomes the operand's constant value. Operands of type
    TENSOR_QUANT8_SYMM_PER_CHANNEL get ``channel_quant`` (channel dim, scales) when it is given.
    The outputs become the model outputs.
    """
    model = nnrt.Model()
    op_in, model_in = [], []
    for type_, dims, value, *quant in inputs:
        index = model.add_operand(type_, dims, *quant)
        if type_ == T.TENSOR_QUANT8_SYMM_PER_CHANNEL and channel_quant is not None:
            model.set_operand_symm_per_channel_quant_params(index, *channel_quant)
        if value is model_input:
            model_in.append(index)
        else:
            model.set_operand_value(index, None if value is OMIT else value)
        op_in.append(index)
    op_out = [model.add_operand(*spec) for spec in outputs]
    model.add_operation(op, op_in, op_out)
    model.identify_inputs_and_outputs(model_in, op_out)
    return model


def scalar(value: Any) -> Spec:
    """A constant scalar input: BOOL for a ``bool``, INT32 otherwise."""
    return (T.BOOL if isinstance(value, bool) else T.INT32, (), value)
