"""Multi-stage compilation in the cpu driver: autotuned stage 2 swapped in the background."""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

import numpy as np
import pytest
from cpu_models import benchmark_module, random_graph

import nnrt
from nnrt.cache import CacheFiles
from nnrt.cache.files import CacheFiles as Files
from nnrt.drivers.cpu import CpuDriver
from nnrt.drivers.cpu.autotune import TunedModule, autotune
from nnrt.drivers.cpu.kernels.tuned import VARIANTS
from nnrt.drivers.cpu.module import decode_module
from nnrt.drivers.cpu.stages import CpuPreparedModel
from nnrt.hal.base import PreparedModel
from nnrt.hal.discovery import load_driver
from nnrt.hal.plugin import FORBID_COMPILE

BENCH = benchmark_module()
WAIT = 30.0
TUNED = {k for names in VARIANTS.values() for k in names} | set(VARIANTS)


def _prepared(driver: CpuDriver, model: nnrt.Model, cache: CacheFiles | None = None
              ) -> CpuPreparedModel:
    prepared = driver.prepare(model, cache=cache)
    assert isinstance(prepared, CpuPreparedModel)
    return prepared


def _close(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("make", ["mlp", "cnn", "transformer"])
def test_stage_two_replaces_stage_one_after_n_executions(make: str) -> None:
    model, inputs = getattr(BENCH, make)(2)
    with _prepared(CpuDriver(optimize_after=3), model) as prepared:
        first = prepared.execute(inputs).outputs
        prepared.execute(inputs)
        assert prepared.stage == 1 and prepared.optimization == "waiting"
        assert prepared.choices == {}
        prepared.execute(inputs)
        assert prepared.optimization in ("running", "done")
        assert prepared.wait_optimized(WAIT)
        assert prepared.optimization == "done" and prepared.stage == 2
        choices = prepared.choices
        ops = {i for i, op in enumerate(model.operations) if op.type in (
            nnrt.OperationType.FULLY_CONNECTED, nnrt.OperationType.CONV_2D,
            nnrt.OperationType.BATCH_MATMUL)}
        assert set(choices) == ops and set(choices.values()) <= TUNED
        assert {t.op for t in prepared.trials} == ops
        for _ in range(2):
            _close(prepared.execute(inputs).outputs, first)


def test_autotune_records_stage_and_choices_in_a_verified_module() -> None:
    model, _ = BENCH.cnn(1)
    tuned = autotune(model, "partition_0", threading.Event(), runs=1)
    assert isinstance(tuned, TunedModule)
    module = decode_module(tuned.module)
    assert module.stage == 2 and module.choices == tuned.choices
    called = {step[0] for step in module.programs["partition_0"]["steps"]}
    for op, kernel in tuned.choices:
        assert kernel in called, (op, kernel)
    assert autotune(model, "partition_0", _set_event()) is None


def _set_event() -> threading.Event:
    event = threading.Event()
    event.set()
    return event


def test_concurrent_executions_during_the_swap_are_all_correct() -> None:
    model, inputs = BENCH.transformer(1)
    want = nnrt.reference.run(model, inputs)
    errors: list[BaseException] = []
    with _prepared(CpuDriver(optimize_after=5), model) as prepared:

        def worker() -> None:
            try:
                for _ in range(25):
                    _close(prepared.execute(inputs).outputs, want)
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(WAIT)
        assert prepared.wait_optimized(WAIT)
        assert not errors and prepared.stage == 2
        _close(prepared.execute(inputs).outputs, want)


def test_optimize_after_zero_never_optimises() -> None:
    model, inputs = random_graph(1)
    with _prepared(CpuDriver(optimize_after=0), model) as prepared:
        for _ in range(5):
            prepared.execute(inputs)
        assert prepared.optimization == "off" and prepared.stage == 1


def test_the_default_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert CpuDriver().optimize_after == 32
    monkeypatch.setenv("NNRT_CPU_OPTIMIZE_AFTER", "7")
    assert CpuDriver().optimize_after == 7
    driver = load_driver("cpu")
    assert isinstance(driver, CpuDriver) and driver.optimize_after == 7
    monkeypatch.setenv("NNRT_CPU_OPTIMIZE_AFTER", "soon")
    with pytest.raises(nnrt.BadData, match="NNRT_CPU_OPTIMIZE_AFTER must be an int"):
        CpuDriver()
    with pytest.raises(nnrt.BadData, match="optimize_after must be an int"):
        CpuDriver(optimize_after=-1)


def test_no_stage_two_when_compiling_is_forbidden(monkeypatch: pytest.MonkeyPatch) -> None:
    model, inputs = random_graph(2)
    module = CpuDriver().compile_partitions([model]).modules[0]
    monkeypatch.setenv(FORBID_COMPILE, "1")
    prepared = CpuDriver(optimize_after=1).prepare_compiled(model, module, "partition_0")
    with prepared:
        assert isinstance(prepared, CpuPreparedModel)
        prepared.execute(inputs)
        assert prepared.optimization == "off" and prepared.stage == 1


# -- release, failures and file descriptors ------------------------------------------------


class _Blocking(CpuPreparedModel):
    """Stage 2 that waits until it is told to stop (or fails, with ``fail``)."""

    started = threading.Event()
    fail = False

    def _build_stage2(self, stop: threading.Event) -> TunedModule | None:
        type(self).started.set()
        if type(self).fail:
            raise RuntimeError("tuner exploded")
        stop.wait(WAIT)
        return super()._build_stage2(stop)


class _BlockingDriver(CpuDriver):
    def _make_prepared(self, model: nnrt.Model, module: bytes, entry_point: str,
                       cache: Files | None) -> PreparedModel:
        return _Blocking(self, model, module, entry_point, cache, self.optimize_after)


@pytest.fixture
def cache_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CacheFiles:
    monkeypatch.setenv("NNRT_INTEGRITY_DIR", str(tmp_path / "integrity"))
    fds = [os.open(tmp_path / name, os.O_RDWR | os.O_CREAT, 0o600) for name in ("m", "d")]
    return CacheFiles(b"k" * 32, (fds[0],), (fds[1],))


def _close_files(files: CacheFiles) -> None:
    for fd in files.all:
        os.close(fd)


def test_release_during_optimisation_stops_it(cache_files: CacheFiles) -> None:
    model, inputs = random_graph(4)
    _Blocking.started = threading.Event()
    _Blocking.fail = False
    try:
        prepared = _BlockingDriver(optimize_after=1).prepare(model, cache=cache_files)
        assert isinstance(prepared, _Blocking)
        want = prepared.execute(inputs).outputs
        assert _Blocking.started.wait(WAIT)
        assert prepared.optimization == "running"
        _close(prepared.execute(inputs).outputs, want)
        prepared.release()
        assert prepared.wait_optimized(0)
        assert prepared.optimization == "stopped" and prepared.stage == 1
        with pytest.raises(nnrt.BadState):
            prepared.execute(inputs)
    finally:
        _close_files(cache_files)  # the duplicates are gone too: the leak check says so


def test_release_before_the_trigger_closes_the_duplicated_fds(cache_files: CacheFiles) -> None:
    model, inputs = random_graph(6)
    try:
        before = len(os.listdir("/proc/self/fd"))
        prepared = _prepared(CpuDriver(optimize_after=10), model, cache_files)
        assert len(os.listdir("/proc/self/fd")) == before + 2
        prepared.execute(inputs)
        prepared.release()
        assert len(os.listdir("/proc/self/fd")) == before
        assert prepared.optimization == "stopped"
    finally:
        _close_files(cache_files)


def test_a_failing_background_step_is_logged_and_stage_one_runs_on(
        cache_files: CacheFiles, caplog: pytest.LogCaptureFixture) -> None:
    model, inputs = random_graph(7)
    _Blocking.started = threading.Event()
    _Blocking.fail = True
    try:
        with caplog.at_level(logging.WARNING, "nnrt.worker"), \
                _BlockingDriver(optimize_after=2).prepare(model, cache=cache_files) as prepared:
            assert isinstance(prepared, _Blocking)
            want = prepared.execute(inputs).outputs
            prepared.execute(inputs)
            assert prepared.wait_optimized(WAIT)
            assert prepared.optimization == "failed" and prepared.stage == 1
            _close(prepared.execute(inputs).outputs, want)
        assert "tuner exploded" in caplog.text and "stage 1 keeps running" in caplog.text
    finally:
        _Blocking.fail = False
        _close_files(cache_files)
