"""Conformance cases transcribed from NNAPI's published test specs (literal expected values)."""

from nnrt.testing.spec import OpCase

CASES: list[OpCase] = []
