"""The table of NNAPI 1.3 variants and their NNAPI-vector cases (``nnrt.testing.coverage``).

It must stay complete: every variant without a case from NNAPI's published vectors is an
explained entry of ``GAPS``, no entry there is stale, and the vector cases only grow.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from nnrt.model.types import OperandType as T
from nnrt.model.types import OperationType as Op
from nnrt.ops._framework.context import OperationContext
from nnrt.ops._framework.registry import definitions
from nnrt.testing.cases import all_cases
from nnrt.testing.check import build
from nnrt.testing.coverage import (
    BEYOND_1_3,
    BEYOND_1_3_TYPES,
    GAPS,
    PER_CHANNEL_FILTER,
    CoverageRow,
    beyond_nnapi_1_3,
    is_nnapi_vector_case,
    vector_coverage,
)
from nnrt.testing.spec import expand

#: Floors, not targets: cases transcribed from NNAPI's vectors for NNAPI 1.3 operations, and
#: variants with at least one of them. Raise them when cases are added.
MIN_NNAPI_CASES = 1277
MIN_COVERED_VARIANTS = 371

#: Types binary.py's shared type check lists for DIV, which its validation then refuses.
REFUSED_AFTER_TYPE_CHECK = {(Op.DIV, T.TENSOR_QUANT8_ASYMM),
                            (Op.DIV, T.TENSOR_QUANT8_ASYMM_SIGNED)}


@pytest.fixture(scope="module")
def rows() -> list[CoverageRow]:
    return vector_coverage()


def _key(row: CoverageRow) -> tuple[Op, T, str]:
    return row.op, row.type, row.detail


def test_every_variant_without_vectors_is_an_explained_gap(rows: list[CoverageRow]) -> None:
    unexplained = [f"{r.op.name} {r.label}" for r in rows
                   if r.nnapi_cases == 0 and _key(r) not in GAPS]
    assert not unexplained, f"add NNAPI-vector cases or a GAPS entry: {unexplained}"
    assert all(reason.strip() for reason in GAPS.values())


def test_no_gap_entry_is_stale(rows: list[CoverageRow]) -> None:
    by_key = {_key(r): r for r in rows}
    stale = [k for k in GAPS if k not in by_key or by_key[k].nnapi_cases > 0]
    assert not stale, f"remove from GAPS (covered now, or no such variant): {stale}"


def test_nnapi_vector_cases_do_not_disappear(rows: list[CoverageRow]) -> None:
    cases = [c for c in all_cases() if is_nnapi_vector_case(c) and not c.op.is_extension
             and c.op not in BEYOND_1_3]
    assert len(cases) >= MIN_NNAPI_CASES
    assert sum(r.nnapi_cases > 0 for r in rows) >= MIN_COVERED_VARIANTS


def test_the_table_holds_every_nnapi_1_3_operation_once_per_variant(
        rows: list[CoverageRow]) -> None:
    ops = {r.op for r in rows}
    assert ops == {op for op in definitions() if not op.is_extension and op not in BEYOND_1_3}
    assert len({_key(r) for r in rows}) == len(rows)
    assert {r.op for r in beyond_nnapi_1_3()} == set(BEYOND_1_3) | {
        op for op, _ in BEYOND_1_3_TYPES}


def test_conversions_are_keyed_by_input_and_output_type(rows: list[CoverageRow]) -> None:
    pairs: dict[Op, set[tuple[T, str]]] = defaultdict(set)
    for r in rows:
        pairs[r.op].add((r.type, r.detail))
    float_types, quant8 = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16), (
        T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
    assert pairs[Op.QUANTIZE] == {(f, f"to {q.name}") for f in float_types for q in quant8}
    assert (T.TENSOR_QUANT8_SYMM_PER_CHANNEL, "to TENSOR_FLOAT16") in pairs[Op.DEQUANTIZE]
    # NNAPI 1.3's CAST: every pair of four types, five more types cast to themselves only.
    assert len(pairs[Op.CAST]) == 4 * 4 + 5
    assert (T.TENSOR_BOOL8, "to TENSOR_FLOAT32") not in pairs[Op.CAST]
    per_channel = {(r.op, r.type) for r in rows if r.detail == PER_CHANNEL_FILTER}
    assert (Op.GROUPED_CONV_2D, T.TENSOR_QUANT8_ASYMM_SIGNED) in per_channel


def test_the_types_are_those_validation_accepts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Probe each operation's validation with one of its cases: the types it checks its
    kernel-selecting input against are the table's (or declared beyond NNAPI 1.3)."""
    seen: dict[tuple[Op, int], set[T]] = defaultdict(set)
    expect_type = OperationContext.expect_type

    def recording(self: OperationContext, i: int, *types: T) -> T:
        seen[(self.op_type, i)].update(types)
        return expect_type(self, i, *types)

    monkeypatch.setattr(OperationContext, "expect_type", recording)
    defs = definitions()
    probed = set()
    for case in all_cases():
        if case.op in probed or case.op.is_extension or case.op in BEYOND_1_3:
            continue
        probed.add(case.op)
        build(expand(case)[0])
    extra = {(op, t) for (op, slot), types in seen.items() if slot == defs[op].type_input
             for t in types if t not in defs[op].kernel_types}
    assert extra <= set(BEYOND_1_3_TYPES) | REFUSED_AFTER_TYPE_CHECK
    assert set(BEYOND_1_3_TYPES) <= extra  # the probe sees what validation accepts
