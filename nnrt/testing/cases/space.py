"""Conformance cases for the space operations."""

from nnrt.testing.spec import OpCase

CASES: list[OpCase] = []
