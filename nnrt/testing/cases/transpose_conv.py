"""Conformance cases for the transpose_conv operations."""

from nnrt.testing.spec import OpCase

CASES: list[OpCase] = []
