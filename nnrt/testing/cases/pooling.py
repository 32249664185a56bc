"""Conformance cases for the pooling operations."""

from nnrt.testing.spec import OpCase

CASES: list[OpCase] = []
