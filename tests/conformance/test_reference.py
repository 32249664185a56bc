"""Every conformance case variant, run on the reference interpreter."""

from __future__ import annotations

import pytest

import nnrt
from nnrt.testing import CaseVariant, check_variant, expand
from nnrt.testing.cases import all_cases

VARIANTS = [v for case in all_cases() for v in expand(case)]


@pytest.mark.parametrize("variant", VARIANTS, ids=[v.id for v in VARIANTS])
def test_reference(variant: CaseVariant) -> None:
    check_variant(variant, nnrt.reference.run)
