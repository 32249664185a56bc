"""Conformance cases for the slicing operations."""

from nnrt.testing.spec import OpCase

CASES: list[OpCase] = []
