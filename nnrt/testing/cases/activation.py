"""Conformance cases for the activation operations."""

from nnrt.testing.spec import OpCase

CASES: list[OpCase] = []
