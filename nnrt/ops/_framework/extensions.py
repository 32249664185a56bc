"""Which nnrt extensions of NNAPI a model uses, derived from its content at ``Model.finish()``.

* ``com.nnrt``: the model has an extension operation (``com.nnrt.ERF``, ...);
* ``com.nnrt.rank6``: an operation whose NNAPI limit is lower (``OperationDef.nnapi_max_rank``,
  rank 4 for RESHAPE, TRANSPOSE, ADD, MEAN, SOFTMAX, ...) has a tensor input or output of a
  higher rank (nnrt takes up to ``NNRT_MAX_RANK``).

Ranks are the ones known at finish (declared or inferred): a tensor whose rank is only known at
execution does not mark the model (its operation still checks the rank, up to nnrt's limit).
Operations inside IF / WHILE branches count through their referenced models.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from nnrt.model.operand import is_scalar
from nnrt.model.types import NNRT_EXTENSION, NNRT_RANK_EXTENSION, OperandType
from nnrt.ops._framework.registry import lookup

if TYPE_CHECKING:
    from nnrt.model.model import Model

__all__ = ["model_extensions"]


def model_extensions(model: Model, dims: Sequence[tuple[int, ...]]) -> frozenset[str]:
    """The nnrt extensions ``model`` uses, with ``dims`` its operands' dims known at finish."""
    found: set[str] = set()
    operands = model.operands
    for op in model.operations:
        if op.type.is_extension:
            found.add(NNRT_EXTENSION[0])
        definition = lookup(op.type)
        limit = definition.nnapi_max_rank if definition is not None else None
        if limit is not None and any(
                not is_scalar(operands[k].type) and len(dims[k]) > limit
                for k in (*op.inputs, *op.outputs)):
            found.add(NNRT_RANK_EXTENSION)
    for operand in operands:
        if operand.type == OperandType.SUBGRAPH and operand.subgraph is not None:
            found |= operand.subgraph.extensions
    return frozenset(found)
