"""The quantised variations NNAPI's test generator derives from a float spec example.

A V1_2 spec lists float vectors and, for the quantised variation, a ``DataTypeConverter`` giving
some operands a quantised type, scale and zero point; the generator quantises those operands'
values — inputs and expected outputs alike — with :func:`nnrt.testing.spec.spec_quantize`. The
V1_3 ``*_quant8_signed`` specs repeat the quant8 variations with TENSOR_QUANT8_ASYMM_SIGNED and
every such zero point lowered by 128 (:func:`signed`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from nnrt.model.types import OperandType
from nnrt.testing.spec import Arg, OpCase, spec_quantize

__all__ = ["Conversion", "quantised", "signed"]

T = OperandType

#: Target (type, scale, zero point) per operand: ``"i<k>"`` for input k, ``"o<k>"`` for output k.
Conversion = Mapping[str, tuple[OperandType, float, int]]


def _convert(arg: Arg, target: tuple[OperandType, float, int] | None) -> Arg:
    if target is None:
        return arg
    type_, scale, zero_point = target
    value = None if arg.value is None else spec_quantize(arg.value, type_, scale, zero_point)
    return replace(arg, type=type_, value=value, scale=scale, zero_point=zero_point)


def quantised(case: OpCase, conversion: Conversion, suffix: str = "quant8") -> OpCase:
    """The variation of float ``case`` with the operands of ``conversion`` quantised, named
    ``<case name>_<suffix>``."""
    inputs = tuple(_convert(a, conversion.get(f"i{k}")) for k, a in enumerate(case.inputs))
    outputs = tuple(_convert(a, conversion.get(f"o{k}")) for k, a in enumerate(case.outputs))
    return replace(case, name=f"{case.name}_{suffix}", inputs=inputs, outputs=outputs,
                   reference=None)


def signed(conversion: Conversion) -> dict[str, tuple[OperandType, float, int]]:
    """``conversion`` with TENSOR_QUANT8_ASYMM made TENSOR_QUANT8_ASYMM_SIGNED (zero point -
    128), as the V1_3 ``*_quant8_signed`` specs do; other targets unchanged."""
    return {key: ((T.TENSOR_QUANT8_ASYMM_SIGNED, scale, zero_point - 128)
                  if type_ == T.TENSOR_QUANT8_ASYMM else (type_, scale, zero_point))
            for key, (type_, scale, zero_point) in conversion.items()}
