"""Conformance cases for the unary operations."""

from nnrt.testing.spec import OpCase

CASES: list[OpCase] = []
