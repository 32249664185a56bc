"""Every conformance case, by operation family."""

from __future__ import annotations

from collections import Counter
from importlib import import_module

from nnrt.testing.spec import OpCase

__all__ = ["all_cases"]

#: The case modules, one per operation family (or source of vectors).
_FAMILY_NAMES = (
    "activation",
    "binary",
    "comparison",
    "control",
    "conv",
    "conversion",
    "detection",
    "extension",
    "gather",
    "matmul",
    "nnapi_conv",
    "nnapi_data",
    "nnapi_detection",
    "nnapi_elementwise",
    "nnapi_gaps",
    "nnapi_lstm",
    "nnapi_misc",
    "nnapi_quant_activation",
    "nnapi_quant_conv",
    "nnapi_quant_data",
    "nnapi_quant_elementwise",
    "nnapi_quant_matmul",
    "nnapi_quant_pool",
    "nnapi_rnn",
    "normalization",
    "pad",
    "pooling",
    "rank6",
    "recurrent",
    "reduce",
    "reshape",
    "resize",
    "sequence_lstm",
    "slicing",
    "softmax",
    "space",
    "tensor",
    "transpose_conv",
    "unary",
    "zero_size",
)
_FAMILIES = tuple(import_module(f"{__name__}.{name}") for name in _FAMILY_NAMES)


def all_cases() -> list[OpCase]:
    """Every case of every family; names are unique."""
    cases = [case for family in _FAMILIES for case in family.CASES]
    duplicates = sorted(n for n, k in Counter(c.name for c in cases).items() if k > 1)
    if duplicates:
        raise RuntimeError(f"duplicate conformance case names: {duplicates}")
    return cases
