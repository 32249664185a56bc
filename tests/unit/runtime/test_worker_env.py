"""Worker processes get single-threaded BLAS / OpenMP pools unless the caller chose otherwise."""

from __future__ import annotations

import pytest

from nnrt.runtime.backends import process


def test_workers_default_to_one_blas_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in process.WORKER_THREAD_LIMITS:
        monkeypatch.delenv(name, raising=False)
    env = process._child_env()
    assert all(env[name] == "1" for name in process.WORKER_THREAD_LIMITS)


def test_the_callers_choice_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    assert process._child_env()["OPENBLAS_NUM_THREADS"] == "4"
