"""Conformance cases for the gather operations."""

from nnrt.testing.spec import OpCase

CASES: list[OpCase] = []
