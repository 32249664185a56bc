"""Conformance cases for the softmax operations."""

from nnrt.testing.spec import OpCase

CASES: list[OpCase] = []
