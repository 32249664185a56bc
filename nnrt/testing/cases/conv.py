"""Conformance cases for the conv operations."""

from nnrt.testing.spec import OpCase

CASES: list[OpCase] = []
