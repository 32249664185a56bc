"""Conformance cases for the matmul operations."""

from nnrt.testing.spec import OpCase

CASES: list[OpCase] = []
