"""Errors of the TFLite importer: every operator nnrt cannot import, reported at once."""

from __future__ import annotations

from dataclasses import dataclass

from nnrt.errors import Unsupported

__all__ = ["OperatorUnsupported", "UnsupportedOperator", "UnsupportedTfliteModel"]


@dataclass(frozen=True)
class UnsupportedOperator:
    """One TFLite operator nnrt cannot import, and why (``op`` is the builtin's name, or
    ``CUSTOM(<custom_code>)``)."""

    index: int
    op: str
    reason: str

    def __str__(self) -> str:
        return f"operator {self.index} ({self.op}): {self.reason}"


class OperatorUnsupported(Exception):
    """Raised by a converter: this operator (or this use of it) cannot be imported exactly."""


class UnsupportedTfliteModel(Unsupported):
    """The TFLite model holds operators nnrt cannot import; :attr:`operators` lists each."""

    def __init__(self, operators: list[UnsupportedOperator]) -> None:
        self.operators = list(operators)
        lines = "\n".join(f"  - {o}" for o in self.operators)
        super().__init__(f"the TFLite model has {len(self.operators)} unsupported "
                         f"operator(s):\n{lines}")
