"""Conformance cases for the reduce operations."""

from nnrt.testing.spec import OpCase

CASES: list[OpCase] = []
