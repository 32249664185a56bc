"""The ``litert`` driver: NNAPI partitions compiled to TFLite flatbuffers, run by LiteRT.

``LitertPlugin.partition`` selects the operations a TFLite builtin computes exactly as NNAPI
specifies (:mod:`~nnrt.drivers.litert.support`); ``compile`` writes each partition as a
TFLite flatbuffer (:mod:`~nnrt.drivers.litert.flatbuffer`), the driver's bytecode; in the
worker, ``LitertDispatch`` checks it and runs it on LiteRT's CPU kernels (XNNPACK) through
``ai_edge_litert``'s ``Interpreter``. Needs the ``ai-edge-litert`` package (installed with nnrt
where it has wheels). See ``docs/litert-driver.md``.
"""

from nnrt.drivers.litert.dispatch import LitertDispatch as LitertDispatch
from nnrt.drivers.litert.driver import FORMAT as FORMAT
from nnrt.drivers.litert.driver import LitertDriver as LitertDriver
from nnrt.drivers.litert.driver import LitertPlugin as LitertPlugin

__all__ = ["FORMAT", "LitertDispatch", "LitertDriver", "LitertPlugin"]
