"""Conformance cases for the normalization operations."""

from nnrt.testing.spec import OpCase

CASES: list[OpCase] = []
