"""Which operation-and-type variants NNAPI 1.3 defines, and how many conformance cases each has.

A *variant* is an operation with one operand type of the input that selects its kernel
(``OperationDef.type_input``; the registry's ``kernel_types`` are the types nnrt's NNAPI
validation accepts there, but for :data:`BEYOND_1_3_TYPES` — a unit test probes validation
for it), refined where NNAPI's own test generator treats a further operand as
a type variation of its own:

* the convolutions (CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D, TRANSPOSE_CONV_2D) with a
  quantised input have a second variant whose filter is TENSOR_QUANT8_SYMM_PER_CHANNEL;
* the conversions (CAST, QUANTIZE, DEQUANTIZE) are keyed by input *and* output type: every pair
  NNAPI's validation accepts (found by building the one-operation model of each pair).

A case covers a variant when one of its variants (``nnrt.testing.spec.expand``: a float32 case
covers TENSOR_FLOAT16 through its ``float16`` variant, as NNAPI's specs do with their "float16"
variation) has that type. Cases named ``<op>_nnapi_<spec>...`` are transcribed from NNAPI's
published test vectors; the others are nnrt's own.

:func:`vector_coverage` gives the table for the variants NNAPI 1.3 (feature level 4) defines;
:func:`beyond_nnapi_1_3` the same for what nnrt accepts beyond it (:data:`BEYOND_1_3`,
:data:`BEYOND_1_3_TYPES`); nnrt's
extension operations (``com.nnrt.*``) are in neither. :data:`GAPS` says why each variant
without NNAPI-vector cases has none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from nnrt.errors import NnrtError
from nnrt.model.model import Model
from nnrt.model.types import OperandType, OperationType
from nnrt.ops._framework.registry import OperationDef, definitions
from nnrt.testing.cases import all_cases
from nnrt.testing.spec import CaseVariant, OpCase, expand

__all__ = ["BEYOND_1_3", "BEYOND_1_3_TYPES", "GAPS", "PER_CHANNEL_FILTER", "CoverageRow",
           "beyond_nnapi_1_3", "is_nnapi_vector_case", "vector_coverage"]

T = OperandType
Op = OperationType

#: The ``detail`` of a convolution variant whose filter is quantised per channel.
PER_CHANNEL_FILTER = "per-channel filter"

#: Operations nnrt takes that NNAPI defines only after 1.3, with their feature level.
BEYOND_1_3: Mapping[OperationType, str] = {
    Op.BATCH_MATMUL: "feature level 6",
    Op.PACK: "feature level 6",
    Op.MIRROR_PAD: "feature level 7",
    Op.REVERSE: "feature level 7",
}

#: Types nnrt's validation accepts for an NNAPI 1.3 operation that NNAPI adds only later; the
#: reference kernels do not implement them (so they are not in ``kernel_types``).
BEYOND_1_3_TYPES: Mapping[tuple[OperationType, OperandType], str] = {
    (Op.RSQRT, T.TENSOR_QUANT8_ASYMM): "feature level 7; validated, no reference kernel",
    (Op.RSQRT, T.TENSOR_QUANT8_ASYMM_SIGNED): "feature level 7; validated, no reference kernel",
}

_NO_LOOKUP_SPEC = ("no NNAPI spec has it: embedding_lookup.mod.py (V1_0) is TENSOR_FLOAT32, "
                   "V1_3 adds only float16 (embedding_lookup_v1_3) and quant8_signed")
_NO_BOOL_COMPARISON = ("NNAPI's comparison specs (V1_2 equal.mod.py and its siblings, V1_3 "
                       "*_quant8_signed) have no TENSOR_BOOL8 example")
_RANK_TYPES = ("rank.mod.py (V1_3) varies only float32, int32, float16, quant8 and "
               "quant8_signed")
_NO_SIGNED_TRANSPOSE_CONV = (
    "V1_3 transpose_conv2d_quant8_signed exists only as its generated file (19.6M characters, "
    "CodeLinaro's mirror), its per-channel examples not located in it; nnrt's own cases run "
    "V1_2's vectors with zero points - 128")
_RANDOM = ("its outputs are random: NNAPI's random_multinomial specs check the distribution "
           "statistically, not values (nnrt's unit tests do the same)")

#: NNAPI 1.3 variants without a case from NNAPI's published vectors, and why:
#: ``(operation, type, detail) -> reason``.
GAPS: Mapping[tuple[OperationType, OperandType, str], str] = {
    (Op.EMBEDDING_LOOKUP, T.TENSOR_INT32, ""): _NO_LOOKUP_SPEC,
    (Op.EMBEDDING_LOOKUP, T.TENSOR_QUANT8_ASYMM, ""): _NO_LOOKUP_SPEC,
    (Op.HASHTABLE_LOOKUP, T.TENSOR_INT32, ""): (
        "no NNAPI spec has it: hashtable_lookup_float / hashtable_lookup_quant8 (V1_0) only"),
    (Op.CAST, T.TENSOR_QUANT8_ASYMM_SIGNED, "to TENSOR_QUANT8_ASYMM_SIGNED"): (
        "cast_identity (V1_3), as stored, has no TENSOR_QUANT8_ASYMM_SIGNED example"),
    **{(op, T.TENSOR_BOOL8, ""): _NO_BOOL_COMPARISON
       for op in (Op.EQUAL, Op.NOT_EQUAL, Op.GREATER, Op.GREATER_EQUAL, Op.LESS,
                  Op.LESS_EQUAL)},
    (Op.RANDOM_MULTINOMIAL, T.TENSOR_FLOAT32, ""): _RANDOM,
    (Op.RANDOM_MULTINOMIAL, T.TENSOR_FLOAT16, ""): _RANDOM,
    (Op.TRANSPOSE_CONV_2D, T.TENSOR_QUANT8_ASYMM_SIGNED, PER_CHANNEL_FILTER):
        _NO_SIGNED_TRANSPOSE_CONV,
    **{(Op.RANK, t, ""): _RANK_TYPES
       for t in (T.TENSOR_QUANT16_SYMM, T.TENSOR_BOOL8, T.TENSOR_QUANT8_SYMM_PER_CHANNEL,
                 T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT8_SYMM)},
}

_CONVOLUTIONS = frozenset({Op.CONV_2D, Op.DEPTHWISE_CONV_2D, Op.GROUPED_CONV_2D,
                           Op.TRANSPOSE_CONV_2D})
_CONVERSIONS = frozenset({Op.CAST, Op.QUANTIZE, Op.DEQUANTIZE})
_FILTER = 1
_QUANT8 = frozenset({T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED})
_TENSOR_TYPES = tuple(t for t in OperandType if t.name.startswith("TENSOR_"))

Key = tuple[OperationType, OperandType, str]


@dataclass(frozen=True)
class CoverageRow:
    """One operation-and-type variant and its conformance cases."""

    op: OperationType
    #: The type of the operation's kernel-selecting input (``OperationDef.type_input``).
    type: OperandType
    #: ``""``, :data:`PER_CHANNEL_FILTER`, or ``"to <output type>"`` for a conversion.
    detail: str
    #: Cases transcribed from NNAPI's published test vectors.
    nnapi_cases: int
    #: nnrt's own cases (edge rules, independent references).
    own_cases: int

    @property
    def label(self) -> str:
        """``"<TYPE>"`` or ``"<TYPE> (<detail>)"``."""
        return f"{self.type.name} ({self.detail})" if self.detail else self.type.name


def vector_coverage() -> list[CoverageRow]:
    """Every variant NNAPI 1.3 defines, in operation-code order, with its case counts."""
    defs = definitions()
    ops = [op for op in sorted(defs) if not op.is_extension and op not in BEYOND_1_3]
    return _rows(defs[op] for op in ops)


def beyond_nnapi_1_3() -> list[CoverageRow]:
    """The same table for the operations of :data:`BEYOND_1_3`, then the types of
    :data:`BEYOND_1_3_TYPES` (which no case covers: they have no kernel)."""
    defs = definitions()
    rows = _rows(defs[op] for op in sorted(BEYOND_1_3) if op in defs)
    rows += [CoverageRow(op, t, "", 0, 0) for op, t in BEYOND_1_3_TYPES]
    return rows


def is_nnapi_vector_case(case: OpCase) -> bool:
    """Whether ``case`` is transcribed from NNAPI's published vectors (by its name)."""
    return "_nnapi_" in case.name


def _rows(defs: Iterable[OperationDef]) -> list[CoverageRow]:
    counts = _case_counts()
    rows = []
    for d in defs:
        for key in _variants(d):
            nnapi, own = counts.get(key, (0, 0))
            rows.append(CoverageRow(*key, nnapi_cases=nnapi, own_cases=own))
    return rows


def _variants(d: OperationDef) -> list[Key]:
    """The variants of one operation, by type code."""
    keys: list[Key] = []
    for t in sorted(d.kernel_types):
        if d.type in _CONVERSIONS:
            keys.extend((d.type, t, f"to {o.name}") for o in _TENSOR_TYPES
                        if _converts(d.type, t, o))
            continue
        keys.append((d.type, t, ""))
        if d.type in _CONVOLUTIONS and t in _QUANT8:
            keys.append((d.type, t, PER_CHANNEL_FILTER))
    return keys


def _variant_key(variant: CaseVariant, type_input: int) -> Key | None:
    inputs, op = variant.inputs, variant.case.op
    if type_input >= len(inputs):
        return None
    t = inputs[type_input].type
    if op in _CONVERSIONS:
        return op, t, f"to {variant.outputs[0].type.name}"
    if (op in _CONVOLUTIONS and len(inputs) > _FILTER
            and inputs[_FILTER].type == T.TENSOR_QUANT8_SYMM_PER_CHANNEL):
        return op, t, PER_CHANNEL_FILTER
    return op, t, ""


def _case_counts() -> dict[Key, tuple[int, int]]:
    """``key -> (NNAPI-vector cases, own cases)`` over every conformance case."""
    defs = definitions()
    counts: dict[Key, tuple[int, int]] = {}
    for case in all_cases():
        d = defs.get(case.op)
        if d is None:
            continue
        keys = {key for v in expand(case) if (key := _variant_key(v, d.type_input))}
        for key in keys:
            nnapi, own = counts.get(key, (0, 0))
            counts[key] = (nnapi + 1, own) if is_nnapi_vector_case(case) else (nnapi, own + 1)
    return counts


def _converts(op: OperationType, source: OperandType, target: OperandType) -> bool:
    """Whether NNAPI's validation accepts ``op`` from ``source`` to ``target``."""
    model = Model()
    operands = [_operand(model, source), _operand(model, target)]
    model.add_operation(op, operands[:1], operands[1:])
    model.identify_inputs_and_outputs(operands[:1], operands[1:])
    try:
        model.finish()
    except NnrtError:
        return False
    return True


def _operand(model: Model, t: OperandType) -> int:
    """A ``[2]`` tensor of type ``t`` with valid quantisation parameters."""
    if t in (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32, T.TENSOR_BOOL8):
        return model.add_operand(t, (2,))
    if t == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        index = model.add_operand(t, (2,))
        model.set_operand_symm_per_channel_quant_params(index, 0, (1.0, 1.0))
        return index
    return model.add_operand(t, (2,), 1.0, 0)
