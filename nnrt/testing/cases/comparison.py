"""Conformance cases for the comparison operations."""

from nnrt.testing.spec import OpCase

CASES: list[OpCase] = []
