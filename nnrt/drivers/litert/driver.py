"""``LitertPlugin`` (partition + compile to TFLite flatbuffers) and ``LitertDriver``."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import metadata

from nnrt._version import __version__
from nnrt.drivers.litert.dispatch import LitertDispatch
from nnrt.drivers.litert.flatbuffer import write_partition
from nnrt.drivers.litert.support import unsupported_reason
from nnrt.errors import BadData
from nnrt.hal.base import PerformanceInfo
from nnrt.hal.plugin import CompiledResult, CompilerPlugin, PartitionResult, PluginDriver
from nnrt.model.model import Model

__all__ = ["FORMAT", "LITERT_VERSION", "LitertDriver", "LitertPlugin"]

#: The layout of the bytecode this compiler writes (a TFLite flatbuffer per partition); bumped
#: when what it writes changes, so caches and ``.nnrt`` files of older compilers are refused.
FORMAT = 4
#: The installed LiteRT: part of the driver version, so its caches follow LiteRT updates.
LITERT_VERSION = metadata.version("ai-edge-litert")


class LitertPlugin(CompilerPlugin):
    """Selects the operations with an exact TFLite builtin and writes each partition as a
    TFLite flatbuffer with one entry point, ``main``."""

    name = "litert"
    version = f"{__version__}+litert{LITERT_VERSION}+fb{FORMAT}"
    soc_manufacturer = "Google"
    supported_hardware = "cpu"

    def partition(self, model: Model, soc_model: str | None) -> PartitionResult:
        """Every operation with no :func:`~nnrt.drivers.litert.support.unsupported_reason`."""
        return PartitionResult.by_reason(len(model.operations),
                                         lambda index: unsupported_reason(model, index))

    def compile(self, partitions: Sequence[Model], soc_model: str | None) -> CompiledResult:
        """One flatbuffer per partition (module ``i`` implements partition ``i``)."""
        modules = tuple(write_partition(model) for model in partitions)
        return CompiledResult(modules, tuple((i, "main") for i in range(len(partitions))))

    def split_module(self, module: bytes) -> tuple[bytes, bytes]:
        """The whole flatbuffer goes to the data cache, as one blob: it is mostly weights, is
        checked in full on every load anyway (the dispatch trusts no cache file), and so is
        saved and read back without being copied into the model cache's header."""
        return b"", module

    def join_module(self, code: bytes, constants: bytes) -> bytes:
        """The flatbuffer :meth:`split_module` put in the data cache."""
        if code:
            raise BadData(f"litert model cache: expected no code, got {len(code)} bytes (the "
                          "flatbuffer lives in the data cache)")
        return constants


class LitertDriver(PluginDriver):
    """LiteRT's CPU kernels (XNNPACK) behind nnrt's driver interface: :class:`LitertPlugin`
    with :class:`~nnrt.drivers.litert.dispatch.LitertDispatch`.

    Threads per worker: ``$NNRT_LITERT_THREADS`` (default 1, see
    :data:`~nnrt.drivers.litert.dispatch.DEFAULT_THREADS`).
    """

    def __init__(self) -> None:
        super().__init__(LitertPlugin(), LitertDispatch(), device_type="cpu",
                         performance=PerformanceInfo(exec_time=0.2, power_usage=0.5))
