"""Conformance cases for the reshape operations."""

from nnrt.testing.spec import OpCase

CASES: list[OpCase] = []
