"""Plugin drivers for the tests: the example Acme NPU (examples/vendor_plugin) and a variant of
it whose compiler crashes on MUL."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from nnrt.cache.files import CacheFiles
from nnrt.hal.base import PreparedModel, PrepareOptions
from nnrt.hal.info import PerformanceInfo
from nnrt.hal.plugin import CompiledResult, PluginDriver
from nnrt.model.model import Model
from nnrt.model.types import OperationType

VENDOR = str(Path(__file__).resolve().parents[2] / "examples" / "vendor_plugin")
if VENDOR not in sys.path:
    sys.path.insert(0, VENDOR)

from acme_npu import AcmeDispatch, AcmePlugin  # noqa: E402
from acme_npu import make_driver as make_driver  # noqa: E402

ACME = "acme_npu:make_driver"


class _MulCrashPlugin(AcmePlugin):
    def compile(self, partitions: Sequence[Model], soc_model: str | None) -> CompiledResult:
        for model in partitions:
            if any(op.type == OperationType.MUL for op in model.operations):
                raise RuntimeError("acme (test variant): the MUL lowering crashed")
        return super().compile(partitions, soc_model)


def mul_crash() -> PluginDriver:
    """Acme whose compile step fails for any partition holding a MUL."""
    return PluginDriver(_MulCrashPlugin(), AcmeDispatch(),
                        performance=PerformanceInfo(exec_time=0.2, power_usage=0.2))


class _SpyDriver(PluginDriver):
    """Acme, writing which preparation entry point ran, with how many cache files, to the
    JSON-lines file ``$NNRT_TEST_SPY_LOG``."""

    def _note(self, call: str, cache: CacheFiles | None) -> None:
        path = os.environ.get("NNRT_TEST_SPY_LOG")
        if path:
            record = {"call": call, "model": None if cache is None else len(cache.model),
                      "data": None if cache is None else len(cache.data), "pid": os.getpid()}
            with open(path, "a") as log:
                log.write(json.dumps(record) + "\n")

    def _prepare(self, model: Model, options: PrepareOptions, cache: CacheFiles | None
                 ) -> PreparedModel:
        self._note("prepare", cache)
        return super()._prepare(model, options, cache)

    def _prepare_from_cache(self, model: Model, cache: CacheFiles, options: PrepareOptions
                            ) -> PreparedModel:
        self._note("prepare_from_cache", cache)
        return super()._prepare_from_cache(model, cache, options)


def spy() -> PluginDriver:
    """Acme that logs its preparations (see :class:`_SpyDriver`)."""
    return _SpyDriver(AcmePlugin(), AcmeDispatch(),
                      performance=PerformanceInfo(exec_time=0.2, power_usage=0.2))
