"""onnx's backend node tests of the listed operators (``LISTED_OPS``), run through ``NnrtBackend``.

``onnx.backend.test.BackendTest`` drives :class:`nnrt.onnx.backend.NnrtBackend` over the node
tests of :data:`onnx_node_cases.LISTED_OPS` (their ``*_expanded`` function-body variants
included), read from the on-disk cache :mod:`onnx_node_cases` builds once per onnx and
onnxruntime version. Each test imports the model, runs it on the reference interpreter and
compares every output with the stored one (shape, dtype, then ``rtol=1e-3, atol=1e-7``); tests
whose stored outputs come from onnx's known-wrong kernels compare with onnxruntime's outputs
instead (see :func:`onnx_node_cases.needs_onnxruntime_oracle`).

The tests nnrt fails on purpose are listed, each with its reason, in ``expected_failures.toml``
and marked ``xfail(strict=True)``: one of them passing fails the run, so the list stays honest.
Only the ``CPU`` device is collected (``BackendTest`` also makes ``*_cuda`` twins, which nnrt
does not support).
"""

from __future__ import annotations

import functools
import unittest
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import onnx_node_cases as node_cases

from nnrt.onnx.backend import NnrtBackend

CASES = node_cases.load_cases()
ENTRIES = node_cases.load_expected_failures()
EXPECTED_FAILURES = node_cases.expected_failures(CASES, ENTRIES)


class ExpectedNodeTestFailure(Exception):
    """How an expected failure surfaces: its message without the deep traceback, which pytest
    would spend ~0.1 s per test formatting (it parses each source file of the traceback)."""


def _shallow(test: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return test(*args, **kwargs)
        except unittest.SkipTest:
            raise
        except Exception as exc:
            raise ExpectedNodeTestFailure(f"{type(exc).__name__}: {exc}") from None

    return run


def _collect() -> dict[str, type]:
    suite = node_cases.backend_test(NnrtBackend, __name__, CASES)
    classes = {}
    for class_name, case_class in suite.test_cases.items():
        for attribute in list(vars(case_class)):
            if attribute.endswith("_cuda"):
                delattr(case_class, attribute)
            elif attribute.endswith("_cpu"):
                reason = EXPECTED_FAILURES.get(attribute.removesuffix("_cpu"))
                if reason is not None:
                    test = getattr(case_class, attribute)
                    setattr(case_class, attribute,
                            pytest.mark.xfail(reason=reason, strict=True)(_shallow(test)))
        classes[class_name] = case_class
    return classes


globals().update(_collect())


def test_every_expected_failure_entry_is_used() -> None:
    names = {c.name for c in CASES}
    for entry in ENTRIES:
        unknown = sorted(entry.tests - names)
        assert not unknown, f"[{entry.key}] lists tests the suite does not have: {unknown}"
        covered = [c.name for c in CASES
                   if EXPECTED_FAILURES.get(c.name, "").startswith(f"[{entry.key}] ")]
        assert covered, f"[{entry.key}] covers no test (every one is covered by an earlier entry)"


def test_the_suite_covers_every_listed_operator() -> None:
    tested = {c.op for c in CASES}
    assert tested == set(node_cases.LISTED_OPS), sorted(set(node_cases.LISTED_OPS) - tested)


def test_onnxruntime_is_the_oracle_where_onnx_reference_is_wrong() -> None:
    for case in CASES:
        wanted = node_cases.needs_onnxruntime_oracle(case.name, case.op, case.opset) or case.variant
        assert (case.oracle == "onnxruntime") == wanted, case.name
    variants = {(c.op, c.opset) for c in CASES if c.variant}
    assert variants == {("Softmax", 11), ("LogSoftmax", 11), ("BatchNormalization", 9)}
    assert any(c.op == "GlobalMaxPool" and c.oracle == "onnxruntime" for c in CASES)
    assert set(node_cases.DISPUTED) <= {c.name for c in CASES if c.oracle == "onnxruntime"}
