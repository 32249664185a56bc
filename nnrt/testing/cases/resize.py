"""Conformance cases for the resize operations."""

from nnrt.testing.spec import OpCase

CASES: list[OpCase] = []
