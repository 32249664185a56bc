"""Conformance cases for the tensor operations."""

from nnrt.testing.spec import OpCase

CASES: list[OpCase] = []
