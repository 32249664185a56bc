"""Conformance cases for the pad operations."""

from nnrt.testing.spec import OpCase

CASES: list[OpCase] = []
