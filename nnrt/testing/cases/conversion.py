"""Conformance cases for the conversion operations."""

from nnrt.testing.spec import OpCase

CASES: list[OpCase] = []
