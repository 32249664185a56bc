"""Conformance kit: declarative per-operation cases any driver or runner can be checked against."""

from nnrt.testing.check import Runner as Runner
from nnrt.testing.check import build as build
from nnrt.testing.check import check_variant as check_variant
from nnrt.testing.check import expected_outputs as expected_outputs
from nnrt.testing.spec import CaseVariant as CaseVariant
from nnrt.testing.spec import OpCase as OpCase
from nnrt.testing.spec import expand as expand

__all__ = ["CaseVariant", "OpCase", "Runner", "build", "check_variant", "expand",
           "expected_outputs"]
